//! A request body must arrive within a deadline: [`ReadDeadline`] wraps the body hyper reads
//! from a connection and fails it once its client has taken longer than its limit to send it.
//! Without it, a client that sends a request's head in time (hyper's header timeout) and
//! then nothing of its body holds its connection, and whatever waits for the body (a JSON
//! extractor, before any admission check runs), for ever: a few thousand such requests take
//! every connection of the listener.
//!
//! The clock starts the first time the body has nothing to give, so a body that is there at
//! once (nearly every request) costs no timer; from then on it runs until the body's end.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Frame, SizeHint};
use tokio::time::Sleep;

/// A request body with a limit on how long its client may take to send it.
#[derive(Debug)]
pub struct ReadDeadline<B> {
    body: B,
    limit: Duration,
    /// Armed the first time the body had nothing ready.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<B> ReadDeadline<B> {
    pub fn new(body: B, limit: Duration) -> Self {
        Self {
            body,
            limit,
            deadline: None,
        }
    }
}

/// The error a body whose client was too slow ends with (`TimedOut`).
fn too_slow(limit: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("the request body did not arrive within {limit:?}"),
    )
}

impl<B> Body for ReadDeadline<B>
where
    B: Body<Error: Into<Box<dyn std::error::Error + Send + Sync>>> + Unpin,
{
    type Data = B::Data;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.body).poll_frame(cx) {
            Poll::Ready(frame) => Poll::Ready(frame.map(|frame| frame.map_err(Into::into))),
            Poll::Pending => {
                let limit = this.limit;
                let deadline = this
                    .deadline
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                match deadline.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(too_slow(limit).into()))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use bytes::Bytes;
    use http_body_util::{BodyExt, StreamBody};

    use super::*;

    /// A body that sends one frame, then nothing.
    fn stalled() -> impl Body<Data = Bytes, Error = Infallible> + Unpin {
        let first = futures::stream::iter([Ok::<_, Infallible>(Frame::data(Bytes::from_static(
            b"{\"half\":",
        )))]);
        StreamBody::new(futures::StreamExt::chain(first, futures::stream::pending()))
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_stops_arriving_fails_at_its_deadline() {
        let started = tokio::time::Instant::now();
        let collected = ReadDeadline::new(stalled(), Duration::from_secs(30))
            .collect()
            .await;
        let error = collected.err().map(|error| error.to_string());
        assert_eq!(
            error.as_deref(),
            Some("the request body did not arrive within 30s")
        );
        assert_eq!(started.elapsed(), Duration::from_secs(30));
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_is_there_is_read_whole_and_arms_no_timer() {
        let body = http_body_util::Full::new(Bytes::from_static(b"{\"whole\":true}"));
        let mut body = ReadDeadline::new(body, Duration::from_secs(30));
        let frame = body.frame().await.and_then(Result::ok);
        assert_eq!(
            frame.and_then(|frame| frame.into_data().ok()),
            Some(Bytes::from_static(b"{\"whole\":true}"))
        );
        assert!(body.frame().await.is_none());
        assert!(
            body.deadline.is_none(),
            "no timer for a body that was there"
        );
    }
}
