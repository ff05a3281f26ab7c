//! This process's stdin and stdout as a [`LineTransport`]. When they are pipes (an MCP client
//! spawns its servers so), they are read and written through the runtime's poller
//! (`tokio::net::unix::pipe`), with no thread between them and the tasks; tokio's own stdio
//! hands every read and write to a blocking thread, a wake-up each way per message. Anything
//! else (a file, a terminal, a socket) goes through tokio's stdio.

use std::os::fd::{AsFd, BorrowedFd};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

use crate::transport::LineTransport;

/// Stdin, read as a pipe where it is one.
pub type StdinReader = Box<dyn AsyncRead + Send + Unpin>;
/// Stdout, written as a pipe where it is one.
pub type StdoutWriter = Box<dyn AsyncWrite + Send + Unpin>;

/// This process's stdin and stdout as an MCP transport, on the current runtime.
pub fn stdio<Role>() -> LineTransport<Role, StdinReader, StdoutWriter> {
    let reader = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Receiver::from_owned_fd);
    // The poller makes the pipe non-blocking, for every holder of it: never when stderr is
    // the same pipe (`2>&1`), whose writes would then fail instead of waiting.
    let writer = if same_file(std::io::stdout().as_fd(), std::io::stderr().as_fd()) {
        Err(std::io::Error::other("stdout is stderr"))
    } else {
        std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .and_then(pipe::Sender::from_owned_fd)
    };
    let reader: StdinReader = match reader {
        Ok(reader) => Box::new(reader),
        Err(_) => Box::new(tokio::io::stdin()),
    };
    let writer: StdoutWriter = match writer {
        Ok(writer) => Box::new(writer),
        Err(_) => Box::new(tokio::io::stdout()),
    };
    LineTransport::new(reader, writer)
}

/// Whether two descriptors are the same file (device and inode).
fn same_file(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
    use std::os::unix::fs::MetadataExt;
    let identity = |fd: BorrowedFd<'_>| {
        fd.try_clone_to_owned()
            .and_then(|fd| std::fs::File::from(fd).metadata())
            .map(|m| (m.dev(), m.ino()))
    };
    matches!((identity(a), identity(b)), (Ok(a), Ok(b)) if a == b)
}
