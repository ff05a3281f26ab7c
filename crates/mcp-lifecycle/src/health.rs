//! The health loop: ping running servers (confirming with `tools/list` before declaring one
//! dead, so a server that ignores ping is not respawn-looped), and stop idle servers.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::task::JoinHandle;

use crate::error::LifecycleError;
use crate::manager::{McpServerManager, Phase, Slot};

/// What a health check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// Answered ping.
    Healthy,
    /// Ignored ping but answered `tools/list`: alive.
    PingIgnored,
    /// Answered neither: stopped, and restarted if always-on.
    Dead,
    /// Not running: nothing to check.
    NotRunning,
}

impl McpServerManager {
    /// Check `server` once.
    pub async fn check_health(&self, server: &str) -> Result<Health, LifecycleError> {
        let slot = self.slot(server)?;
        let Some(process) = slot.running() else {
            return Ok(Health::NotRunning);
        };
        let timeout = self.inner.settings.ping_timeout;
        if process.ping(timeout).await.is_ok() {
            return Ok(Health::Healthy);
        }
        if process.list_tools(timeout).await.is_ok() {
            return Ok(Health::PingIgnored);
        }
        tracing::warn!(
            server,
            "MCP server answers neither ping nor tools/list: stopping it"
        );
        let is_current = {
            let mut state = slot.lock();
            let current = matches!(&state.phase, Phase::Running(p) if Arc::ptr_eq(p, &process));
            if current {
                state.set(Phase::Error);
                state.last_error = Some(LifecycleError::Unresponsive {
                    server: server.to_owned(),
                });
            }
            current
        };
        if is_current {
            process.stop(self.inner.settings.stop_grace).await;
            {
                let mut state = slot.lock();
                state.last_exit = process.exit_status();
                state.last_stderr = process.stderr_tail();
            }
            if slot.config().always_on {
                self.schedule_restart(slot, false);
            }
        }
        Ok(Health::Dead)
    }

    /// Stop every running server that is not always-on, has no call in flight, no lease,
    /// and has been unused for its idle timeout as of `now`; and every bot's own connection
    /// ([`crate::bot_connections`]) under the same rule. Returns the servers stopped.
    pub async fn stop_idle_servers_at(&self, now: tokio::time::Instant) -> Vec<String> {
        let mut stopped = Vec::new();
        for (name, slot) in self.slots() {
            for bot_slot in slot.bot_slots() {
                if idle_at(&bot_slot, now) {
                    self.stop_slot(&bot_slot).await;
                    tracing::info!(server = %name, bot = bot_slot.bot.as_deref().unwrap_or_default(), "a bot's own connection closed after its idle timeout");
                }
            }
            if idle_at(&slot, now) && self.stop_server(&name).await.is_ok() {
                tracing::info!(server = %name, "MCP server stopped after its idle timeout");
                stopped.push(name);
            }
        }
        stopped
    }

    /// Run health checks and idle stops every `settings.health_interval` until `stop_all`.
    pub fn start_health_check_loop(self: &Arc<Self>) -> JoinHandle<()> {
        let manager = Arc::clone(self);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(manager.inner.settings.health_interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = manager.inner.shutdown.cancelled() => return,
                    _ = ticks.tick() => {}
                }
                for (name, _) in manager.slots() {
                    if let Err(error) = manager.check_health(&name).await {
                        tracing::warn!(server = %name, %error, "health check failed");
                    }
                }
                manager
                    .stop_idle_servers_at(tokio::time::Instant::now())
                    .await;
            }
        })
    }
}

/// Whether `slot` runs, is not always-on, has no call in flight and no lease, and has been
/// unused for its idle timeout as of `now`.
fn idle_at(slot: &Slot, now: tokio::time::Instant) -> bool {
    let config = slot.config();
    if config.always_on
        || slot.in_flight.load(Ordering::SeqCst) > 0
        || slot.leases.load(Ordering::SeqCst) > 0
    {
        return false;
    }
    let state = slot.lock();
    matches!(state.phase, Phase::Running(_))
        && now.saturating_duration_since(state.last_activity) >= config.idle_timeout
}
