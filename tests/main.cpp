// The one translation unit that defines Boost.Test's main; every tests/*_test.cpp links it.
#define BOOST_TEST_MODULE libretto
#include <boost/test/unit_test.hpp>
