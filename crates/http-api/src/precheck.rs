//! Checks that answer a request before its route does, from the request's head alone (the
//! `Origin` rule, a declared body over the limit): [`PrecheckLayer`].
//!
//! They run on every request, `/mcp`'s tool calls included, so the layer costs what the check
//! costs and nothing more: no clone of the route, no boxed future, no allocation (a route
//! behind `axum::middleware::from_fn` takes up to four per layer and request: a clone of the
//! route behind it, that clone boxed as `Next`, its future and the middleware's own future). A refused request is answered
//! at once, and its route never runs.

use std::convert::Infallible;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::Response;
use futures::future::{Either, Ready, ready};

/// A check of a request's head: `Some(answer)` refuses the request with that answer.
pub trait Precheck: Clone + Send + Sync + 'static {
    fn refuse(&self, request: &Request) -> Option<Response>;
}

/// A [`tower::Layer`] that puts `check` in front of every route (`Router::layer`).
#[derive(Debug, Clone)]
pub struct PrecheckLayer<C> {
    check: C,
}

impl<C: Precheck> PrecheckLayer<C> {
    pub fn new(check: C) -> Self {
        Self { check }
    }
}

impl<S, C: Precheck> tower::Layer<S> for PrecheckLayer<C> {
    type Service = Prechecked<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        Prechecked {
            inner,
            check: self.check.clone(),
        }
    }
}

/// A route behind a [`Precheck`].
#[derive(Debug, Clone)]
pub struct Prechecked<S, C> {
    inner: S,
    check: C,
}

impl<S, C> tower::Service<Request> for Prechecked<S, C>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
    C: Precheck,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match self.check.refuse(&request) {
            Some(refusal) => Either::Left(ready(Ok(refusal))),
            None => Either::Right(self.inner.call(request)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::StatusCode;
    use tower::ServiceExt as _;

    /// Refuses a request whose path is `/no`.
    #[derive(Clone)]
    struct RefuseNo;

    impl Precheck for RefuseNo {
        fn refuse(&self, request: &Request) -> Option<Response> {
            (request.uri().path() == "/no").then(|| {
                let mut refusal = Response::new(Body::from("refused"));
                *refusal.status_mut() = StatusCode::FORBIDDEN;
                refusal
            })
        }
    }

    #[tokio::test]
    async fn a_refused_request_never_reaches_its_route_and_another_does() {
        let reached = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = reached.clone();
        let app = axum::Router::new()
            .fallback(move || {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async { "routed" }
            })
            .layer(PrecheckLayer::new(RefuseNo));
        let mut answers = Vec::new();
        for path in ["/no", "/yes", "/no/deeper"] {
            let response = app
                .clone()
                .oneshot(Request::get(path).body(Body::empty()).expect("request"))
                .await
                .expect("infallible");
            let status = response.status();
            let body = axum::body::to_bytes(response.into_body(), 1024)
                .await
                .expect("body");
            answers.push((path, status, String::from_utf8_lossy(&body).into_owned()));
        }
        assert_eq!(
            answers,
            vec![
                ("/no", StatusCode::FORBIDDEN, "refused".to_owned()),
                ("/yes", StatusCode::OK, "routed".to_owned()),
                ("/no/deeper", StatusCode::OK, "routed".to_owned()),
            ]
        );
        assert_eq!(reached.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}
