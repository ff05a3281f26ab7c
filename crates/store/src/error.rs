//! The store's typed errors: what was wrong with a write, and what the database said.

use thiserror::Error;

/// Why a server, bot or binding was refused before it reached the database.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ValidationError {
    #[error("MCP server {server:?}: {source}")]
    BadSandbox {
        server: String,
        source: sandbox::PolicyError,
    },
    #[error("{field}: {reason}")]
    BadApproval { field: &'static str, reason: String },
    #[error("{entity} name is empty")]
    EmptyName { entity: &'static str },
    #[error("{entity} name {name:?} has characters outside [A-Za-z0-9_.-]")]
    BadName { entity: &'static str, name: String },
    #[error(
        "MCP server name {name:?}: `_` and `.` may not follow one another or end the name (a tool is named `server__tool`, so such a server's tools could take another server's names)"
    )]
    AmbiguousServerName { name: String },
    #[error("MCP server {server:?}: command is empty")]
    EmptyCommand { server: String },
    #[error("MCP server {server:?}: a {transport} server needs a url")]
    MissingUrl { server: String, transport: String },
    #[error(
        "MCP server {server:?}: url must be an absolute http:// or https:// URL without user or password ({reason})"
    )]
    BadUrl { server: String, reason: String },
    #[error("MCP server {server:?}: a {transport} server takes no {field}")]
    NotForTransport {
        server: String,
        transport: String,
        field: &'static str,
    },
    #[error("MCP server {server:?}: header {name:?} is not a valid HTTP header name")]
    BadHeaderName { server: String, name: String },
    #[error(
        "MCP server {server:?}: header {name:?} is set by the transport itself and cannot be configured"
    )]
    ReservedHeader { server: String, name: String },
    #[error("MCP server {server:?}: header {name:?} has a malformed ${{VAR}} reference")]
    BadHeaderReference { server: String, name: String },
    #[error(
        "MCP server {server:?}: {field} holds a NUL byte or a control character (only tab and newline are allowed, in arguments and env values)"
    )]
    ControlCharacter { server: String, field: String },
    #[error("MCP server {server:?}: {field} must be between 1 and {max} ms, got {value}")]
    TimeoutOutOfRange {
        server: String,
        field: &'static str,
        value: i64,
        max: i64,
    },
    #[error("MCP server {server:?}: env key {key:?} is not a valid variable name")]
    BadEnvKey { server: String, key: String },
    #[error(
        "MCP server {server:?}: env key {key:?} is refused: it can change which code the process loads"
    )]
    ForbiddenEnvKey { server: String, key: String },
    #[error("MCP server {server:?}: env {key:?} has a malformed ${{VAR}} reference")]
    BadEnvReference { server: String, key: String },
    #[error("bot {bot:?}: model is empty")]
    EmptyModel { bot: String },
    #[error("bot {bot:?}: step limit must be between 1 and {max}, got {value}")]
    StepLimitOutOfRange { bot: String, value: i64, max: i64 },
    #[error("bot {bot:?}: maxToolResultChars must be between 1 and {max}, got {value}")]
    ToolResultCapOutOfRange { bot: String, value: i64, max: i64 },
    #[error("tool name in a {list} list is empty")]
    EmptyToolName { list: &'static str },
    #[error("tool vector set {set}: vectors with no dimensions")]
    EmptyVectors { set: String },
    #[error("tool vector set {set}: vectors of {expected} and {got} dimensions")]
    UnevenVectorSet {
        set: String,
        expected: usize,
        got: usize,
    },
    #[error("key {key:?}: a bot key needs the bot it is for")]
    BotKeyWithoutBot { key: String },
    #[error("key {key:?}: an admin key names no bot (a bot key names its bot, a chat key may)")]
    BotForNonBotKey { key: String },
}

/// Everything a store operation can fail with.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    #[error("an MCP server named {name:?} already exists")]
    DuplicateServerName { name: String },
    #[error(
        "MCP server name {name:?} is written {prefix:?} in tool names (`.` becomes `_`), as the name of the server {other:?} is: rename one of them"
    )]
    ServerNameClash {
        name: String,
        other: String,
        prefix: String,
    },
    #[error("a bot named {name:?} already exists")]
    DuplicateBotName { name: String },
    #[error("a key named {name:?} already exists (names of revoked keys are kept)")]
    DuplicateKeyName { name: String },
    #[error("no key {0:?}")]
    UnknownKey(String),
    #[error("no MCP server {0:?}")]
    UnknownServer(String),
    #[error("no bot {0:?}")]
    UnknownBot(String),
    #[error("stored value {table}.{column} of row {id:?} is unreadable: {reason}")]
    Corrupt {
        table: &'static str,
        column: &'static str,
        id: String,
        reason: String,
    },
    #[error("database URL scheme {scheme:?} is not supported (use sqlite: or postgres:)")]
    UnsupportedUrl { scheme: String },
    #[error("cannot connect to the database")]
    Connect(#[source] sqlx::Error),
    #[error("migrating the database failed")]
    Migrate(#[source] sqlx::migrate::MigrateError),
    #[error("database error")]
    Database(#[from] sqlx::Error),
}

/// The constraint a database error reports, by kind (never by message text).
pub(crate) fn is_unique_violation(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db) if db.kind() == sqlx::error::ErrorKind::UniqueViolation)
}

pub(crate) fn is_foreign_key_violation(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db) if db.kind() == sqlx::error::ErrorKind::ForeignKeyViolation)
}

/// A write about server `mcp_server_id` that failed: `UnknownServer` when the row it points
/// to is gone (a foreign key), the database error otherwise.
pub(crate) fn server_reference_error(error: sqlx::Error, mcp_server_id: &str) -> StoreError {
    if is_foreign_key_violation(&error) {
        StoreError::UnknownServer(mcp_server_id.to_owned())
    } else {
        StoreError::Database(error)
    }
}
