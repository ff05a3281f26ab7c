//! The states of a server ([`ServerState`]) and what a status report shows
//! ([`ServerStatus`]); the manager reports them (`manager/statuses.rs`).

use std::fmt;
use std::time::Duration;

/// `stopped → starting → running → stopping → stopped`, and `error` from which a restart runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerState {
    Stopped,
    Starting,
    Running,
    Stopping,
    Error,
    /// A remote server waiting for an OAuth authorization.
    NeedsAuth,
}

impl fmt::Display for ServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Stopped => "stopped",
            Self::Starting => "starting",
            Self::Running => "running",
            Self::Stopping => "stopping",
            Self::Error => "error",
            Self::NeedsAuth => "needs-auth",
        })
    }
}

/// One server as `get_all_statuses` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    pub name: String,
    pub state: ServerState,
    pub always_on: bool,
    /// `stdio`, `streamable-http` or `sse`.
    pub transport: &'static str,
    /// A remote server's URL, as shown (without its query).
    pub url: Option<String>,
    pub pid: Option<u32>,
    pub uptime: Option<Duration>,
    /// Automatic restarts since BotCraft started.
    pub restarts: u32,
    pub tool_count: Option<usize>,
    pub last_error: Option<String>,
    /// Whether the tools are listed for the config's version ([`crate::listing`]); `None`:
    /// not looked at yet.
    pub tools_listed: Option<bool>,
}
