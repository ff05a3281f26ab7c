//! The states of a server and what a status report shows: [`McpServerManager`]'s
//! statuses, state watches, last errors and stderr tails.

use std::fmt;
use std::time::Duration;

use tokio::sync::watch;

use crate::error::LifecycleError;
use crate::manager::{McpServerManager, Phase};

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

impl McpServerManager {
    /// Whether stdio servers run sandboxed: `landlock`, `unavailable` (no Landlock in this
    /// kernel: unconfined), or `off` (this manager sandboxes nothing).
    pub fn sandbox_state(&self) -> &'static str {
        match &self.inner.settings.sandbox {
            Some(sandbox) => sandbox.availability.as_str(),
            None => "off",
        }
    }

    /// The state of every server, by name.
    pub fn get_all_statuses(&self) -> Vec<ServerStatus> {
        self.slots()
            .into_iter()
            .map(|(name, slot)| {
                let config = slot.config();
                let always_on = config.always_on;
                let (transport, url) = match &config.remote {
                    None => ("stdio", None),
                    Some(endpoint) => (
                        crate::config::transport_name(endpoint.transport),
                        Some(mcp_client::shown_url(&endpoint.url)),
                    ),
                };
                let tools_listed = McpServerManager::listing_known(&slot);
                let state = slot.lock();
                let (phase, process) = match &state.phase {
                    Phase::Stopped => (ServerState::Stopped, None),
                    Phase::Starting(_) => (ServerState::Starting, None),
                    Phase::Running(process) => (ServerState::Running, Some(process.clone())),
                    Phase::Stopping => (ServerState::Stopping, None),
                    Phase::Error => (ServerState::Error, None),
                    Phase::NeedsAuth => (ServerState::NeedsAuth, None),
                };
                ServerStatus {
                    name,
                    state: phase,
                    always_on,
                    transport,
                    url,
                    pid: process.as_ref().and_then(|p| p.pid()),
                    uptime: process.as_ref().map(|p| p.uptime()),
                    restarts: state.restarts,
                    tool_count: state.tools.as_ref().map(|t| t.len()),
                    last_error: state.last_error.as_ref().map(ToString::to_string),
                    tools_listed,
                }
            })
            .collect()
    }

    /// The state of `server`, updated on every change (a readiness signal for callers).
    pub fn watch_state(
        &self,
        server: &str,
    ) -> Result<watch::Receiver<ServerState>, LifecycleError> {
        Ok(self.slot(server)?.lock().state_tx.subscribe())
    }

    /// The last error of `server`, typed.
    pub fn last_error(&self, server: &str) -> Result<Option<LifecycleError>, LifecycleError> {
        Ok(self.slot(server)?.lock().last_error.clone())
    }

    /// The last stderr lines of `server` (running, or as it ended).
    pub fn stderr_tail(&self, server: &str) -> Result<Vec<String>, LifecycleError> {
        let slot = self.slot(server)?;
        let state = slot.lock();
        Ok(match &state.phase {
            Phase::Running(process) => process.stderr_tail(),
            _ => state.last_stderr.clone(),
        })
    }
}
