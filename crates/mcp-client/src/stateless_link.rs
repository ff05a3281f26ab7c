//! A second connection to a streamable-HTTP server, at 2026-07-28, for the requests of
//! 2026-07-28 clients.
//!
//! The manager's connection to every server is a 2025-11-25 `initialize`: it carries the
//! server's requests (elicitation, sampling) and unsolicited notifications (`list_changed`)
//! that 2025-11-25 clients and the tool cache rely on, which a 2026-07-28 connection
//! forbids. Over stdio a request may still name 2026-07-28 in its `_meta` and the server
//! reads it per request; over HTTP it cannot, because rmcp's client would take that revision
//! as the shared connection's from then on. So a remote server's 2026-07-28 requests go on a
//! link of their own, opened with `server/discover` (no session) the first time one is
//! needed. A server that does not speak that revision answers the probe with an error or
//! nothing within the init timeout: it has no link, and such requests go in the connection's
//! revision instead.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::ClientHandler;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _, Peer, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig,
};

use crate::client::CLIENT_NAME;
use crate::relay::{ConnectionId, Relay};
use crate::tap::ProgressTap;

/// The handler of a link: it takes no requests from the server (2026-07-28 servers send
/// none; what they need comes back as an `InputRequiredResult` for the gateway's client).
#[derive(Debug, Clone, Copy)]
struct LinkClient;

impl ClientHandler for LinkClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(CLIENT_NAME, env!("CARGO_PKG_VERSION")),
        )
    }
}

type Opened = Option<(RunningService<RoleClient, LinkClient>, ConnectionId)>;

/// The link of one remote connection, opened at most once, when first asked for; closed
/// with the connection (dropping it cancels its service).
pub struct StatelessLink {
    open: Box<dyn Fn() -> BoxFuture<'static, Opened> + Send + Sync>,
    link: tokio::sync::OnceCell<Opened>,
}

impl std::fmt::Debug for StatelessLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatelessLink")
            .field("opened", &self.link.get().map(Option::is_some))
            .finish()
    }
}

impl StatelessLink {
    /// A link to `url` with `headers`, over `http` (the manager's client, or its OAuth
    /// client for the server), opened within `timeout`; progress goes to `relay`.
    pub fn new<C>(
        server: String,
        url: String,
        headers: std::collections::HashMap<HeaderName, HeaderValue>,
        http: C,
        relay: Arc<Relay>,
        timeout: Duration,
    ) -> Self
    where
        C: StreamableHttpClient + Clone + Send + Sync + 'static,
    {
        let open = move || -> BoxFuture<'static, Opened> {
            let settings = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .custom_headers(headers.clone());
            let transport = ProgressTap::new(
                StreamableHttpClientTransport::with_client(http.clone(), settings),
                Arc::clone(&relay),
                None,
            );
            let server = server.clone();
            let connection = transport.connection();
            Box::pin(async move {
                let mode = ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                };
                match tokio::time::timeout(
                    timeout,
                    LinkClient.serve_with_lifecycle(transport, mode),
                )
                .await
                {
                    Ok(Ok(service)) => Some((service, connection)),
                    Ok(Err(error)) => {
                        // URLs in the error are cut to what may be shown (a query can hold a
                        // token), as every remote error is.
                        let error = crate::http::cut_urls(&error.to_string());
                        tracing::info!(
                            server,
                            error,
                            "no 2026-07-28 link: requests go in the connection's revision"
                        );
                        None
                    }
                    Err(_) => {
                        tracing::info!(
                            server,
                            "no 2026-07-28 link: server/discover was not answered in time"
                        );
                        None
                    }
                }
            })
        };
        Self {
            open: Box::new(open),
            link: tokio::sync::OnceCell::new(),
        }
    }

    /// The link's peer and its connection on the relay (what routes the progress of its
    /// requests), opening it the first time; `None` when the server has none.
    pub async fn peer(&self) -> Option<(Peer<RoleClient>, ConnectionId)> {
        self.link
            .get_or_init(|| (self.open)())
            .await
            .as_ref()
            .map(|(service, connection)| (service.peer().clone(), *connection))
    }
}
