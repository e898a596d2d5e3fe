// Included by the snippet preludes (see README.md here): every public header a doc page shows,
// optional components included. Declares nothing a snippet could use without its prelude.
#ifndef LIBRETTO_TESTS_SNIPPETS_SUPPORT_HPP
#define LIBRETTO_TESTS_SNIPPETS_SUPPORT_HPP

#include <libretto/libretto.hpp>

#include <libretto/http/any_transport.hpp>
#include <libretto/http/beast_transport.hpp>
#include <libretto/http/https_transport.hpp>
#include <libretto/http/fake_transport.hpp>
#include <libretto/http/openssl_tls.hpp>
#include <libretto/http/sse_parser.hpp>
#include <libretto/model/retry.hpp>
#include <libretto/provider/anthropic_model.hpp>
#include <libretto/provider/anthropic_protocol.hpp>
#include <libretto/provider/openai_model.hpp>
#include <libretto/provider/openai_protocol.hpp>
#include <libretto/provider/provider_error.hpp>
#include <libretto/store/postgres_store.hpp>
#include <libretto/store/sqlite_store.hpp>
#include <libretto/store/sqlite_session_index.hpp>
#include <libretto/store/postgres_session_index.hpp>
#include <libretto/store/sqlite_artifact_service.hpp>
#include <libretto/store/postgres_artifact_service.hpp>
#include <libretto/store/sqlite_memory_service.hpp>
#include <libretto/store/postgres_memory_service.hpp>
#include <libretto/sign/ed25519_openssl.hpp>
#include <libretto/sign/ed25519_sodium.hpp>

#include <boost/asio.hpp>
#include <boost/describe.hpp>
#include <boost/json.hpp>

#include <array>
#include <chrono>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#endif
