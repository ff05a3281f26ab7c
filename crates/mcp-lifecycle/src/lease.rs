//! Leases: while a lease is held (a chat turn, a call), none of its servers is idle-stopped.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::manager::{McpServerManager, Slot};

/// Held for the length of a turn or a call; dropping it releases the servers.
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
    /// Hold `servers` against idle stops until the lease is dropped. Names that are not
    /// configured are skipped.
    pub fn lease<'a>(&self, servers: impl IntoIterator<Item = &'a str>) -> Lease {
        let slots: Vec<Arc<Slot>> = servers
            .into_iter()
            .filter_map(|name| self.slot(name).ok())
            .collect();
        for slot in &slots {
            slot.leases.fetch_add(1, Ordering::SeqCst);
            slot.touch();
        }
        Lease { slots }
    }
}
