//! How many chat turns run at once: at most [`StreamLimits::total`] in all and
//! [`StreamLimits::per_key`] for one key. A turn past either is refused before it starts with
//! `429 too_many_streams` and `Retry-After`; a running one holds its [`StreamSlot`] until its
//! answer ends (the SSE body is dropped, or the JSON answer is ready).
//!
//! Together with the bounded event buffer (`inference::turn_events`) and the connection's
//! write-stall limit (`crate::listener`), this bounds what chat keys can make BotCraft hold:
//! `total` turns, each with a buffer of a few tens of KiB.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use observability::BotCraftMetrics;
use store::key_digest::KeyDigest;

use crate::error::ApiError;

/// Default cap on chat turns running at once.
pub const DEFAULT_MAX_CHAT_STREAMS: usize = 512;
/// Default cap on chat turns running at once for one key.
pub const DEFAULT_MAX_CHAT_STREAMS_PER_KEY: usize = 256;
/// What `Retry-After` says, in seconds.
pub const RETRY_AFTER_SECONDS: u64 = 5;

/// The caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// Turns at once in all (`BOTCRAFT_MAX_CHAT_STREAMS`).
    pub total: usize,
    /// Turns at once for one key (`BOTCRAFT_MAX_CHAT_STREAMS_PER_KEY`).
    pub per_key: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            total: DEFAULT_MAX_CHAT_STREAMS,
            per_key: DEFAULT_MAX_CHAT_STREAMS_PER_KEY,
        }
    }
}

/// The turns running now, in all and by key. Shared by every clone of the state.
#[derive(Debug, Default)]
pub struct ChatStreams {
    limits: StreamLimits,
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    total: usize,
    by_key: HashMap<KeyDigest, usize>,
    /// Turns admitted since the start.
    started: u64,
}

/// A running turn's place; given back when dropped.
#[derive(Debug)]
pub struct StreamSlot {
    streams: Arc<ChatStreams>,
    key: KeyDigest,
    metrics: BotCraftMetrics,
}

/// Which cap refused a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamRefusal {
    #[error(
        "{limit} chat turns are running for this key, the most one key may run at once (BOTCRAFT_MAX_CHAT_STREAMS_PER_KEY); try again when one has ended"
    )]
    PerKey { limit: usize },
    #[error(
        "{limit} chat turns are running, the most BotCraft runs at once (BOTCRAFT_MAX_CHAT_STREAMS); try again shortly"
    )]
    Total { limit: usize },
}

impl StreamRefusal {
    /// The cap, as the metrics name it.
    pub fn cap(self) -> &'static str {
        match self {
            Self::PerKey { .. } => "per_key",
            Self::Total { .. } => "total",
        }
    }
}

impl IntoResponse for StreamRefusal {
    fn into_response(self) -> Response {
        let mut response = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_streams",
            self.to_string(),
        )
        .into_response();
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
        response
    }
}

impl ChatStreams {
    pub fn new(limits: StreamLimits) -> Arc<Self> {
        Arc::new(Self {
            limits,
            open: Mutex::new(Open::default()),
        })
    }

    /// A place for one more turn of `key`, or the cap that says no; `metrics` counts both
    /// (`botcraft_chat_streams`, `botcraft_chat_streams_refused_total`).
    pub fn admit(
        self: &Arc<Self>,
        key: KeyDigest,
        metrics: &BotCraftMetrics,
    ) -> Result<StreamSlot, StreamRefusal> {
        let refused = {
            let mut open = self
                .open
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let of_key = open.by_key.get(&key).copied().unwrap_or(0);
            if of_key >= self.limits.per_key {
                Some(StreamRefusal::PerKey {
                    limit: self.limits.per_key,
                })
            } else if open.total >= self.limits.total {
                Some(StreamRefusal::Total {
                    limit: self.limits.total,
                })
            } else {
                open.total += 1;
                open.started += 1;
                *open.by_key.entry(key).or_insert(0) += 1;
                None
            }
        };
        if let Some(refusal) = refused {
            metrics.chat_stream_refused(refusal.cap());
            return Err(refusal);
        }
        metrics.chat_stream_started();
        Ok(StreamSlot {
            streams: Arc::clone(self),
            key,
            metrics: metrics.clone(),
        })
    }

    /// Turns admitted since the start.
    pub fn started(&self) -> u64 {
        self.open
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .started
    }

    /// Turns running now.
    pub fn running(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .total
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.metrics.chat_stream_ended();
        let mut open = self
            .streams
            .open
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        open.total = open.total.saturating_sub(1);
        if let Some(count) = open.by_key.get_mut(&self.key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.by_key.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn turns_are_capped_per_key_and_in_all_and_places_come_back() {
        let streams = ChatStreams::new(StreamLimits {
            total: 3,
            per_key: 2,
        });
        let metrics = BotCraftMetrics::new().expect("metrics");
        let admit = |key| streams.admit(key, &metrics);
        let (alice, bob, carol) = (
            KeyDigest::of("alice"),
            KeyDigest::of("bob"),
            KeyDigest::of("carol"),
        );
        let first = admit(alice).expect("alice 1");
        let _second = admit(alice).expect("alice 2");
        assert_eq!(admit(alice).err(), Some(StreamRefusal::PerKey { limit: 2 }));
        let _third = admit(bob).expect("bob 1");
        assert_eq!(admit(carol).err(), Some(StreamRefusal::Total { limit: 3 }));
        drop(first);
        assert_eq!(streams.running(), 2);
        let _fourth = admit(carol).expect("carol, once alice's first ended");
        assert_eq!(streams.running(), 3);
        let text = metrics.encode();
        for line in [
            "botcraft_chat_streams 3",
            "botcraft_chat_streams_refused_total{cap=\"per_key\"} 1",
            "botcraft_chat_streams_refused_total{cap=\"total\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in {text}");
        }
    }

    #[test]
    fn a_refusal_is_429_with_retry_after() {
        let response = StreamRefusal::Total { limit: 1 }.into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            response.headers().get(header::RETRY_AFTER),
            Some(&HeaderValue::from_static("5"))
        );
    }
}
