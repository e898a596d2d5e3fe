// Copyright (c) 2026 The libretto authors. Distributed under the Boost Software License 1.0.
#ifndef LIBRETTO_CONTEXT_INVOCATION_CONTEXT_HPP
#define LIBRETTO_CONTEXT_INVOCATION_CONTEXT_HPP

// The run-time state passed through every agent of one invocation (one user turn).
//
// The agent name, the branch and the resumable flag are per context, copied by derive();
// everything that is the same for the whole call tree (the invocation's ids and input,
// state, per-agent states, the long-running call ids, the end-invocation switch, the
// event callback) is shared by reference between a context and everything derived from
// it. The session is held per context (clear_session gives a child its own).

#include <libretto/error.hpp>
#include <libretto/event/event.hpp>
#include <libretto/session/session.hpp>
#include <libretto/session/state.hpp>
#include <libretto/stream/event_stream.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/system/system_error.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace libretto {

class any_artifact_service;
class any_memory_service;

/// Pushes an event to the parent stream immediately (tools and agent_tool use it).
using event_callback = std::function<void(event)>;

class invocation_context;

/// Starts the agent named `name` of the invocation's agent tree on `ctx` (transfer_to_agent
/// uses it); nullopt when the tree has no agent of that name. Set by whoever runs the root
/// (the runner), from the root agent (agent/agent.hpp: agent_launcher_for).
using agent_launcher = std::function<std::optional<event_stream>(std::string_view name, invocation_context ctx)>;

/// Compacts `session` now, for an agent whose model reported a context overflow: returns
/// the compaction event to emit (not stored yet), or nullopt when nothing can be compacted
/// or `session` is not the one the hook's owner (the runner) compacts. Set by the runner
/// when it has a compaction policy.
using compaction_hook = std::function<boost::asio::awaitable<std::optional<event>>(const session& s)>;

/// The shape of an agent tree, by name: what reset_sub_agent_states walks.
struct agent_node {
    std::string name;
    std::vector<agent_node> sub_agents;

    /// Depth-first search for `n`, this node included; nullptr if absent.
    const agent_node* find(std::string_view n) const noexcept {
        if (name == n) return this;
        for (const auto& s : sub_agents)
            if (auto f = s.find(n)) return f;
        return nullptr;
    }
};

/// How to build the root context of an invocation.
struct invocation_options {
    std::string invocation_id{}; ///< empty: a fresh UUID
    std::string session_id{};
    std::string user_id{};
    std::string app_name{};
    std::string agent_name{};
    std::string branch{};
    /// The session the invocation runs on; empty: a fresh session with the ids above.
    std::shared_ptr<libretto::session> session{};
    /// Initial state; empty: a copy of the session's state.
    std::optional<json::object> state{};
    std::optional<std::string> input_content{}; ///< the user input that started the turn
    bool is_resumable = false;
    json::object run_config{};
    /// Model calls the whole invocation may make (every agent, retries and agent_tool
    /// children included); 0: no limit. ADK's RunConfig.max_llm_calls, same default.
    std::size_t max_llm_calls = 500;
    std::shared_ptr<const agent_node> agent_tree{};
    libretto::event_callback event_callback{};
    /// Where the agents of this invocation run their streams, models and tools.
    boost::asio::any_io_executor executor{};
    libretto::agent_launcher agent_launcher{};
    libretto::compaction_hook compaction_hook{};
    /// The invocation's artifact service (store/any_artifact_service.hpp); null: none. It
    /// must outlive the invocation; derived contexts and agent_tool children share it.
    any_artifact_service* artifacts = nullptr;
    /// The invocation's memory service (store/any_memory_service.hpp); null: none.
    any_memory_service* memory = nullptr;
    /// What was recalled from memory for this turn's user message (runner_options::
    /// memory_preload), as text for the model's instruction; empty: nothing.
    std::string recalled_memory{};
};

/// Which events get_events returns.
struct event_filter {
    bool current_branch = false;     ///< only events whose branch equals this context's
    bool current_invocation = false; ///< only events of this invocation
};

class invocation_context {
public:
    explicit invocation_context(invocation_options o = {})
        : agent_name_(std::move(o.agent_name)), branch_(std::move(o.branch)), is_resumable_(o.is_resumable),
          shared_(std::make_shared<shared>()) {
        auto& sh = *shared_;
        sh.invocation_id = o.invocation_id.empty() ? event::new_id() : std::move(o.invocation_id);
        sh.session_id = std::move(o.session_id);
        sh.user_id = std::move(o.user_id);
        sh.app_name = std::move(o.app_name);
        sh.input_content = std::move(o.input_content);
        if (!o.session) {
            o.session = std::make_shared<libretto::session>();
            o.session->id = sh.session_id;
            o.session->app_name = sh.app_name;
            o.session->user_id = sh.user_id;
        }
        session_ = std::move(o.session);
        // Ids not given are taken from the session, so ctx.session_id() is never blank
        // while the session has an id.
        if (sh.session_id.empty()) sh.session_id = session_->id;
        if (sh.user_id.empty()) sh.user_id = session_->user_id;
        if (sh.app_name.empty()) sh.app_name = session_->app_name;
        sh.state = libretto::state(o.state ? std::move(*o.state) : session_->state);
        sh.run_config = std::move(o.run_config);
        sh.max_llm_calls = o.max_llm_calls;
        sh.agent_tree = std::move(o.agent_tree);
        sh.callback = std::move(o.event_callback);
        sh.executor = std::move(o.executor);
        sh.launcher = std::move(o.agent_launcher);
        sh.compaction_hook = std::move(o.compaction_hook);
        sh.artifacts = o.artifacts;
        sh.memory = o.memory;
        sh.recalled_memory = std::move(o.recalled_memory);
    }

    // ---- identity ---------------------------------------------------------------------
    const std::string& invocation_id() const noexcept { return shared_->invocation_id; }
    const std::string& session_id() const noexcept { return shared_->session_id; }
    const std::string& user_id() const noexcept { return shared_->user_id; }
    const std::string& app_name() const noexcept { return shared_->app_name; }
    const std::string& agent_name() const noexcept { return agent_name_; }
    const std::string& branch() const noexcept { return branch_; }
    const std::optional<std::string>& input_content() const noexcept { return shared_->input_content; }
    bool is_resumable() const noexcept { return is_resumable_; }
    void set_resumable(bool r) noexcept { is_resumable_ = r; }

    // ---- shared state -----------------------------------------------------------------
    libretto::state& state() noexcept { return shared_->state; }
    const libretto::state& state() const noexcept { return shared_->state; }
    libretto::session& session() noexcept { return *session_; }
    const libretto::session& session() const noexcept { return *session_; }
    std::shared_ptr<libretto::session> session_ptr() const noexcept { return session_; }
    const json::object& run_config() const noexcept { return shared_->run_config; }
    const agent_node* agent_tree() const noexcept { return shared_->agent_tree.get(); }
    void set_agent_tree(std::shared_ptr<const agent_node> tree) { shared_->agent_tree = std::move(tree); }

    /// The executor agents run on (empty if the context was built without one).
    const boost::asio::any_io_executor& get_executor() const noexcept { return shared_->executor; }
    void set_executor(boost::asio::any_io_executor ex) { shared_->executor = std::move(ex); }

    /// Starts agent `name` of the tree on `ctx` (see agent_launcher); nullopt if there is
    /// no launcher or no agent of that name.
    std::optional<event_stream> launch_agent(std::string_view name, invocation_context ctx) const {
        if (!shared_->launcher) return std::nullopt;
        return shared_->launcher(name, std::move(ctx));
    }
    void set_agent_launcher(libretto::agent_launcher l) { shared_->launcher = std::move(l); }

    /// True if the invocation can compact its session on demand (see compaction_hook).
    bool can_compact() const noexcept { return static_cast<bool>(shared_->compaction_hook); }
    /// Asks the runner for a compaction of this context's session (after a context-overflow
    /// error): the compaction event to emit, or nullopt (no hook, nothing to compact, or a
    /// session of its own, as agent_tool's children have).
    template <class = void> // a template: g++ 12 compiles it only where used (detail/config.hpp)
    boost::asio::awaitable<std::optional<event>> compact_now() const {
        if (!shared_->compaction_hook) co_return std::nullopt;
        auto hook = shared_->compaction_hook; // the operation may outlive a reassignment
        boost::asio::awaitable<std::optional<event>> op = hook(*session_);
        std::optional<event> e = co_await std::move(op);
        co_return e;
    }
    void set_compaction_hook(libretto::compaction_hook h) { shared_->compaction_hook = std::move(h); }

    /// The invocation's artifact service; null when it has none (callback_context's
    /// artifact calls then fail with errc::invalid_argument).
    any_artifact_service* artifact_service() const noexcept { return shared_->artifacts; }
    void set_artifact_service(any_artifact_service* a) noexcept { shared_->artifacts = a; }

    /// The invocation's memory service; null when it has none.
    any_memory_service* memory_service() const noexcept { return shared_->memory; }
    void set_memory_service(any_memory_service* m) noexcept { shared_->memory = m; }
    /// What was recalled from memory for this turn (llm_agent adds it to its instruction).
    const std::string& recalled_memory() const noexcept { return shared_->recalled_memory; }
    void set_recalled_memory(std::string text) { shared_->recalled_memory = std::move(text); }

    /// Tool call ids that pause the invocation when requested (long-running tools).
    std::set<std::string, std::less<>>& long_running_tool_ids() noexcept { return shared_->long_running; }
    const std::set<std::string, std::less<>>& long_running_tool_ids() const noexcept { return shared_->long_running; }

    // ---- derivation -------------------------------------------------------------------

    /// A context for sub-agent `agent_name`: same invocation, branch extended by
    /// `branch_suffix` (default: the agent's name) with a dot; everything shared stays shared.
    /// Throws system_error(errc::invalid_argument) for an empty name, or a suffix with an
    /// empty segment (leading, trailing or doubled dot): an empty segment would give the
    /// child its parent's branch, or a path no branch test reads as meant.
    invocation_context derive(std::string agent_name, std::string_view branch_suffix = {}) const {
        std::string_view suffix = branch_suffix.empty() ? std::string_view(agent_name) : branch_suffix;
        if (agent_name.empty() || suffix.front() == '.' || suffix.back() == '.' ||
            suffix.find("..") != std::string_view::npos)
            throw boost::system::system_error(make_error_code(errc::invalid_argument),
                                              agent_name.empty() ? std::string("invocation_context::derive: empty agent name")
                                                                 : "invocation_context::derive: branch suffix '" +
                                                                       std::string(suffix) + "' has an empty segment");
        invocation_context c = *this;
        c.branch_ = branch_.empty() ? std::string(suffix) : branch_ + "." + std::string(suffix);
        c.agent_name_ = std::move(agent_name);
        return c;
    }

    /// A context for sub-agent `agent_name` on this context's branch: same invocation,
    /// everything shared. The children of sequential_agent and loop_agent run on it (ADK:
    /// only a parallel fork opens a branch; a sequence's children see each other).
    /// Throws system_error(errc::invalid_argument) for an empty name.
    invocation_context for_agent(std::string agent_name) const {
        if (agent_name.empty())
            throw boost::system::system_error(make_error_code(errc::invalid_argument),
                                              "invocation_context::for_agent: empty agent name");
        invocation_context c = *this;
        c.agent_name_ = std::move(agent_name);
        return c;
    }

    /// A copy whose session is new and empty (same ids, no events): the child of an
    /// agent_tool starts without the parent's conversation. State stays shared.
    invocation_context clear_session() const {
        invocation_context c = *this;
        auto fresh = std::make_shared<libretto::session>();
        fresh->id = session_->id;
        fresh->app_name = session_->app_name;
        fresh->user_id = session_->user_id;
        c.session_ = std::move(fresh);
        return c;
    }

    // ---- history ----------------------------------------------------------------------

    /// The session's events, optionally only this branch's and/or this invocation's.
    std::vector<const event*> get_events(event_filter f = {}) const {
        std::vector<const event*> out;
        for (const auto& e : session_->events) {
            if (f.current_branch && e.branch != branch_) continue;
            if (f.current_invocation && e.invocation_id != invocation_id()) continue;
            out.push_back(&e);
        }
        return out;
    }

    /// Final responses with text from earlier invocations, every branch.
    std::vector<const event*> get_previous_final_responses() const {
        std::vector<const event*> out;
        for (const auto& e : session_->events)
            if (e.invocation_id != invocation_id() && e.is_final_response() && !e.text().empty()) out.push_back(&e);
        return out;
    }

    // ---- per-agent execution state (composite agents) --------------------------------

    /// end_of_agent: marks `name` finished and drops its state. Otherwise a given
    /// `agent_state` is stored (and `name` is not finished); neither clears both.
    void set_agent_state(std::string_view name, std::optional<json::object> agent_state = std::nullopt,
                         bool end_of_agent = false) {
        auto& s = *shared_;
        std::string key(name);
        if (end_of_agent) {
            s.end_of_agents[key] = true;
            s.agent_states.erase(key);
        } else if (agent_state) {
            s.agent_states[key] = std::move(*agent_state);
            s.end_of_agents[key] = false;
        } else {
            s.agent_states.erase(key);
            s.end_of_agents.erase(key);
        }
    }

    /// The stored state of agent `name`, or nullptr.
    const json::object* agent_state(std::string_view name) const {
        auto it = shared_->agent_states.find(name);
        return it == shared_->agent_states.end() ? nullptr : &it->second;
    }

    /// True if agent `name` was marked finished.
    bool is_end_of_agent(std::string_view name) const {
        auto it = shared_->end_of_agents.find(name);
        return it != shared_->end_of_agents.end() && it->second;
    }

    /// Clears the state of every sub-agent of `name`, recursively (not `name` itself).
    /// Returns false if there is no agent tree or `name` is not in it.
    bool reset_sub_agent_states(std::string_view name) {
        const agent_node* root = shared_->agent_tree.get();
        const agent_node* node = root ? root->find(name) : nullptr;
        if (!node) return false;
        reset_below(*node);
        return true;
    }

    // ---- control flow -----------------------------------------------------------------

    /// True if the invocation is resumable and `e` requests a long-running tool call.
    bool should_pause_invocation(const event& e) const {
        if (!is_resumable_ || shared_->long_running.empty()) return false;
        for (const auto& c : e.tool_calls())
            if (shared_->long_running.contains(c.tool_call_id)) return true;
        return false;
    }

    /// Stops the whole invocation: every agent checks this between steps. Shared by the
    /// whole tree (orxhestra copies the flag, so a child cannot stop its parent).
    void end_invocation() noexcept { shared_->ended = true; }
    bool is_invocation_ended() const noexcept { return shared_->ended; }

    /// Counts one model call against max_llm_calls: false, and nothing counted, when the
    /// invocation has made that many already. Agents call it before each model call.
    bool count_llm_call() noexcept {
        auto& s = *shared_;
        if (s.max_llm_calls != 0 && s.llm_calls >= s.max_llm_calls) return false;
        ++s.llm_calls;
        return true;
    }
    /// Model calls counted so far in this invocation (all its agents).
    std::size_t llm_calls() const noexcept { return shared_->llm_calls; }
    /// The invocation's limit on model calls (0: none).
    std::size_t max_llm_calls() const noexcept { return shared_->max_llm_calls; }

    // ---- event callback ---------------------------------------------------------------

    /// The callback events are pushed through (shared by every derived context).
    const libretto::event_callback& event_callback() const noexcept { return shared_->callback; }
    void set_event_callback(libretto::event_callback cb) { shared_->callback = std::move(cb); }

    /// Pushes `e` through the callback; false if there is none.
    bool emit(event e) const {
        if (!shared_->callback) return false;
        shared_->callback(std::move(e));
        return true;
    }

private:
    /// What every context of the invocation shares: its ids (fixed for the whole
    /// invocation; shared so that moving and deriving a context copies no string), its state
    /// and its control switches.
    struct shared {
        std::string invocation_id;
        std::string session_id;
        std::string user_id;
        std::string app_name;
        std::optional<std::string> input_content;
        libretto::state state;
        std::map<std::string, json::object, std::less<>> agent_states;
        std::map<std::string, bool, std::less<>> end_of_agents;
        std::set<std::string, std::less<>> long_running;
        json::object run_config;
        std::shared_ptr<const agent_node> agent_tree;
        libretto::event_callback callback;
        boost::asio::any_io_executor executor;
        libretto::agent_launcher launcher;
        libretto::compaction_hook compaction_hook;
        any_artifact_service* artifacts = nullptr;
        any_memory_service* memory = nullptr;
        std::string recalled_memory;
        std::size_t max_llm_calls = 500;
        std::size_t llm_calls = 0;
        bool ended = false;
    };

    void reset_below(const agent_node& n) {
        for (const auto& s : n.sub_agents) {
            set_agent_state(s.name);
            reset_below(s);
        }
    }

    std::string agent_name_;
    std::string branch_;
    bool is_resumable_ = false;
    std::shared_ptr<libretto::session> session_;
    std::shared_ptr<shared> shared_;
};

} // namespace libretto

#endif
