//! `botcraft mcp-stdio --bot B --local`: the local aggregator. The gateway's own
//! [`GatewayServer`] over this process's stdin/stdout, on a [`GatewayBackend`] in the same
//! process (the app builds it over a McpServerManager of its own), so a desktop client on the
//! machine where the servers run talks to them with no HTTP hop and no second process.
//!
//! What the client gets is what `/mcp` (or `/mcp/{server}` with `--server`) gives a session
//! of the same bot: the same names, the same relaying, the same failures. `initialize` and
//! `tools/list` answer from the cached catalog and start nothing (seed 001); the first call
//! that needs a server starts it.

use std::sync::Arc;

use rmcp::ServiceExt;

use crate::backend::GatewayBackend;
use crate::bridge::{BRIDGE_NAME, BridgeError};
use crate::gateway::GatewayServer;
use crate::relay::GatewayScope;

/// Serve `bot` (one `server` of it, or all merged) from `backend` on stdin/stdout until the
/// client closes stdin.
pub async fn serve_local<B: GatewayBackend>(
    backend: Arc<B>,
    bot: String,
    server: Option<String>,
) -> Result<(), BridgeError> {
    let scope = match server {
        Some(server) => GatewayScope::Server(server),
        None => GatewayScope::Bot,
    };
    let face = match &scope {
        GatewayScope::Bot => "its servers merged, as /mcp".to_owned(),
        GatewayScope::Server(server) => format!("MCP server {server}, as /mcp/{server}"),
    };
    eprintln!("{BRIDGE_NAME}: ready (local) — bot {bot}, {face}; servers start when first used");
    serve_on(GatewayServer::local(backend, bot, scope), stdio_transport()).await
}

/// This process's stdin and stdout as an MCP transport. When they are pipes (an MCP client
/// spawns its servers so), they are read and written through the runtime's poller
/// (`tokio::net::unix::pipe`) with no thread between them and the tasks; tokio's own stdio
/// hands every read and write to a blocking thread, a wake-up each way per message.
/// Anything else (a file, a terminal, a socket) goes through tokio's stdio.
pub fn stdio_transport() -> (
    Box<dyn tokio::io::AsyncRead + Send + Unpin>,
    Box<dyn tokio::io::AsyncWrite + Send + Unpin>,
) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
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
    match (reader, writer) {
        (Ok(reader), Ok(writer)) => (Box::new(reader), Box::new(writer)),
        (Ok(reader), Err(_)) => (Box::new(reader), Box::new(tokio::io::stdout())),
        (Err(_), Ok(writer)) => (Box::new(tokio::io::stdin()), Box::new(writer)),
        (Err(_), Err(_)) => (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout())),
    }
}

/// Serve `server` on `transport` until the client goes away.
pub(crate) async fn serve_on<S, T, E, A>(server: S, transport: T) -> Result<(), BridgeError>
where
    S: rmcp::ServerHandler,
    T: rmcp::transport::IntoTransport<rmcp::RoleServer, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let running = match server.serve(transport).await {
        Ok(running) => running,
        // A client that connects and leaves without initializing is not an error.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(error) => return Err(BridgeError::Initialize(Box::new(error))),
    };
    running.waiting().await?;
    Ok(())
}

/// Whether two descriptors are the same file (device and inode).
fn same_file(a: std::os::fd::BorrowedFd<'_>, b: std::os::fd::BorrowedFd<'_>) -> bool {
    use std::os::unix::fs::MetadataExt;
    let identity = |fd: std::os::fd::BorrowedFd<'_>| {
        fd.try_clone_to_owned()
            .and_then(|fd| std::fs::File::from(fd).metadata())
            .map(|m| (m.dev(), m.ino()))
    };
    matches!((identity(a), identity(b)), (Ok(a), Ok(b)) if a == b)
}
