//! BotCraft's metrics, named and labelled once here so every recording point agrees:
//! MCP server lifecycle, tool calls, tool search and LLM provider requests. All names start
//! with `botcraft_`; durations are in seconds.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::error::MetricsError;
use crate::registry::{Counter, Gauge, Histogram, Registry};

/// The states a server can be in, as `mcp-lifecycle` writes them; the state gauge has one
/// series per state so a dashboard can sum by state.
pub const SERVER_STATES: [&str; 5] = ["stopped", "starting", "running", "stopping", "error"];

/// Tool call latency buckets, seconds: from a fast local tool to a long shell command.
pub const TOOL_CALL_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 30.0, 120.0,
];

/// Provider request buckets, seconds: a whole streamed step.
pub const PROVIDER_BUCKETS: [f64; 10] = [0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0];

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCallOutcome {
    /// A result without `isError`.
    Ok,
    /// A result with `isError: true` (the model is told).
    ToolError,
    /// The server's deadline passed.
    Timeout,
    /// No result: the server could not start, died, or the call was refused.
    Failed,
    /// The caller gave up (client hung up, shutdown).
    Cancelled,
}

impl ToolCallOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ToolError => "tool_error",
            Self::Timeout => "timeout",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// Which face a tool call came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallPath {
    /// A chat turn (`POST /api/ai/chat`).
    Chat,
    /// The admin API's test call (`POST /api/servers/{server}/tools/{tool}/call`).
    Admin,
    /// The `/mcp` gateway.
    Mcp,
}

impl CallPath {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Admin => "admin",
            Self::Mcp => "mcp",
        }
    }
}

/// How a provider request (one streamed model step) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderOutcome {
    Ok,
    Error,
    Cancelled,
}

impl ProviderOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Cancelled => "cancelled",
        }
    }
}

/// Every BotCraft metric, registered in one [`Registry`]. Cheap to clone (shared).
#[derive(Debug, Clone)]
pub struct BotCraftMetrics {
    registry: Registry,
    server_starts: Counter<1>,
    server_crashes: Counter<1>,
    server_restarts: Counter<1>,
    server_state: Gauge<2>,
    tool_calls: Counter<4>,
    tool_call_seconds: Histogram<2>,
    tool_searches: Counter<1>,
    tool_search_follow_ups: Counter<1>,
    provider_requests: Counter<3>,
    provider_request_seconds: Histogram<2>,
    provider_tokens: Counter<3>,
    chat_streams: Gauge<0>,
    chat_streams_refused: Counter<1>,
}

impl BotCraftMetrics {
    /// The metric set in a new registry.
    pub fn new() -> Result<Self, MetricsError> {
        Self::register(Registry::new())
    }

    /// The metric set in `registry`.
    pub fn register(registry: Registry) -> Result<Self, MetricsError> {
        let r = &registry;
        Ok(Self {
            server_starts: r.counter(
                "botcraft_mcp_server_starts_total",
                "MCP server starts that reached the running state.",
                ["server"],
            )?,
            server_crashes: r.counter(
                "botcraft_mcp_server_crashes_total",
                "MCP servers that entered the error state (a failed start or an unexpected exit).",
                ["server"],
            )?,
            server_restarts: r.counter(
                "botcraft_mcp_server_restarts_total",
                "Automatic restarts of MCP servers since BotCraft started.",
                ["server"],
            )?,
            server_state: r.gauge(
                "botcraft_mcp_server_state",
                "1 for the state each MCP server is in, 0 for the others.",
                ["server", "state"],
            )?,
            tool_calls: r.counter(
                "botcraft_tool_calls_total",
                "MCP tool calls by server, tool, outcome (ok, tool_error, timeout, failed, cancelled) and path (chat, admin, mcp).",
                ["server", "tool", "outcome", "path"],
            )?,
            tool_call_seconds: r.histogram(
                "botcraft_tool_call_duration_seconds",
                "MCP tool call latency.",
                ["server", "tool"],
                &TOOL_CALL_BUCKETS,
            )?,
            tool_searches: r.counter(
                "botcraft_tool_searches_total",
                "tool_search calls by outcome (found, empty, error).",
                ["outcome"],
            )?,
            tool_search_follow_ups: r.counter(
                "botcraft_tool_search_follow_ups_total",
                "tool_search calls that found tools, by whether one of the found tools was called later in the same turn.",
                ["called"],
            )?,
            provider_requests: r.counter(
                "botcraft_provider_requests_total",
                "LLM provider requests (one streamed model step) by provider, model and outcome.",
                ["provider", "model", "outcome"],
            )?,
            provider_request_seconds: r.histogram(
                "botcraft_provider_request_duration_seconds",
                "LLM provider request duration, first byte sent to stream end.",
                ["provider", "model"],
                &PROVIDER_BUCKETS,
            )?,
            provider_tokens: r.counter(
                "botcraft_provider_tokens_total",
                "Tokens reported by LLM providers, by kind (input, output).",
                ["provider", "model", "kind"],
            )?,
            chat_streams: r.gauge(
                "botcraft_chat_streams",
                "Chat turns running now (each holds a place until its answer ends).",
                [],
            )?,
            chat_streams_refused: r.counter(
                "botcraft_chat_streams_refused_total",
                "Chat requests refused with 429 by the cap that refused them (per_key, total).",
                ["cap"],
            )?,
            registry,
        })
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The text exposition of every metric.
    pub fn encode(&self) -> String {
        self.registry.encode()
    }

    /// `server` moved to `state`: the state gauge follows; entering `running` counts a start,
    /// entering `error` a crash.
    pub fn server_state_changed(&self, server: &str, state: &str) {
        self.set_server_state(server, state);
        match state {
            "running" => self.server_starts.inc([server]),
            "error" => self.server_crashes.inc([server]),
            _ => {}
        }
    }

    /// Sets the state gauge of `server` (1 for `state`, 0 for the other states), without
    /// counting a transition: for a status copied in at scrape time.
    pub fn set_server_state(&self, server: &str, state: &str) {
        for known in SERVER_STATES {
            let value = if known == state { 1.0 } else { 0.0 };
            self.server_state.set([server, known], value);
        }
        if !SERVER_STATES.contains(&state) {
            self.server_state.set([server, state], 1.0);
        }
    }

    /// A chat turn took its place.
    pub fn chat_stream_started(&self) {
        self.chat_streams.add([], 1.0);
    }

    /// A chat turn's answer ended (read to its end, or dropped).
    pub fn chat_stream_ended(&self) {
        self.chat_streams.add([], -1.0);
    }

    /// A chat request was refused by `cap` (`per_key` or `total`).
    pub fn chat_stream_refused(&self, cap: &str) {
        self.chat_streams_refused.inc([cap]);
    }

    /// The manager's count of automatic restarts of `server` (a total kept by the manager).
    pub fn observe_server_restarts(&self, server: &str, restarts: u32) {
        self.server_restarts.raise_to([server], f64::from(restarts));
    }

    pub fn tool_call(
        &self,
        path: CallPath,
        server: &str,
        tool: &str,
        outcome: ToolCallOutcome,
        took: Duration,
    ) {
        self.tool_calls
            .inc([server, tool, outcome.as_str(), path.as_str()]);
        self.tool_call_seconds
            .observe([server, tool], took.as_secs_f64());
    }

    /// A `tool_search` call that returned `found` tools, or failed (`None`).
    pub fn tool_search(&self, found: Option<usize>) {
        let outcome = match found {
            Some(0) => "empty",
            Some(_) => "found",
            None => "error",
        };
        self.tool_searches.inc([outcome]);
    }

    /// Ends a turn's follow-up tracking: one count per search that found tools.
    pub fn tool_search_follow_ups(&self, tracker: &SearchFollowUps) {
        for search in &tracker.searches {
            let called = if search.called { "yes" } else { "no" };
            self.tool_search_follow_ups.inc([called]);
        }
    }

    /// One provider request: its outcome, duration and reported tokens.
    pub fn provider_request(
        &self,
        provider: &str,
        model: &str,
        outcome: ProviderOutcome,
        took: Duration,
        tokens: Option<TokenUsage>,
    ) {
        self.provider_requests
            .inc([provider, model, outcome.as_str()]);
        self.provider_request_seconds
            .observe([provider, model], took.as_secs_f64());
        if let Some(tokens) = tokens {
            self.provider_tokens
                .inc_by([provider, model, "input"], tokens.input as f64);
            self.provider_tokens
                .inc_by([provider, model, "output"], tokens.output as f64);
        }
    }
}

/// Tokens a provider reported for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenUsage {
    pub input: u64,
    pub output: u64,
}

#[derive(Debug, Clone, Default)]
struct FoundTools {
    tools: BTreeSet<String>,
    called: bool,
}

/// Within one chat turn: which `tool_search` results were then called. Feed it every search
/// result and every tool call; hand it to [`BotCraftMetrics::tool_search_follow_ups`] when
/// the turn ends.
#[derive(Debug, Clone, Default)]
pub struct SearchFollowUps {
    searches: Vec<FoundTools>,
}

impl SearchFollowUps {
    pub fn new() -> Self {
        Self::default()
    }

    /// A search found these tools (names as the model calls them); an empty result is not
    /// tracked.
    pub fn searched<I, S>(&mut self, found: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let tools: BTreeSet<String> = found.into_iter().map(Into::into).collect();
        if !tools.is_empty() {
            self.searches.push(FoundTools {
                tools,
                called: false,
            });
        }
    }

    /// The model called `tool`: every earlier search that found it counts as followed.
    pub fn called(&mut self, tool: &str) {
        for search in &mut self.searches {
            if search.tools.contains(tool) {
                search.called = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn metrics() -> BotCraftMetrics {
        BotCraftMetrics::new().expect("the metric set registers")
    }

    #[test]
    fn state_changes_move_the_gauge_and_count_starts_and_crashes() {
        let m = metrics();
        for state in [
            "starting", "running", "error", "starting", "running", "stopping",
        ] {
            m.server_state_changed("bash", state);
        }
        let gauge: Vec<f64> = SERVER_STATES
            .iter()
            .map(|state| m.server_state.get(["bash", state]))
            .collect();
        assert_eq!(gauge, vec![0.0, 0.0, 0.0, 1.0, 0.0]);
        assert_eq!(m.server_starts.get(["bash"]), 2.0);
        assert_eq!(m.server_crashes.get(["bash"]), 1.0);
    }

    #[test]
    fn restarts_follow_the_managers_total_and_never_go_down() {
        let m = metrics();
        for total in [1, 3, 2] {
            m.observe_server_restarts("bash", total);
        }
        assert_eq!(m.server_restarts.get(["bash"]), 3.0);
    }

    #[test]
    fn tool_calls_count_by_outcome_and_time_the_call() {
        let m = metrics();
        m.tool_call(
            CallPath::Chat,
            "fs",
            "read",
            ToolCallOutcome::Ok,
            Duration::from_millis(20),
        );
        m.tool_call(
            CallPath::Mcp,
            "fs",
            "read",
            ToolCallOutcome::Timeout,
            Duration::from_secs(200),
        );
        assert_eq!(m.tool_calls.get(["fs", "read", "ok", "chat"]), 1.0);
        assert_eq!(m.tool_calls.get(["fs", "read", "timeout", "mcp"]), 1.0);
        assert_eq!(m.tool_calls.get(["fs", "read", "timeout", "chat"]), 0.0);
        let latency = m.tool_call_seconds.get(["fs", "read"]);
        assert_eq!(latency.count, 2);
        assert_eq!(
            latency.counts.last(),
            Some(&1),
            "200 s is past the last bucket"
        );
    }

    #[test]
    fn a_search_counts_as_followed_only_when_a_found_tool_is_called() {
        let m = metrics();
        let mut turn = SearchFollowUps::new();
        turn.searched(["fs__read", "fs__write"]);
        turn.searched(["bash__run"]);
        turn.searched(Vec::<String>::new());
        turn.called("fs__write");
        turn.called("other__tool");
        m.tool_search(Some(2));
        m.tool_search(Some(1));
        m.tool_search(Some(0));
        m.tool_search(None);
        m.tool_search_follow_ups(&turn);
        assert_eq!(m.tool_search_follow_ups.get(["yes"]), 1.0);
        assert_eq!(m.tool_search_follow_ups.get(["no"]), 1.0);
        assert_eq!(
            ["found", "empty", "error"].map(|o| m.tool_searches.get([o])),
            [2.0, 1.0, 1.0]
        );
    }

    #[test]
    fn provider_requests_count_tokens_by_kind() {
        let m = metrics();
        let usage = TokenUsage {
            input: 120,
            output: 30,
        };
        m.provider_request(
            "openai",
            "gpt-4o",
            ProviderOutcome::Ok,
            Duration::from_millis(800),
            Some(usage),
        );
        m.provider_request(
            "openai",
            "gpt-4o",
            ProviderOutcome::Error,
            Duration::from_millis(10),
            None,
        );
        assert_eq!(m.provider_requests.get(["openai", "gpt-4o", "ok"]), 1.0);
        assert_eq!(m.provider_requests.get(["openai", "gpt-4o", "error"]), 1.0);
        assert_eq!(m.provider_tokens.get(["openai", "gpt-4o", "input"]), 120.0);
        assert_eq!(m.provider_tokens.get(["openai", "gpt-4o", "output"]), 30.0);
    }
}
