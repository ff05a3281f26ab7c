//! Mounting the gateway: [`mcp_service`] (rmcp's `StreamableHttpService` over
//! [`GatewayServer`], sessions in memory with an inactivity timeout) and [`mcp_router`]
//! (that service at `/mcp` behind the auth layer, with [`crate::direct`]'s path for a
//! session's plain `tools/call` in front of it — what the HTTP layer merges).
//!
//! Sessions live in this process's memory. After a restart, a request with an old
//! `Mcp-Session-Id` is answered 404, as the streamable HTTP transport requires, and the
//! client initializes a new session.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::auth::{GatewayAuth, KeyPolicy};
use crate::backend::GatewayBackend;
use crate::direct::{DirectCalls, Gate};
use crate::gateway::GatewayServer;

/// Where the router mounts the service.
pub const MCP_PATH: &str = "/mcp";

/// How the gateway serves HTTP.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// A session unused this long is closed (its next request gets 404).
    pub session_timeout: Duration,
    /// `Host` values accepted (DNS-rebinding protection); `None` keeps rmcp's loopback-only
    /// default. A deployment behind a domain lists it here.
    pub allowed_hosts: Option<Vec<String>>,
    /// SSE keep-alive comments on open streams.
    pub sse_keep_alive: Option<Duration>,
    /// Cancelled at shutdown: every session ends.
    pub shutdown: CancellationToken,
    /// Where bot keys beyond the configured ones live (`botcraft keys create --role bot`).
    pub key_store: Option<store::Store>,
    /// How often the sessions opened with a stored key are checked against the store: those
    /// of a revoked key (or a deleted bot's) are closed.
    pub key_recheck: Duration,
    /// Sessions one bot (one key's bot) may hold at once; opening one more closes its least
    /// recently used. With `session_timeout`, this bounds the gateway's session memory.
    pub max_sessions_per_bot: usize,
    /// The most bytes of a request body read, however it is sent (with a length or in
    /// chunks); a longer one is refused with 413.
    pub max_body_bytes: usize,
}

/// Default of [`GatewayConfig::max_body_bytes`]: 4 MiB.
const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Default of [`GatewayConfig::max_sessions_per_bot`].
pub const DEFAULT_MAX_SESSIONS_PER_BOT: usize = 256;

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            session_timeout: Duration::from_secs(30 * 60),
            allowed_hosts: None,
            sse_keep_alive: Some(Duration::from_secs(15)),
            shutdown: CancellationToken::new(),
            key_store: None,
            key_recheck: Duration::from_secs(15),
            max_sessions_per_bot: DEFAULT_MAX_SESSIONS_PER_BOT,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

/// The gateway's streamable HTTP service type.
pub type McpService<B> = StreamableHttpService<GatewayServer<B>, LocalSessionManager>;

/// The streamable HTTP service over `backend` and the session manager it uses. It expects
/// every request to carry [`crate::AuthenticatedBot`] (see [`mcp_router`]); without it every
/// MCP request is refused.
pub fn mcp_service<B: GatewayBackend>(
    backend: Arc<B>,
    config: &GatewayConfig,
) -> (McpService<B>, Arc<LocalSessionManager>) {
    let (service, sessions, _) = service_parts(backend, config);
    (service, sessions)
}

/// [`mcp_service`], and what its checks before a request's method let through.
fn service_parts<B: GatewayBackend>(
    backend: Arc<B>,
    config: &GatewayConfig,
) -> (McpService<B>, Arc<LocalSessionManager>, Gate) {
    let mut session_config = SessionConfig::default();
    session_config.keep_alive = Some(config.session_timeout);
    let mut sessions = LocalSessionManager::default();
    sessions.session_config = session_config;
    let sessions = Arc::new(sessions);
    // 2025-11-25 sessions and 2026-07-28 stateless requests on the same URL (rmcp's
    // `legacy_session_mode`, the default). A stateless request whose handler sends nothing
    // before its answer is answered as plain JSON (`json_response`); one that sends a
    // notification or a request first (progress, elicitation) falls back to an event stream.
    let mut http = StreamableHttpServerConfig::default()
        .with_sse_keep_alive(config.sse_keep_alive)
        .with_cancellation_token(config.shutdown.clone())
        .with_json_response(true)
        .with_max_request_body_bytes(config.max_body_bytes);
    if let Some(hosts) = &config.allowed_hosts {
        http = http.with_allowed_hosts(hosts.clone());
    }
    let gate = Gate::new(&http);
    let service = StreamableHttpService::new(
        move || Ok(GatewayServer::new(backend.clone())),
        sessions.clone(),
        http,
    );
    (service, sessions, gate)
}

/// `/mcp` over `backend`, behind the auth rule of `policy`. Merge it into the application's
/// router outside any other auth layer (its keys are the bots' keys, not the admin keys).
pub fn mcp_router<B: GatewayBackend>(
    backend: Arc<B>,
    policy: KeyPolicy,
    config: &GatewayConfig,
) -> Router {
    let (service, sessions, gate) = service_parts(backend, config);
    let direct = Arc::new(DirectCalls::new(
        sessions.clone(),
        gate,
        config.shutdown.clone(),
        config.session_timeout,
    ));
    let mut auth = GatewayAuth::new(policy, sessions, config.session_timeout)
        .with_max_sessions_per_bot(config.max_sessions_per_bot);
    if let Some(store) = &config.key_store {
        auth = auth.with_store(store.clone());
        auth.recheck_keys(config.key_recheck, config.shutdown.clone());
    }
    // The key check and the coalescing inside the mount, as one service: each
    // `Router::layer` would wrap the route once more, and a request clones each wrapping.
    let mounted = tower::ServiceBuilder::new()
        .layer(auth.layer())
        .layer(crate::coalesce::CoalesceLayer)
        .service(Shared(Arc::new(Mounted {
            rmcp: service,
            direct,
        })));
    Router::new().nest_service(MCP_PATH, mounted)
}

/// rmcp's service and `/mcp`'s direct path in front of it ([`crate::direct`]).
struct Mounted<B: GatewayBackend> {
    rmcp: McpService<B>,
    direct: Arc<DirectCalls<B>>,
}

/// The mounted service behind one `Arc`: axum clones a nested service for every request, and
/// rmcp's `call` clones itself again (its configuration, with its lists of strings); this
/// clones a pointer, and calls rmcp's `handle` as rmcp's `call` does for what the direct path
/// does not serve.
struct Shared<B: GatewayBackend>(Arc<Mounted<B>>);

impl<B: GatewayBackend> Clone for Shared<B> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<B: GatewayBackend> tower::Service<axum::extract::Request> for Shared<B> {
    type Response = axum::response::Response;
    type Error = std::convert::Infallible;
    type Future = futures::future::BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: axum::extract::Request) -> Self::Future {
        let mounted = Arc::clone(&self.0);
        Box::pin(async move {
            let rmcp = &mounted.rmcp;
            Ok(mounted
                .direct
                .handle(request, |request| rmcp.handle(request))
                .await
                .map(axum::body::Body::new))
        })
    }
}
