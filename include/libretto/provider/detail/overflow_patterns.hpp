// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_DETAIL_OVERFLOW_PATTERNS_HPP
#define LIBRETTO_PROVIDER_DETAIL_OVERFLOW_PATTERNS_HPP

// The phrasings providers use for "the request does not fit the context window", as small
// case-insensitive patterns (no <regex>: it is slow to compile into every translation unit
// and these run only on error paths). Pattern language, written in lower case:
//
//   #        one or more digits or commas ("213,462")
//   *        any text
//   ~        zero or more white-space characters
//   ^        (first character only) the match must start at the beginning of the text
//   {a|b|}   alternatives, expanded once into separate patterns
//   other    itself, compared case-insensitively
//
// A message matches if some pattern occurs anywhere in it (or at its start with ^).

#include <libretto/provider/detail/text.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace libretto::detail {

/// pi-ai's OVERFLOW_PATTERNS (badlogic/pi-mono packages/ai/src/utils/overflow.ts; the 0.73.1
/// set and the later additions), the phrasings OpenClaw's overflow recovery recognises, and
/// the servers documented in docs/providers.md. The comment names who says it.
inline constexpr std::array<std::string_view, 35> overflow_pattern_sources = {
    "prompt {is |}too long",                                               // Anthropic; Ollama's hosted service "prompt too long; exceeded max context length by N tokens"
    "prompt too long; exceeded {max |}context length",                     // Ollama's hosted service
    "input length exceeds the context length",                             // Ollama (runner/ollamarunner/runner.go, llm/llama_server.go)
    "input {after truncation |}exceeds maximum context length",            // Ollama embeddings (server/routes.go)
    "request_too_large",                                                   // Anthropic 413 (request bytes)
    "input is too long for requested model",                               // Amazon Bedrock
    "input is too long for the model",                                     // OpenClaw
    "exceeds the context window",                                          // OpenAI (Chat Completions, Responses)
    "exceeds {the |}{model's |models |}maximum context length{ of # token|~(#)}", // LiteLLM, OpenAI-compatible proxies
    "input token count*exceeds the maximum",                               // Google Gemini; OpenClaw "input token count exceeds the maximum number of input tokens"
    "input exceeds the maximum number of tokens",                          // OpenClaw
    "maximum prompt length is #",                                          // xAI
    "reduce the length of the messages",                                   // Groq, vLLM
    "maximum context length is # tokens",                                  // OpenAI, OpenRouter, DeepSeek, vLLM
    "exceeds {the |}maximum allowed input length of # token",             // OpenRouter (Poolside)
    "input (# tokens) is longer than the model{'|}s context length (# tokens)", // Together AI
    "exceeds the limit of #",                                              // GitHub Copilot
    "exceeds the available context size",                                  // llama.cpp server ("request (N tokens) exceeds ...", older "the request exceeds ...")
    "is larger than the max context size",                                 // llama.cpp server ("input (N tokens) is larger than ...")
    "context size has been exceeded",                                      // llama.cpp server and LM Studio, during generation
    "greater than the context length",                                     // LM Studio ("The number of tokens to keep ... is greater than the context length")
    "when context the overflows",                                          // older LM Studio ("Trying to keep the first N tokens when context the overflows")
    "cannot truncate prompt with n_keep",                                  // LM Studio 0.4
    "context window exceeds limit",                                        // MiniMax
    "exceeded model token limit",                                          // Kimi
    "too large for model with # maximum context length",                   // Mistral
    "prompt has # token{s|}, but the configured context size is # token",  // DS4 server
    "model_context_window_exceeded",                                       // z.ai; Anthropic stop reason
    "range of input length should be",                                     // DashScope (Qwen)
    "is longer than the maximum model length",                             // vLLM ("The decoder prompt (length N) is longer than ...")
    "exceed context limit",                                                // Anthropic "input length and `max_tokens` exceed context limit: a + b > c"
    "context{_| }length{_| }exceeded",                                     // OpenAI code context_length_exceeded; OpenClaw "ollama error: context length exceeded"
    "too many tokens",                                                     // generic
    "token limit exceeded",                                                // generic
    "^4{00|13}~{status code|}~(no body)",                                  // Cerebras: an empty 400/413
};

/// Messages that look like overflow but are rate limits or throttling (pi-ai's
/// NON_OVERFLOW_PATTERNS): "Throttling error: too many tokens" must be retried, not compacted.
inline constexpr std::array<std::string_view, 3> non_overflow_pattern_sources = {
    "^{throttling error|service unavailable}:",
    "rate limit",
    "too many requests",
};

/// A parameter the model or server rejects (errc::invalid_argument): neither waiting nor
/// compaction helps, and the message names the parameter. vLLM's max_tokens message also
/// says "maximum context length is N tokens", so these are checked before overflow.
inline constexpr std::array<std::string_view, 6> rejected_parameter_pattern_sources = {
    "'max_tokens' or 'max_completion_tokens' is too large",                // vLLM (serving_engine.py _validate_input)
    "cannot both be specified for this model",                             // Anthropic: "temperature and top_p cannot both be specified for this model"
    "is deprecated for this model",                                        // Anthropic: "temperature is deprecated for this model."
    "^unsupported value: '",                                               // OpenAI: "Unsupported value: 'temperature' does not support 0.2 with this model."
    "^unsupported parameter: '",                                           // OpenAI: "Unsupported parameter: 'max_tokens' is not supported with this model."
    "only # is allowed for this model",                                    // Kimi: "invalid temperature: only 1 is allowed for this model"
};

/// A 429 for one request larger than a per-minute token limit: waiting never lets it through
/// (errc::model_error). OpenAI: "Request too large for gpt-4o in organization org-x on tokens
/// per min (TPM): Limit 30000, Requested 36278. The input or output tokens must be reduced".
inline constexpr std::array<std::string_view, 1> request_too_large_pattern_sources = {
    "request too large for *per min",
};

/// Appends the plain patterns `source` expands to (every combination of its {a|b} groups).
inline void expand_pattern(std::string_view source, std::vector<std::string>& out) {
    std::size_t open = source.find('{');
    if (open == std::string_view::npos) {
        out.emplace_back(source);
        return;
    }
    std::size_t close = source.find('}', open);
    std::string_view head = source.substr(0, open);
    std::string_view group = source.substr(open + 1, close - open - 1);
    std::string_view tail = source.substr(close + 1);
    for (;;) {
        std::size_t bar = group.find('|');
        std::string alt(head);
        alt += group.substr(0, bar);
        alt += tail;
        expand_pattern(alt, out);
        if (bar == std::string_view::npos) break;
        group.remove_prefix(bar + 1);
    }
}

template <std::size_t N>
std::vector<std::string> expand_patterns(const std::array<std::string_view, N>& sources) {
    std::vector<std::string> out;
    for (std::string_view s : sources) expand_pattern(s, out);
    return out;
}

/// The expanded overflow patterns, built once.
inline const std::vector<std::string>& overflow_patterns() {
    static const std::vector<std::string> p = expand_patterns(overflow_pattern_sources);
    return p;
}

inline const std::vector<std::string>& non_overflow_patterns() {
    static const std::vector<std::string> p = expand_patterns(non_overflow_pattern_sources);
    return p;
}

inline const std::vector<std::string>& rejected_parameter_patterns() {
    static const std::vector<std::string> p = expand_patterns(rejected_parameter_pattern_sources);
    return p;
}

inline const std::vector<std::string>& request_too_large_patterns() {
    static const std::vector<std::string> p = expand_patterns(request_too_large_pattern_sources);
    return p;
}

inline bool is_digit_or_comma(char c) noexcept { return (c >= '0' && c <= '9') || c == ','; }

/// Does pattern `p` match a prefix of `t`?
inline bool match_here(std::string_view p, std::string_view t) noexcept {
    while (!p.empty()) {
        char pc = p.front();
        if (pc == '*') {
            p.remove_prefix(1);
            for (std::size_t skip = 0; skip <= t.size(); ++skip)
                if (match_here(p, t.substr(skip))) return true;
            return false;
        }
        if (pc == '#' || pc == '~') {
            p.remove_prefix(1);
            std::size_t n = 0;
            while (n < t.size() && (pc == '#' ? is_digit_or_comma(t[n]) : is_http_space(t[n]))) ++n;
            const std::size_t min = pc == '#' ? 1 : 0;
            for (std::size_t k = n + 1; k-- > min;)
                if (match_here(p, t.substr(k))) return true;
            return false;
        }
        if (t.empty() || ascii_lower(t.front()) != pc) return false;
        p.remove_prefix(1);
        t.remove_prefix(1);
    }
    return true;
}

inline bool pattern_matches(std::string_view pattern, std::string_view text) noexcept {
    if (!pattern.empty() && pattern.front() == '^') return match_here(pattern.substr(1), text);
    const char first = pattern.empty() ? '\0' : pattern.front();
    for (std::size_t i = 0; i <= text.size(); ++i) {
        // Cheap first-character filter for the common literal start.
        if (first != '*' && first != '#' && first != '~' && first != '\0' &&
            (i == text.size() || ascii_lower(text[i]) != first))
            continue;
        if (match_here(pattern, text.substr(i))) return true;
    }
    return false;
}

inline bool any_pattern_matches(const std::vector<std::string>& patterns, std::string_view text) noexcept {
    for (const auto& p : patterns)
        if (pattern_matches(p, text)) return true;
    return false;
}

} // namespace libretto::detail

#endif
