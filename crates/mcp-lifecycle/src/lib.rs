//! The lifecycle of every MCP server BotCraft runs.
//!
//! It knows no store: server configs, tool caches and sealed OAuth records come and go
//! through [`ServerRecords`], which the app implements over its store (`server-records`).
//!
//! [`McpServerManager`] (an `Arc`'d struct, not a singleton) holds one slot per configured
//! server and applies the rules: lazy start on first use, with concurrent first uses sharing
//! one start; explicit start/stop/restart; tool calls under the server's timeout
//! (`notifications/cancelled` on expiry); always-on servers restarted with exponential
//! backoff, jitter, a cap and a crash-loop give-up; idle stops when no call and no
//! [`Lease`] is held; a health loop that pings and confirms with `tools/list`; and each server's tool list
//! refreshed on `tools/list_changed` (one listing under way and one waiting at most, however
//! many come; the same tools keep their `Arc` and are neither written nor announced again)
//! and written to the tool cache; tools known
//! before anyone asks, each server listed once per config version in the background
//! ([`listing`]).
//!
//! [`McpProcess`] is one running server: spawned with an explicit environment (`${VAR}`
//! resolved from the environment the manager was given), in its own process group, killed
//! with its group on drop and on BotCraft's death; spoken to through `rmcp`'s client
//! (the newest revision with a handshake, 2025-11-25; client name "botcraft"; sampling and
//! elicitation declared and relayed to BotCraft's own MCP clients, `mcp_client::relay`); stderr drained continuously, the last
//! lines kept. Stopping closes stdin, then TERMs, then KILLs the group *and* every descendant
//! snapshotted from `/proc` (Chromium leaves the group with `setsid`), and, where the machine
//! allows one, the server's own cgroup v2 ([`cgroup`]). Where the manager is given
//! [`SandboxSettings`], each stdio server runs sandboxed by its stored policy (Landlock, no new
//! privileges, a private temporary folder, the workspace as its working folder:
//! `confinement`). A server can also run
//! inside BotCraft's process over an in-memory pipe ([`InProcessServer`]), under the same rules.
//! Server processes can run as another Unix user than BotCraft ([`RunAs`]): the privilege
//! drop happens in the child, before exec, with no capability left.
//!
//! A server can also be remote (streamable HTTP or HTTP+SSE, `mcp_client::sse`): a connection
//! under the same rules, its loss counted as an exit. One that answers with an OAuth
//! challenge is `needs-auth` until an operator authorizes it ([`oauth`]); its tokens are
//! sealed in the records, bound to the resource they were issued for (the server URL's
//! origin and path: a URL pointed elsewhere gets none of them and needs authorization
//! again), and refreshed single-flight. A principal (an opaque id of the layer
//! above: the app's bots) may be authorized with an account of its own: its calls then go
//! on a connection of its own ([`principals`], [`McpServerManager::call_tool_as`],
//! [`ForwardFor::principal`]). The manager knows no bots.

pub mod cgroup;
mod config;
mod confinement;
mod environment;
mod error;
mod forward;
mod handshake;
mod health;
pub mod hygiene;
mod in_process;
mod launcher;
mod lease;
pub mod listing;
mod manager;
pub mod oauth;
mod oauth_credentials;
mod prctl;
mod principals;
mod process;
pub mod reaper;
mod records;
mod remote;
mod restart;
pub mod run_as;
mod settings;
pub mod spans;
mod state;
mod stderr_tail;
mod tool_lists;

pub use config::{PASSED_THROUGH_ENV, RemoteEndpoint, ServerConfig, transport_name};
pub use confinement::{SandboxSettings, ToolTmpRoot};
pub use environment::{
    DEFAULT_ALLOWED_REFERENCES, DeploymentEnv, EnvPolicy, SECRET_NAMES, Withheld, server_env,
    write_deployment_env,
};
pub use error::{LifecycleError, ListLimit};
pub use forward::ForwardFor;
pub use health::Health;
pub use in_process::InProcessServer;
pub use lease::Lease;
pub use manager::McpServerManager;
pub use mcp_client::relay::ServerEvent;
pub use mcp_client::{CLIENT_NAME, ExitInfo, PROTOCOL_VERSION, RemoteTransport, shown_url};
pub use oauth::{OAuthSettings, OAuthStatus, ReconnectHint};
pub use principals::PrincipalAuthorization;
pub use process::{
    MAX_LIST_PAGES, MAX_LISTED_TOOL_BYTES, MAX_LISTED_TOOLS, McpProcess, StartOptions,
};
pub use records::{CachedToolList, RecordOwner, RecordsError, ServerRecords};
pub use restart::{RestartDecision, RestartPolicy};
pub use run_as::{RunAs, RunAsError};
pub use settings::ManagerSettings;
pub use state::{ServerState, ServerStatus};
pub use tool_lists::ToolListEvent;

pub use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ResourceContents, Tool};
