//! Server spans for what BotCraft's MCP servers receive (the gateway on `/mcp` and
//! `/mcp/{server}`, the stdio bridges): [`received`] opens `{mcp.method.name} {target}`
//! (server kind), continuing the trace the client named in the request's
//! `params._meta.traceparent` or, over HTTP, its `traceparent` header; [`ended`] marks it
//! failed when the request did. What the server forwards is a client span inside it
//! ([`mcp_lifecycle::spans::sent`], or `sent_tool_call` for the bridge's `tools/call`), so
//! one trace runs from the client to the upstream server. Without an exporter the spans are disabled and this costs a check.

use rmcp::RoleServer;
use rmcp::model::{CallToolResponse, ErrorData};
use rmcp::service::RequestContext;
use tracing::{Level, Span, field::Empty};

use mcp_lifecycle::spans::SpanName;
use observability::{TRACE_TARGET, TRACEPARENT};

/// `traceparent`, as a header name (a name given as text is parsed on each lookup).
static TRACEPARENT_HEADER: http::HeaderName = http::HeaderName::from_static(TRACEPARENT);

fn header<'a>(parts: Option<&'a http::request::Parts>, name: &http::HeaderName) -> Option<&'a str> {
    parts?.headers.get(name)?.to_str().ok()
}

/// The server span of a request (`method`, naming `target`) received in `context`.
pub fn received(method: &str, target: Option<&str>, context: &RequestContext<RoleServer>) -> Span {
    let parts = context.extensions.get::<http::request::Parts>();
    let session = header(parts, &crate::auth::SESSION_HEADER_NAME);
    let tool = (method == "tools/call").then_some(target).flatten();
    let span = tracing::span!(
        target: TRACE_TARGET,
        Level::TRACE,
        "mcp.server",
        otel.name = %SpanName(method, target),
        otel.kind = "server",
        otel.status_code = Empty,
        mcp.method.name = method,
        gen_ai.tool.name = tool,
        gen_ai.operation.name = tool.map(|_| "execute_tool"),
        jsonrpc.request.id = %context.id,
        mcp.session.id = session,
        network.transport = if parts.is_some() { "tcp" } else { "pipe" },
        error.type = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    let from_meta = context
        .meta
        .0
        .get(TRACEPARENT)
        .and_then(|value| value.as_str());
    if let Some(traceparent) = from_meta.or_else(|| header(parts, &TRACEPARENT_HEADER)) {
        observability::continue_trace(&span, traceparent);
    }
    span
}

/// Marks `span` failed when `outcome` is a JSON-RPC error; gives `outcome` back.
pub fn ended<T>(span: &Span, outcome: Result<T, ErrorData>) -> Result<T, ErrorData> {
    if outcome.is_err() {
        mcp_lifecycle::spans::failed(span, "jsonrpc_error");
    }
    outcome
}

/// [`ended`] for `tools/call`, whose result may also be a tool error (`isError`).
pub fn ended_call(
    span: &Span,
    outcome: Result<CallToolResponse, ErrorData>,
) -> Result<CallToolResponse, ErrorData> {
    if let Ok(CallToolResponse::Complete(result)) = &outcome
        && result.is_error == Some(true)
    {
        mcp_lifecycle::spans::failed(span, "tool_error");
    }
    ended(span, outcome)
}
