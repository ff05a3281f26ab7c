//! The health loop: ping running servers (confirming with `tools/list` before declaring one
//! dead, so a server that ignores ping is not respawn-looped), and stop idle servers.
//!
//! A server that answers nothing, found by the loop or by a request that timed out and a
//! ping after it, is declared unresponsive: the requests in flight on it fail with
//! [`LifecycleError::Unresponsive`] (which names it and how long it was waited for), and it
//! is stopped and started again.

use crate::error::LifecycleError;
use crate::health::Health;
use crate::manager::{McpServerManager, Phase, Slot, SlotState};
use crate::process::McpProcess;
use crate::spans::StopReason;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::task::JoinHandle;
use tracing::Instrument as _;

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
        let unresponsive = LifecycleError::Unresponsive {
            server: server.to_owned(),
            waited: timeout.saturating_mul(2),
            asked: "ping, then tools/list".to_owned(),
        };
        self.declare_unresponsive(&slot, &process, unresponsive)
            .await;
        Ok(Health::Dead)
    }

    /// After a request to `process` timed out (`timed_out`): if the server does not answer
    /// a ping either, it is declared unresponsive ([`Self::declare_unresponsive`]) and that
    /// error is the request's; otherwise it is alive and merely slow, and the timeout stands.
    pub(crate) async fn after_timeout(
        &self,
        slot: &Arc<Slot>,
        process: &Arc<McpProcess>,
        timed_out: LifecycleError,
    ) -> LifecycleError {
        let (asked, waited) = match &timed_out {
            LifecycleError::CallTimeout { tool, timeout, .. } => {
                (format!("tools/call {tool:?}, then ping"), *timeout)
            }
            LifecycleError::RequestTimeout {
                method, timeout, ..
            } => (format!("{method}, then ping"), *timeout),
            _ => return timed_out,
        };
        let ping = self.inner.settings.ping_timeout;
        if process.answers_ping(ping).await {
            return timed_out;
        }
        let unresponsive = LifecycleError::Unresponsive {
            server: slot.config().name.clone(),
            waited: waited.saturating_add(ping),
            asked,
        };
        // The caller has its answer now; the stop and the restart go on without it.
        let manager = self.clone_handle();
        let (slot, process) = (Arc::clone(slot), Arc::clone(process));
        let error = unresponsive.clone();
        tokio::spawn(async move {
            manager.declare_unresponsive(&slot, &process, error).await;
        });
        unresponsive
    }

    /// `process` answers nothing: if it is still `slot`'s running process, requests in flight
    /// on it fail with `error` from now on, the slot shows it, the process is stopped (its
    /// whole tree; a `SIGSTOP`ped process is killed) and it is started again, always-on or
    /// not, under the restart policy (after its first delay, in the background).
    pub(crate) async fn declare_unresponsive(
        &self,
        slot: &Arc<Slot>,
        process: &Arc<McpProcess>,
        error: LifecycleError,
    ) {
        let is_current = {
            let mut state = slot.lock();
            let current = matches!(&state.phase, Phase::Running(p) if Arc::ptr_eq(p, process));
            if current {
                process.mark_unresponsive(error.clone());
                state.set(Phase::Error);
                state.last_error = Some(error.clone());
            }
            current
        };
        if !is_current {
            return;
        }
        tracing::warn!(server = %slot.config().name, %error, "MCP server stopped answering: stopping and restarting it");
        process
            .stop(self.inner.settings.stop_grace)
            .instrument(crate::spans::stop(
                &slot.config().name,
                StopReason::Unresponsive,
            ))
            .await;
        {
            let mut state = slot.lock();
            state.last_exit = process.exit_status();
            state.last_stderr = process.stderr_tail();
        }
        self.sweep_soon();
        self.schedule_restart(Arc::clone(slot), false);
    }

    /// Stop every running server that is not always-on, has no call in flight, no lease,
    /// and has been unused for its idle timeout as of `now`; and every principal's own
    /// connection ([`crate::principals`]) under the same rule. Returns the servers stopped.
    pub async fn stop_idle_servers_at(&self, now: tokio::time::Instant) -> Vec<String> {
        let mut stopped = Vec::new();
        // Checked once cheaply, then again under the slot's lock as the stop begins: a
        // request that counted itself in flight meanwhile keeps its server.
        let still_idle = move |slot: &Slot, state: &SlotState| idle_in(slot, state, now);
        for (name, slot) in self.slots() {
            for principal_slot in slot.principal_slots() {
                if idle_at(&principal_slot, now)
                    && self
                        .stop_slot_if(&principal_slot, StopReason::Idle, &still_idle)
                        .await
                {
                    tracing::info!(server = %name, principal = principal_slot.principal.as_deref().unwrap_or_default(), "a principal's own connection closed after its idle timeout");
                }
            }
            if idle_at(&slot, now)
                && self
                    .stop_slot_if(&slot, StopReason::Idle, &still_idle)
                    .await
            {
                // The principals' own connections go with it.
                for own in slot.principal_slots() {
                    self.stop_slot(&own, StopReason::Idle).await;
                }
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
    idle_in(slot, &slot.lock(), now)
}

/// [`idle_at`], `state` being `slot`'s, locked. A request counts itself in flight before it
/// takes the slot's lock to pick its process up, so under the lock a count of zero means
/// none will take this process.
fn idle_in(slot: &Slot, state: &SlotState, now: tokio::time::Instant) -> bool {
    let config = slot.config();
    !config.always_on
        && slot.in_flight.load(Ordering::SeqCst) == 0
        && slot.leases.load(Ordering::SeqCst) == 0
        && matches!(state.phase, Phase::Running(_))
        && now.saturating_duration_since(state.last_activity) >= config.idle_timeout
}
