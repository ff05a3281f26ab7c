//! `initialize`, over a pipe (a child process, an in-process server) or any rmcp transport
//! (a remote server), within an init timeout and abandoned as soon as the server exits, its
//! connection is lost or the start is cancelled. What each failure means to an operator is
//! the caller's to say ([`HandshakeFailure`]).

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::client::ClientSide;
use crate::loss::ExitInfo;

/// How a handshake that did not complete ended.
#[derive(Debug)]
pub enum HandshakeFailure {
    TimedOut,
    Refused(Box<rmcp::service::ClientInitializeError>),
    Exited,
    /// The server was stopped (or BotCraft shut down) while it started.
    Cancelled,
}

/// A connection over a pipe that completed `initialize`.
pub struct PipeConnection {
    pub service: RunningService<RoleClient, ClientSide>,
    /// Requests past rmcp's service loop, on the same pipe ([`mcp_wire::lane`]).
    pub lane: mcp_wire::DirectLane,
    /// The connection's progress on the server's relay (its requests' and the lane's).
    pub connection: crate::relay::ConnectionId,
}

/// `initialize` over a pipe within `init_timeout`, abandoned as soon as the server exits.
pub async fn handshake<R, W>(
    init_timeout: Duration,
    read: R,
    write: W,
    exit: &watch::Receiver<Option<ExitInfo>>,
    client: ClientSide,
    cancel: &CancellationToken,
) -> Result<PipeConnection, HandshakeFailure>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let relay = client.relay();
    let mut wire = mcp_wire::LineTransport::new(read, write);
    let lane = wire.direct_lane();
    let transport = crate::tap::ProgressTap::new(wire, relay, None);
    let connection = transport.connection();
    let service = handshake_over(init_timeout, transport, exit, client, cancel).await?;
    Ok(PipeConnection {
        service,
        lane,
        connection,
    })
}

/// `initialize` over `transport` within `init_timeout`, abandoned as soon as the server exits
/// (or its connection is lost).
pub async fn handshake_over<T>(
    init_timeout: Duration,
    transport: T,
    exit: &watch::Receiver<Option<ExitInfo>>,
    client: ClientSide,
    cancel: &CancellationToken,
) -> Result<RunningService<RoleClient, ClientSide>, HandshakeFailure>
where
    T: rmcp::transport::Transport<RoleClient> + 'static,
{
    // rmcp's service loop keeps the span that is current when it is spawned for the
    // connection's whole life. Spawned, the handshake starts under no span, so that a traced
    // start (and its `initialize`) ends when the start does, not when the server stops.
    // Dropped (timeout, exit, cancel), the handle aborts the handshake.
    let mut handshake =
        tokio_util::task::AbortOnDropHandle::new(tokio::spawn(client.serve(transport)));
    let mut exit_wait = exit.clone();
    tokio::select! {
        result = tokio::time::timeout(init_timeout, &mut handshake) => match result {
            Ok(Ok(Ok(service))) => Ok(service),
            Ok(Ok(Err(error))) => Err(HandshakeFailure::Refused(Box::new(error))),
            Ok(Err(joined)) => match joined.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(_aborted) => Err(HandshakeFailure::Cancelled),
            },
            Err(_elapsed) => Err(HandshakeFailure::TimedOut),
        },
        _ = exit_wait.wait_for(Option::is_some) => Err(HandshakeFailure::Exited),
        () = cancel.cancelled() => Err(HandshakeFailure::Cancelled),
    }
}
