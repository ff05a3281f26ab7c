//! Serving the router over TCP with the limits `axum::serve` leaves unset
//! ([`ConnectionLimits`]):
//!
//! - a client must send a request's whole header within `header_read_timeout`, or its
//!   connection is closed (hyper's HTTP/1 header timeout). The clock also runs while a kept-
//!   alive connection waits for its next request, so the same bound ends idle connections. A
//!   slowloris client (half a header, then silence) holds a connection for seconds, not for
//!   ever;
//! - a request's body must arrive within `body_read_timeout` of the first moment it had
//!   nothing to give ([`crate::read_deadline`]): a client that sends a head and then no body
//!   cannot hold its connection, or what waits for the body, for ever;
//! - at most `max_connections` connections at once; past that, new ones wait in the kernel's
//!   accept queue until one closes;
//! - a client that reads nothing of an answer for `write_stall_timeout` has its connection
//!   closed ([`crate::write_stall`]): its response body is dropped, so a chat turn it held
//!   cancels, provider request and all;
//! - hyper buffers at most [`CONNECTION_BUFFER_BYTES`] per connection, each way: an answer
//!   the client does not read waits in the turn's bounded buffer, not here, and a request
//!   head larger than that is refused (431);
//! - the kernel's send buffer of a connection is fixed at [`CONNECTION_SEND_BUFFER_BYTES`]
//!   (Linux doubles it for its bookkeeping) instead of growing to `tcp_wmem`'s 4 MiB: a
//!   client that stops reading makes its answer wait in BotCraft's bounded buffers, and
//!   thousands of such clients cannot push the host's TCP memory into pressure.
//!
//! HTTP/1.1 only (with upgrades), with `TCP_NODELAY` so small SSE and JSON answers go out at
//! once. On `shutdown` it stops accepting, asks every connection to finish its requests
//! (hyper's graceful shutdown: streams run to their end) and returns when all are closed.

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::read_deadline::ReadDeadline;
use crate::write_stall::StallGuard;

/// Default header-read (and keep-alive idle) timeout.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time a request's body may take to arrive.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(60);
/// Default cap on open connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;
/// Default time a client may read nothing of an answer before its connection is closed.
pub const DEFAULT_WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(30);
/// The kernel send buffer of each accepted connection (`SO_SNDBUF`).
pub const CONNECTION_SEND_BUFFER_BYTES: usize = 128 * 1024;
/// What hyper buffers per connection, each way (its default is ~400 KiB): also the largest
/// request head accepted.
pub const CONNECTION_BUFFER_BYTES: usize = 64 * 1024;

/// Limits on connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// A request's header must arrive within this; an idle kept-alive connection closes after it.
    pub header_read_timeout: Duration,
    /// A request's body must arrive within this (counted from the first time it kept the
    /// server waiting); past it, the body fails and the connection ends.
    pub body_read_timeout: Duration,
    /// Connections open at once.
    pub max_connections: usize,
    /// A write that makes no progress for this long ends the connection.
    pub write_stall_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            write_stall_timeout: DEFAULT_WRITE_STALL_TIMEOUT,
        }
    }
}

/// Serve `router` on `listener` until `shutdown`, then drain (see the module docs).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let (open_tx, open_rx) = tokio::sync::watch::channel(());
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&slots).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = shutdown.cancelled() => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of file descriptors, a connection reset before accept: keep serving.
                // The pause is deliberate: out of descriptors, accept fails at once again,
                // and without it this loop would spin a core until a connection closes.
                Err(error) => {
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        let _ = stream.set_nodelay(true);
        let _ = socket2::SockRef::from(&stream).set_send_buffer_size(CONNECTION_SEND_BUFFER_BYTES);
        let router = router.clone();
        let shutdown = shutdown.clone();
        let open = open_rx.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                router.clone().oneshot(
                    request
                        .map(|body| Body::new(ReadDeadline::new(body, limits.body_read_timeout))),
                )
            });
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout)
                .max_buf_size(CONNECTION_BUFFER_BYTES);
            let stream = StallGuard::new(stream, limits.write_stall_timeout);
            let mut connection = pin!(
                builder
                    .serve_connection(TokioIo::new(stream), service)
                    .with_upgrades()
            );
            tokio::select! {
                _ = connection.as_mut() => {}
                () = shutdown.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
            drop(permit);
            drop(open);
        });
    }
    drop(open_rx);
    open_tx.closed().await;
    Ok(())
}
