//! [`CoalesceLayer`]: a 2025-11-25 session answers every POST with an event stream,
//! even a plain request whose stream carries one message and ends. Sent as it comes, that
//! is three writes to the socket (the head, the event, the end of the chunked body), each
//! waking the client. This layer holds the head until the stream's first message, takes every
//! frame already there, and sends a stream that has already ended as one body with a
//! `Content-Length`: one write. The bytes the client reads are the same events.
//!
//! Nothing waits longer than the stream itself: the head goes out with the first message
//! or keep-alive comment (so a long call still gets its head within the keep-alive
//! interval), and a stream still open after it is passed on as it comes.
//!
//! Any other answer (a `GET`'s standing stream, a plain JSON answer, which is every tool call
//! of `/mcp`'s direct path) is passed on with nothing allocated; only an event stream takes
//! a boxed future to be held in.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use futures::future::{Either, Ready, Then, ready};
use futures::{FutureExt, StreamExt};

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// Whether an event-stream frame carries a message (a `data:` line holding JSON) or is a
/// keep-alive comment: either way the client should have it now.
fn carries_something(frame: &[u8]) -> bool {
    frame.starts_with(b":")
        || frame.split(|b| *b == b'\n').any(|line| {
            line.strip_prefix(b"data:")
                .map(|data| data.trim_ascii_start())
                .is_some_and(|data| data.starts_with(b"{") || data.starts_with(b"["))
        })
}

/// The layer (`Router::layer`).
#[derive(Debug, Clone, Copy, Default)]
pub struct CoalesceLayer;

impl<S> tower::Layer<S> for CoalesceLayer {
    type Service = Coalesce<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Coalesce { inner }
    }
}

/// A route behind [`CoalesceLayer`].
#[derive(Debug, Clone)]
pub struct Coalesce<S> {
    inner: S,
}

/// The future of an event stream being held.
type Holding = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

/// What a POST's answer becomes: itself, or an event stream held and coalesced.
type Coalesced = Either<Ready<Result<Response, Infallible>>, Holding>;

impl<S> tower::Service<Request> for Coalesce<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<
        S::Future,
        Then<S::Future, Coalesced, fn(Result<Response, Infallible>) -> Coalesced>,
    >;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // A GET opens the session's standing stream: passed on untouched.
        let is_post = request.method() == http::Method::POST;
        let answer = self.inner.call(request);
        if !is_post {
            return Either::Left(answer);
        }
        let hold: fn(Result<Response, Infallible>) -> Coalesced = |answered| match answered {
            Ok(response) if is_event_stream(&response) => {
                Either::Right(Box::pin(async move { Ok(coalesce(response).await) }))
            }
            answered => Either::Left(ready(answered)),
        };
        Either::Right(answer.then(hold))
    }
}

/// An event stream's frames held until one matters, and sent as one body if it has ended.
async fn coalesce(response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    let mut frames = body.into_data_stream();
    let mut held = Vec::new();
    let mut ended = false;
    // rmcp opens each POST's stream with a priming event (an event id and a retry hint, no
    // message): held with the rest until a frame that matters.
    while !ended {
        match frames.next().await {
            Some(Ok(frame)) => {
                held.extend_from_slice(&frame);
                if carries_something(&frame) {
                    break;
                }
            }
            // An error reaches the client as the stream's end, as it would have.
            Some(Err(_)) | None => ended = true,
        }
    }
    while !ended {
        match frames.next().now_or_never() {
            Some(Some(Ok(frame))) => held.extend_from_slice(&frame),
            Some(Some(Err(_)) | None) => ended = true,
            None => break,
        }
    }
    if ended {
        parts.headers.remove(http::header::TRANSFER_ENCODING);
        return Response::from_parts(parts, Body::from(held));
    }
    let first =
        futures::stream::once(async move { Ok::<_, axum::Error>(axum::body::Bytes::from(held)) });
    Response::from_parts(parts, Body::from_stream(first.chain(frames)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_priming_event_is_held_and_a_message_or_a_comment_is_not() {
        let cases: [(&[u8], bool); 5] = [
            (b"data: \nid: 0/0\nretry: 3000\n\n", false),
            (b"data: {\"jsonrpc\":\"2.0\",\"id\":1}\nid: 1/0\n\n", true),
            (b"data:[{\"jsonrpc\":\"2.0\"}]\n\n", true),
            (b": ping\n\n", true),
            (b"id: 2\n\n", false),
        ];
        for (frame, expected) in cases {
            assert_eq!(
                carries_something(frame),
                expected,
                "{}",
                String::from_utf8_lossy(frame)
            );
        }
    }
}
