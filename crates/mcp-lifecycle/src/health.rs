//! What a health check found ([`Health`]); the health loop is the manager's
//! (`manager/health.rs`).

/// What a health check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// Answered ping.
    Healthy,
    /// Ignored ping but answered `tools/list`: alive.
    PingIgnored,
    /// Answered neither: stopped, and started again.
    Dead,
    /// Not running: nothing to check.
    NotRunning,
}
