//! Bearer-key authentication of every route but health: [`ApiKeys`] holds the SHA-256 of each
//! configured key and compares a presented key against all of them in constant time (the
//! digests have one length, so neither the key's length nor its first wrong byte shows in the
//! timing). [`require_bearer`] is the middleware.

use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::ApiError;
use crate::state::AppState;

/// The admin keys, as digests. An empty set refuses every request.
#[derive(Clone, Default)]
pub struct ApiKeys {
    digests: Vec<[u8; 32]>,
}

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKeys({} keys)", self.digests.len())
    }
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

impl ApiKeys {
    /// The non-empty keys of `keys`.
    pub fn new<I, S>(keys: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Self {
            digests: keys
                .into_iter()
                .filter(|key| !key.as_ref().is_empty())
                .map(|key| digest(key.as_ref()))
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.digests.is_empty()
    }

    /// Whether `presented` is one of the keys. Every key is compared, whatever matches.
    pub fn accepts(&self, presented: &str) -> bool {
        let presented = digest(presented);
        let mut any = subtle::Choice::from(0);
        for key in &self.digests {
            any |= key.ct_eq(&presented);
        }
        any.into()
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
