//! [`Subscribers`]: the resource subscriptions BotCraft's clients hold on one server, counted.
//!
//! A server's connection is shared by every session (of every bot) that uses it, and a
//! `resources/subscribe` belongs to the connection, not to a session: were a session's
//! `resources/unsubscribe` passed on as it came, any client could end every other client's
//! subscription to that URI. So the faces count who holds each URI here: the server is told
//! to unsubscribe only when the last holder leaves, and a session leaves only what it holds.
//! Holding the ledger ([`Subscribers::ledger`]) serializes the changes of one server's
//! subscriptions with the requests that tell the server, so a subscribe and the last
//! unsubscribe of a URI cannot reach it in the wrong order.

use std::collections::HashMap;

/// The longest resource URI a client may subscribe to or BotCraft relays an update of, in
/// bytes.
pub const MAX_RESOURCE_URI_BYTES: usize = 8 * 1024;

/// The subscriptions of one server, for the life of the manager (like its relay).
#[derive(Debug, Default)]
pub struct Subscribers {
    ledger: tokio::sync::Mutex<Ledger>,
}

/// URI → how many sessions hold it.
#[derive(Debug, Default)]
pub struct Ledger {
    holders: HashMap<String, usize, foldhash::fast::RandomState>,
}

impl Subscribers {
    /// The ledger, held while the server is told of a change.
    pub async fn ledger(&self) -> tokio::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().await
    }
}

impl Ledger {
    /// One more session holds `uri`.
    pub fn join(&mut self, uri: &str) {
        *self.holders.entry(uri.to_owned()).or_default() += 1;
    }

    /// A session that held `uri` left it: `true` when it was the last (the server is then
    /// told to unsubscribe).
    pub fn leave(&mut self, uri: &str) -> bool {
        match self.holders.get_mut(uri) {
            Some(count) if *count > 1 => {
                *count -= 1;
                false
            }
            Some(_) => {
                self.holders.remove(uri);
                true
            }
            None => true,
        }
    }

    /// How many sessions hold `uri`.
    pub fn holders(&self, uri: &str) -> usize {
        self.holders.get(uri).copied().unwrap_or(0)
    }

    /// How many URIs are held.
    pub fn len(&self) -> usize {
        self.holders.len()
    }

    /// Whether no URI is held.
    pub fn is_empty(&self) -> bool {
        self.holders.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_last_holder_to_leave_is_told_so() {
        let subscribers = Subscribers::default();
        let mut ledger = subscribers.ledger().await;
        ledger.join("a");
        ledger.join("a");
        ledger.join("b");
        assert_eq!(
            (ledger.holders("a"), ledger.holders("b"), ledger.len()),
            (2, 1, 2)
        );
        assert!(!ledger.leave("a"));
        assert!(ledger.leave("a"));
        assert!(ledger.leave("b"));
        assert!(ledger.is_empty());
        // Nobody held it: leaving it tells the server (it may hold it from before a restart).
        assert!(ledger.leave("never"));
    }
}
