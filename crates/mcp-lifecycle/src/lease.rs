//! Leases: while a bot's chat turn runs, none of its servers is idle-stopped.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::error::LifecycleError;
use crate::manager::{McpServerManager, Slot};

/// Held for the length of a bot's turn; dropping it releases the servers.
#[must_use = "the lease ends when dropped"]
pub struct Lease {
    slots: Vec<Arc<Slot>>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("servers", &self.slots.len())
            .finish()
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        for slot in &self.slots {
            slot.touch();
            slot.leases.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl McpServerManager {
    /// Hold every server bound to bot `bot_id` against idle stops until the lease is dropped.
    pub async fn lease(&self, bot_id: &str) -> Result<Lease, LifecycleError> {
        let bound = self.inner.store.bound_servers(bot_id).await?;
        let slots: Vec<Arc<Slot>> = bound
            .iter()
            .filter(|b| b.binding.enabled)
            .filter_map(|b| self.slot(&b.server.name).ok())
            .collect();
        for slot in &slots {
            slot.leases.fetch_add(1, Ordering::SeqCst);
            slot.touch();
        }
        Ok(Lease { slots })
    }
}
