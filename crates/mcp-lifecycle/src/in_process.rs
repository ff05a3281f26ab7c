//! Servers that run inside BotCraft's process, spoken to over an in-memory pipe
//! (`tokio::io::duplex`) through the same client and under the same lifecycle rules as a
//! child process: lazy start, timeouts, idle stops, health checks, restarts.
//!
//! Useful for built-in servers, and for tests on tokio's paused clock: a child process's
//! pipe is real I/O, during which a paused runtime jumps to its next timer; an in-memory
//! pipe is not.

use futures::future::BoxFuture;
use tokio::io::DuplexStream;

/// The buffer of the in-memory pipe, each way.
pub(crate) const IN_PROCESS_PIPE_BYTES: usize = 1 << 20;

/// A server run as a task of this process.
pub trait InProcessServer: Send + Sync + 'static {
    /// Serve one connection on `io` (MCP over newline-delimited JSON, as on stdio). The
    /// server has "exited" when the future ends; a stop closes `io`, then aborts the task.
    fn serve(&self, io: DuplexStream) -> BoxFuture<'static, ()>;
}

impl<F> InProcessServer for F
where
    F: Fn(DuplexStream) -> BoxFuture<'static, ()> + Send + Sync + 'static,
{
    fn serve(&self, io: DuplexStream) -> BoxFuture<'static, ()> {
        self(io)
    }
}
