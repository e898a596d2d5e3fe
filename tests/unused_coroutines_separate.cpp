// unused_coroutines.cpp's check for the headers whose code separate compilation builds once
// (compiled with LIBRETTO_SEPARATE_COMPILATION): the MCP client and toolset, and with OpenSSL
// the providers and the TLS transport. Header-only, including them compiles them, by design;
// here they must add no coroutine body.
#include <libretto/mcp/client.hpp>
#include <libretto/mcp/mcp_toolset.hpp>

#ifdef LIBRETTO_TEST_OPENSSL
#include <libretto/http/https_transport.hpp>
#include <libretto/http/openssl_tls.hpp>
#include <libretto/provider/anthropic_model.hpp>
#include <libretto/provider/openai_model.hpp>
#endif
