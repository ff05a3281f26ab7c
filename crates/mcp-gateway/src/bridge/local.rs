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
    serve_on(GatewayServer::local(backend, bot, scope)).await
}

/// Serve `server` on this process's stdin and stdout until the client goes away; once
/// initialized, its `tools/call` requests are served past rmcp's service loop
/// ([`mcp_wire::served`]).
pub(crate) async fn serve_on<S>(server: S) -> Result<(), BridgeError>
where
    S: rmcp::ServerHandler + Clone,
{
    let mut transport = mcp_wire::stdio::<rmcp::RoleServer>();
    let direct = transport.direct_serving();
    let running = match server.clone().serve(transport).await {
        Ok(running) => running,
        // A client that connects and leaves without initializing is not an error.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(error) => return Err(BridgeError::Initialize(Box::new(error))),
    };
    direct.install(server, running.peer().clone());
    running.waiting().await?;
    Ok(())
}
