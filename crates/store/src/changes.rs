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

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::broadcast;

use crate::database::Store;

/// A write that changed what a bot may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChange {
    /// A server was created, updated or deleted.
    Server { id: String },
    /// A bot was created, updated or deleted.
    Bot { id: String },
    /// A bot's bindings changed.
    Binding { bot_id: String },
}

/// The counters and the channel a store and its clones share.
#[derive(Debug)]
pub(crate) struct ChangeLog {
    version: AtomicU64,
    queries: AtomicU64,
    events: broadcast::Sender<StoreChange>,
}

impl Default for ChangeLog {
    fn default() -> Self {
        Self {
            version: AtomicU64::new(0),
            queries: AtomicU64::new(0),
            events: broadcast::channel(256).0,
        }
    }
}

impl Store {
    /// Raised by every write of servers, bots or bindings.
    pub fn version(&self) -> u64 {
        self.log.version.load(Ordering::SeqCst)
    }

    /// Every later write of servers, bots or bindings.
    pub fn changes(&self) -> broadcast::Receiver<StoreChange> {
        self.log.events.subscribe()
    }

    /// Statements sent by this store (and its clones) so far.
    pub fn queries_run(&self) -> u64 {
        self.log.queries.load(Ordering::Relaxed)
    }

    pub(crate) fn changed(&self, change: StoreChange) {
        self.log.version.fetch_add(1, Ordering::SeqCst);
        let _ = self.log.events.send(change);
    }

    /// The pool, counted: every statement goes through here.
    pub(crate) fn pool(&self) -> &sqlx::AnyPool {
        self.log.queries.fetch_add(1, Ordering::Relaxed);
        &self.pool
    }
}
