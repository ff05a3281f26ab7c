//! Bearer-key authentication and authorisation of every route but health. A key has a role:
//!
//! - **admin** (`BOTCRAFT_API_KEY`): every route;
//! - **chat** (`BOTCRAFT_CHAT_KEYS`, for a chat front end): `POST /api/ai/chat`, reading bots
//!   and their tools, `/api/tools/search`, the OpenAPI document. Nothing that changes
//!   BotCraft or runs a tool directly: a chat key on any other route is `403`.
//!
//! [`ApiKeys`] holds each key's digest with its role and compares a presented key against all
//! of them in constant time (`store::key_digest`, shared with the gateway's bot keys).
//! [`require_chat`] and [`require_admin`] are the middlewares; a route's [`Access`] says which.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use store::key_digest::KeyRing;

use crate::error::ApiError;
use crate::state::AppState;

/// What a key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Chat, read bots and their tools, search tools.
    Chat,
    /// Everything.
    Admin,
}

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    /// No key needed.
    Public,
    /// A chat or an admin key.
    Chat,
    /// An admin key.
    Admin,
}

impl Access {
    /// The name used in the OpenAPI document (`x-botcraft-access`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Chat => "chat",
            Self::Admin => "admin",
        }
    }
}

/// The keys, as digests (`store::key_digest`) with their roles. An empty set refuses every
/// request.
#[derive(Clone, Default)]
pub struct ApiKeys {
    ring: KeyRing<Role>,
}

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKeys({} keys)", self.ring.len())
    }
}

impl ApiKeys {
    /// The non-empty keys of `keys`, as admin keys.
    pub fn new<I, S>(keys: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Self::default().with(keys, Role::Admin)
    }

    /// These keys added with `role` (a key given twice keeps its first role).
    pub fn with<I, S>(mut self, keys: I, role: Role) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        for key in keys {
            if self.ring.find(key.as_ref()).is_none() {
                self.ring.insert(key.as_ref(), role);
            }
        }
        self
    }

    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    /// The role of `presented`, if it is one of the keys (constant time over every key).
    pub fn role_of(&self, presented: &str) -> Option<Role> {
        self.ring.find(presented).copied()
    }

    /// Whether `presented` is an admin key.
    pub fn accepts(&self, presented: &str) -> bool {
        self.role_of(presented) == Some(Role::Admin)
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

fn forbidden() -> Response {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden",
        "this key may not use this route (a chat key may chat, read bots and search tools)",
    )
    .into_response()
}

async fn require(state: &AppState, needed: Role, request: Request, next: Next) -> Response {
    match bearer(&request).and_then(|key| state.config.api_keys.role_of(key)) {
        Some(role) if role >= needed => next.run(request).await,
        Some(_) => forbidden(),
        None => ApiError::unauthorized().into_response(),
    }
}

/// 401 without an accepted key; a chat or an admin key passes.
pub async fn require_chat(State(state): State<AppState>, request: Request, next: Next) -> Response {
    require(&state, Role::Chat, request, next).await
}

/// 401 without an accepted key, 403 with a chat key; an admin key passes.
pub async fn require_admin(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    require(&state, Role::Admin, request, next).await
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

    #[test]
    fn each_key_has_its_role() {
        let keys = ApiKeys::new(["admin-key"]).with(["chat-key", "admin-key"], Role::Chat);
        assert_eq!(keys.role_of("admin-key"), Some(Role::Admin));
        assert_eq!(keys.role_of("chat-key"), Some(Role::Chat));
        assert_eq!(keys.role_of("other"), None);
        assert!(!keys.accepts("chat-key"));
    }
}
