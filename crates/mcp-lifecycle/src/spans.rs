//! The trace spans of MCP traffic and of a server's life, after OpenTelemetry's MCP semantic
//! conventions: a request is `{mcp.method.name} {target}` (the tool, prompt or resource it
//! names), with `mcp.method.name`, `jsonrpc.request.id`, `mcp.session.id`,
//! `mcp.protocol.version`, `gen_ai.tool.name` and `error.type`; a client span for what
//! BotCraft sends a server ([`sent`], or [`sent_tool_call`] for a `tools/call` with no
//! request built, its trace context put in the request's `params._meta`; the gateway's server spans, for what its clients send, use the same
//! naming). A server's start (`start {server}`: its initialize and first `tools/list`
//! inside), stop (`stop {server}`, with the reason) and restart are spans too.
//!
//! Every span is TRACE under [`observability::TRACE_TARGET`]: disabled where it is written,
//! at the cost of a check, unless traces are exported.

use std::fmt;

use rmcp::model::ClientRequest;
use tracing::field::Empty;
use tracing::{Level, Span};

use observability::{TRACE_TARGET, TRACEPARENT};

/// What a request names: the tool of `tools/call`, the prompt of `prompts/get`, the
/// resource of `resources/read` and of (un)subscribe.
pub fn request_target(request: &ClientRequest) -> Option<&str> {
    match request {
        ClientRequest::CallToolRequest(call) => Some(&call.params.name),
        ClientRequest::GetPromptRequest(get) => Some(&get.params.name),
        ClientRequest::ReadResourceRequest(read) => Some(&read.params.uri),
        ClientRequest::SubscribeRequest(subscribe) => Some(&subscribe.params.uri),
        ClientRequest::UnsubscribeRequest(unsubscribe) => Some(&unsubscribe.params.uri),
        _ => None,
    }
}

/// `{method} {target}`, or the method alone; formatted only when the span is recorded.
pub struct SpanName<'a>(pub &'a str, pub Option<&'a str>);

impl fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            Some(target) => write!(f, "{} {target}", self.0),
            None => f.write_str(self.0),
        }
    }
}

/// The client span of `request`, sent to `server`.
pub fn sent(server: &str, request: &ClientRequest) -> Span {
    let target = request_target(request);
    let tool = matches!(request, ClientRequest::CallToolRequest(_))
        .then_some(target)
        .flatten();
    client_span(server, request.method(), target, tool)
}

/// The client span of a `tools/call` of `tool` sent to `server`: [`sent`]'s, without a
/// request to build.
pub fn sent_tool_call(server: &str, tool: &str) -> Span {
    client_span(server, "tools/call", Some(tool), Some(tool))
}

fn client_span(server: &str, method: &str, target: Option<&str>, tool: Option<&str>) -> Span {
    tracing::span!(
        target: TRACE_TARGET,
        Level::TRACE,
        "mcp.client",
        otel.name = %SpanName(method, target),
        otel.kind = "client",
        otel.status_code = Empty,
        mcp.method.name = method,
        gen_ai.tool.name = tool,
        gen_ai.operation.name = tool.map(|_| "execute_tool"),
        botcraft.server.name = server,
        jsonrpc.request.id = Empty,
        mcp.protocol.version = Empty,
        error.type = Empty,
    )
}

/// Puts the trace context of `span` in `request`'s `params._meta` (replacing any the client
/// sent: the server's spans are children of BotCraft's).
pub fn carry_context(span: &Span, request: &mut ClientRequest) {
    if let Some(traceparent) = observability::traceparent_of(span) {
        use rmcp::model::GetMeta as _;
        request
            .get_meta_mut()
            .0
            .insert(TRACEPARENT.to_owned(), traceparent.into());
    }
}

/// Marks `span` failed, `kind` being the `error.type` (a short stable word).
pub fn failed(span: &Span, kind: &str) {
    span.record("error.type", kind);
    span.record("otel.status_code", "ERROR");
}

/// A server's start, and why it was started.
pub(crate) fn start(server: &str, why: &'static str) -> Span {
    tracing::span!(
        target: TRACE_TARGET,
        Level::TRACE,
        "start",
        otel.name = %SpanName("start", Some(server)),
        botcraft.server.name = server,
        botcraft.start.reason = why,
        botcraft.server.transport = Empty,
        mcp.protocol.version = Empty,
        botcraft.server.tools = Empty,
        process.pid = Empty,
        otel.status_code = Empty,
        error.type = Empty,
    )
}

/// A server's initialize (spawn and handshake, or connection).
pub(crate) fn initialize(server: &str) -> Span {
    tracing::span!(
        target: TRACE_TARGET,
        Level::TRACE,
        "mcp.client",
        otel.name = %SpanName("initialize", Some(server)),
        otel.kind = "client",
        mcp.method.name = "initialize",
        botcraft.server.name = server,
        otel.status_code = Empty,
        error.type = Empty,
    )
}

/// A server's stop, and why.
pub(crate) fn stop(server: &str, why: StopReason) -> Span {
    tracing::span!(
        target: TRACE_TARGET,
        Level::TRACE,
        "stop",
        otel.name = %SpanName("stop", Some(server)),
        botcraft.server.name = server,
        botcraft.stop.reason = why.as_str(),
    )
}

/// A restart after a crash or after the server stopped answering.
pub(crate) fn restart(server: &str, attempt: u32, delay_ms: u64) -> Span {
    tracing::span!(
        target: TRACE_TARGET,
        Level::TRACE,
        "restart",
        otel.name = %SpanName("restart", Some(server)),
        botcraft.server.name = server,
        botcraft.restart.attempt = attempt,
        botcraft.restart.delay_ms = delay_ms,
    )
}

/// Why a server is stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// Someone asked (the API, the CLI, a restart).
    Asked,
    /// Unused for its idle timeout.
    Idle,
    /// Its configuration changed or was removed.
    Reconfigured,
    /// Its OAuth credentials changed.
    Credentials,
    /// Started only to list its tools.
    Listed,
    /// BotCraft is shutting down.
    Shutdown,
    /// It stopped answering (it is restarted).
    Unresponsive,
}

impl StopReason {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Asked => "asked",
            Self::Idle => "idle",
            Self::Reconfigured => "reconfigured",
            Self::Credentials => "credentials",
            Self::Listed => "listed",
            Self::Shutdown => "shutdown",
            Self::Unresponsive => "unresponsive",
        }
    }
}
