//! [`TraceHttpLayer`]: a layer giving each HTTP request a server span
//! (`{method} {route}`, with `http.request.method`, `http.route`, `url.path` and
//! `http.response.status_code`), continuing the trace of an incoming `traceparent` header.
//! A chat turn's spans are its children. `/mcp` is left to the gateway, whose spans are per
//! MCP request. Disabled, at the cost of a check, unless traces are exported.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::extract::{MatchedPath, Request};
use axum::response::Response;
use futures::future::Either;
use tracing::field::Empty;
use tracing::{Instrument as _, Level};

use crate::telemetry::{TRACE_TARGET, TRACEPARENT, continue_trace};

/// The layer (`Router::layer(TraceHttpLayer)`, so that the route is known). A request it
/// does not trace (`/mcp`, or traces off) goes to its route with nothing added: no clone, no
/// boxed future, no allocation.
#[derive(Debug, Clone, Copy, Default)]
pub struct TraceHttpLayer;

impl<S> tower::Layer<S> for TraceHttpLayer {
    type Service = TraceHttp<S>;

    fn layer(&self, inner: S) -> Self::Service {
        TraceHttp { inner }
    }
}

/// A route behind [`TraceHttpLayer`].
#[derive(Debug, Clone)]
pub struct TraceHttp<S> {
    inner: S,
}

/// The future of a traced request.
type Traced = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

impl<S> tower::Service<Request> for TraceHttp<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<S::Future, Traced>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match span_of(&request) {
            None => Either::Left(self.inner.call(request)),
            Some(span) => {
                let answer = self.inner.call(request).instrument(span.clone());
                Either::Right(Box::pin(async move {
                    let response = answer.await?;
                    let status = response.status();
                    span.record("http.response.status_code", status.as_u16());
                    if status.is_server_error() {
                        span.record("error.type", status.as_str());
                        span.record("otel.status_code", "ERROR");
                    }
                    Ok(response)
                }))
            }
        }
    }
}

/// The server span of `request`, continuing its `traceparent`; `None` for `/mcp` and when
/// the span is disabled.
fn span_of(request: &Request) -> Option<tracing::Span> {
    let path = request.uri().path();
    if path == "/mcp" || path.starts_with("/mcp/") {
        return None;
    }
    // A request no route matched is named by its method alone (the conventions' rule): its
    // path is whatever the client sent, and would make a span name per request.
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str);
    let method = request.method().as_str();
    let span = tracing::span!(
        target: TRACE_TARGET,
        Level::TRACE,
        "http.server",
        otel.name = %format_args!("{method}{}{}", if route.is_some() { " " } else { "" }, route.unwrap_or("")),
        otel.kind = "server",
        otel.status_code = Empty,
        http.request.method = method,
        http.route = route,
        url.path = path,
        http.response.status_code = Empty,
        error.type = Empty,
    );
    if span.is_disabled() {
        return None;
    }
    if let Some(traceparent) = request
        .headers()
        .get(TRACEPARENT)
        .and_then(|value| value.to_str().ok())
    {
        continue_trace(&span, traceparent);
    }
    Some(span)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_named_by_its_route_and_an_unmatched_one_by_its_method_alone() {
        let (exported, _telemetry, subscriber) = crate::telemetry::in_memory();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let statuses = tracing::subscriber::with_default(subscriber, || {
            runtime.block_on(async {
                let app = axum::Router::new()
                    .route("/items/{id}", axum::routing::get(|| async { "item" }))
                    .route("/mcp", axum::routing::get(|| async { "mcp" }))
                    .layer(TraceHttpLayer);
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                let addr = listener.local_addr().expect("addr");
                tokio::spawn(async move { axum::serve(listener, app).await });
                let client = reqwest::Client::new();
                let mut statuses = Vec::new();
                for path in ["/items/7", "/secret-looking/sk-123?code=abc", "/mcp"] {
                    let answer = client
                        .get(format!("http://{addr}{path}"))
                        .send()
                        .await
                        .expect("answer");
                    statuses.push(answer.status().as_u16());
                }
                statuses
            })
        });
        // `/mcp` has no span of its own here: the gateway's are per MCP request.
        assert_eq!(statuses, [200, 404, 200]);
        let mut spans: Vec<(String, Option<String>, Option<String>)> = exported
            .get_finished_spans()
            .expect("spans")
            .iter()
            .map(|span| {
                let attribute = |key: &str| {
                    span.attributes
                        .iter()
                        .find(|kv| kv.key.as_str() == key)
                        .map(|kv| kv.value.to_string())
                };
                (
                    span.name.to_string(),
                    attribute("http.route"),
                    attribute("url.path"),
                )
            })
            .collect();
        spans.sort();
        assert_eq!(
            spans,
            [
                (
                    "GET".to_owned(),
                    None,
                    Some("/secret-looking/sk-123".to_owned())
                ),
                (
                    "GET /items/{id}".to_owned(),
                    Some("/items/{id}".to_owned()),
                    Some("/items/7".to_owned())
                ),
            ]
        );
    }
}
