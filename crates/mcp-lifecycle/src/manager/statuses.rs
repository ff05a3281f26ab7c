//! The states of a server and what a status report shows: [`McpServerManager`]'s
//! statuses, state watches, last errors and stderr tails.

use crate::error::LifecycleError;
use crate::manager::{McpServerManager, Phase};
use crate::state::{ServerState, ServerStatus};
use tokio::sync::watch;

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
