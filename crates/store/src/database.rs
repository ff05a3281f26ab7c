//! Connecting, migrating, and what every query shares: the backend, the clock, new ids.

use std::borrow::Cow;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use sqlx::AnyPool;
use sqlx::SqlSafeStr;
use sqlx::any::AnyPoolOptions;
use sqlx::migrate::{Migration, MigrationType, Migrator};

use crate::error::StoreError;

/// The database behind a [`Store`]. Queries are the same on both; only migrations differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// The backend a database URL names, from its scheme alone.
    pub fn of_url(url: &str) -> Result<Self, StoreError> {
        let scheme = url.split(':').next().unwrap_or_default();
        match scheme {
            "sqlite" => Ok(Self::Sqlite),
            "postgres" | "postgresql" => Ok(Self::Postgres),
            other => Err(StoreError::UnsupportedUrl {
                scheme: other.to_owned(),
            }),
        }
    }

    fn migrations(self) -> &'static [(i64, &'static str, &'static str)] {
        match self {
            Self::Sqlite => SQLITE_MIGRATIONS,
            Self::Postgres => POSTGRES_MIGRATIONS,
        }
    }
}

const SQLITE_MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "init",
        include_str!("../migrations/sqlite/0001_init.sql"),
    ),
    (
        2,
        "tool vectors",
        include_str!("../migrations/sqlite/0002_tool_vectors.sql"),
    ),
    (
        3,
        "api keys",
        include_str!("../migrations/sqlite/0003_api_keys.sql"),
    ),
    (
        4,
        "bot results",
        include_str!("../migrations/sqlite/0004_bot_results.sql"),
    ),
    (
        5,
        "remote servers",
        include_str!("../migrations/sqlite/0005_remote_servers.sql"),
    ),
    (
        6,
        "oauth tokens",
        include_str!("../migrations/sqlite/0006_oauth_tokens.sql"),
    ),
    (
        7,
        "approvals",
        include_str!("../migrations/sqlite/0007_approvals.sql"),
    ),
    (
        8,
        "bot oauth tokens",
        include_str!("../migrations/sqlite/0008_bot_oauth_tokens.sql"),
    ),
    (
        9,
        "approval uses",
        include_str!("../migrations/sqlite/0009_approval_uses.sql"),
    ),
    (
        10,
        "server sandbox",
        include_str!("../migrations/sqlite/0010_server_sandbox.sql"),
    ),
    (
        11,
        "key share",
        include_str!("../migrations/sqlite/0011_key_share.sql"),
    ),
    (
        12,
        "seeded playwright asks",
        include_str!("../migrations/sqlite/0012_seeded_playwright_asks.sql"),
    ),
    (
        13,
        "tool vector sets",
        include_str!("../migrations/sqlite/0013_tool_vector_sets.sql"),
    ),
    (
        14,
        "tool vector use",
        include_str!("../migrations/sqlite/0014_tool_vector_use.sql"),
    ),
    (
        15,
        "playwright webmcp and drop",
        include_str!("../migrations/sqlite/0015_playwright_webmcp_and_drop.sql"),
    ),
    (
        16,
        "playwright sockets and egress",
        include_str!("../migrations/sqlite/0016_playwright_sockets_and_egress.sql"),
    ),
    (
        17,
        "playwright network to proxy",
        include_str!("../migrations/sqlite/0017_playwright_network_to_proxy.sql"),
    ),
];
const POSTGRES_MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "init",
        include_str!("../migrations/postgres/0001_init.sql"),
    ),
    (
        2,
        "tool vectors",
        include_str!("../migrations/postgres/0002_tool_vectors.sql"),
    ),
    (
        3,
        "api keys",
        include_str!("../migrations/postgres/0003_api_keys.sql"),
    ),
    (
        4,
        "bot results",
        include_str!("../migrations/postgres/0004_bot_results.sql"),
    ),
    (
        5,
        "remote servers",
        include_str!("../migrations/postgres/0005_remote_servers.sql"),
    ),
    (
        6,
        "oauth tokens",
        include_str!("../migrations/postgres/0006_oauth_tokens.sql"),
    ),
    (
        7,
        "approvals",
        include_str!("../migrations/postgres/0007_approvals.sql"),
    ),
    (
        8,
        "bot oauth tokens",
        include_str!("../migrations/postgres/0008_bot_oauth_tokens.sql"),
    ),
    (
        9,
        "approval uses",
        include_str!("../migrations/postgres/0009_approval_uses.sql"),
    ),
    (
        10,
        "server sandbox",
        include_str!("../migrations/postgres/0010_server_sandbox.sql"),
    ),
    (
        11,
        "key share",
        include_str!("../migrations/postgres/0011_key_share.sql"),
    ),
    (
        12,
        "seeded playwright asks",
        include_str!("../migrations/postgres/0012_seeded_playwright_asks.sql"),
    ),
    (
        13,
        "tool vector sets",
        include_str!("../migrations/postgres/0013_tool_vector_sets.sql"),
    ),
    (
        14,
        "tool vector use",
        include_str!("../migrations/postgres/0014_tool_vector_use.sql"),
    ),
    (
        15,
        "store generation",
        include_str!("../migrations/postgres/0015_store_generation.sql"),
    ),
    (
        16,
        "tool cache generation",
        include_str!("../migrations/postgres/0016_tool_cache_generation.sql"),
    ),
    (
        17,
        "oauth record generation",
        include_str!("../migrations/postgres/0017_oauth_record_generation.sql"),
    ),
    (
        18,
        "playwright webmcp and drop",
        include_str!("../migrations/postgres/0018_playwright_webmcp_and_drop.sql"),
    ),
    (
        19,
        "playwright sockets and egress",
        include_str!("../migrations/postgres/0019_playwright_sockets_and_egress.sql"),
    ),
    (
        20,
        "playwright network to proxy",
        include_str!("../migrations/postgres/0020_playwright_network_to_proxy.sql"),
    ),
];

/// The URL of an SQLite database in `path`, created on first use.
pub fn sqlite_url(path: &Path) -> String {
    format!("sqlite://{}?mode=rwc", path.display())
}

/// The URL sqlx is given: an SQLite file URL that does not say `mode=` gets `mode=rwc`, so a
/// database file that does not exist yet is created (as `sqlite:///path/file.db` users
/// expect); an explicit mode (`ro`, `rw`, `memory`) and in-memory databases are kept.
pub(crate) fn connect_url(url: &str) -> Cow<'_, str> {
    let is_sqlite = url.starts_with("sqlite:");
    let (_, query) = url.split_once('?').unwrap_or((url, ""));
    let has_mode = query.split('&').any(|pair| pair.starts_with("mode="));
    if !is_sqlite || has_mode || url.contains(":memory:") {
        return Cow::Borrowed(url);
    }
    let separator = if url.contains('?') { '&' } else { '?' };
    Cow::Owned(format!("{url}{separator}mode=rwc"))
}

/// Where "now" comes from: the system clock, or a fixed one in tests.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }
}

/// How to open a [`Store`].
#[derive(Clone)]
pub struct StoreOptions {
    pub clock: Arc<dyn Clock>,
    pub max_connections: u32,
    /// How long to keep trying to get a connection (and so to reach the server) before failing.
    pub acquire_timeout: std::time::Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            max_connections: 5,
            acquire_timeout: std::time::Duration::from_secs(30),
        }
    }
}

/// BotCraft's store: one `AnyPool` over SQLite or PostgreSQL. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    pub(crate) pool: AnyPool,
    backend: Backend,
    /// The URL it was opened with (may hold a password: never shown).
    url: Arc<str>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) log: Arc<crate::changes::ChangeLog>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Connect to `url` (`sqlite://…` or `postgres://…`) and apply pending migrations.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, StoreOptions::default()).await
    }

    /// [`Store::connect`] with explicit options.
    pub async fn connect_with(url: &str, options: StoreOptions) -> Result<Self, StoreError> {
        sqlx::any::install_default_drivers();
        let backend = Backend::of_url(url)?;
        let pool = AnyPoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(options.acquire_timeout)
            .connect(&connect_url(url))
            .await
            .map_err(StoreError::Connect)?;
        let store = Self {
            pool,
            backend,
            url: Arc::from(url),
            clock: options.clock,
            log: Arc::default(),
        };
        store.migrate().await?;
        Ok(store)
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The URL this store was opened with (it may hold a password: never log it).
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Close every connection of the pool.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let migrations = self
            .backend
            .migrations()
            .iter()
            .map(|(version, description, sql)| {
                Migration::new(
                    *version,
                    Cow::Borrowed(*description),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    false,
                )
            })
            .collect();
        Migrator::with_migrations(migrations)
            .run(&self.pool)
            .await
            .map_err(StoreError::Migrate)
    }

    pub(crate) fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }
}

/// A new collision-resistant id in the spirit of Prisma's `cuid()`: `c`, the time in base 36,
/// then 16 random base-36 characters.
pub(crate) fn new_id(now_ms: i64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut time = String::new();
    let mut rest = u64::try_from(now_ms).unwrap_or(0);
    loop {
        time.insert(0, char::from(DIGITS[(rest % 36) as usize]));
        rest /= 36;
        if rest == 0 {
            break;
        }
    }
    let random: String = (0..16)
        .map(|_| char::from(DIGITS[rand::random_range(0..36usize)]))
        .collect();
    format!("c{time:0>9}{random}")
}

/// Encode a list or map as the JSON text stored in a TEXT column.
pub(crate) fn to_json_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

/// Decode a TEXT column holding JSON, naming the column on failure.
pub(crate) fn from_json_text<T: serde::de::DeserializeOwned>(
    text: &str,
    table: &'static str,
    column: &'static str,
    id: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|error| StoreError::Corrupt {
        table,
        column,
        id: id.to_owned(),
        reason: error.to_string(),
    })
}

pub(crate) fn flag(value: bool) -> i64 {
    i64::from(value)
}

#[cfg(test)]
mod url_tests {
    use super::connect_url;

    #[test]
    fn sqlite_files_are_created_unless_a_mode_is_given() {
        let cases = [
            ("sqlite:///data/b.db", "sqlite:///data/b.db?mode=rwc"),
            (
                "sqlite://rel.db?cache=shared",
                "sqlite://rel.db?cache=shared&mode=rwc",
            ),
            ("sqlite:///data/b.db?mode=ro", "sqlite:///data/b.db?mode=ro"),
            (
                "sqlite:///data/b.db?mode=rwc",
                "sqlite:///data/b.db?mode=rwc",
            ),
            ("sqlite::memory:", "sqlite::memory:"),
            ("postgres://h/db", "postgres://h/db"),
        ];
        for (given, sent) in cases {
            assert_eq!(connect_url(given), sent, "{given}");
        }
    }
}
