//! `"ApiKey"`: the keys of the HTTP API and of `/mcp`, each with a name, a role
//! ([`KeyRole`]: admin, chat, or bot for one bot), for a chat key optionally the one bot it
//! may use, a creation time, a last-used time and, once revoked, a revocation time. A key
//! bound to a bot goes with it (the bot's deletion deletes the key), and follows it by id
//! ([`ApiKey::bot_id`]) through a rename.
//!
//! - A key is generated here ([`Store::create_api_key`]) and handed out once, in
//!   [`NewApiKey::secret`]; the store keeps only its SHA-256 digest (`key_digest`).
//! - [`Store::key_by_secret`] is the check of a presented key: one indexed query by digest,
//!   so a key revoked by any process sharing the database (`botcraft keys revoke`, another
//!   replica, the API) fails on its very next request. It records the last use at most once
//!   per [`LAST_USED_RESOLUTION_MS`] per key, so the hot path writes rarely.
//! - A revoked key keeps its row and its name (the audit trail); a name is never reused.

use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::database::{Store, new_id};
use crate::error::{StoreError, ValidationError, is_unique_violation};
use crate::key_digest::KeyDigest;
use crate::validate;

/// A key's last use is written when the stored one is older than this (one minute).
pub const LAST_USED_RESOLUTION_MS: i64 = 60_000;

/// The prefix of every key BotCraft generates (so secret scanners and people can spot one).
pub const KEY_PREFIX: &str = "bck_";

/// Random characters after [`KEY_PREFIX`]: 40 of 62 letters and digits, 238 bits.
const KEY_RANDOM_CHARS: usize = 40;

/// What a key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyRole {
    /// `/mcp`, for one bot.
    Bot,
    /// `POST /api/ai/chat`, reading bots and their tools, `/api/tools/search`: for every bot,
    /// or for the one bot the key names.
    Chat,
    /// Everything.
    Admin,
}

impl KeyRole {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bot => "bot",
            Self::Chat => "chat",
            Self::Admin => "admin",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "bot" => Some(Self::Bot),
            "chat" => Some(Self::Chat),
            "admin" => Some(Self::Admin),
            _ => None,
        }
    }
}

/// A stored key, as listed: never the key, never its digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKey {
    pub id: String,
    pub name: String,
    pub role: KeyRole,
    /// The bot's name: a bot key's, or the one bot a chat key may use.
    pub bot: Option<String>,
    /// That bot's id (`None`: no bot): what a chat key's reach is checked by, since a bot's
    /// name may change. Not part of the API's answers.
    #[serde(skip)]
    pub bot_id: Option<String>,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

/// What [`Store::create_api_key`] makes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiKeySpec {
    pub name: String,
    pub role: KeyRole,
    /// The bot (name or id) a bot key is for (required there), or the one bot a chat key may
    /// use (none: every bot); never for an admin key.
    #[serde(default)]
    pub bot: Option<String>,
}

/// A key just created: its record, and the key itself, shown this once.
#[derive(Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewApiKey {
    #[serde(flatten)]
    pub key: ApiKey,
    pub secret: String,
}

impl std::fmt::Debug for NewApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewApiKey")
            .field("key", &self.key)
            .field("secret", &"…")
            .finish()
    }
}

const SELECT: &str = r#"SELECT k."id", k."name", k."role", k."botId", b."name" AS "botName", k."createdAt", k."lastUsedAt", k."revokedAt" FROM "ApiKey" k LEFT JOIN "Bot" b ON b."id" = k."botId""#;

fn decode(row: &AnyRow) -> Result<ApiKey, StoreError> {
    let id: String = row.try_get("id")?;
    let role: String = row.try_get("role")?;
    let role = KeyRole::parse(&role).ok_or_else(|| StoreError::Corrupt {
        table: "ApiKey",
        column: "role",
        id: id.clone(),
        reason: format!("unknown role {role:?}"),
    })?;
    Ok(ApiKey {
        name: row.try_get("name")?,
        role,
        bot: row.try_get("botName")?,
        bot_id: row.try_get("botId")?,
        created_at: row.try_get("createdAt")?,
        last_used_at: row.try_get("lastUsedAt")?,
        revoked_at: row.try_get("revokedAt")?,
        id,
    })
}

/// A new random key.
fn generate_secret() -> String {
    const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let random: String = (0..KEY_RANDOM_CHARS)
        .map(|_| char::from(ALPHABET[rand::random_range(0..ALPHABET.len())]))
        .collect();
    format!("{KEY_PREFIX}{random}")
}

impl Store {
    /// Create a key; the returned [`NewApiKey::secret`] is the only copy of the key.
    pub async fn create_api_key(&self, spec: &ApiKeySpec) -> Result<NewApiKey, StoreError> {
        validate::api_key(spec)?;
        let bot_id = match &spec.bot {
            None => None,
            Some(bot) => {
                let found = match self.bot_by_name(bot).await? {
                    Some(found) => Some(found),
                    None => self.bot(bot).await?,
                };
                Some(found.ok_or_else(|| StoreError::UnknownBot(bot.clone()))?.id)
            }
        };
        let secret = generate_secret();
        let now = self.now_ms();
        let id = new_id(now);
        sqlx::query(
            r#"INSERT INTO "ApiKey" ("id", "name", "role", "botId", "digest", "createdAt") VALUES ($1, $2, $3, $4, $5, $6)"#,
        )
        .bind(&id)
        .bind(&spec.name)
        .bind(spec.role.as_str())
        .bind(bot_id)
        .bind(KeyDigest::of(&secret).to_hex())
        .bind(now)
        .execute(self.pool())
        .await
        .map_err(|error| {
            if is_unique_violation(&error) {
                StoreError::DuplicateKeyName {
                    name: spec.name.clone(),
                }
            } else {
                error.into()
            }
        })?;
        let key = self
            .api_key(&spec.name)
            .await?
            .ok_or_else(|| StoreError::UnknownKey(spec.name.clone()))?;
        Ok(NewApiKey { key, secret })
    }

    /// Every key, revoked ones included, oldest first.
    pub async fn api_keys(&self) -> Result<Vec<ApiKey>, StoreError> {
        let sql = format!(r#"{SELECT} ORDER BY k."createdAt", k."name""#);
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(decode).collect()
    }

    /// The key named `name`.
    pub async fn api_key(&self, name: &str) -> Result<Option<ApiKey>, StoreError> {
        let sql = format!(r#"{SELECT} WHERE k."name" = $1"#);
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(name)
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(decode).transpose()
    }

    /// Revoke the key named `name` (revoking a revoked key keeps its first revocation time).
    pub async fn revoke_api_key(&self, name: &str) -> Result<ApiKey, StoreError> {
        sqlx::query(
            r#"UPDATE "ApiKey" SET "revokedAt" = $1 WHERE "name" = $2 AND "revokedAt" IS NULL"#,
        )
        .bind(self.now_ms())
        .bind(name)
        .execute(self.pool())
        .await?;
        self.api_key(name)
            .await?
            .ok_or_else(|| StoreError::UnknownKey(name.to_owned()))
    }

    /// The live (not revoked) key `presented` is, recording its use. A bot key whose bot was
    /// deleted is gone with it.
    pub async fn key_by_secret(&self, presented: &str) -> Result<Option<ApiKey>, StoreError> {
        if presented.is_empty() {
            return Ok(None);
        }
        let sql = format!(r#"{SELECT} WHERE k."digest" = $1 AND k."revokedAt" IS NULL"#);
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(KeyDigest::of(presented).to_hex())
            .fetch_optional(self.pool())
            .await?;
        let Some(mut key) = row.as_ref().map(decode).transpose()? else {
            return Ok(None);
        };
        let now = self.now_ms();
        let stale = key
            .last_used_at
            .is_none_or(|used| now - used >= LAST_USED_RESOLUTION_MS);
        if stale {
            sqlx::query(r#"UPDATE "ApiKey" SET "lastUsedAt" = $1 WHERE "id" = $2"#)
                .bind(now)
                .bind(&key.id)
                .execute(self.pool())
                .await?;
            key.last_used_at = Some(now);
        }
        Ok(Some(key))
    }
}

/// Check a key spec: a valid name; a bot named exactly when the role is bot.
pub(crate) fn check(spec: &ApiKeySpec) -> Result<(), ValidationError> {
    match (spec.role, &spec.bot) {
        (KeyRole::Bot, None) => Err(ValidationError::BotKeyWithoutBot {
            key: spec.name.clone(),
        }),
        (KeyRole::Admin, Some(_)) => Err(ValidationError::BotForNonBotKey {
            key: spec.name.clone(),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_prefixed_random_and_distinct() {
        let a = generate_secret();
        let b = generate_secret();
        assert!(a.starts_with(KEY_PREFIX));
        assert_eq!(a.len(), KEY_PREFIX.len() + KEY_RANDOM_CHARS);
        assert!(
            a[KEY_PREFIX.len()..]
                .chars()
                .all(|c| c.is_ascii_alphanumeric())
        );
        assert_ne!(a, b);
    }

    #[test]
    fn roles_round_trip_by_name() {
        for role in [KeyRole::Admin, KeyRole::Chat, KeyRole::Bot] {
            assert_eq!(KeyRole::parse(role.as_str()), Some(role));
        }
        assert_eq!(KeyRole::parse("root"), None);
        assert!(KeyRole::Admin > KeyRole::Chat && KeyRole::Chat > KeyRole::Bot);
    }

    #[test]
    fn the_secret_is_not_in_debug_output() {
        let new = NewApiKey {
            key: ApiKey {
                id: "c1".into(),
                name: "front".into(),
                role: KeyRole::Chat,
                bot: None,
                bot_id: None,
                created_at: 1,
                last_used_at: None,
                revoked_at: None,
            },
            secret: "bck_secretvalue".into(),
        };
        assert!(!format!("{new:?}").contains("secretvalue"));
    }
}
