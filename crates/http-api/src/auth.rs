//! Bearer-key authentication and authorisation of every route but health. A key has a role
//! (`store::KeyRole`):
//!
//! - **admin**: every route;
//! - **chat** (for a chat front end): `POST /api/ai/chat`, reading bots and their tools,
//!   `/api/tools/search`, the OpenAPI document, `/api/whoami`. Nothing that changes BotCraft
//!   or runs a tool directly: a chat key on any other route is `403`. A stored chat key may be
//!   made for one bot ([`Caller::bot_id`]): the routes ask [`Caller::check_bot`], and every
//!   other bot answers it as a bot that is not there;
//! - **bot**: `/mcp` for one bot (the gateway's business); `403` on every API route.
//!
//! Keys come from two places, checked in this order:
//! 1. the configuration ([`ApiKeys`]: `BOTCRAFT_API_KEY` as the bootstrap admin key,
//!    `BOTCRAFT_CHAT_KEYS`, `BOTCRAFT_BOT_KEYS`), held as digests and compared in constant time
//!    (`store::key_digest`, shared with the gateway);
//! 2. the store (`botcraft keys create`, `/api/keys`): one indexed query by digest per request,
//!    so a key revoked anywhere fails on its next request.
//!
//! [`require_chat`] and [`require_admin`] are the middlewares; a route's [`Access`] says which.
//! The caller's [`Caller`] (role, key name, key digest, and a chat key's bot) goes into the
//! request's extensions.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
pub use store::KeyRole as Role;
use store::key_digest::KeyRing;

use crate::error::ApiError;
use crate::state::AppState;

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

/// The configured keys, as digests (`store::key_digest`) with their roles. Keys of the store
/// are checked after these ([`caller_of`]).
#[derive(Clone, Default)]
pub struct ApiKeys {
    ring: KeyRing<Role>,
}

/// The name a configured key goes by (in [`Caller`], `/api/whoami`, logs): the variable it
/// is configured with.
pub fn configured_key_name(role: Role) -> &'static str {
    match role {
        Role::Admin => "BOTCRAFT_API_KEY",
        Role::Chat => "BOTCRAFT_CHAT_KEYS",
        Role::Bot => "BOTCRAFT_BOT_KEYS",
    }
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

    /// The role and name of `presented`, if it is one of the keys.
    pub fn find(&self, presented: &str) -> Option<(Role, &'static str)> {
        self.role_of(presented)
            .map(|role| (role, configured_key_name(role)))
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
        "this key may not use this route (a chat key may chat, read bots and search tools; a bot key is for /mcp)",
    )
    .into_response()
}

/// Who a request's key is: its role, and the key's name (a stored key's name, or the
/// configuration variable it came from).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub role: Role,
    pub name: String,
    /// The digest of the key presented: what per-key limits count by (several keys can share
    /// a name, such as the keys of `BOTCRAFT_CHAT_KEYS`).
    pub key: store::key_digest::KeyDigest,
    /// The id of the one bot a chat key may use (a stored key made with a bot); `None`: every
    /// bot. By id: a bot's name may change, or pass to another bot.
    pub bot_id: Option<String>,
    /// That bot's name, as the key's record reads now (for `whoami`).
    pub bot: Option<String>,
}

impl Caller {
    /// Whether this caller may chat with, read and search the tools of `bot`.
    pub fn may_use(&self, bot: &store::Bot) -> bool {
        self.bot_id.as_deref().is_none_or(|id| id == bot.id)
    }

    /// [`Caller::may_use`] as the route's answer for `bot`, asked for as `asked` (a name or an
    /// id): a bot this key may not use answers as a bot that does not exist would (404
    /// `unknown_bot`), so a key for one bot learns nothing of the others.
    pub fn check_bot(&self, asked: &str, bot: &store::Bot) -> Result<(), ApiError> {
        if self.may_use(bot) {
            Ok(())
        } else {
            Err(toolset::ToolsetError::UnknownBot {
                bot: asked.to_owned(),
            }
            .into())
        }
    }
}

/// The caller `presented` is: configured keys first, then the store's live keys.
pub async fn caller_of(state: &AppState, presented: &str) -> Result<Option<Caller>, ApiError> {
    let digest = store::key_digest::KeyDigest::of(presented);
    if let Some((role, name)) = state.config.api_keys.find(presented) {
        return Ok(Some(Caller {
            role,
            name: name.to_owned(),
            key: digest,
            bot_id: None,
            bot: None,
        }));
    }
    match state.store.key_by_secret(presented).await {
        Ok(found) => Ok(found.map(|key| {
            // A chat key's bot limits it; a bot key's is for /mcp, which does not come here.
            let chat = key.role == Role::Chat;
            Caller {
                role: key.role,
                bot_id: key.bot_id.filter(|_| chat),
                bot: key.bot.filter(|_| chat),
                name: key.name,
                key: digest,
            }
        })),
        Err(error) => Err(ApiError::internal(&error)),
    }
}

/// The caller of a request's bearer key, if it carries an accepted one.
pub async fn caller_of_headers(
    state: &AppState,
    headers: &axum::http::HeaderMap,
) -> Result<Option<Caller>, ApiError> {
    match bearer_of(headers) {
        Some(key) => caller_of(state, key).await,
        None => Ok(None),
    }
}

async fn require(state: &AppState, needed: Role, mut request: Request, next: Next) -> Response {
    let caller = match bearer(&request) {
        Some(key) => caller_of(state, key).await,
        None => Ok(None),
    };
    match caller {
        Ok(Some(caller)) if caller.role >= needed => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Ok(Some(_)) => forbidden(),
        Ok(None) => ApiError::unauthorized().into_response(),
        Err(error) => error.into_response(),
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
