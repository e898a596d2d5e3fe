// signed_audit: a signed transcript, verified, and a tampered copy that fails.
//
// An llm_agent (scripted model, one tool) answers a question; the runner signs every event
// it stores with the agent host's Ed25519 key (did:key identity) and chains each signature
// to the previous one. Then the stored transcript is read back and verified, and copies
// with an altered tool result, a deleted event and two swapped events are shown failing,
// each at the event where it was changed.
//
// The key is kept in <sessions>/audit-key.pem (created on the first run, mode 0600), so
// later runs continue the same chain with the same identity.
//
// Needs the libretto::openssl component. Run: build/<preset>/examples/signed_audit
// (sessions in $LIBRETTO_SESSIONS, default /tmp/libretto-signed-audit).
#include <libretto/agent/llm_agent.hpp>
#include <libretto/libretto.hpp>
#include <libretto/store/jsonl_store.hpp>
#include <libretto/sign/ed25519_openssl.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/describe.hpp>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

namespace asio = boost::asio;
namespace json = boost::json;
namespace lb = libretto;

struct balance_args {
    std::string account;
};
BOOST_DESCRIBE_STRUCT(balance_args, (), (account))

json::value get_balance(balance_args a) { return json::object{{"account", a.account}, {"balance_eur", 1250.75}}; }

using audit_runner = lb::runner<lb::llm_agent<lb::scripted_model>, lb::jsonl_store, lb::no_compaction, lb::ed25519_signer>;

std::string short_sig(const std::optional<std::string>& s) { return s ? s->substr(0, 12) + "…" : "(none)"; }

void show(const char* title, const lb::transcript_report& r) {
    std::cout << "  " << title << ": ";
    if (r.ok) std::cout << "OK, " << r.checked << " events verified\n";
    else std::cout << "FAILS at sequence " << r.sequence << " (" << lb::to_string(r.reason) << ")\n      " << r.message << "\n";
}

asio::awaitable<int> audit(audit_runner& runner, lb::jsonl_store& store, std::string did) {
    lb::run_options options;
    options.app = "audit";
    options.user = "u1";
    options.session = "ledger";
    options.yield_user_message = true; // show the stored (and signed) user message too

    std::cout << "user> What is the balance of account 42?\n";
    // The turn run to its end; co_await throws system_error if it fails.
    auto op = lb::async_run_to_end(runner, options, "What is the balance of account 42?");
    lb::turn_result r = co_await std::move(op);
    for (const lb::event& ev : r.events)
        std::cout << "  #" << ev.sequence << " " << lb::to_string(ev.type) << " by " << ev.author << "  sig "
                  << short_sig(ev.signature) << "  prev " << short_sig(ev.prev_signature) << "\n";

    // 1. The stored transcript, as an auditor (or another process) reads it.
    lb::session_key key{options.app, options.user, options.session};
    auto get = store.async_get(std::move(key), lb::get_options{}, asio::use_awaitable);
    std::optional<lb::session> s = co_await std::move(get);
    std::cout << "\nstored transcript: " << s->events.size() << " events, signer " << did << "\n";
    lb::transcript_options trusted;
    trusted.trusted_dids = {did};
    const auto intact = lb::verify_transcript(*s, trusted);
    show("as stored", intact);

    // 2. Tampered copies.
    const std::size_t n = s->events.size();
    lb::session forged = *s;
    for (std::size_t i = 0; i < forged.events.size(); ++i)
        for (auto& p : forged.events.modify(i).content.parts)
            if (auto* r = std::get_if<lb::tool_response_part>(&p)) r->result = json::object{{"balance_eur", 99999.0}};
    const auto r1 = lb::verify_transcript(forged, trusted);
    show("tool result altered", r1);

    lb::session deleted = *s;
    deleted.events.erase(deleted.events.begin() + static_cast<std::ptrdiff_t>(n - 2));
    const auto r2 = lb::verify_transcript(deleted, trusted);
    show("an event deleted", r2);

    lb::session swapped = *s;
    swapped.events.swap_events(n - 3, n - 2);
    const auto r3 = lb::verify_transcript(swapped, trusted);
    show("two events swapped", r3);

    const bool as_expected = intact.ok && r1.reason == lb::transcript_fault::bad_signature &&
                             r2.reason == lb::transcript_fault::missing_event &&
                             r3.reason == lb::transcript_fault::reordered;
    co_return as_expected ? 0 : 1;
}

int main() {
    try {
        asio::io_context io;
        const char* dir = std::getenv("LIBRETTO_SESSIONS");
        const std::filesystem::path root =
            dir ? std::filesystem::path(dir) : std::filesystem::temp_directory_path() / "libretto-signed-audit";
        std::filesystem::create_directories(root);

        // The host's identity: one key, kept between runs.
        const auto key_file = root / "audit-key.pem";
        if (!std::filesystem::exists(key_file)) lb::ed25519_key::generate().save_pem_file(key_file);
        lb::ed25519_signer signer{lb::ed25519_key::load_pem_file(key_file)};

        lb::scripted_model model(io.get_executor(),
                                 {lb::scripted_reply::tool_call("get_balance", {{"account", "42"}}).with_usage(300, 12),
                                  lb::scripted_reply::text("Account 42 holds 1,250.75 EUR.").with_usage(340, 10)});
        lb::llm_agent assistant{lb::llm_agent_options<lb::scripted_model>{
            .name = "teller",
            .instruction = "You answer questions about account balances.",
            .model = model,
            .tools = lb::tools(lb::function_tool("get_balance", "The balance of an account", get_balance)),
        }};

        lb::jsonl_store_options so;
        so.directory = root / "sessions";
        lb::jsonl_store store{io.get_executor(), so};
        audit_runner runner{assistant, store, lb::no_compaction{}, signer};
        std::cout << "signer " << signer.did() << " (key in " << key_file.string() << ")\n\n";

        int rc = 1;
        std::exception_ptr failure;
        asio::co_spawn(io, audit(runner, store, std::string(signer.did())), [&](std::exception_ptr e, int r) {
            failure = e;
            rc = r;
        });
        io.run();
        if (failure) std::rethrow_exception(failure);
        return rc;
    } catch (const std::exception& e) {
        std::cerr << "signed_audit: " << e.what() << "\n";
        return 1;
    }
}
