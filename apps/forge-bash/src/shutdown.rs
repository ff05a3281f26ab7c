//! Stopping commands when the server stops.
//!
//! Commands run in process groups of their own, so a host that signals
//! forge-bash's group does not reach them. [`RunningGroups`] tracks the
//! groups of the commands in progress, and [`stop_on_signal`] makes
//! SIGTERM, SIGINT and SIGHUP kill those groups (SIGKILL) before the server
//! exits with 128 + the signal number.
//!
//! The other ways the server stops are covered elsewhere: stdin closed (rmcp
//! cancels the calls still running after its drain; each kills its group),
//! a dropped call (the process guard kills its group), SIGKILL (the kernel
//! kills each shell through `PR_SET_PDEATHSIG`).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use nix::sys::signal::{SigSet, Signal, killpg};
use nix::unistd::Pid;

/// The process groups of the commands in progress.
#[derive(Debug, Default)]
pub struct RunningGroups {
    groups: Mutex<HashSet<i32>>,
}

impl RunningGroups {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<i32>> {
        self.groups
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn insert(&self, pgid: Pid) {
        self.lock().insert(pgid.as_raw());
    }

    pub fn remove(&self, pgid: Pid) {
        self.lock().remove(&pgid.as_raw());
    }

    /// SIGKILL every group in progress; returns how many there were.
    pub fn kill_all(&self) -> usize {
        let groups = self.lock();
        for &pgid in groups.iter() {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
        groups.len()
    }
}

/// Handle SIGTERM, SIGINT and SIGHUP on a dedicated thread: kill the running
/// command groups, then exit. Call it first thing in `main`, before any
/// other thread exists: it blocks those signals in the calling thread so
/// every later thread inherits the mask and only the dedicated thread takes
/// them. (The mask is inherited across `exec`: spawned commands clear it,
/// see process_group.rs.)
pub fn stop_on_signal(groups: Arc<RunningGroups>) {
    let mut signals = SigSet::empty();
    for signal in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        signals.add(signal);
    }
    if let Err(error) = signals.thread_block() {
        eprintln!(
            "forge-bash: cannot block termination signals ({error}); commands may outlive the server on SIGTERM"
        );
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("forge-bash-signals".into())
        .spawn(move || {
            match signals.wait() {
                Ok(signal) => {
                    let killed = groups.kill_all();
                    eprintln!(
                        "forge-bash: {signal} received; killed {killed} running command group(s); exiting"
                    );
                    std::process::exit(128 + signal as i32);
                }
                Err(error) => {
                    eprintln!("forge-bash: waiting for termination signals failed: {error}");
                }
            }
        });
    if let Err(error) = spawned {
        eprintln!("forge-bash: cannot start the signal thread: {error}");
        let _ = signals.thread_unblock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn groups_are_tracked_until_removed() {
        let groups = RunningGroups::new();
        // Pids far above pid_max: kill_all's signals fail harmlessly.
        groups.insert(Pid::from_raw(i32::MAX - 1));
        groups.insert(Pid::from_raw(i32::MAX - 2));
        groups.remove(Pid::from_raw(i32::MAX - 1));
        assert_eq!(groups.kill_all(), 1);
    }
}
