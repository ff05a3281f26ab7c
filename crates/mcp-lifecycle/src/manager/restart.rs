//! When to restart an always-on server that died: exponential backoff with jitter and a cap,
//! and a give-up after too many failures in a row (a crash loop); and the manager's restart
//! loop that applies it ([`McpServerManager::schedule_restart`]).

use crate::error::LifecycleError;
use crate::manager::{Demand, McpServerManager, Phase, Slot};
use crate::restart::RestartDecision;
use std::sync::Arc;
use tracing::Instrument as _;

impl McpServerManager {
    /// Restart a server after the policy's delay (an always-on one that died, or any that
    /// stopped answering), or give up on a crash loop.
    pub(crate) fn schedule_restart(&self, slot: Arc<Slot>, stable: bool) {
        let manager = self.clone_handle();
        tokio::spawn(async move {
            let mut failures = {
                let mut state = slot.lock();
                if stable {
                    state.consecutive_failures = 0;
                }
                state.consecutive_failures += 1;
                state.consecutive_failures
            };
            loop {
                let config = slot.config();
                let delay = match manager.inner.settings.restart.decide(failures) {
                    RestartDecision::RestartAfter(delay) => delay,
                    RestartDecision::GiveUp => {
                        let mut state = slot.lock();
                        state.set(Phase::Error);
                        state.last_error = Some(LifecycleError::CrashLoop {
                            server: config.name.clone(),
                            attempts: failures - 1,
                        });
                        tracing::error!(server = %config.name, "MCP server crash loop: not restarting");
                        return;
                    }
                };
                // The restart backoff itself (exponential, with jitter and a cap).
                tokio::select! {
                    () = manager.inner.shutdown.cancelled() => return,
                    () = tokio::time::sleep(delay) => {}
                }
                if !matches!(slot.lock().phase, Phase::Error) {
                    return; // started or stopped by someone else meanwhile
                }
                slot.lock().restarts += 1;
                let restart = crate::spans::restart(
                    &config.name,
                    failures,
                    u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                );
                match manager
                    .ensure_slot_running(&config.name, &slot, Demand::Explicit)
                    .instrument(restart)
                    .await
                {
                    Ok(_) => return,
                    Err(_) => {
                        let mut state = slot.lock();
                        state.consecutive_failures += 1;
                        failures = state.consecutive_failures;
                    }
                }
            }
        });
    }
}
