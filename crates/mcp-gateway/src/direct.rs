//! `/mcp`'s direct path ([`DirectCalls`]): a session's plain `tools/call` served from the HTTP
//! layer, past rmcp's session machinery.
//!
//! Through rmcp, a session's POST is decoded as an untagged message (every kind tried in
//! turn), handed through a channel to the session's worker task, which registers it and hands
//! it through another to the session's service loop, which spawns the handler's task; the
//! answer goes back the same way into an event stream (a priming event, then the message) that
//! the HTTP layer frames. Here the call is decoded in one pass (`mcp_wire`'s
//! [`Side::decode_fast`], as on a pipe), the handler is called as rmcp's loop calls it
//! (`Service::handle_request`, which dispatches and checks), on a task of its own (a client
//! that goes away does not cut the call short), and the answer is the POST's body as plain
//! JSON (`application/json`, which every client of the streamable HTTP transport accepts).
//!
//! Served here is only what rmcp's path would treat no differently:
//! - a POST in a session this process opened and rmcp still has, whose client is on a
//!   revision before 2026-07-28 and declared neither sampling nor elicitation (a server's
//!   request during the call would need the POST's own event stream);
//! - with a `Host` that rmcp's DNS-rebinding check allows (and no `Origin` when rmcp has origins
//!   to check one against), an `Accept` naming exactly JSON and
//!   event streams, a JSON `Content-Type`, a `Content-Length` of at most [`MAX_DIRECT_BODY`],
//!   and no `MCP-Protocol-Version` or a known one before 2026-07-28;
//! - whose body is one `tools/call` request without `_meta` (no progress token, no revision of
//!   its own) and whose id is not in flight here already.
//!
//! Everything else goes to rmcp as it came (a body read here is handed on). The key, the
//! session's owner and the face are checked before, by the same layer, and the handler
//! checks them again as it does for rmcp. What rmcp does around a request is kept:
//! - the session's inactivity timer is reset through its worker (an event that changes
//!   nothing, at most once a second or a quarter of the timeout), and a session whose worker
//!   no longer takes it, a session rmcp's manager dropped and a gateway shutting down leave
//!   their calls to rmcp;
//! - a `notifications/cancelled` for a call served here, in any form rmcp takes, cancels it
//!   (and goes on to rmcp, which knows no such request); a session's closing cancels its
//!   calls; a cancelled call is not answered: its POST gets at once an event stream that ends
//!   with no message (as rmcp's stream for it ends), and so does a call whose handler
//!   panicked.
//!
//! A plain JSON answer has no stream to resume, so no event ids are involved.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::Request;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use http_body_util::{BodyExt as _, Full, combinators::BoxBody};
use mcp_wire::{PendingCalls, Side};
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, GetExtensions as _, GetMeta as _,
    JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, ProtocolVersion, RequestId,
    ServerJsonRpcMessage,
};
use rmcp::service::{Peer, RequestContext, Service as _};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionHandle, LocalSessionManager,
};
use rmcp::transport::streamable_http_server::{SessionId, StreamableHttpServerConfig};
use rmcp::{RoleServer, transport::streamable_http_server::SessionManager as _};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::auth::SESSION_HEADER_NAME;
use crate::backend::GatewayBackend;
use crate::gateway::{GatewayServer, WeakGatewayServer};

/// The largest body served here (a call's arguments are small; larger bodies go to rmcp).
pub const MAX_DIRECT_BODY: u64 = 64 * 1024;

/// `MCP-Protocol-Version`, as a header name (a name given as text is parsed on each lookup).
static PROTOCOL_HEADER: http::HeaderName = http::HeaderName::from_static("mcp-protocol-version");

/// The HTTP answer type of rmcp's service, which the direct path answers with too.
pub(crate) type McpResponse = http::Response<BoxBody<Bytes, Infallible>>;

/// Put in the extensions of a request that may open a session; the gateway's `initialize`
/// fills it with the session's server and peer.
pub(crate) struct Opening<B>(Arc<OnceLock<(WeakGatewayServer<B>, Peer<RoleServer>)>>);

impl<B> Clone for Opening<B> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<B> Opening<B> {
    fn new() -> Self {
        Self(Arc::new(OnceLock::new()))
    }

    pub(crate) fn opened(&self, server: WeakGatewayServer<B>, peer: Peer<RoleServer>) {
        let _ = self.0.set((server, peer));
    }
}

/// One session open here.
struct DirectSession<B> {
    id: SessionId,
    server: WeakGatewayServer<B>,
    peer: Peer<RoleServer>,
    /// Cancelled when the session closes.
    closed: CancellationToken,
    /// rmcp's handle on the session's worker: what its inactivity timer is reset through.
    worker: LocalSessionHandle,
    /// The calls served here and not yet answered, by id.
    calls: Mutex<HashMap<RequestId, Running>>,
    /// Numbers the calls, so that a call's end never forgets a later call of the same id.
    serial: AtomicU64,
    /// When the worker was last told of activity (milliseconds since the registry's start).
    touched: AtomicU64,
}

/// A call being served: its number and its cancellation.
struct Running {
    serial: u64,
    cancel: CancellationToken,
}

impl<B> DirectSession<B> {
    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Running>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether this session's client may have its calls served here.
    fn client_fits(&self) -> bool {
        self.peer.peer_info().is_some_and(|info| {
            info.protocol_version < ProtocolVersion::V_2026_07_28
                && info.capabilities.sampling.is_none()
                && info.capabilities.elicitation.is_none()
        })
    }

    /// A message that is not a call served here: if it cancels one that is, that call is
    /// cancelled (the message still goes on to rmcp).
    fn cancel_if_asked(&self, body: &[u8]) {
        if self.calls().is_empty() {
            return;
        }
        let Ok(JsonRpcMessage::Notification(JsonRpcNotification {
            notification: ClientNotification::CancelledNotification(cancelled),
            ..
        })) = serde_json::from_slice::<ClientJsonRpcMessage>(body)
        else {
            return;
        };
        let running = cancelled
            .params
            .request_id
            .and_then(|id| self.calls().remove(&id));
        if let Some(running) = running {
            running.cancel.cancel();
        }
    }
}

/// Forgets its call when the call's task ends, however it ends (answered, cancelled, or its
/// handler panicked).
struct Finished<B> {
    session: Arc<DirectSession<B>>,
    id: RequestId,
    serial: u64,
}

impl<B> Drop for Finished<B> {
    fn drop(&mut self) {
        let mut calls = self.session.calls();
        if calls
            .get(&self.id)
            .is_some_and(|running| running.serial == self.serial)
        {
            calls.remove(&self.id);
        }
    }
}

/// What rmcp checks of a request before its method, as the direct path needs to know it.
pub(crate) struct Gate {
    /// `Host` values allowed (DNS rebinding), read as rmcp reads them; any when rmcp's list
    /// is empty.
    any_host: bool,
    hosts: Vec<Authority>,
    /// rmcp checks `Origin` against a list of its own: then a request with an `Origin` is
    /// left to it. (BotCraft sets none; its own Origin rule runs before, in the HTTP layer.)
    checks_origin: bool,
    /// rmcp's limit on a request's body.
    max_body: usize,
}

impl Gate {
    pub(crate) fn new(config: &StreamableHttpServerConfig) -> Self {
        Self {
            any_host: config.allowed_hosts.is_empty(),
            hosts: config
                .allowed_hosts
                .iter()
                .filter_map(|host| Authority::allowed(host))
                .collect(),
            checks_origin: !config.allowed_origins.is_empty(),
            max_body: config.max_request_body_bytes,
        }
    }

    /// Whether rmcp's DNS-rebinding check lets `headers` through: their `Host` parses and
    /// matches an allowed host. `false` also when unsure (no `Host`): rmcp then decides.
    fn host_allowed(&self, headers: &HeaderMap) -> bool {
        let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
            return false;
        };
        let Ok(authority) = http::uri::Authority::try_from(host) else {
            return false;
        };
        if self.any_host {
            return true;
        }
        let name = authority.host().trim_matches('[').trim_matches(']');
        let port = authority.port_u16();
        self.hosts.iter().any(|rule| {
            rule.host.eq_ignore_ascii_case(name) && rule.port.is_none_or(|p| port == Some(p))
        })
    }

    /// Whether the request's headers let it be served here (the body decides the rest).
    fn plain_post(&self, headers: &HeaderMap) -> bool {
        let json_body = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                let essence = v.split_once(';').map_or(v, |(essence, _)| essence);
                essence.trim().eq_ignore_ascii_case("application/json")
            });
        let small = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .is_some_and(|length| length <= MAX_DIRECT_BODY);
        let revision_fits = match headers.get(&PROTOCOL_HEADER) {
            None => true,
            Some(value) => value.to_str().ok().is_some_and(|version| {
                version < ProtocolVersion::V_2026_07_28.as_str()
                    && ProtocolVersion::KNOWN_VERSIONS
                        .iter()
                        .any(|known| known.as_str() == version)
            }),
        };
        let origin_fits = !self.checks_origin || !headers.contains_key(header::ORIGIN);
        json_body
            && small
            && revision_fits
            && origin_fits
            && accepts_both(headers)
            && self.host_allowed(headers)
    }
}

/// A `Host` (or an allowed host) as rmcp compares them: the host without brackets, in lower
/// case, and its port if it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Authority {
    host: String,
    port: Option<u16>,
}

impl Authority {
    /// An allowed host of rmcp's configuration, read as rmcp reads it.
    fn allowed(text: &str) -> Option<Self> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        Some(match http::uri::Authority::try_from(text) {
            Ok(authority) => Self::of(authority.host(), authority.port_u16()),
            Err(_) => Self::of(text, None),
        })
    }

    fn of(host: &str, port: Option<u16>) -> Self {
        Self {
            host: host
                .trim_matches('[')
                .trim_matches(']')
                .to_ascii_lowercase(),
            port,
        }
    }
}

/// Whether `Accept` names exactly JSON and event streams (in either order, nothing else, no
/// parameters): then rmcp accepts it too. Anything more elaborate goes to rmcp to judge.
fn accepts_both(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(header::ACCEPT).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return false;
    };
    let Ok(text) = value.to_str() else {
        return false;
    };
    let (mut json, mut sse) = (false, false);
    for item in text.split(',') {
        let item = item.trim();
        if item.eq_ignore_ascii_case("application/json") {
            json = true;
        } else if item.eq_ignore_ascii_case("text/event-stream") {
            sse = true;
        } else {
            return false;
        }
    }
    json && sse
}

/// The session id of `headers`, when it is text.
fn session_of(headers: &HeaderMap) -> Option<&str> {
    headers.get(&SESSION_HEADER_NAME)?.to_str().ok()
}

/// A request's body, read as rmcp reads it: at most `limit` bytes (else 413), a failed read
/// (the client's: cut short, or past the listener's deadline) answered 400, with rmcp's texts.
async fn read_body(body: Body, limit: usize) -> Result<Bytes, McpResponse> {
    let mut body = body;
    let mut collected = Vec::new();
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                if data.len() > limit.saturating_sub(collected.len()) {
                    return Err(plain(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        format!("Payload Too Large: request body exceeds {limit} bytes"),
                    ));
                }
                collected.extend_from_slice(&data);
            }
            // The client's doing (a body cut short, or too slow: the listener's deadline).
            Err(error) => {
                return Err(plain(
                    StatusCode::BAD_REQUEST,
                    format!("Failed to read request body: {error}"),
                ));
            }
        }
    }
    Ok(Bytes::from(collected))
}

/// What a request is, for the direct path.
enum Taken<B> {
    /// Served here: its answer.
    Answered(McpResponse),
    /// For rmcp, as it came (its body read back in if it was read).
    Rmcp(Request),
    /// For rmcp, and it may open a session: the slot its `initialize` fills.
    Opening(Request, Opening<B>),
}

/// The sessions whose plain calls are served here, and how.
pub(crate) struct DirectCalls<B> {
    manager: Arc<LocalSessionManager>,
    sessions: Mutex<HashMap<Arc<str>, Arc<DirectSession<B>>>>,
    gate: Gate,
    /// The gateway's shutdown: from then on, nothing is served here.
    shutdown: CancellationToken,
    /// How often a session's worker is told of activity at most (milliseconds): a second, or
    /// a quarter of the sessions' inactivity timeout when that is shorter.
    touch_every: u64,
    /// When this registry started: the clock of [`DirectSession::touched`].
    start: Instant,
}

impl<B: GatewayBackend> DirectCalls<B> {
    pub(crate) fn new(
        manager: Arc<LocalSessionManager>,
        gate: Gate,
        shutdown: CancellationToken,
        session_timeout: Duration,
    ) -> Self {
        let touch_every = (session_timeout / 4).min(Duration::from_secs(1));
        Self {
            manager,
            sessions: Mutex::new(HashMap::new()),
            gate,
            shutdown,
            touch_every: u64::try_from(touch_every.as_millis()).unwrap_or(1000),
            start: Instant::now(),
        }
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Arc<DirectSession<B>>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Serve `request` here if it can be, else hand it back for rmcp.
    async fn take(&self, mut request: Request) -> Taken<B> {
        if request.method() != Method::POST {
            return Taken::Rmcp(request);
        }
        let Some(id) = session_of(request.headers()) else {
            let opening = Opening::new();
            request.extensions_mut().insert(opening.clone());
            return Taken::Opening(request, opening);
        };
        let Some(session) = self.sessions().get(id).cloned() else {
            return Taken::Rmcp(request);
        };
        let plain_post = self.gate.plain_post(request.headers());
        if !plain_post && session.calls().is_empty() {
            return Taken::Rmcp(request);
        }
        // Read here: a plain post, or any message while calls are served here (it may cancel
        // one, in whatever form rmcp takes it).
        let (parts, body) = request.into_parts();
        let body = match read_body(body, self.gate.max_body).await {
            Ok(body) => body,
            Err(refused) => return Taken::Answered(refused),
        };
        let decoded = plain_post
            .then(|| <RoleServer as Side>::decode_fast(&body, &mut PendingCalls::default()))
            .flatten();
        let parts = match decoded {
            Some(JsonRpcMessage::Request(JsonRpcRequest {
                id: call_id,
                request: call @ ClientRequest::CallToolRequest(_),
                ..
            })) if call.get_meta().is_empty() && session.client_fits() => {
                match self.call(&session, call_id, call, parts).await {
                    Ok(answer) => return Taken::Answered(answer),
                    Err(parts) => parts,
                }
            }
            _ => {
                session.cancel_if_asked(&body);
                parts
            }
        };
        Taken::Rmcp(Request::from_parts(parts, Body::from(body)))
    }

    /// Serve one call; its request's parts back when it cannot be served here after all (its
    /// session is closing, or its id is in flight).
    async fn call(
        &self,
        session: &Arc<DirectSession<B>>,
        id: RequestId,
        mut call: ClientRequest,
        parts: http::request::Parts,
    ) -> Result<McpResponse, http::request::Parts> {
        let Some(server) = self.live(session).await else {
            return Err(parts);
        };
        // As rmcp's: the call is cancelled when the session closes.
        let cancel = session.closed.child_token();
        let serial = session.serial.fetch_add(1, Ordering::Relaxed);
        {
            let mut calls = session.calls();
            if calls.contains_key(&id) {
                return Err(parts);
            }
            calls.insert(
                id.clone(),
                Running {
                    serial,
                    cancel: cancel.clone(),
                },
            );
        }
        // From here to the spawn nothing waits: the task owns the call's bookkeeping.
        let finished = Finished {
            session: Arc::clone(session),
            id: id.clone(),
            serial,
        };
        let mut context = RequestContext::new(id.clone(), session.peer.clone());
        context.ct = cancel.child_token();
        // As rmcp's loop does: the request's extensions move into its context (its `_meta` is
        // empty: a call with one is rmcp's).
        context.extensions = std::mem::take(call.extensions_mut());
        context.extensions.insert(parts);
        // Boxed before the spawn: the handler's state is kilobytes, and a task holding it
        // inline is copied whole as it is spawned, polled to its end and read (tokio moves
        // the task's stage by value); a task holding a pointer copies a pointer.
        let answering = tokio::spawn(Box::pin(
            async move {
                let _finished = finished;
                server.handle_request(call, context).await
            }
            .instrument(tracing::Span::current()),
        ));
        let answer = tokio::select! {
            biased;
            answer = answering => Some(answer),
            // Cancelled by the client or by the session's end: not answered, at once (the
            // call's task ends as its handler sees the cancellation, as under rmcp).
            () = cancel.cancelled() => None,
        };
        self.touch(session).await;
        let answer = match answer {
            Some(Ok(answer)) if !cancel.is_cancelled() => answer,
            Some(Err(ended)) => {
                // As rmcp's loop, which never answers a request whose handler panicked.
                tracing::error!(%ended, "a tool call's task ended without an answer");
                return Ok(no_answer());
            }
            _ => return Ok(no_answer()),
        };
        // As rmcp does: the call's context ends with its answer.
        cancel.cancel();
        let message: ServerJsonRpcMessage = match answer {
            Ok(result) => JsonRpcMessage::response(result, id),
            Err(error) => JsonRpcMessage::error(error, Some(id)),
        };
        Ok(json(&message))
    }

    /// The session's server while rmcp serves the session: the gateway is not shutting down,
    /// rmcp's manager has the session, its worker answers when it is due to be told of
    /// activity, and its server is not closed. A session that fails is forgotten here.
    async fn live(&self, session: &DirectSession<B>) -> Option<GatewayServer<B>> {
        let open = !self.shutdown.is_cancelled()
            && self.manager.has_session(&session.id).await.unwrap_or(false)
            && self.touch(session).await;
        match session.server.upgrade().filter(|_| open) {
            Some(server) => Some(server),
            None => {
                self.sessions().remove(&*session.id);
                None
            }
        }
    }

    /// Reset the session's inactivity timer (rmcp's worker restarts it on every event) when
    /// [`Self::touch_every`] has passed since it was last reset from here; `false` when the
    /// worker did not take the event (it has ended). The event is the closing of a request's
    /// stream that was never opened (rmcp numbers them from 0 and never reaches `u64::MAX`),
    /// which changes nothing. In between, the worker cannot have timed out (that takes four
    /// times as long) and a closing by rmcp's manager shows in [`Self::live`]'s other checks.
    async fn touch(&self, session: &DirectSession<B>) -> bool {
        let now = self.start.elapsed().as_millis() as u64;
        let last = session.touched.load(Ordering::Relaxed);
        if now.saturating_sub(last) < self.touch_every
            || session
                .touched
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return true;
        }
        session
            .worker
            .close_request_wise_channel(u64::MAX)
            .await
            .is_ok()
    }

    /// A session rmcp opened on a request that carried `opening`: known here until it closes.
    async fn opened(self: &Arc<Self>, response: &McpResponse, opening: Opening<B>) {
        let Some((server, peer)) = opening.0.get().cloned() else {
            return;
        };
        let (Some(id), Some(closed)) = (session_of(response.headers()), server.closed()) else {
            return;
        };
        let id: SessionId = id.into();
        let Some(worker) = self.manager.sessions.read().await.get(&id).cloned() else {
            return;
        };
        let session = Arc::new(DirectSession {
            id: id.clone(),
            server,
            peer,
            closed: closed.clone(),
            worker,
            calls: Mutex::new(HashMap::new()),
            serial: AtomicU64::new(0),
            touched: AtomicU64::new(self.start.elapsed().as_millis() as u64),
        });
        self.sessions().insert(id.clone(), session);
        let this = Arc::downgrade(self);
        drop(tokio::spawn(async move {
            closed.cancelled().await;
            if let Some(this) = this.upgrade() {
                this.sessions().remove(&*id);
            }
        }));
    }

    /// The session of a successful `DELETE` is forgotten.
    fn deleted(&self, headers: &HeaderMap) {
        if let Some(id) = session_of(headers) {
            self.sessions().remove(id);
        }
    }

    /// `request` to this path first, then to `rmcp`.
    pub(crate) async fn handle<F, Fut>(self: &Arc<Self>, request: Request, rmcp: F) -> McpResponse
    where
        F: FnOnce(Request) -> Fut,
        Fut: Future<Output = McpResponse>,
    {
        let delete = (request.method() == Method::DELETE).then(|| request.headers().clone());
        // rmcp's future is boxed where it runs: inline, its size would be this future's, and
        // every direct call would carry (and copy) it.
        match self.take(request).await {
            Taken::Answered(answer) => answer,
            Taken::Rmcp(request) => {
                let response = Box::pin(rmcp(request)).await;
                if let Some(headers) = delete
                    && response.status().is_success()
                {
                    self.deleted(&headers);
                }
                response
            }
            Taken::Opening(request, opening) => {
                let response = Box::pin(rmcp(request)).await;
                self.opened(&response, opening).await;
                response
            }
        }
    }
}

/// The answer to a call that is not answered (cancelled): an event stream with no message,
/// as rmcp's stream for it ends.
fn no_answer() -> McpResponse {
    http::Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Full::new(Bytes::new()).boxed())
        .expect("valid response")
}

fn json(message: &ServerJsonRpcMessage) -> McpResponse {
    match serde_json::to_vec(message) {
        Ok(body) => http::Response::builder()
            .status(StatusCode::OK)
            .header(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )
            .body(Full::new(Bytes::from(body)).boxed())
            .expect("valid response"),
        Err(error) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot encode the answer: {error}"),
        ),
    }
}

fn plain(status: StatusCode, text: String) -> McpResponse {
    http::Response::builder()
        .status(status)
        .body(Full::new(Bytes::from(text)).boxed())
        .expect("valid response")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn accept_is_plain_only_when_it_names_exactly_both() {
        let cases = [
            ("application/json, text/event-stream", true),
            ("text/event-stream,application/json", true),
            ("APPLICATION/JSON ,  Text/Event-Stream", true),
            ("application/json", false),
            ("text/event-stream", false),
            ("application/json, text/event-stream, */*", false),
            ("application/json;q=0.9, text/event-stream", false),
            ("application/json, text/event-stream;q=0", false),
            ("*/*", false),
            ("", false),
        ];
        let seen: Vec<(&str, bool)> = cases
            .iter()
            .map(|(accept, _)| (*accept, accepts_both(&headers(&[("accept", accept)]))))
            .collect();
        assert_eq!(seen, cases);
        // Two Accept headers: rmcp reads both; left to it.
        assert!(!accepts_both(&headers(&[
            ("accept", "application/json"),
            ("accept", "text/event-stream")
        ])));
    }

    fn gate(hosts: &[&str]) -> Gate {
        Gate::new(&StreamableHttpServerConfig::default().with_allowed_hosts(hosts.to_vec()))
    }

    #[test]
    fn hosts_are_matched_as_rmcp_matches_them() {
        let loopback = gate(&["localhost", "127.0.0.1", "::1"]);
        let pinned = gate(&["example.com:8080", "[::1]:9000"]);
        let blank = gate(&["", "  "]);
        let any = Gate::new(&StreamableHttpServerConfig::default().disable_allowed_hosts());
        let cases: [(&Gate, &str, bool); 14] = [
            (&loopback, "127.0.0.1:4000", true),
            (&loopback, "localhost", true),
            (&loopback, "LOCALHOST:80", true),
            (&loopback, "[::1]:4000", true),
            (&loopback, "attacker.example", false),
            (&loopback, "127.0.0.1.attacker.example", false),
            (&loopback, "not a host", false),
            (&pinned, "example.com:8080", true),
            (&pinned, "example.com", false),
            (&pinned, "example.com:8081", false),
            (&pinned, "[::1]:9000", true),
            // rmcp refuses every host when its list holds only blanks.
            (&blank, "localhost", false),
            // And allows any when the list is empty.
            (&any, "anything.example", true),
            (&any, "not a host", false),
        ];
        for (gate, host, expected) in cases {
            let mut map = HeaderMap::new();
            map.insert(
                header::HOST,
                HeaderValue::from_str(host).expect("a header value"),
            );
            assert_eq!(gate.host_allowed(&map), expected, "{host}");
        }
        // No Host header: rmcp reads the URI's authority; left to it.
        assert!(!loopback.host_allowed(&HeaderMap::new()));
    }

    #[test]
    fn only_plain_posts_are_taken() {
        let loopback = gate(&["localhost"]);
        let checking_origins = Gate::new(
            &StreamableHttpServerConfig::default()
                .with_allowed_hosts(["localhost"])
                .with_allowed_origins(["http://localhost:3000"]),
        );
        let plain = [
            ("host", "localhost:3000"),
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json"),
            ("content-length", "120"),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        let with = |name: &'static str, value: Option<&'static str>| {
            let mut map = headers(&plain);
            map.remove(name);
            if let Some(value) = value {
                map.insert(name, HeaderValue::from_static(value));
            }
            map
        };
        let origin = with("origin", Some("http://localhost:3000"));
        let cases = [
            ("as is", &loopback, headers(&plain), true),
            (
                "no revision header",
                &loopback,
                with("mcp-protocol-version", None),
                true,
            ),
            (
                "an older revision",
                &loopback,
                with("mcp-protocol-version", Some("2025-06-18")),
                true,
            ),
            (
                "a charset",
                &loopback,
                with("content-type", Some("application/json; charset=utf-8")),
                true,
            ),
            (
                "2026-07-28",
                &loopback,
                with("mcp-protocol-version", Some("2026-07-28")),
                false,
            ),
            (
                "an unknown revision",
                &loopback,
                with("mcp-protocol-version", Some("2024-01-01")),
                false,
            ),
            ("no length", &loopback, with("content-length", None), false),
            (
                "a large body",
                &loopback,
                with("content-length", Some("65537")),
                false,
            ),
            (
                "the largest body",
                &loopback,
                with("content-length", Some("65536")),
                true,
            ),
            (
                "text",
                &loopback,
                with("content-type", Some("text/plain")),
                false,
            ),
            (
                "another host",
                &loopback,
                with("host", Some("evil.example")),
                false,
            ),
            (
                "json only",
                &loopback,
                with("accept", Some("application/json")),
                false,
            ),
            (
                "an origin rmcp does not check",
                &loopback,
                origin.clone(),
                true,
            ),
            ("an origin rmcp checks", &checking_origins, origin, false),
            (
                "no origin where rmcp checks",
                &checking_origins,
                headers(&plain),
                true,
            ),
        ];
        for (case, gate, map, expected) in cases {
            assert_eq!(gate.plain_post(&map), expected, "{case}");
        }
    }
}
