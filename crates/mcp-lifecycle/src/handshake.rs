//! `initialize`, over a pipe (a child process, an in-process server) or any rmcp transport
//! (a remote server), within the server's init timeout and abandoned as soon as the server
//! exits, its connection is lost or the start is cancelled; and what each failure becomes.

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use tokio::sync::watch;

use crate::client::ClientSide;
use crate::config::ServerConfig;
use crate::error::{ExitInfo, LifecycleError};

/// How a handshake that did not complete ended.
pub(crate) enum HandshakeFailure {
    TimedOut,
    Refused(Box<rmcp::service::ClientInitializeError>),
    Exited,
    /// The server was stopped (or BotCraft shut down) while it started.
    Cancelled,
}

/// `initialize` over a pipe within `config`'s init timeout, abandoned as soon as the server
/// exits.
pub(crate) async fn handshake<R, W>(
    config: &ServerConfig,
    read: R,
    write: W,
    exit: &watch::Receiver<Option<ExitInfo>>,
    client: ClientSide,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<RunningService<RoleClient, ClientSide>, HandshakeFailure>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let relay = client.relay();
    let transport = crate::tap::ProgressTap::new(
        rmcp::transport::async_rw::AsyncRwTransport::new_client(read, write),
        relay,
        None,
    );
    handshake_over(config, transport, exit, client, cancel).await
}

/// `initialize` over `transport` within `config`'s init timeout, abandoned as soon as the
/// server exits (or its connection is lost).
pub(crate) async fn handshake_over<T>(
    config: &ServerConfig,
    transport: T,
    exit: &watch::Receiver<Option<ExitInfo>>,
    client: ClientSide,
    cancel: &tokio_util::sync::CancellationToken,
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
        result = tokio::time::timeout(config.init_timeout, &mut handshake) => match result {
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

pub(crate) fn handshake_error(
    config: &ServerConfig,
    failure: HandshakeFailure,
    exit: Option<ExitInfo>,
    stderr_tail: Vec<String>,
) -> LifecycleError {
    match failure {
        HandshakeFailure::TimedOut => LifecycleError::InitTimeout {
            server: config.name.clone(),
            timeout: config.init_timeout,
            stderr_tail,
        },
        HandshakeFailure::Refused(error) => LifecycleError::InitFailed {
            server: config.name.clone(),
            exit,
            stderr_tail,
            source: Some(Arc::new(*error)),
        },
        HandshakeFailure::Exited => LifecycleError::InitFailed {
            server: config.name.clone(),
            exit,
            stderr_tail,
            source: None,
        },
        HandshakeFailure::Cancelled => LifecycleError::StartCancelled {
            server: config.name.clone(),
        },
    }
}
