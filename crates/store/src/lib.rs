//! BotCraft's store: the models of the MCP host on SQLite (the default, a file created on
//! first run) or PostgreSQL (`postgres://…`), behind one code path.
//!
//! - Models ([`McpServer`], [`Bot`], [`BotMcpServer`], [`ToolCache`]) keep the names of the
//!   Prisma models they come from; tables and columns are the quoted Prisma names
//!   (`"McpServer"."idleTimeoutMs"`), so a Prisma schema over the same database agrees.
//! - One `sqlx::AnyPool` runs the same SQL on both backends: `$1` placeholders, flags as
//!   BIGINT 0/1, lists and maps as JSON in TEXT, times as BIGINT milliseconds.
//!   Migrations are embedded per backend and applied on [`Store::connect`].
//! - Every write is validated first ([`validate`]); failures are typed ([`StoreError`],
//!   [`ValidationError`]), duplicates and unknown references included.
//! - [`SeedConfig`] and [`Store::seed`] write the first-party servers and the default bot,
//!   idempotently; [`parse_mcp_servers`] and [`Store::import_servers`] read the standard
//!   `mcpServers` JSON of other MCP hosts.
//! - [`registry`]: the MCP Registry's `server.json` (packages and remotes) as a config.
//! - [`api_keys`]: the API's and `/mcp`'s keys with their roles, kept as digests.
//! - [`approval`]: when a bot's tool call waits for a person (per binding, and per bot for its
//!   native tools).
//! - `ApprovalUse`: the approval ids whose calls ran ([`Store::consume_approval`]), so an
//!   approval runs its call once on every replica.
//! - `KeyShare`: the store's share of BotCraft's key ([`Store::key_share`]), which the key is
//!   bound to before it seals or signs.
//! - `McpOAuthToken`: a remote server's OAuth record, and `McpOAuthBotToken` a bot's own one
//!   for a server (the per-bot override), both sealed by the caller (opaque here).
//! - Writes are told to the process ([`Store::version`], [`Store::changes`]) and, on
//!   PostgreSQL, to the other replicas (`pg_notify`), whose [`Store::listen_to_peers`] applies
//!   them as their own.

pub mod api_keys;
pub mod approval;
mod approval_uses;
mod bindings;
mod bots;
mod changes;
mod database;
mod error;
mod import;
pub mod key_digest;
mod key_share;
mod model;
mod oauth_tokens;
pub mod registry;
mod seed;
mod servers;
mod tool_cache;
mod tool_vectors;
pub mod validate;

pub use api_keys::{ApiKey, ApiKeySpec, KeyRole, NewApiKey};
pub use approval::ApprovalPolicy;
pub use approval_uses::USED_APPROVAL_MARGIN_MS;
pub use changes::{CHANGES_CHANNEL, PeerListener, StoreChange};
pub use database::{Backend, Clock, Store, StoreOptions, SystemClock, sqlite_url};
pub use error::{StoreError, ValidationError};
pub use import::{
    ImportError, ImportPlan, ImportReport, ImportUpdate, SkipReason, Skipped, parse_mcp_servers,
};
pub use model::{
    BindingSpec, Bot, BotMcpServer, BotSpec, BoundServer, DEFAULT_IDLE_TIMEOUT_MS,
    DEFAULT_INIT_TIMEOUT_MS, DEFAULT_MAX_TOOL_RESULT_CHARS, DEFAULT_STEP_LIMIT, DEFAULT_TIMEOUT_MS,
    McpServer, McpServerSpec, ToolCache, ToolLoadingMode, Transport,
};
pub use registry::{RegistryError, RegistryPreference, is_server_json, parse_server_json};
pub use seed::{
    DEFAULT_BOT_MODEL, DEFAULT_BOT_NAME, DEFAULT_PLAYWRIGHT_EXTRA_ARGS, PLAYWRIGHT_ASKING_TOOLS,
    PLAYWRIGHT_ENV, PLAYWRIGHT_MCP_PACKAGE, PLAYWRIGHT_OUTPUT_DIR, PLAYWRIGHT_PROXY_VALUE,
    PLAYWRIGHT_PROXY_VARIABLE, SeedConfig, SeedReport, playwright_extra_args, playwright_network,
};
pub use tool_cache::tools_hash;
pub use tool_vectors::PrunedVectors;
