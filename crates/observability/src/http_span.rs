//! [`trace_http`]: an axum middleware giving each HTTP request a server span
//! (`{method} {route}`, with `http.request.method`, `http.route`, `url.path` and
//! `http.response.status_code`), continuing the trace of an incoming `traceparent` header.
//! A chat turn's spans are its children. `/mcp` is left to the gateway, whose spans are per
//! MCP request. Disabled, at the cost of a check, unless traces are exported.

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use tracing::field::Empty;
use tracing::{Instrument as _, Level};

use crate::telemetry::{TRACE_TARGET, TRACEPARENT, continue_trace};

/// The middleware (`axum::middleware::from_fn(trace_http)`, added with `Router::layer` so
/// that the route is known).
pub async fn trace_http(request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if path == "/mcp" || path.starts_with("/mcp/") {
        return next.run(request).await;
    }
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or(path, MatchedPath::as_str);
    let method = request.method().as_str();
    let span = tracing::span!(
        target: TRACE_TARGET,
        Level::TRACE,
        "http.server",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = Empty,
        http.request.method = method,
        http.route = route,
        url.path = path,
        http.response.status_code = Empty,
        error.type = Empty,
    );
    if span.is_disabled() {
        return next.run(request).await;
    }
    if let Some(traceparent) = request
        .headers()
        .get(TRACEPARENT)
        .and_then(|value| value.to_str().ok())
    {
        continue_trace(&span, traceparent);
    }
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status();
    span.record("http.response.status_code", status.as_u16());
    if status.is_server_error() {
        span.record("error.type", status.as_str());
        span.record("otel.status_code", "ERROR");
    }
    response
}
