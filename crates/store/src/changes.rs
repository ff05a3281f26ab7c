//! What the store tells the rest of the process about its writes, so caches of it can be
//! exact without asking it again:
//!
//! - [`Store::version`]: a counter raised by every write of servers, bots or bindings, before
//!   the write returns. A cache that remembers the version it was filled at is stale exactly
//!   when the version moved: one atomic load instead of a query.
//! - [`Store::changes`]: the same writes as events, for whoever must act on them (a gateway
//!   session whose tools may have changed).
//! - [`Store::queries_run`]: how many statements this store sent, so tests can prove a hot
//!   path sends none.
//! - Other replicas (PostgreSQL only): every write is also announced on the channel
//!   [`CHANGES_CHANNEL`] with `pg_notify`, tagged with this process's origin, and
//!   [`Store::listen_to_peers`] hears the other replicas' announcements and applies them here as
//!   if they were local writes (the version moves, the event goes out). A replica that loses
//!   its `LISTEN` connection listens again and then announces [`StoreChange::Everything`], so a
//!   notification missed meanwhile cannot leave a cache stale. An announcement that was never
//!   sent (its `pg_notify` failed, or the process died between the write and it) is caught by
//!   the store's generation: a counter every such write raises in its own transaction (a
//!   trigger), which each replica reads every [`GENERATION_POLL`], dropping its caches when
//!   it moved. SQLite has one replica: nothing is announced, there is no one to hear.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sqlx::postgres::PgListener;
use tokio::sync::broadcast;

use crate::database::{Backend, Store};
use crate::error::StoreError;

/// The PostgreSQL channel every replica announces its writes on.
pub const CHANGES_CHANNEL: &str = "botcraft_changes";

/// How often a replica reads the store's generation, to catch a write whose announcement
/// it never heard.
pub const GENERATION_POLL: Duration = Duration::from_secs(15);

/// How long a replica waits between attempts to listen again after losing the channel.
const RELISTEN_PAUSE: Duration = Duration::from_secs(1);

/// A write that changed what a bot may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum StoreChange {
    /// A server was created, updated or deleted.
    Server { id: String },
    /// A bot was created, updated or deleted.
    Bot { id: String },
    /// A bot's bindings changed.
    Binding { bot_id: String },
    /// Another replica captured a server's tool list (a replica's own capture reaches its
    /// caches through its manager, not through the store).
    ToolCache { mcp_server_id: String },
    /// Another replica wrote or deleted an OAuth record of a server (the server's own, or a
    /// bot's own for it): a sign-out, an authorization, a refresh. Records kept in memory
    /// are read again.
    OAuthRecord { mcp_server_id: String },
    /// Anything may have changed: this replica may have missed announcements while it was
    /// not listening. Drop every cache.
    Everything,
}

/// One announcement on [`CHANGES_CHANNEL`].
#[derive(Debug, Serialize, Deserialize)]
struct Announcement {
    /// The process that wrote (see [`ChangeLog`]); a replica ignores its own.
    origin: String,
    change: StoreChange,
}

/// The task that hears the other replicas' writes; stopped when dropped.
#[derive(Debug)]
pub struct PeerListener {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for PeerListener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The counters and the channel a store and its clones share.
#[derive(Debug)]
pub(crate) struct ChangeLog {
    /// Who announces this process's writes (random per process; clones of a store share it).
    origin: String,
    version: AtomicU64,
    queries: AtomicU64,
    events: broadcast::Sender<StoreChange>,
}

impl Default for ChangeLog {
    fn default() -> Self {
        Self {
            origin: format!("{:016x}", rand::random::<u64>()),
            version: AtomicU64::new(0),
            queries: AtomicU64::new(0),
            events: broadcast::channel(256).0,
        }
    }
}

impl Store {
    /// Raised by every write of servers, bots or bindings (and tool lists captured
    /// elsewhere), not by OAuth records: what the caches of those watch.
    pub fn version(&self) -> u64 {
        self.log.version.load(Ordering::SeqCst)
    }

    /// Every later write of servers, bots or bindings, and what other replicas announce
    /// ([`StoreChange`]).
    pub fn changes(&self) -> broadcast::Receiver<StoreChange> {
        self.log.events.subscribe()
    }

    /// Statements sent by this store (and its clones) so far.
    pub fn queries_run(&self) -> u64 {
        self.log.queries.load(Ordering::Relaxed)
    }

    /// A write of this process: applied here, and announced to the other replicas.
    pub(crate) async fn changed(&self, change: StoreChange) {
        self.apply(change.clone());
        self.announce(change).await;
    }

    fn apply(&self, change: StoreChange) {
        // The version is what caches of servers, bots and bindings watch: an OAuth record
        // changes none of them (its event alone has them read again).
        if !matches!(change, StoreChange::OAuthRecord { .. }) {
            self.log.version.fetch_add(1, Ordering::SeqCst);
        }
        let _ = self.log.events.send(change);
    }

    /// Tell the other replicas (PostgreSQL). The write has happened either way: a failed
    /// announcement is logged, and a replica that missed it reloads when it listens again.
    pub(crate) async fn announce(&self, change: StoreChange) {
        if self.backend() != Backend::Postgres {
            return;
        }
        let announcement = Announcement {
            origin: self.log.origin.clone(),
            change,
        };
        let payload = serde_json::to_string(&announcement).unwrap_or_default();
        let sent = sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANGES_CHANNEL)
            .bind(payload)
            .execute(self.pool())
            .await;
        if let Err(error) = sent {
            tracing::warn!(%error, "a store write was not announced to the other replicas");
        }
    }

    /// Hear the other replicas' writes from now on (PostgreSQL; `None` for SQLite, which has
    /// one replica). Returns once `LISTEN` is in place, so a write made after this returns is
    /// heard. Each announcement of another process is applied as a local write; and every
    /// [`GENERATION_POLL`] the store's generation is read, so a write whose announcement was
    /// lost reaches this replica too ([`StoreChange::Everything`]).
    pub async fn listen_to_peers(&self) -> Result<Option<PeerListener>, StoreError> {
        self.listen_to_peers_polling(GENERATION_POLL).await
    }

    /// [`Store::listen_to_peers`], reading the generation every `poll`.
    pub async fn listen_to_peers_polling(
        &self,
        poll: Duration,
    ) -> Result<Option<PeerListener>, StoreError> {
        if self.backend() != Backend::Postgres {
            return Ok(None);
        }
        let listener = self.listen().await?;
        let seen = self.generation().await?;
        let store = self.clone();
        let task = tokio::spawn(async move { store.hear(listener, seen, poll).await });
        Ok(Some(PeerListener { task }))
    }

    /// The store's generation (PostgreSQL): raised in the transaction of every write of
    /// servers, bots and bindings, by any replica.
    async fn generation(&self) -> Result<i64, StoreError> {
        let row: (i64,) = sqlx::query_as(r#"SELECT "value" FROM "StoreGeneration" WHERE "id" = 1"#)
            .fetch_one(self.pool())
            .await?;
        Ok(row.0)
    }

    async fn listen(&self) -> Result<PgListener, StoreError> {
        let mut listener = PgListener::connect(self.url())
            .await
            .map_err(StoreError::Connect)?;
        listener
            .listen(CHANGES_CHANNEL)
            .await
            .map_err(StoreError::Connect)?;
        Ok(listener)
    }

    async fn hear(&self, mut listener: PgListener, mut seen: i64, poll: Duration) {
        let mut every = tokio::time::interval(poll);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        every.reset();
        loop {
            let received = tokio::select! {
                received = listener.try_recv() => received,
                _ = every.tick() => {
                    // Moved without an announcement heard for it (or with one: a cache
                    // dropped once more costs a reload, a stale one a wrong answer).
                    match self.generation().await {
                        Ok(now) if now != seen => {
                            seen = now;
                            tracing::debug!("the store's generation moved; caches dropped");
                            self.apply(StoreChange::Everything);
                        }
                        Ok(_) => {}
                        Err(error) => {
                            tracing::warn!(%error, "cannot read the store's generation");
                        }
                    }
                    continue;
                }
            };
            match received {
                Ok(Some(notification)) => self.heard(notification.payload()),
                // The connection is gone. Listen on a new one, then drop every cache: what was
                // announced in between was missed.
                Ok(None) | Err(_) => {
                    tracing::warn!("lost the store's change channel; listening again");
                    listener = loop {
                        match self.listen().await {
                            Ok(listener) => break listener,
                            Err(error) => {
                                tracing::warn!(%error, "cannot listen to the store's change channel yet");
                                tokio::time::sleep(RELISTEN_PAUSE).await;
                            }
                        }
                    };
                    tracing::info!("listening to the store's change channel again; caches dropped");
                    if let Ok(now) = self.generation().await {
                        seen = now;
                    }
                    self.apply(StoreChange::Everything);
                }
            }
        }
    }

    fn heard(&self, payload: &str) {
        match serde_json::from_str::<Announcement>(payload) {
            Ok(announcement) if announcement.origin == self.log.origin => {}
            Ok(announcement) => self.apply(announcement.change),
            Err(error) => {
                tracing::warn!(%error, "an announcement on the change channel was not understood; dropping every cache");
                self.apply(StoreChange::Everything);
            }
        }
    }

    /// The pool, counted: every statement goes through here.
    pub(crate) fn pool(&self) -> &sqlx::AnyPool {
        self.log.queries.fetch_add(1, Ordering::Relaxed);
        &self.pool
    }
}
