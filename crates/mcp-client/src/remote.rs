//! Connecting to a remote server over streamable HTTP (rmcp's client transport) or HTTP+SSE
//! ([`crate::sse`]) and completing `initialize`: a [`RemoteConnection`], or why not
//! ([`ConnectError`]). Headers arrive resolved and marked sensitive; URLs in every message
//! are cut to what may be shown ([`crate::shown_url`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::auth::{Auth, challenge_in};
use crate::client::ClientSide;
use crate::handshake::{HandshakeFailure, handshake_over};
use crate::http::{cut_urls, shown_url};
use crate::loss::{ConnectionLoss, ExitInfo};
use crate::relay::Relay;
use crate::sse::SseClientTransport;
use crate::stateless_link::StatelessLink;
use crate::tap::ProgressTap;
use crate::trace_header::TraceHeader;

/// How a remote server is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteTransport {
    /// Streamable HTTP (MCP 2025-03-26 and later): rmcp's client transport.
    StreamableHttp,
    /// HTTP+SSE (MCP 2024-11-05): [`crate::sse`].
    Sse,
}

/// What a remote connection is opened with.
pub struct RemoteTarget<'a> {
    /// The server's name (logs).
    pub server: &'a str,
    pub transport: RemoteTransport,
    pub url: &'a str,
    /// Resolved; sent with every request.
    pub headers: HeaderMap,
    /// How long connecting and `initialize` may take together.
    pub init_timeout: Duration,
}

/// A remote connection that completed `initialize`.
pub struct RemoteConnection {
    pub service: RunningService<RoleClient, ClientSide>,
    /// The URL as shown.
    pub url: String,
    /// Told when the connection ends; [`RemoteConnection::exit`] watches it.
    pub lost: Arc<ConnectionLoss>,
    pub exit: watch::Receiver<Option<ExitInfo>>,
    /// The 2026-07-28 link (streamable HTTP only), opened when first needed.
    pub link: Option<Arc<StatelessLink>>,
    /// The connection's progress on the server's relay.
    pub connection: crate::relay::ConnectionId,
}

/// Why a remote connection did not open.
#[derive(Debug)]
pub enum ConnectError {
    /// The server was not reached, or refused `initialize`: the root causes, URLs cut.
    Unreachable { reason: String },
    /// A server OAuth applies to answered with a `Bearer` challenge.
    NeedsAuth { challenge: String },
    /// `initialize` timed out, or the start was cancelled.
    Handshake(HandshakeFailure),
}

/// Connect to `target` and complete `initialize` within its init timeout. The connection
/// "exits" when its transport closes. `auth` is set for a server OAuth applies to.
pub async fn connect(
    target: RemoteTarget<'_>,
    http: reqwest::Client,
    auth: Option<Auth>,
    client: ClientSide,
    cancel: CancellationToken,
) -> Result<RemoteConnection, ConnectError> {
    let oauth = auth.is_some();
    let (lost, exit) = ConnectionLoss::new(oauth);
    let relay = client.relay();
    let timeout = target.init_timeout;
    let mut link = None;
    let (connection, started) = match target.transport {
        RemoteTransport::StreamableHttp => {
            let headers: HashMap<HeaderName, HeaderValue> = target
                .headers
                .iter()
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect();
            let settings = StreamableHttpClientTransportConfig::with_uri(target.url)
                .custom_headers(headers.clone());
            if let Some(Auth::Token(authorized)) = auth {
                let authorized = TraceHeader(authorized);
                link = link_for(&target, &headers, authorized.clone(), &relay);
                let transport = StreamableHttpClientTransport::with_client(authorized, settings);
                let transport = ProgressTap::new(transport, relay, Some(Arc::clone(&lost)));
                let connection = transport.connection();
                (
                    connection,
                    handshake_over(timeout, transport, &exit, client, &cancel).await,
                )
            } else {
                let http = TraceHeader(http);
                link = link_for(&target, &headers, http.clone(), &relay);
                let transport = StreamableHttpClientTransport::with_client(http, settings);
                let transport = ProgressTap::new(transport, relay, Some(Arc::clone(&lost)));
                let connection = transport.connection();
                (
                    connection,
                    handshake_over(timeout, transport, &exit, client, &cancel).await,
                )
            }
        }
        RemoteTransport::Sse => {
            let open = SseClientTransport::connect(http, target.url, target.headers.clone());
            let transport = tokio::select! {
                opened = tokio::time::timeout(timeout, open) => match opened {
                    Ok(Ok(transport)) => transport,
                    Ok(Err(error)) => {
                        return Err(ConnectError::Unreachable { reason: error.to_string() });
                    }
                    Err(_) => return Err(ConnectError::Handshake(HandshakeFailure::TimedOut)),
                },
                () = cancel.cancelled() => {
                    return Err(ConnectError::Handshake(HandshakeFailure::Cancelled));
                }
            };
            let transport = ProgressTap::new(transport, relay, Some(Arc::clone(&lost)));
            let connection = transport.connection();
            (
                connection,
                handshake_over(timeout, transport, &exit, client, &cancel).await,
            )
        }
    };
    match started {
        Ok(service) => Ok(RemoteConnection {
            service,
            url: shown_url(target.url),
            lost,
            exit,
            link,
            connection,
        }),
        Err(HandshakeFailure::Refused(error)) => match challenge_in(error.as_ref()) {
            Some(challenge) if oauth => Err(ConnectError::NeedsAuth { challenge }),
            _ => Err(ConnectError::Unreachable {
                reason: remote_reason(&error),
            }),
        },
        Err(HandshakeFailure::Exited) => Err(ConnectError::Unreachable {
            reason: "the connection closed during initialize".to_owned(),
        }),
        Err(failure) => Err(ConnectError::Handshake(failure)),
    }
}

/// The 2026-07-28 link of a streamable-HTTP connection ([`StatelessLink`]), over the same
/// HTTP client (with the same OAuth client) and headers.
fn link_for<C>(
    target: &RemoteTarget<'_>,
    headers: &HashMap<HeaderName, HeaderValue>,
    http: C,
    relay: &Arc<Relay>,
) -> Option<Arc<StatelessLink>>
where
    C: StreamableHttpClient + Clone + Send + Sync + 'static,
{
    Some(Arc::new(StatelessLink::new(
        target.server.to_owned(),
        target.url.to_owned(),
        headers.clone(),
        http,
        Arc::clone(relay),
        target.init_timeout,
    )))
}

/// Why a remote `initialize` failed: the last two causes of the error chain (rmcp's outer
/// messages name its transport types; the root causes say what happened, "tcp connect
/// error: Connection refused", "HTTP status client error (401 Unauthorized)"). reqwest's
/// messages can carry the URL with its query: every URL-looking word is cut to what
/// [`shown_url`] shows. Header values never reach an error message.
fn remote_reason(error: &rmcp::service::ClientInitializeError) -> String {
    let mut chain = vec![error.to_string()];
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        chain.push(cause.to_string());
        source = cause.source();
    }
    let start = chain.len().saturating_sub(2);
    cut_urls(&chain[start..].join(": "))
}
