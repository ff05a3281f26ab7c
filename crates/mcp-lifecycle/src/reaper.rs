//! Orphans. BotCraft is a child subreaper ([`become_subreaper`], `PR_SET_CHILD_SUBREAPER`):
//! a process a server left behind, whose parent died (a command of a killed forge-bash, a
//! `setsid` grandchild of a server that exited or failed its `initialize`), is re-parented to
//! BotCraft instead of PID 1. [`sweep`] ends them:
//!
//! - every child of BotCraft that is not a recorded server process is killed with all its
//!   descendants (SIGKILL: nobody is left to talk to it) and reaped (`waitpid` on that pid
//!   only, never `-1`, so the runtime's own children are left to the runtime);
//! - the whole tree below BotCraft is written to the pid registry's tree file, so that the
//!   next start after a SIGKILL of BotCraft (when PID 1 inherits the tree) ends all of it.
//!
//! The manager runs a sweep every [`SWEEP_INTERVAL`] and at once when a server exits or is
//! stopped. A sweep holds the registry's spawn gate, so a server being spawned is never taken
//! for an orphan.

use std::collections::BTreeSet;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

use proc_tree::{ProcessId, below, subtree};

use crate::hygiene::PidRegistry;

/// How often the orphan sweep runs besides after each exit and stop.
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// Make this process the subreaper of its descendants.
pub fn become_subreaper() -> std::io::Result<()> {
    crate::prctl::set(libc::PR_SET_CHILD_SUBREAPER, 1)
}

/// What one sweep did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Swept {
    /// Orphans killed (each with its descendants).
    pub killed: Vec<ProcessId>,
    /// Exited orphans reaped.
    pub reaped: Vec<u32>,
}

/// End and reap every orphan among this process's children, and record the tree below it.
pub fn sweep(registry: &PidRegistry) -> Swept {
    let _gate = registry.spawn_gate();
    let me = std::process::id();
    let servers: BTreeSet<u32> = registry.recorded().iter().map(|p| p.pid).collect();
    // The tree below BotCraft only (from /proc's children files): its size sets the cost.
    let table = subtree(me);
    let mut swept = Swept::default();
    for row in &table {
        let process = &row.process;
        if row.ppid != me || servers.contains(&process.pid) {
            continue;
        }
        let Ok(raw) = i32::try_from(process.pid) else {
            continue;
        };
        if row.state != 'Z' {
            // Its descendants first, from the same table, so none escapes while it dies.
            for below in below(&table, process.pid) {
                if let Ok(pid) = i32::try_from(below.pid) {
                    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
                }
            }
            let _ = kill(Pid::from_raw(raw), Signal::SIGKILL);
            swept.killed.push(*process);
        }
        if matches!(
            waitpid(Pid::from_raw(raw), Some(WaitPidFlag::WNOHANG)),
            Ok(status) if status.pid().is_some()
        ) {
            swept.reaped.push(process.pid);
        }
    }
    // Unchanged unless an orphan was killed: then read again, without what died.
    let tree = if swept.killed.is_empty() {
        below(&table, me)
    } else {
        proc_tree::descendants(me)
    };
    registry.record_tree(&tree);
    swept
}
