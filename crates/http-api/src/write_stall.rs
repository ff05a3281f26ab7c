//! A connection whose client reads nothing for too long is ended: [`StallGuard`] wraps the
//! socket and fails a write that has made no progress for its limit, so hyper drops the
//! connection and, with it, the response body (a chat turn then cancels, its provider
//! request dropped). The clock runs only while a write waits for room in the socket, so a
//! slow model or an idle stream costs nothing; only a client that stops reading meets it.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// The socket of one connection, with a limit on how long a write may wait.
#[derive(Debug)]
pub struct StallGuard<IO> {
    io: IO,
    limit: Duration,
    /// Armed when a write found no room, disarmed when one makes progress.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<IO> StallGuard<IO> {
    pub fn new(io: IO, limit: Duration) -> Self {
        Self {
            io,
            limit,
            stalled: None,
        }
    }

    /// A write found no room: `Pending` while the limit has not passed since the first such
    /// write, then the error that ends the connection.
    fn waited(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let limit = self.limit;
        // The stall deadline itself: armed at the first write that found no room, dropped
        // (in `progressed`) as soon as a write goes through.
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        ready!(timer.as_mut().poll(cx));
        Poll::Ready(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the client read nothing for {limit:?}"),
        ))
    }

    fn progressed<T>(
        &mut self,
        result: Poll<io::Result<T>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<T>> {
        match result {
            Poll::Pending => self.waited(cx).map(Err),
            ready => {
                self.stalled = None;
                ready
            }
        }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for StallGuard<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for StallGuard<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.io).poll_write(cx, buf);
        self.progressed(result, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.progressed(result, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.io).poll_flush(cx);
        self.progressed(result, cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test(start_paused = true)]
    async fn a_write_the_reader_never_takes_fails_after_the_limit_and_one_it_takes_does_not() {
        // A pipe of 64 bytes whose other end reads nothing.
        let (ours, theirs) = tokio::io::duplex(64);
        let mut guarded = StallGuard::new(ours, Duration::from_secs(30));
        guarded.write_all(&[1u8; 64]).await.expect("fits");
        let started = tokio::time::Instant::now();
        let error = guarded
            .write_all(&[2u8; 64])
            .await
            .expect_err("nobody reads");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(30));
        // A reader that takes the bytes, however slowly, keeps the connection.
        let (ours, mut theirs_slow) = tokio::io::duplex(64);
        let mut guarded = StallGuard::new(ours, Duration::from_secs(30));
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 64];
            let mut total = 0;
            while total < 64 * 10 {
                // Paused time (`start_paused`): a reader slower than the deadline's 30 s
                // between reads would lose the connection; one that reads every 20 s keeps it.
                tokio::time::sleep(Duration::from_secs(20)).await;
                total += tokio::io::AsyncReadExt::read(&mut theirs_slow, &mut buf)
                    .await
                    .expect("read");
            }
        });
        for _ in 0..10 {
            guarded.write_all(&[3u8; 64]).await.expect("taken in time");
        }
        reader.await.expect("reader");
        drop(theirs);
    }
}
