//! Tools known before anyone asks. Each server's tools are listed once per config version
//! (its store row's `updatedAt`), without waiting for a user: a server whose tools are not
//! known for its current config is started, listed and stopped again in the background (a
//! lazy server stays stopped; an always-on one runs anyway), a few at a time, each failure
//! tried again after the restart policy's backoff. A listing lands like any other (the tool
//! cache, [`crate::ToolListEvent`]), so open `/mcp` sessions get `tools/list_changed`.
//!
//! A listing start leaves out what a config's `${VAR}` would fill from an unset variable
//! (the server starts with nothing, as every forge server must): listing needs no
//! credentials. A reference the env policy refuses still fails the start.
//!
//! `botcraft serve` lists at start; the API lists after a server is added or changed; `POST
//! /api/servers/{s}/tools/refresh` (`botcraft servers refresh-tools`) lists on demand.

use crate::error::LifecycleError;
use crate::listing::Listing;
use crate::manager::{Demand, McpServerManager, Slot};
use futures::StreamExt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Failures that another try would meet again: the listing waits for a change instead.
fn is_lasting(error: &LifecycleError) -> bool {
    matches!(
        error,
        LifecycleError::NeedsAuth { .. }
            | LifecycleError::EnvNotAllowed { .. }
            | LifecycleError::UnknownServer { .. }
            | LifecycleError::BadHeader { .. }
            | LifecycleError::OAuthUnavailable { .. }
            | LifecycleError::Sandbox { .. }
    )
}

impl McpServerManager {
    /// Whether `server`'s tools are known for its current config: from a start of this
    /// config, or a tool cache captured after the config was last written.
    pub async fn tools_listed(&self, server: &str) -> Result<bool, LifecycleError> {
        let slot = self.slot(server)?;
        let config = slot.config();
        match slot.lock().listing {
            Listing::Listed { version } if version == config.version => return Ok(true),
            Listing::Missing { version } if version == config.version => return Ok(false),
            _ => {}
        }
        let listed = if config.id.is_empty() {
            slot.lock().tools.is_some()
        } else {
            self.inner
                .records
                .tool_cache(&config.id)
                .await?
                .is_some_and(|cache| cache.captured_at >= config.version)
        };
        let mut state = slot.lock();
        // A listing that landed meanwhile is newer than what the store said.
        if !matches!(state.listing, Listing::Listed { version } if version == config.version) {
            state.listing = if listed {
                Listing::Listed {
                    version: config.version,
                }
            } else {
                Listing::Missing {
                    version: config.version,
                }
            };
        }
        Ok(listed || matches!(state.listing, Listing::Listed { .. }))
    }

    /// The servers whose tools are not known for their current config, by name.
    pub async fn unlisted_servers(&self) -> Vec<String> {
        let mut unlisted = Vec::new();
        for (name, _) in self.slots() {
            match self.tools_listed(&name).await {
                Ok(true) => {}
                Ok(false) => unlisted.push(name),
                Err(error) => {
                    tracing::warn!(server = %name, %error, "cannot tell whether the tools are listed")
                }
            }
        }
        unlisted
    }

    /// Whether `server`'s tools are known for its current config, from memory only (`None`:
    /// not looked at yet): what health shows.
    pub(crate) fn listing_known(slot: &Slot) -> Option<bool> {
        let version = slot.config().version;
        match slot.lock().listing {
            Listing::Listed { version: listed } if listed == version => Some(true),
            Listing::Missing { version: missing } if missing == version => Some(false),
            Listing::Unknown | Listing::Listed { .. } | Listing::Missing { .. } => None,
        }
    }

    /// List `server`'s tools now; how many it has. A running server is asked again; a
    /// stopped one is started (leaving out `${VAR}`s whose variable is unset), listed, and
    /// stopped again unless it is always-on or came into use meanwhile. A process started
    /// with `${VAR}`s left out serves the listing only: a call or start meanwhile fails as it
    /// would have (`NotConfigured`), and it is stopped once listed.
    pub async fn refresh_tools(&self, server: &str) -> Result<usize, LifecycleError> {
        let slot = self.slot(server)?;
        if let Some(process) = slot.running() {
            let config = slot.config();
            let tools = process.list_tools(config.call_timeout).await?;
            let count = tools.len();
            crate::tool_lists::publish(self, &slot, &config, tools).await;
            return Ok(count);
        }
        let process = self
            .ensure_slot_running(server, &slot, Demand::Listing)
            .await?;
        let listing_only = process.listing_only().is_some();
        let count = slot.lock().tools.as_ref().map_or(0, |tools| tools.len());
        let unused =
            slot.in_flight.load(Ordering::SeqCst) == 0 && slot.leases.load(Ordering::SeqCst) == 0;
        // A process started without some `${VAR}`s serves nothing else: it always stops.
        // Only the process this listing had is stopped (not one that replaced it meanwhile).
        if listing_only || (!slot.config().always_on && unused) {
            // Checked again under the slot's lock: a request that counted itself in flight
            // meanwhile keeps the server (one the listing started with everything it needs).
            let listed = move |slot: &Slot, state: &crate::manager::SlotState| {
                let ours = matches!(&state.phase, crate::manager::Phase::Running(running) if Arc::ptr_eq(running, &process));
                let unused = slot.in_flight.load(Ordering::SeqCst) == 0
                    && slot.leases.load(Ordering::SeqCst) == 0;
                ours && (listing_only || unused)
            };
            self.stop_slot_if(&slot, crate::spans::StopReason::Listed, &listed)
                .await;
        }
        Ok(count)
    }

    /// In the background: every server whose tools are not known for its current config is
    /// listed ([`Self::refresh_tools`]), `settings.listing.concurrency` at once, each tried
    /// up to `settings.listing.attempts` times with the restart policy's backoff between.
    /// Runs one at a time (a second call waits for the first, then finds little to do).
    /// Returns at once.
    pub fn list_unlisted(self: &Arc<Self>) {
        if !self.inner.settings.listing.enabled {
            return;
        }
        let manager = Arc::clone(self);
        tokio::spawn(async move {
            let _one_run = manager.inner.listing_run.lock().await;
            let unlisted = manager.unlisted_servers().await;
            if unlisted.is_empty() {
                return;
            }
            let settings = manager.inner.settings.listing;
            tracing::info!(servers = ?unlisted, "listing the tools of servers never listed for their config");
            futures::stream::iter(unlisted)
                .for_each_concurrent(settings.concurrency.max(1), |server| {
                    let manager = Arc::clone(&manager);
                    async move { manager.list_with_retries(&server, settings.attempts).await }
                })
                .await;
            let left = manager.unlisted_servers().await;
            if left.is_empty() {
                tracing::info!("the tools of every server are listed");
            } else {
                tracing::warn!(servers = ?left, "tools not yet listed: {}", left.len());
            }
        });
    }

    async fn list_with_retries(&self, server: &str, attempts: u32) {
        for attempt in 1..=attempts.max(1) {
            match self.refresh_tools(server).await {
                Ok(count) => {
                    tracing::info!(server, tools = count, "tools listed");
                    return;
                }
                Err(error) if is_lasting(&error) || attempt == attempts => {
                    tracing::warn!(server, %error, attempt, "cannot list the tools");
                    return;
                }
                Err(error) => {
                    let wait = self.inner.settings.restart.start_backoff(attempt);
                    tracing::info!(server, %error, attempt, retry_in = ?wait, "listing the tools failed; trying again");
                    // The restart policy's backoff before the next try (at least 10 ms, so a
                    // zero policy cannot spin), cut short by shutdown.
                    tokio::select! {
                        () = self.inner.shutdown.cancelled() => return,
                        () = tokio::time::sleep(wait.max(Duration::from_millis(10))) => {}
                    }
                }
            }
        }
    }
}
