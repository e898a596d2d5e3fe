// Fixture for the header_rules_catch_violation test: sign/ may not include store/.
#include <libretto/store/memory_store.hpp>
