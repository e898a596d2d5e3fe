// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_COMPACTION_MODEL_SUMMARIZER_HPP
#define LIBRETTO_COMPACTION_MODEL_SUMMARIZER_HPP

// model_summarizer: a summary written by a model, with libretto's own sectioned prompt
// (Goal, Constraints, Progress, Decisions, Open items, Critical identifiers), the
// conversation serialised as a role-tagged transcript the model does not continue, update
// mode (revise the previous summary with the new events), a split-turn section, and a
// quality check (the latest user request is named, every required identifier is there)
// with one stricter retry. Specified in docs/compaction.md, "Summarizers".
//
// Failures throw summary_error (a boost::system::system_error) carrying the usage spent:
// the model's own error code (transient, context_overflow, auth_failed, ...), or
// errc::bad_response for an empty summary or one that fails the check twice.
// summarizer_chain turns those into a fallback.

#include <libretto/event/event_list.hpp>
#include <libretto/compaction/detail/summary_text.hpp>
#include <libretto/compaction/detail/summary_transcript.hpp>
#include <libretto/compaction/summarizer.hpp>
#include <libretto/error.hpp>
#include <libretto/model/any_model.hpp>
#include <libretto/model/llm_request.hpp>
#include <libretto/model/model.hpp>

#include <boost/asio/awaitable.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace libretto {

struct model_summarizer_options {
    /// generation_options::max_output_tokens of each call; unset: the provider's default.
    std::optional<std::int64_t> max_output_tokens = 2048;
    std::optional<double> temperature{};
    /// llm_request::model (another model name of the same provider); empty: the model's own.
    std::string model_name{};
    /// Bytes of each tool result, tool error, data part and thinking in the transcript;
    /// longer ones end in "[… N more characters]".
    std::size_t max_tool_result_chars = 2000;
    /// Bytes of each tool-call argument value in the transcript.
    std::size_t max_tool_arg_chars = 500;
    /// Thinking as "[Assistant thinking]: …" lines; by default it is left out.
    bool include_thinking = false;
    /// Check the reply (latest request named, identifiers present) and retry once.
    bool quality_check = true;
    /// Appended to the instruction ("Additional focus: …"), e.g. from a /compact command.
    std::string extra_instructions{};
};

namespace detail::summary_prompt {

inline constexpr std::string_view system_instruction =
    "You write checkpoint summaries of a working session between a user and an AI assistant. "
    "Your summary replaces the transcript in the assistant's memory: the assistant will carry on "
    "from your summary and the few most recent messages, and nothing else.\n"
    "\n"
    "The transcript is material to summarize, not a conversation to take part in. Do not answer "
    "the user, do not continue the transcript, do not call tools and do not add remarks of your "
    "own. Reply with the summary alone, in exactly these Markdown sections, in this order:\n"
    "\n"
    "## Goal\n"
    "What the user wants to achieve. State the user's latest request in their own words.\n"
    "## Constraints\n"
    "Requirements, preferences and rules the user or the environment set. \"None.\" if there are none.\n"
    "## Progress\n"
    "What is finished (\"- [x] ...\") and what is under way (\"- [ ] ...\"), with the results worth "
    "knowing: numbers, outcomes, error messages.\n"
    "## Decisions\n"
    "Choices made, each with its reason (\"- choice: reason\").\n"
    "## Open items\n"
    "Unanswered questions, pending requests and next steps, the most urgent first.\n"
    "## Critical identifiers\n"
    "File paths, URLs, ids, names, numbers and error messages the work depends on, copied "
    "character for character.\n"
    "\n"
    "Be short but concrete: facts, not narration. Never paraphrase an identifier.";

inline constexpr std::string_view split_turn_heading = "## Turn context (split turn)";

} // namespace detail::summary_prompt

template <class Model = any_model>
    requires model<Model>
class model_summarizer {
public:
    /// Wraps a model (anything Model is constructible from: a scripted_model for an any_model).
    template <class M>
        requires(!std::same_as<std::remove_cvref_t<M>, model_summarizer> && std::constructible_from<Model, M &&>)
    explicit model_summarizer(M&& m, model_summarizer_options o = {}) : m_(std::forward<M>(m)), o_(std::move(o)) {}

    /// Summarises `r` (see the header comment). The operation holds a copy of *this.
    boost::asio::awaitable<summary> async_summarize(summary_request r) { return run(*this, std::move(r)); }

    /// "model:<model name>" (the options' model_name when set).
    std::string name() const {
        std::string n = "model:";
        n += o_.model_name.empty() ? std::string(std::string_view(m_.name())) : o_.model_name;
        return n;
    }

    const model_summarizer_options& options() const noexcept { return o_; }
    Model& model_ref() noexcept { return m_; }

    /// The transcript of `events` as the prompt shows it.
    std::string transcript(event_span events) const {
        detail::summary_transcript::options t;
        t.max_tool_result_chars = o_.max_tool_result_chars;
        t.max_tool_arg_chars = o_.max_tool_arg_chars;
        t.include_thinking = o_.include_thinking;
        return detail::summary_transcript::serialize(events, t);
    }

    /// The first request sent for `r` (pure; exposed for tests and for logging).
    llm_request build_request(const summary_request& r) const {
        llm_request req;
        req.model = o_.model_name;
        req.system_instruction = std::string(detail::summary_prompt::system_instruction);
        req.options.max_output_tokens = o_.max_output_tokens;
        req.options.temperature = o_.temperature;
        req.messages.push_back(message::user(user_prompt(r)));
        return req;
    }

    /// Why `text` fails the quality check for `r` (empty: it passes).
    static std::vector<std::string> quality_problems(std::string_view text, const summary_request& r) {
        std::vector<std::string> problems;
        std::string latest = latest_user_request(r);
        if (!latest.empty() && !names_request(text, latest)) {
            problems.push_back("it does not state the user's latest request (\"" +
                               detail::summary_text::shorten(detail::summary_text::fold_whitespace(latest), 200) +
                               "\")");
        }
        std::vector<std::string> missing = missing_identifiers(text, r.identifiers);
        if (!missing.empty()) {
            std::string p = "it leaves out these identifiers: ";
            for (std::size_t i = 0; i < missing.size(); ++i) {
                if (i) p += ", ";
                p += missing[i];
            }
            problems.push_back(std::move(p));
        }
        return problems;
    }

private:
    std::string user_prompt(const summary_request& r) const {
        namespace st = detail::summary_text;
        std::string p;
        const bool update = r.previous_summary && !st::trim(*r.previous_summary).empty();
        if (update) {
            p += "<previous-summary>\n";
            p += st::trim(*r.previous_summary);
            p += "\n</previous-summary>\n\n<new-events>\n";
            p += r.events.empty() ? std::string("(none)\n") : transcript(r.events);
            p += "</new-events>\n\n";
        } else {
            p += "<transcript>\n";
            p += r.events.empty() ? std::string("(no earlier messages)\n") : transcript(r.events);
            p += "</transcript>\n\n";
        }
        if (!r.turn_prefix.empty()) {
            p += "<turn-start>\n";
            p += transcript(r.turn_prefix);
            p += "</turn-start>\n\n";
        }
        if (update) {
            p += "The previous summary covers the conversation up to the new events. Revise it so "
                 "that it covers them too: keep every fact in it that is still true, add the new "
                 "progress, decisions and open items, mark what the new events finished as done, and "
                 "drop only what they made obsolete. Edit the previous summary; do not summarize it. "
                 "Keep the sections.";
        } else {
            p += "Summarize the transcript above in the sections described.";
        }
        if (!r.turn_prefix.empty()) {
            p += "\n\nThe conversation stops in the middle of a turn: <turn-start> is the beginning of "
                 "the current turn (the user's request and the first steps taken), and the rest of that "
                 "turn stays in the assistant's memory word for word, right after your summary. After "
                 "the other sections, add a section \"";
            p += detail::summary_prompt::split_turn_heading;
            p += "\" stating the request of this turn and what had been done in it so far, so that the "
                 "kept messages make sense on their own.";
        }
        if (!r.identifiers.empty()) {
            p += "\n\nThese identifiers occur in the conversation. Copy each one into the summary exactly "
                 "as written (list those you do not mention elsewhere under \"## Critical identifiers\"):\n";
            for (const auto& id : r.identifiers) {
                p += "- ";
                p += id;
                p += '\n';
            }
            while (!p.empty() && p.back() == '\n') p.pop_back();
        }
        if (!st::trim(o_.extra_instructions).empty()) {
            p += "\n\nAdditional focus: ";
            p += st::trim(o_.extra_instructions);
        }
        return p;
    }

    static std::string retry_prompt(const std::vector<std::string>& problems) {
        std::string p = "This summary cannot be used: ";
        for (std::size_t i = 0; i < problems.size(); ++i) {
            if (i) p += "; ";
            p += problems[i];
        }
        p += ". Write the complete summary again, with all the sections, and correct this: the Goal "
             "section must state the user's latest request, and every identifier listed earlier must "
             "appear exactly as written. Reply with the summary only.";
        return p;
    }

    static summary empty_history(const model_summarizer& self, const summary_request& r) {
        summary s;
        bool has_prev = r.previous_summary && !detail::summary_text::trim(*r.previous_summary).empty();
        s.text = has_prev ? std::string(detail::summary_text::trim(*r.previous_summary)) : std::string(empty_history_text);
        s.produced_by = self.name();
        return s;
    }

    static boost::asio::awaitable<summary> run(model_summarizer self, summary_request r) {
        if (r.events.empty() && r.turn_prefix.empty()) co_return empty_history(self, r);
        const std::string who = self.name();
        llm_request req = self.build_request(r);
        std::optional<usage> spent;
        for (int attempt = 1;; ++attempt) {
            llm_request sent = req;
            boost::asio::awaitable<llm_response> op = generate_response(self.m_, std::move(sent));
            llm_response resp = co_await std::move(op);
            add_usage(spent, resp.usage);
            if (!resp.ok()) {
                std::string what = who + ": the model failed";
                if (!resp.error_message.empty()) what += ": " + resp.error_message;
                throw summary_error(resp.error, what, spent);
            }
            std::string text(detail::summary_text::trim(resp.text()));
            if (text.empty()) {
                throw summary_error(make_error_code(errc::bad_response), who + ": the model returned an empty summary",
                                    spent);
            }
            std::vector<std::string> problems;
            if (self.o_.quality_check) problems = quality_problems(text, r);
            if (problems.empty()) {
                summary s;
                s.text = std::move(text);
                s.usage = std::move(spent);
                s.produced_by = who;
                co_return s;
            }
            if (attempt >= 2) {
                std::string what = who + ": the summary failed the quality check twice: ";
                for (std::size_t i = 0; i < problems.size(); ++i) {
                    if (i) what += "; ";
                    what += problems[i];
                }
                throw summary_error(make_error_code(errc::bad_response), what, spent);
            }
            // One retry: the model sees its reply and what is wrong with it.
            req.messages.push_back(message::assistant(std::move(text)));
            req.messages.push_back(message::user(retry_prompt(problems)));
        }
    }

    Model m_;
    model_summarizer_options o_;
};

static_assert(summarizer<model_summarizer<>>);

} // namespace libretto

#endif
