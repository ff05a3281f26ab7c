//! Bearer-key authentication of every route but health: [`ApiKeys`] holds each configured
//! key's digest and compares a presented key against all of them in constant time
//! (`store::key_digest`, shared with the gateway's bot keys). [`require_bearer`] is the
//! middleware.

use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use store::key_digest::KeyRing;

use crate::error::ApiError;
use crate::state::AppState;

/// The admin keys, as digests (`store::key_digest`). An empty set refuses every request.
#[derive(Clone, Default)]
pub struct ApiKeys {
    ring: KeyRing<()>,
}

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKeys({} keys)", self.ring.len())
    }
}

impl ApiKeys {
    /// The non-empty keys of `keys`.
    pub fn new<I, S>(keys: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut ring = KeyRing::default();
        for key in keys {
            ring.insert(key.as_ref(), ());
        }
        Self { ring }
    }

    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    /// Whether `presented` is one of the keys (constant time over every key).
    pub fn accepts(&self, presented: &str) -> bool {
        self.ring.find(presented).is_some()
    }
}

/// The key of an `Authorization: Bearer <key>` header (scheme case-insensitive).
fn bearer(request: &Request) -> Option<&str> {
    bearer_of(request.headers())
}

/// The key of the `Authorization: Bearer <key>` header among `headers`.
pub(crate) fn bearer_of(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, key) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(key.trim())
        .filter(|key| !key.is_empty())
}

/// Answers 401 unless the request carries an accepted bearer key.
pub async fn require_bearer(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    match bearer(&request) {
        Some(key) if state.config.api_keys.accepts(key) => next.run(request).await,
        _ => ApiError::unauthorized().into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_accept_only_exact_matches() {
        let keys = ApiKeys::new(["first-key", "", "second-key"]);
        let cases = [
            ("first-key", true),
            ("second-key", true),
            ("first-ke", false),
            ("first-key ", false),
            ("", false),
            ("FIRST-KEY", false),
        ];
        for (presented, accepted) in cases {
            assert_eq!(keys.accepts(presented), accepted, "{presented:?}");
        }
        assert!(!ApiKeys::new(Vec::<String>::new()).accepts(""));
    }
}
