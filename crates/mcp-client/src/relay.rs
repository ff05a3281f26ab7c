//! [`Relay`]: what a server sends its client besides answers, and who receives it. One per
//! server, for the life of the manager (it outlives restarts).
//!
//! - **Notifications** that concern everyone using the server — log messages, resource
//!   updates, resource and prompt list changes — go out as [`ServerEvent`]s on a broadcast
//!   channel ([`Relay::subscribe`]); BotCraft's MCP faces pass them on to their clients.
//! - **Server-initiated requests** (`sampling/createMessage`, `elicitation/create`) and
//!   **progress** belong to a request in flight. Each request forwarded (the manager's
//!   `forward`) registers its client as a [`Caller`] for as long as it runs (a request with no
//!   client to ask, a chat turn's, registers [`Unattended`]). Progress is routed by the
//!   connection and the progress token BotCraft put on the upstream request (each connection
//!   numbers its tokens from the same start: a restarted server's, a remote server's
//!   connection and its 2026-07-28 link; [`ConnectionId`]) and re-labelled with the client's
//!   own token (at most [`PROGRESS_BACKLOG`] waiting per caller: a client that stops reading
//!   loses progress, it does not hold memory). A server request goes to the one request in
//!   flight on the server, if its client declared the capability, or to that client when
//!   all the requests in flight are its own ([`Caller::client`]); with several clients' in
//!   flight it is refused: stdio carries no link between a server's request and the call it
//!   serves, so any choice could hand one client's (one bot's) request, with what it carries,
//!   to another. With none, it is refused too, each time with a stated reason.

#![allow(deprecated)] // sampling and logging are legacy in 2026-07-28; 2025-11-25 servers use them

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use rmcp::ErrorData;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use tokio::sync::{broadcast, mpsc, oneshot};

/// A notification of a server, for every client of BotCraft that uses it.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    /// `notifications/message`.
    Log(LoggingMessageNotificationParam),
    /// `notifications/resources/updated` for this URI.
    ResourceUpdated { uri: String },
    /// `notifications/resources/list_changed`.
    ResourceListChanged,
    /// `notifications/prompts/list_changed`.
    PromptListChanged,
}

/// What a client may be asked for by a server, as its `initialize` declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAbility {
    Sampling,
    Elicitation,
}

impl ClientAbility {
    fn method(self) -> &'static str {
        match self {
            Self::Sampling => "sampling/createMessage",
            Self::Elicitation => "elicitation/create",
        }
    }

    fn capability(self) -> &'static str {
        match self {
            Self::Sampling => "sampling",
            Self::Elicitation => "elicitation",
        }
    }
}

/// The client a forwarded request came from: it answers the server's requests and hears the
/// request's progress.
pub trait Caller: Send + Sync + 'static {
    /// Whether the client declared `ability` in its `initialize`.
    fn declares(&self, ability: ClientAbility) -> bool;
    fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<CreateMessageResult, ErrorData>>;
    fn create_elicitation(
        &self,
        params: ElicitRequestParams,
    ) -> BoxFuture<'static, Result<ElicitResult, ErrorData>>;
    /// Progress of the caller's request, already under the caller's own token.
    fn progress(&self, params: ProgressNotificationParam) -> BoxFuture<'static, ()>;

    /// Which client (one session of BotCraft's faces) the request came from, when known:
    /// several requests in flight from one client are that client's, whichever the server's
    /// request is for.
    fn client(&self) -> Option<usize> {
        None
    }
}

struct Registered {
    id: u64,
    caller: Arc<dyn Caller>,
    /// The caller's own progress token, if its request carried one.
    progress: Option<ProgressToken>,
    /// Progress for the caller, delivered in order by a task of its own — started with the
    /// first progress, so a request without progress (most) spawns nothing.
    queue: Option<mpsc::Sender<Queued>>,
}

/// Progress notifications waiting for one caller at most; past it, new ones are dropped.
pub const PROGRESS_BACKLOG: usize = 256;

impl Registered {
    fn queue(&mut self) -> &mpsc::Sender<Queued> {
        self.queue.get_or_insert_with(|| {
            let (queue, mut deliveries) = mpsc::channel::<Queued>(PROGRESS_BACKLOG);
            let caller = Arc::clone(&self.caller);
            tokio::spawn(async move {
                while let Some(item) = deliveries.recv().await {
                    match item {
                        Queued::Progress(params) => caller.progress(params).await,
                        Queued::Flush(done) => {
                            let _ = done.send(());
                        }
                    }
                }
            });
            queue
        })
    }
}

enum Queued {
    Progress(ProgressNotificationParam),
    /// Answered once everything queued before it was delivered.
    Flush(oneshot::Sender<()>),
}

/// The longest progress `message` relayed, in bytes (cut at a character boundary): a status
/// line, not a payload. A server's progress is queued per caller ([`PROGRESS_BACKLOG`]) and
/// before routing ([`UNROUTED_KEPT`]), so each item is kept small.
pub const MAX_PROGRESS_MESSAGE_BYTES: usize = 4096;

/// The largest `_meta` of a relayed notification (serialized); a larger one is dropped.
pub const MAX_NOTIFICATION_META_BYTES: usize = 4096;

/// The largest log message `data` relayed (serialized): a larger one becomes a string of its
/// start and the size cut, so [`EVENT_BACKLOG`] events hold megabytes, not gigabytes.
pub const MAX_LOG_DATA_BYTES: usize = 64 * 1024;

/// The longest progress token kept: BotCraft's own are numbers, and a client's are mapped to
/// them, so a longer one is nobody's.
const MAX_PROGRESS_TOKEN_BYTES: usize = 256;

/// `text` cut to at most `max` bytes, at a character boundary, ending in `…` when cut.
fn cut_to(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max.saturating_sub('…'.len_utf8());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
}

/// Whether a `_meta` is small enough to keep.
fn small_meta(meta: &Option<rmcp::model::NotificationMetaObject>) -> bool {
    meta.as_ref().is_none_or(|meta| {
        serde_json::to_vec(meta).is_ok_and(|bytes| bytes.len() <= MAX_NOTIFICATION_META_BYTES)
    })
}

/// `params` as relayed: its message and `_meta` bounded; `None` for a token no request of
/// BotCraft's could carry.
fn bounded_progress(mut params: ProgressNotificationParam) -> Option<ProgressNotificationParam> {
    if let rmcp::model::NumberOrString::String(token) = &params.progress_token.0
        && token.len() > MAX_PROGRESS_TOKEN_BYTES
    {
        return None;
    }
    if let Some(message) = &mut params.message {
        cut_to(message, MAX_PROGRESS_MESSAGE_BYTES);
    }
    if !small_meta(&params.meta) {
        params.meta = None;
    }
    Some(params)
}

/// The longest log `logger` name and resource URI relayed.
const MAX_NAME_BYTES: usize = 1024;

/// A log message as relayed: its `data`, `logger` and `_meta` bounded.
fn bounded_log(mut params: LoggingMessageNotificationParam) -> LoggingMessageNotificationParam {
    if let Some(logger) = &mut params.logger {
        cut_to(logger, MAX_NAME_BYTES);
    }
    let size = serde_json::to_vec(&params.data).map_or(0, |bytes| bytes.len());
    if size > MAX_LOG_DATA_BYTES {
        let mut text = match &params.data {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        cut_to(&mut text, MAX_LOG_DATA_BYTES);
        params.data = serde_json::Value::String(format!(
            "{text} [BotCraft cut this log message: {size} bytes]"
        ));
    }
    if !small_meta(&params.meta) {
        params.meta = None;
    }
    params
}

/// Progress under a token not routed yet, kept briefly (the server may answer a request's
/// first progress before [`Registration::route_progress`] ran).
const UNROUTED_KEPT: usize = 64;

/// One connection to the server ([`Relay::connection`]): BotCraft's client numbers the
/// progress tokens of its requests per connection (rmcp's counter and the lane's start again
/// on each), so a token means a request only together with the connection it came on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnectionId(u64);

#[derive(Default)]
struct Callers {
    next: u64,
    /// In registration order.
    active: Vec<Registered>,
    /// (connection, upstream progress token) → registration id.
    tokens: HashMap<(ConnectionId, ProgressToken), u64, foldhash::fast::RandomState>,
    /// Progress that came before its token was routed, oldest first, with its connection.
    unrouted: std::collections::VecDeque<(ConnectionId, ProgressNotificationParam)>,
}

impl Callers {
    fn queue(&mut self, id: u64, mut params: ProgressNotificationParam) {
        if let Some(registered) = self.active.iter_mut().find(|r| r.id == id)
            && let Some(token) = registered.progress.clone()
        {
            params.progress_token = token;
            // Full: the client is not reading; its progress is dropped, not kept.
            let _ = registered.queue().try_send(Queued::Progress(params));
        }
    }
}

/// The relay of one server.
pub struct Relay {
    server: String,
    events: broadcast::Sender<ServerEvent>,
    callers: Mutex<Callers>,
    connections: std::sync::atomic::AtomicU64,
    subscribers: Arc<crate::subscribers::Subscribers>,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// Events a slow subscriber may fall behind by before it misses some.
const EVENT_BACKLOG: usize = 256;

impl Relay {
    pub fn new(server: impl Into<String>) -> Arc<Self> {
        Arc::new(Self {
            server: server.into(),
            events: broadcast::channel(EVENT_BACKLOG).0,
            callers: Mutex::new(Callers::default()),
            connections: std::sync::atomic::AtomicU64::new(0),
            subscribers: Arc::default(),
        })
    }

    /// Who holds which of the server's resource subscriptions ([`crate::subscribers`]).
    pub fn subscribers(&self) -> Arc<crate::subscribers::Subscribers> {
        Arc::clone(&self.subscribers)
    }

    /// A new connection to the server, whose progress is told apart from every other's.
    pub fn connection(&self) -> ConnectionId {
        ConnectionId(
            self.connections
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        )
    }

    /// `connection` ended: what it left unrouted is dropped, and its tokens route nothing
    /// more (a later connection reusing a number cannot receive them).
    pub fn connection_ended(&self, connection: ConnectionId) {
        let mut callers = self.callers();
        callers.unrouted.retain(|(from, _)| *from != connection);
        callers.tokens.retain(|(from, _), _| *from != connection);
    }

    fn callers(&self) -> std::sync::MutexGuard<'_, Callers> {
        self.callers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every later [`ServerEvent`] of this server.
    pub fn subscribe(&self) -> broadcast::Receiver<ServerEvent> {
        self.events.subscribe()
    }

    /// How many receivers [`Self::subscribe`] handed out are still open.
    pub fn followers(&self) -> usize {
        self.events.receiver_count()
    }

    /// Completes once no receiver [`Self::subscribe`] handed out is open (at once if none is).
    pub async fn no_followers(&self) {
        self.events.closed().await;
    }

    pub fn publish(&self, event: ServerEvent) {
        let event = match event {
            ServerEvent::Log(params) => ServerEvent::Log(bounded_log(params)),
            // No subscription can name a URI this long: nobody's.
            ServerEvent::ResourceUpdated { uri }
                if uri.len() > crate::subscribers::MAX_RESOURCE_URI_BYTES =>
            {
                return;
            }
            other => other,
        };
        let _ = self.events.send(event);
    }

    /// Register `caller` for a request in flight; it stays registered until the guard drops.
    /// `progress` is the caller's own progress token.
    pub fn register(
        self: &Arc<Self>,
        caller: Arc<dyn Caller>,
        progress: Option<ProgressToken>,
    ) -> Registration {
        let mut callers = self.callers();
        callers.next += 1;
        let id = callers.next;
        callers.active.push(Registered {
            id,
            caller,
            progress,
            queue: None,
        });
        Registration {
            relay: Arc::clone(self),
            id,
        }
    }

    /// Route progress under upstream token `upstream` on `connection` to the registration
    /// `id` (and what already came under it).
    fn route_progress(&self, id: u64, connection: ConnectionId, upstream: ProgressToken) {
        let mut callers = self.callers();
        let early: std::collections::VecDeque<(ConnectionId, ProgressNotificationParam)> = {
            let (mine, rest) = callers
                .unrouted
                .drain(..)
                .partition(|(from, p)| *from == connection && p.progress_token == upstream);
            callers.unrouted = rest;
            mine
        };
        callers.tokens.insert((connection, upstream), id);
        for (_, params) in early {
            callers.queue(id, params);
        }
    }

    /// A progress notification that came on `connection`, in wire order ([`crate::tap`]):
    /// queued for its caller.
    pub fn enqueue_progress(&self, connection: ConnectionId, params: ProgressNotificationParam) {
        let Some(params) = bounded_progress(params) else {
            return;
        };
        let mut callers = self.callers();
        match callers
            .tokens
            .get(&(connection, params.progress_token.clone()))
            .copied()
        {
            Some(id) => callers.queue(id, params),
            None => {
                if callers.unrouted.len() == UNROUTED_KEPT {
                    callers.unrouted.pop_front();
                }
                callers.unrouted.push_back((connection, params));
            }
        }
    }

    /// Resolves once every progress queued for `id` so far was delivered; `None` when none
    /// was ever queued.
    fn flushed(&self, id: u64) -> Option<oneshot::Receiver<()>> {
        let callers = self.callers();
        let registered = callers.active.iter().find(|r| r.id == id)?;
        let queue = registered.queue.as_ref()?;
        let (done, flushed) = oneshot::channel();
        queue.try_send(Queued::Flush(done)).ok()?;
        Some(flushed)
    }

    fn caller_for(&self, ability: ClientAbility) -> Result<Arc<dyn Caller>, ErrorData> {
        let callers = self.callers();
        let only = match callers.active.as_slice() {
            [] => {
                return Err(ErrorData::invalid_request(
                    format!(
                        "BotCraft refused {}: no client of BotCraft is waiting on a request to server {:?}, so nobody can answer it",
                        ability.method(),
                        self.server
                    ),
                    None,
                ));
            }
            [only] => only,
            // All from one client: it answers, whichever of its requests this is for (the
            // newest that declared the ability, as before).
            several
                if several
                    .first()
                    .and_then(|first| first.caller.client())
                    .is_some_and(|client| {
                        several.iter().all(|r| r.caller.client() == Some(client))
                    }) =>
            {
                several
                    .iter()
                    .rev()
                    .find(|r| r.caller.declares(ability))
                    .unwrap_or(&several[several.len() - 1])
            }
            several => {
                return Err(ErrorData::invalid_request(
                    format!(
                        "BotCraft refused {}: {} requests are in flight on server {:?}, and nothing tells which one this is for, so no client is asked",
                        ability.method(),
                        several.len(),
                        self.server
                    ),
                    None,
                ));
            }
        };
        Some(only)
            .filter(|r| r.caller.declares(ability))
            .map(|r| Arc::clone(&r.caller))
            .ok_or_else(|| {
                ErrorData::invalid_request(
                    format!(
                        "BotCraft refused {}: the client that called server {:?} through BotCraft did not declare the {} capability",
                        ability.method(),
                        self.server,
                        ability.capability()
                    ),
                    None,
                )
            })
    }

    pub async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let caller = self.caller_for(ClientAbility::Sampling)?;
        caller.create_message(params).await
    }

    pub async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData> {
        let caller = self.caller_for(ClientAbility::Elicitation)?;
        caller.create_elicitation(params).await
    }
}

/// The caller of a request with no client to ask (a chat turn's tool call): it declares
/// nothing and hears no progress, but it counts as a request in flight.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unattended;

impl Caller for Unattended {
    fn declares(&self, _ability: ClientAbility) -> bool {
        false
    }
    fn create_message(
        &self,
        _params: CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<CreateMessageResult, ErrorData>> {
        Box::pin(async { Err(ErrorData::invalid_request("no client to ask", None)) })
    }
    fn create_elicitation(
        &self,
        _params: ElicitRequestParams,
    ) -> BoxFuture<'static, Result<ElicitResult, ErrorData>> {
        Box::pin(async { Err(ErrorData::invalid_request("no client to ask", None)) })
    }
    fn progress(&self, _params: ProgressNotificationParam) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

/// A caller registered with a [`Relay`] while its request runs.
pub struct Registration {
    relay: Arc<Relay>,
    id: u64,
}

impl Registration {
    /// Progress the server reports under `upstream` on `connection` goes to this caller.
    pub fn route_progress(&self, connection: ConnectionId, upstream: ProgressToken) {
        self.relay.route_progress(self.id, connection, upstream);
    }

    /// Wait until the progress that arrived so far reached the caller.
    pub async fn flush(&self) {
        if let Some(flushed) = self.relay.flushed(self.id) {
            let _ = flushed.await;
        }
    }

    /// [`Self::flush`], for at most `limit` (a client that reads nothing holds no answer
    /// longer); no timer at all when no progress was ever queued (most requests).
    pub async fn flush_within(&self, limit: std::time::Duration) {
        if let Some(flushed) = self.relay.flushed(self.id) {
            let _ = tokio::time::timeout(limit, flushed).await;
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut callers = self.relay.callers();
        callers.active.retain(|r| r.id != self.id);
        let id = self.id;
        callers.tokens.retain(|_, registered| *registered != id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    #[test]
    fn relayed_notifications_are_bounded() {
        let mut big = ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(7)), 1.0);
        big.message = Some("é".repeat(MAX_PROGRESS_MESSAGE_BYTES));
        let kept = bounded_progress(big).expect("a token BotCraft could send");
        let message = kept.message.expect("a message");
        assert!(message.len() <= MAX_PROGRESS_MESSAGE_BYTES);
        assert!(message.ends_with('…'), "{}", message.len());
        let nobodys = ProgressNotificationParam::new(
            ProgressToken(NumberOrString::String("t".repeat(10_000).into())),
            1.0,
        );
        assert!(bounded_progress(nobodys).is_none());
        let small = ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(7)), 2.0);
        assert_eq!(bounded_progress(small.clone()), Some(small));

        let flood = LoggingMessageNotificationParam::new(
            rmcp::model::LoggingLevel::Info,
            serde_json::json!({"blob": "x".repeat(1 << 20)}),
        );
        let cut = bounded_log(flood);
        let text = cut.data.as_str().expect("cut to a string");
        assert!(text.len() < MAX_LOG_DATA_BYTES + 100, "{}", text.len());
        assert!(text.ends_with(" bytes]"), "{}", &text[text.len() - 60..]);
        let line = LoggingMessageNotificationParam::new(
            rmcp::model::LoggingLevel::Info,
            serde_json::json!({"line": "started"}),
        );
        assert_eq!(bounded_log(line.clone()), line);
    }

    type Seen = Arc<Mutex<Vec<(String, f64)>>>;

    struct Recorder {
        abilities: Vec<ClientAbility>,
        label: &'static str,
        progress: Arc<Mutex<Vec<(String, f64)>>>,
        client: Option<usize>,
    }

    impl Caller for Recorder {
        fn declares(&self, ability: ClientAbility) -> bool {
            self.abilities.contains(&ability)
        }
        fn client(&self) -> Option<usize> {
            self.client
        }
        fn create_message(
            &self,
            _params: CreateMessageRequestParams,
        ) -> BoxFuture<'static, Result<CreateMessageResult, ErrorData>> {
            let label = self.label;
            Box::pin(async move { Err(ErrorData::internal_error(label, None)) })
        }
        fn create_elicitation(
            &self,
            _params: ElicitRequestParams,
        ) -> BoxFuture<'static, Result<ElicitResult, ErrorData>> {
            let label = self.label;
            Box::pin(async move { Err(ErrorData::internal_error(label, None)) })
        }
        fn progress(&self, params: ProgressNotificationParam) -> BoxFuture<'static, ()> {
            let seen = self.progress.clone();
            let label = self.label;
            Box::pin(async move {
                let token = match params.progress_token.0 {
                    NumberOrString::String(s) => s.to_string(),
                    NumberOrString::Number(n) => n.to_string(),
                };
                seen.lock()
                    .expect("test value")
                    .push((format!("{label}:{token}"), params.progress));
            })
        }
    }

    fn recorder(label: &'static str, abilities: Vec<ClientAbility>) -> (Arc<Recorder>, Seen) {
        let progress = Arc::new(Mutex::new(Vec::new()));
        (
            Arc::new(Recorder {
                abilities,
                label,
                progress: progress.clone(),
                client: None,
            }),
            progress,
        )
    }

    fn token(text: &str) -> ProgressToken {
        ProgressToken(NumberOrString::String(text.into()))
    }

    async fn who_answers(relay: &Relay, ability: ClientAbility) -> String {
        let error = match ability {
            ClientAbility::Sampling => relay
                .create_message(serde_json::from_value(serde_json::json!({"messages": [], "maxTokens": 1})).expect("test value"))
                .await
                .err(),
            ClientAbility::Elicitation => relay
                .create_elicitation(serde_json::from_value(serde_json::json!({"mode": "form", "message": "m", "requestedSchema": {"type": "object", "properties": {}}})).expect("test value"))
                .await
                .err(),
        };
        error.map(|e| e.message.to_string()).unwrap_or_default()
    }

    #[tokio::test]
    async fn a_server_request_goes_to_the_one_request_in_flight_only() {
        let relay = Relay::new("fixture");
        assert!(
            who_answers(&relay, ClientAbility::Sampling)
                .await
                .contains("no client of BotCraft is waiting")
        );
        let (a, _) = recorder(
            "a",
            vec![ClientAbility::Sampling, ClientAbility::Elicitation],
        );
        let (b, _) = recorder("b", vec![ClientAbility::Sampling]);
        let first = relay.register(a, None);
        assert_eq!(who_answers(&relay, ClientAbility::Elicitation).await, "a");
        // Two clients' requests in flight (two bots', perhaps): nothing says which one the
        // server's request is for, so neither is asked.
        let second = relay.register(b, None);
        for ability in [ClientAbility::Sampling, ClientAbility::Elicitation] {
            let refused = who_answers(&relay, ability).await;
            assert!(refused.contains("2 requests are in flight"), "{refused}");
        }
        // A chat turn's call counts as one in flight, and asks nobody.
        drop(first);
        assert_eq!(who_answers(&relay, ClientAbility::Sampling).await, "b");
        let refused = who_answers(&relay, ClientAbility::Elicitation).await;
        assert!(
            refused.contains("did not declare the elicitation capability"),
            "{refused}"
        );
        let chat = relay.register(Arc::new(Unattended), None);
        let refused = who_answers(&relay, ClientAbility::Sampling).await;
        assert!(refused.contains("2 requests are in flight"), "{refused}");
        drop(second);
        let refused = who_answers(&relay, ClientAbility::Sampling).await;
        assert!(
            refused.contains("did not declare the sampling capability"),
            "{refused}"
        );
        drop(chat);
        assert!(
            who_answers(&relay, ClientAbility::Sampling)
                .await
                .contains("no client")
        );
        // Two requests in flight from one client: it answers (the newest that declared).
        let one_client = |label, abilities| {
            Arc::new(Recorder {
                abilities,
                label,
                progress: Arc::default(),
                client: Some(7),
            })
        };
        let first = relay.register(one_client("c1", vec![ClientAbility::Sampling]), None);
        let second = relay.register(one_client("c2", vec![]), None);
        assert_eq!(who_answers(&relay, ClientAbility::Sampling).await, "c1");
        // Another client's request joins them: nobody is asked.
        let (other, _) = recorder("other", vec![ClientAbility::Sampling]);
        let third = relay.register(other, None);
        let refused = who_answers(&relay, ClientAbility::Sampling).await;
        assert!(refused.contains("3 requests are in flight"), "{refused}");
        drop((first, second, third));
    }

    #[tokio::test]
    async fn a_caller_that_reads_nothing_holds_a_bounded_backlog_of_progress() {
        /// Never done with its first progress.
        struct Stalled;
        impl Caller for Stalled {
            fn declares(&self, _ability: ClientAbility) -> bool {
                false
            }
            fn create_message(
                &self,
                _params: CreateMessageRequestParams,
            ) -> BoxFuture<'static, Result<CreateMessageResult, ErrorData>> {
                Box::pin(std::future::pending())
            }
            fn create_elicitation(
                &self,
                _params: ElicitRequestParams,
            ) -> BoxFuture<'static, Result<ElicitResult, ErrorData>> {
                Box::pin(std::future::pending())
            }
            fn progress(&self, _params: ProgressNotificationParam) -> BoxFuture<'static, ()> {
                Box::pin(std::future::pending())
            }
        }
        let relay = Relay::new("fixture");
        let registration = relay.register(Arc::new(Stalled), Some(token("client")));
        let conn = relay.connection();
        registration.route_progress(conn, token("up"));
        for n in 0..10_000 {
            relay.enqueue_progress(
                conn,
                ProgressNotificationParam::new(token("up"), f64::from(n)),
            );
        }
        let callers = relay.callers();
        let queue = callers.active[0].queue.as_ref().expect("a queue");
        // What waits is bounded (one may be taken by the delivery task).
        assert!(
            queue.max_capacity() - queue.capacity() <= PROGRESS_BACKLOG,
            "{}",
            queue.capacity()
        );
        assert_eq!(queue.capacity(), 0, "the backlog is full, not growing");
    }

    #[tokio::test]
    async fn progress_is_routed_by_upstream_token_in_order_under_the_callers_token() {
        let relay = Relay::new("fixture");
        let (a, seen_a) = recorder("a", vec![]);
        let (b, seen_b) = recorder("b", vec![]);
        let conn = relay.connection();
        let ra = relay.register(a, Some(token("client-a")));
        // Progress that comes before its token is routed is kept and delivered first.
        relay.enqueue_progress(conn, ProgressNotificationParam::new(token("up-1"), 0.0));
        ra.route_progress(conn, token("up-1"));
        let rb = relay.register(b, Some(token("client-b")));
        rb.route_progress(conn, token("up-2"));
        for (upstream, progress) in [
            ("up-2", 10.0),
            ("up-1", 50.0),
            ("up-9", 1.0),
            ("up-1", 100.0),
        ] {
            relay.enqueue_progress(
                conn,
                ProgressNotificationParam::new(token(upstream), progress),
            );
        }
        ra.flush().await;
        rb.flush().await;
        assert_eq!(
            *seen_a.lock().expect("test value"),
            vec![
                ("a:client-a".to_owned(), 0.0),
                ("a:client-a".to_owned(), 50.0),
                ("a:client-a".to_owned(), 100.0)
            ]
        );
        assert_eq!(
            *seen_b.lock().expect("test value"),
            vec![("b:client-b".to_owned(), 10.0)]
        );
        drop(ra);
        relay.enqueue_progress(conn, ProgressNotificationParam::new(token("up-1"), 60.0));
        rb.flush().await;
        assert_eq!(
            seen_a.lock().expect("test value").len(),
            3,
            "nothing after the caller left"
        );
    }

    /// A token is a request's only on the connection it was sent on: the same number on
    /// another connection (a remote server's 2026-07-28 link, a restarted server) reaches
    /// another caller, never this one; what an ended connection left unrouted reaches
    /// nobody on the next.
    #[tokio::test]
    async fn progress_is_routed_by_connection_and_token() {
        let relay = Relay::new("fixture");
        let (main, link) = (relay.connection(), relay.connection());
        let (victim, seen_victim) = recorder("victim", vec![]);
        let (other, seen_other) = recorder("other", vec![]);
        let rv = relay.register(victim, Some(token("v")));
        rv.route_progress(main, token("7"));
        let ro = relay.register(other, Some(token("o")));
        ro.route_progress(link, token("7"));
        relay.enqueue_progress(main, ProgressNotificationParam::new(token("7"), 1.0));
        relay.enqueue_progress(link, ProgressNotificationParam::new(token("7"), 2.0));
        // Unrouted progress of a connection that then ends.
        relay.enqueue_progress(main, ProgressNotificationParam::new(token("8"), 3.0));
        relay.connection_ended(main);
        let next = relay.connection();
        let (next_caller, seen_next) = recorder("next", vec![]);
        let rn = relay.register(next_caller, Some(token("n")));
        rn.route_progress(next, token("8"));
        {
            let callers = relay.callers();
            assert!(callers.unrouted.iter().all(|(from, _)| *from != main));
            assert!(callers.tokens.keys().all(|(from, _)| *from != main));
        }
        // The victim's token on the ended connection routes nothing more.
        relay.enqueue_progress(main, ProgressNotificationParam::new(token("7"), 4.0));
        rv.flush().await;
        ro.flush().await;
        rn.flush().await;
        assert_eq!(
            *seen_victim.lock().expect("test value"),
            vec![("victim:v".to_owned(), 1.0)]
        );
        assert_eq!(
            *seen_other.lock().expect("test value"),
            vec![("other:o".to_owned(), 2.0)]
        );
        assert_eq!(*seen_next.lock().expect("test value"), vec![]);
    }
}
