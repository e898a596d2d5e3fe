// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_PROVIDER_SAMPLING_HPP
#define LIBRETTO_PROVIDER_SAMPLING_HPP

// Which sampling parameters of generation_options a model takes, so that a request carries
// only those: newer reasoning models reject temperature and top_p outright, some accept one
// of the two but not both. A table of model-name prefixes per provider, documented in
// docs/providers.md ("Sampling parameters") and replaceable in the provider's options.

#include <libretto/error.hpp>
#include <libretto/model/llm_request.hpp>

#include <boost/system/system_error.hpp>
#include <boost/throw_exception.hpp>

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace libretto {

/// What a model takes of generation_options' sampling parameters.
struct sampling_support {
    bool temperature = true;
    bool top_p = true;
    /// Both in one request; false: temperature is sent and top_p left out.
    bool temperature_with_top_p = true;

    friend bool operator==(const sampling_support&, const sampling_support&) = default;
};

/// Models whose name starts with `model_prefix` take `support`.
struct sampling_rule {
    std::string model_prefix;
    sampling_support support;

    friend bool operator==(const sampling_rule&, const sampling_rule&) = default;
};

/// What happens to a parameter the table says the model does not take.
enum class unsupported_sampling {
    drop, ///< left out of the request
    fail, ///< the generation fails with errc::invalid_argument naming it, before any I/O
};

/// The provider options' sampling configuration.
struct sampling_options {
    /// Model-name prefixes, the longest match wins; a model no rule matches takes everything.
    std::vector<sampling_rule> rules{};
    /// Replaces the table's answer for every model when set.
    std::optional<sampling_support> support{};
    unsupported_sampling unsupported = unsupported_sampling::drop;
};

/// The built-in table for OpenAI's API: its reasoning models take only the default
/// temperature and top_p ("Unsupported value: 'temperature' does not support 0.2 with this
/// model. Only the default (1) value is supported.").
inline std::vector<sampling_rule> openai_sampling_rules() {
    const sampling_support none{.temperature = false, .top_p = false, .temperature_with_top_p = false};
    return {{"o1", none}, {"o3", none}, {"o4", none}, {"gpt-5", none}};
}

/// The built-in table for Anthropic's API: from the Claude 4.5 generation (and Opus 4.1) a
/// request takes temperature or top_p, not both ("temperature and top_p cannot both be
/// specified for this model"); Opus 4.7 takes neither ("temperature is deprecated for this
/// model").
inline std::vector<sampling_rule> anthropic_sampling_rules() {
    const sampling_support one{.temperature = true, .top_p = true, .temperature_with_top_p = false};
    const sampling_support none{.temperature = false, .top_p = false, .temperature_with_top_p = false};
    return {{"claude-opus-4-1", one},   {"claude-opus-4-5", one},   {"claude-opus-4-6", one},
            {"claude-sonnet-4-5", one}, {"claude-sonnet-4-6", one}, {"claude-haiku-4-5", one},
            {"claude-opus-4-7", none}};
}

/// The support `options` give `model`: `support` if set, else the longest matching rule,
/// else everything.
inline sampling_support find_sampling_support(const sampling_options& options, std::string_view model) {
    if (options.support) return *options.support;
    const sampling_rule* best = nullptr;
    for (const auto& r : options.rules)
        if (model.substr(0, r.model_prefix.size()) == r.model_prefix &&
            (!best || r.model_prefix.size() > best->model_prefix.size()))
            best = &r;
    return best ? best->support : sampling_support{};
}

namespace detail {

/// The temperature and top_p to send for `g` to `model`: each left out (or, with
/// unsupported_sampling::fail, an invalid_argument error naming it) where the model does
/// not take it.
struct sampling_choice {
    std::optional<double> temperature;
    std::optional<double> top_p;
};

inline sampling_choice choose_sampling(const generation_options& g, const sampling_options& options,
                                       std::string_view model, const sampling_support& support) {
    // No provider reads a NaN, an infinity or a negative value: a NaN would even go out as
    // null. top_p is a probability mass.
    auto out_of_range = [](std::string_view what, double v, std::string_view range) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", v);
        boost::throw_exception(boost::system::system_error(
            make_error_code(errc::invalid_argument),
            "generation_options." + std::string(what) + " is " + buf + ", not " + std::string(range)));
    };
    if (g.temperature && !(*g.temperature >= 0 && std::isfinite(*g.temperature)))
        out_of_range("temperature", *g.temperature, "a finite number >= 0");
    if (g.top_p && !(*g.top_p >= 0 && *g.top_p <= 1)) out_of_range("top_p", *g.top_p, "a number from 0 to 1");
    sampling_choice out{g.temperature, g.top_p};
    auto refuse = [&](std::string_view what, std::string_view why) {
        if (options.unsupported == unsupported_sampling::fail)
            boost::throw_exception(boost::system::system_error(
                make_error_code(errc::invalid_argument),
                "generation_options." + std::string(what) + ": model '" + std::string(model) + "' " + std::string(why) +
                    " (sampling_options::unsupported is fail)"));
    };
    if (out.temperature && !support.temperature) {
        refuse("temperature", "does not take temperature");
        out.temperature.reset();
    }
    if (out.top_p && !support.top_p) {
        refuse("top_p", "does not take top_p");
        out.top_p.reset();
    }
    if (out.temperature && out.top_p && !support.temperature_with_top_p) {
        refuse("top_p", "takes temperature or top_p, not both");
        out.top_p.reset();
    }
    return out;
}

} // namespace detail
} // namespace libretto

#endif
