//! Who is asking: the bot comes from the bearer key, nothing else.
//!
//! - [`BotKeys`]: the key → bot map, parsed once from configuration
//!   (`BOTCRAFT_BOT_KEYS="forge=KEY1,other=KEY2"`, several keys per bot allowed). Keys are kept
//!   as SHA-256 digests and a presented key is compared against every one of them in
//!   constant time (equal-length digests: neither the key's length nor its first wrong byte
//!   shows in the timing).
//! - Keys of the store (`botcraft keys create NAME --role bot --bot BOT`), when the gateway is
//!   given the store ([`GatewayAuth::with_store`]): checked after the configured ones, one
//!   indexed query per request, so a revoked key fails on its next request, and the sessions
//!   it opened are closed within `GatewayConfig::key_recheck` (15 s; their standing event
//!   streams end; [`GatewayAuth::close_revoked`]). Admin and chat keys are not bot keys:
//!   `/mcp` refuses them (401).
//! - [`GatewayAuth`]: the rule applied to every request to `/mcp` ([`GatewayAuth::layer`]):
//!   no key or an unknown key → **401**; the store unreachable → **503**; a session id that belongs to another bot → **403**;
//!   otherwise the request carries [`AuthenticatedBot`] to the MCP handler. The JSON body is
//!   `{"error": {"code", "message"}}` and never names a bot or a tool.
//! - Sessions are bound to the bot that initialized them ([`SessionOwners`]): the binding is
//!   taken from the `Mcp-Session-Id` header of the initialize response, dropped when the
//!   session is deleted or has expired.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::Request;
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::future::Either;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};
use serde_json::json;
use store::key_digest::KeyRing;
use tokio_util::sync::CancellationToken;

/// The header carrying the streamable HTTP session id.
pub const SESSION_HEADER: &str = "mcp-session-id";
/// [`SESSION_HEADER`] as a header name, for lookups: a name given as text is parsed and
/// matched against the standard names on each lookup.
pub(crate) static SESSION_HEADER_NAME: http::HeaderName =
    http::HeaderName::from_static(SESSION_HEADER);

/// The environment variable [`BotKeys::parse`] is documented against.
pub const BOT_KEYS_ENV: &str = "BOTCRAFT_BOT_KEYS";

/// What the configured keys say of a presented key.
enum KeyCheck {
    Bot(String),
    /// Not a configured key: the store may know it.
    AskStore(String),
}

/// The bot a request was authenticated as (its name), put in the request's extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthenticatedBot(pub String);

/// A `BOTCRAFT_BOT_KEYS` value that does not parse. Never carries a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BotKeysError {
    #[error("entry {index} of {BOT_KEYS_ENV} is not BOT=KEY")]
    NotAPair { index: usize },
    #[error("entry {index} of {BOT_KEYS_ENV} has an empty bot name")]
    EmptyBot { index: usize },
    #[error("entry {index} of {BOT_KEYS_ENV} (bot {bot:?}) has an empty key")]
    EmptyKey { index: usize, bot: String },
    #[error("entry {index} of {BOT_KEYS_ENV} repeats a key already given to bot {bot:?}")]
    DuplicateKey { index: usize, bot: String },
}

/// Bearer keys, each for one bot. An empty set refuses every request.
#[derive(Clone, Default)]
pub struct BotKeys {
    ring: KeyRing<String>,
}

impl std::fmt::Debug for BotKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut bots: Vec<&str> = self.ring.grants().map(String::as_str).collect();
        bots.dedup();
        write!(f, "BotKeys({} keys for {bots:?})", self.ring.len())
    }
}

impl BotKeys {
    /// Parse `bot=key,bot=key`: entries separated by commas (blank entries ignored), the bot
    /// before the first `=`, the key after it, both trimmed. A key may contain `=`.
    pub fn parse(text: &str) -> Result<Self, BotKeysError> {
        let mut keys = Self::default();
        for (index, entry) in text.split(',').enumerate() {
            if entry.trim().is_empty() {
                continue;
            }
            let (bot, key) = entry
                .split_once('=')
                .ok_or(BotKeysError::NotAPair { index })?;
            let (bot, key) = (bot.trim(), key.trim());
            if bot.is_empty() {
                return Err(BotKeysError::EmptyBot { index });
            }
            if key.is_empty() {
                return Err(BotKeysError::EmptyKey {
                    index,
                    bot: bot.to_owned(),
                });
            }
            if let Some(owner) = keys.bot_for(key) {
                return Err(BotKeysError::DuplicateKey {
                    index,
                    bot: owner.to_owned(),
                });
            }
            keys.ring.insert(key, bot.to_owned());
        }
        Ok(keys)
    }

    /// Add one key for `bot` (empty keys are ignored).
    pub fn with(mut self, bot: impl Into<String>, key: &str) -> Self {
        self.ring.insert(key, bot.into());
        self
    }

    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    /// The bot `presented` is a key of (constant time over every key).
    pub fn bot_for(&self, presented: &str) -> Option<&str> {
        self.ring.find(presented).map(String::as_str)
    }
}

/// Who opened a session: its bot, when it was last used, and the id of the stored key it
/// was opened with (none for a configured key, which cannot be revoked while BotCraft runs).
#[derive(Debug)]
struct Owner {
    bot: String,
    used: Instant,
    stored_key: Option<String>,
}

/// Which bot initialized each live session.
#[derive(Debug, Default)]
pub struct SessionOwners {
    owners: Mutex<HashMap<String, Owner>>,
}

impl SessionOwners {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Owner>> {
        self.owners.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `session` belongs to a bot other than `bot` (compared in place), marking it
    /// used. A session nobody owns here belongs to no other bot.
    pub fn held_by_another(&self, session: &str, bot: &str) -> bool {
        let mut owners = self.lock();
        let Some(entry) = owners.get_mut(session) else {
            return false;
        };
        entry.used = Instant::now();
        entry.bot != bot
    }

    fn bind(&self, session: &str, bot: &str, stored_key: Option<String>) {
        self.lock().insert(
            session.to_owned(),
            Owner {
                bot: bot.to_owned(),
                used: Instant::now(),
                stored_key,
            },
        );
    }

    /// The sessions opened with a stored key, and the key's id.
    fn with_stored_keys(&self) -> Vec<(String, String)> {
        self.lock()
            .iter()
            .filter_map(|(session, owner)| Some((session.clone(), owner.stored_key.clone()?)))
            .collect()
    }

    fn forget(&self, session: &str) {
        self.lock().remove(session);
    }

    /// The sessions of `bot` past the `keep` most recently used, oldest first.
    fn beyond(&self, bot: &str, keep: usize) -> Vec<String> {
        let owners = self.lock();
        let mut of_bot: Vec<(&String, Instant)> = owners
            .iter()
            .filter(|(_, owner)| owner.bot == bot)
            .map(|(session, owner)| (session, owner.used))
            .collect();
        of_bot.sort_by_key(|(_, used)| std::cmp::Reverse(*used));
        of_bot
            .into_iter()
            .skip(keep)
            .map(|(session, _)| session.clone())
            .collect()
    }

    /// Sessions not used for `idle`: candidates for [`Self::forget`] once the session manager
    /// confirms they are gone.
    fn idle_sessions(&self, idle: Duration) -> Vec<String> {
        self.lock()
            .iter()
            .filter(|(_, owner)| owner.used.elapsed() >= idle)
            .map(|(session, _)| session.clone())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Who may use `/mcp`.
#[derive(Debug, Clone)]
pub enum KeyPolicy {
    /// A bearer key is required; it names the bot.
    Keys(BotKeys),
    /// No key: every request is this bot. Only for a loopback-bound test or demo server
    /// (the conformance suite cannot send headers).
    Open { bot: String },
}

/// The auth rule of `/mcp` and the session bindings it keeps.
#[derive(Clone)]
pub struct GatewayAuth {
    policy: Arc<KeyPolicy>,
    store: Option<store::Store>,
    /// Sessions one bot may hold; opening one more closes its least recently used.
    max_sessions_per_bot: usize,
    owners: Arc<SessionOwners>,
    sessions: Arc<LocalSessionManager>,
    session_timeout: Duration,
}

impl std::fmt::Debug for GatewayAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayAuth")
            .field("policy", &self.policy)
            .field("sessions", &self.owners.len())
            .finish()
    }
}

impl GatewayAuth {
    pub fn new(
        policy: KeyPolicy,
        sessions: Arc<LocalSessionManager>,
        session_timeout: Duration,
    ) -> Self {
        Self {
            policy: Arc::new(policy),
            store: None,
            max_sessions_per_bot: usize::MAX,
            owners: Arc::new(SessionOwners::default()),
            sessions,
            session_timeout,
        }
    }

    /// At most `max` sessions per bot: a new one closes the least recently used.
    pub fn with_max_sessions_per_bot(mut self, max: usize) -> Self {
        self.max_sessions_per_bot = max.max(1);
        self
    }

    /// Close the sessions of `bot` beyond its limit (least recently used first).
    async fn enforce_limit(&self, bot: &str) {
        for session in self.owners.beyond(bot, self.max_sessions_per_bot) {
            let id: SessionId = session.as_str().into();
            let _ = self.sessions.close_session(&id).await;
            self.owners.forget(&session);
            tracing::info!(
                bot,
                "closed the least recently used /mcp session (session limit)"
            );
        }
    }

    /// Also accept the store's live bot keys (after the configured ones).
    pub fn with_store(mut self, store: store::Store) -> Self {
        self.store = Some(store);
        self
    }

    pub fn owners(&self) -> &SessionOwners {
        &self.owners
    }

    /// The bot of a request carrying `key` (its bearer key), when the configured keys say;
    /// else the key to look up in the store. The key is copied only for that lookup.
    fn configured_bot(&self, key: Option<&str>) -> Result<KeyCheck, AuthRefusal> {
        let keys = match &*self.policy {
            KeyPolicy::Open { bot } => return Ok(KeyCheck::Bot(bot.clone())),
            KeyPolicy::Keys(keys) => keys,
        };
        let key = key.ok_or(AuthRefusal::MissingKey)?;
        if let Some(bot) = keys.bot_for(key) {
            return Ok(KeyCheck::Bot(bot.to_owned()));
        }
        if self.store.is_none() {
            return Err(AuthRefusal::UnknownKey);
        }
        Ok(KeyCheck::AskStore(key.to_owned()))
    }

    /// The bot of a key kept in the store (`botcraft keys create --role bot`), and the key's id.
    async fn stored_bot(&self, key: &str) -> Result<(String, String), AuthRefusal> {
        let Some(store) = &self.store else {
            return Err(AuthRefusal::UnknownKey);
        };
        match store.key_by_secret(key).await {
            Ok(Some(found)) if found.role == store::KeyRole::Bot => found
                .bot
                .map(|bot| (bot, found.id))
                .ok_or(AuthRefusal::UnknownKey),
            Ok(_) => Err(AuthRefusal::UnknownKey),
            Err(error) => {
                tracing::error!(error = %error, "checking a bot key against the store failed");
                Err(AuthRefusal::KeyCheckFailed)
            }
        }
    }

    /// Close the sessions opened with a stored key that is no longer live (revoked, or its bot
    /// deleted): the key check runs on each request, but a session's standing event stream
    /// and its server events would otherwise go on. Returns how many were closed. Run every
    /// [`crate::GatewayConfig::key_recheck`] while the gateway is up.
    pub async fn close_revoked(&self) -> Result<usize, store::StoreError> {
        match &self.store {
            Some(store) => close_revoked(store, &self.owners, &self.sessions).await,
            None => Ok(0),
        }
    }

    /// [`Self::close_revoked`] every `every`, until `stop` is cancelled or the gateway is
    /// dropped (the task holds its sessions weakly). Nothing runs without a key store.
    pub(crate) fn recheck_keys(&self, every: Duration, stop: CancellationToken) {
        let Some(store) = self.store.clone() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let owners = Arc::downgrade(&self.owners);
        let sessions = Arc::downgrade(&self.sessions);
        runtime.spawn(async move {
            let mut ticks = tokio::time::interval(every.max(Duration::from_millis(1)));
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await;
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    _ = ticks.tick() => {}
                }
                let (Some(owners), Some(sessions)) = (owners.upgrade(), sessions.upgrade()) else {
                    return;
                };
                if let Err(error) = close_revoked(&store, &owners, &sessions).await {
                    tracing::warn!(%error, "checking the keys of open /mcp sessions failed");
                }
            }
        });
    }

    /// Forget bindings of sessions the session manager no longer has (expired or closed).
    async fn prune(&self) {
        for session in self.owners.idle_sessions(self.session_timeout) {
            let id: SessionId = session.as_str().into();
            if !self.sessions.has_session(&id).await.unwrap_or(false) {
                self.owners.forget(&session);
            }
        }
    }
}

/// [`GatewayAuth::close_revoked`] over its parts.
async fn close_revoked(
    store: &store::Store,
    owners: &SessionOwners,
    sessions: &LocalSessionManager,
) -> Result<usize, store::StoreError> {
    let opened = owners.with_stored_keys();
    if opened.is_empty() {
        return Ok(0);
    }
    let live: std::collections::HashSet<String> = store
        .api_keys()
        .await?
        .into_iter()
        .filter(|key| key.revoked_at.is_none() && key.bot.is_some())
        .map(|key| key.id)
        .collect();
    let mut closed = 0;
    for (session, key) in opened {
        if live.contains(&key) {
            continue;
        }
        let id: SessionId = session.as_str().into();
        let _ = sessions.close_session(&id).await;
        owners.forget(&session);
        closed += 1;
        tracing::info!("closed an /mcp session: the key it was opened with is revoked");
    }
    Ok(closed)
}

/// Why a request was refused before reaching MCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthRefusal {
    MissingKey,
    UnknownKey,
    /// The session belongs to another bot.
    ForeignSession,
    /// The store could not be asked about the key.
    KeyCheckFailed,
}

impl IntoResponse for AuthRefusal {
    fn into_response(self) -> Response {
        let (status, code, message) = match self {
            AuthRefusal::MissingKey => (
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "missing `Authorization: Bearer <key>`",
            ),
            AuthRefusal::UnknownKey => (
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "the bearer key is not a bot key",
            ),
            AuthRefusal::ForeignSession => (
                StatusCode::FORBIDDEN,
                "forbidden",
                "this session was opened with another key; initialize a new session",
            ),
            AuthRefusal::KeyCheckFailed => (
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the key could not be checked; try again",
            ),
        };
        let mut response = (
            status,
            Json(json!({"error": {"code": code, "message": message}})),
        )
            .into_response();
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// The key of an `Authorization: Bearer <key>` header (scheme case-insensitive).
fn bearer(request: &Request) -> Option<&str> {
    let value = request.headers().get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, key) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(key.trim())
        .filter(|key| !key.is_empty())
}

/// The `Mcp-Session-Id` of `headers`: a reference-counted copy of the header, no allocation.
fn session_of(headers: &axum::http::HeaderMap) -> Option<HeaderValue> {
    headers
        .get(&SESSION_HEADER_NAME)
        .filter(|value| value.to_str().is_ok())
        .cloned()
}

/// A header value known to be visible ASCII, as text.
fn text(value: &HeaderValue) -> &str {
    value.to_str().unwrap_or_default()
}

impl GatewayAuth {
    /// The layer of the service mounted at `/mcp` (inside its `nest_service`; the face is read
    /// from the path the client sent): authenticate, check the session's owner, pass
    /// [`AuthenticatedBot`] on, and record the owner of a session the response creates.
    pub fn layer(self) -> AuthorizeLayer {
        AuthorizeLayer { auth: self }
    }
}

/// [`GatewayAuth`]'s rule in front of `/mcp` ([`GatewayAuth::layer`]). A request with a
/// configured key, in a session it owns, goes to the route with no clone of the route and no
/// boxed future (it is every tool call); what it allocates is what the check hands on (the
/// bot's name, and the two request extensions). A key kept in the store (asked on every
/// request), a refusal, a request without `Mcp-Session-Id` (one that may open a session, and
/// every stateless request) and a session's `DELETE` take one boxed future.
#[derive(Debug, Clone)]
pub struct AuthorizeLayer {
    auth: GatewayAuth,
}

impl<S> tower::Layer<S> for AuthorizeLayer {
    type Service = Authorize<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Authorize {
            inner,
            auth: self.auth.clone(),
        }
    }
}

/// A route behind [`AuthorizeLayer`].
#[derive(Debug, Clone)]
pub struct Authorize<S> {
    inner: S,
    auth: GatewayAuth,
}

/// The future of a request [`Authorize`] does more for than pass it on.
type Checked = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

/// What is left to do once the route has answered.
enum After {
    /// A request without a session: bind the session its answer creates, if any, to `bot`
    /// (and the stored key it was opened with).
    Bind {
        bot: String,
        stored_key: Option<String>,
    },
    /// A `DELETE` of `session`: forget its owner once it is gone.
    Forget { session: HeaderValue },
}

impl<S> tower::Service<Request> for Authorize<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<S::Future, Checked>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match self.auth.configured_bot(bearer(&request)) {
            Ok(KeyCheck::Bot(bot)) => admit(&self.auth, &mut self.inner, bot, None, request),
            Ok(KeyCheck::AskStore(key)) => {
                // The service made ready goes into the future; this one is a fresh clone.
                let fresh = self.inner.clone();
                let mut inner = std::mem::replace(&mut self.inner, fresh);
                let auth = self.auth.clone();
                Either::Right(Box::pin(async move {
                    match auth.stored_bot(&key).await {
                        Ok((bot, key)) => match admit(&auth, &mut inner, bot, Some(key), request) {
                            Either::Left(answer) => answer.await,
                            Either::Right(answer) => answer.await,
                        },
                        Err(refusal) => Ok(refusal.into_response()),
                    }
                }))
            }
            Err(refusal) => refused(refusal.into_response()),
        }
    }
}

/// `request` of `bot` (by stored key `stored_key`, if so) on to `inner`, unless its session
/// is another bot's or its path names no MCP endpoint.
fn admit<S>(
    auth: &GatewayAuth,
    inner: &mut S,
    bot: String,
    stored_key: Option<String>,
    mut request: Request,
) -> Either<S::Future, Checked>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    let session = session_of(request.headers());
    if let Some(session) = &session
        && auth.owners.held_by_another(text(session), &bot)
    {
        return refused(AuthRefusal::ForeignSession.into_response());
    }
    // The path the client sent (axum's router keeps it; below the mount the request's own
    // path has `/mcp` cut off, and that cut reads `/mcp//x` as `/x`). Without a router there
    // is no mount, and the request's path is the one sent.
    let path = request
        .extensions()
        .get::<axum::extract::OriginalUri>()
        .map_or(request.uri().path(), |sent| sent.0.path());
    let Some(scope) = crate::relay::GatewayScope::of_path(path, crate::service::MCP_PATH) else {
        return refused(
            (
                http::StatusCode::NOT_FOUND,
                axum::Json(serde_json::json!({"error": {"code": "not_found", "message": "no MCP endpoint here; use /mcp or /mcp/SERVER"}})),
            )
                .into_response(),
        );
    };
    let after = match (request.method(), session) {
        (&Method::DELETE, Some(session)) => Some(After::Forget { session }),
        (_, None) => Some(After::Bind {
            bot: bot.clone(),
            stored_key,
        }),
        _ => None,
    };
    request.extensions_mut().insert(scope);
    request.extensions_mut().insert(AuthenticatedBot(bot));
    let answer = inner.call(request);
    let Some(after) = after else {
        return Either::Left(answer);
    };
    let auth = auth.clone();
    Either::Right(Box::pin(async move {
        let response = answer.await?;
        match after {
            After::Forget { session } if response.status().is_success() => {
                auth.owners.forget(text(&session));
            }
            After::Bind { bot, stored_key } => {
                if let Some(created) = session_of(response.headers()) {
                    auth.prune().await;
                    auth.owners.bind(text(&created), &bot, stored_key);
                    auth.enforce_limit(&bot).await;
                }
            }
            After::Forget { .. } => {}
        }
        Ok(response)
    }))
}

/// A refusal, as the future [`Authorize`] answers with.
fn refused<F>(refusal: Response) -> Either<F, Checked> {
    Either::Right(Box::pin(std::future::ready(Ok(refusal))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn keys_parse_and_map_to_their_bot() {
        let keys = BotKeys::parse(" forge = k1 , other=k2=x,, forge=k3").expect("parses");
        let cases = [
            ("k1", Some("forge")),
            ("k3", Some("forge")),
            ("k2=x", Some("other")),
            ("k2", None),
            ("k1 ", None),
            ("K1", None),
            ("", None),
        ];
        for (presented, bot) in cases {
            assert_eq!(keys.bot_for(presented), bot, "{presented:?}");
        }
        assert!(BotKeys::parse("").expect("empty parses").is_empty());
    }

    #[test]
    fn bad_key_lists_are_refused_without_echoing_keys() {
        let cases = [
            ("forge", BotKeysError::NotAPair { index: 0 }),
            ("a=1,=2", BotKeysError::EmptyBot { index: 1 }),
            (
                "a=",
                BotKeysError::EmptyKey {
                    index: 0,
                    bot: "a".into(),
                },
            ),
            (
                "a=secret,b=secret",
                BotKeysError::DuplicateKey {
                    index: 1,
                    bot: "a".into(),
                },
            ),
        ];
        for (text, expected) in cases {
            let error = BotKeys::parse(text).expect_err(text);
            assert_eq!(error, expected, "{text}");
            assert!(!error.to_string().contains("secret"));
        }
        let debug = format!("{:?}", BotKeys::parse("a=secret").expect("parses"));
        assert!(!debug.contains("secret"), "{debug}");
    }
}
