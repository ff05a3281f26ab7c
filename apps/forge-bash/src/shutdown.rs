//! Stopping commands when the server stops.
//!
//! Commands run under keepers, in process groups of their own, so a host that
//! signals forge-bash's group does not reach them. [`RunningGroups`] holds the
//! lifeline of each command in progress (see process_group.rs), and
//! [`stop_on_signal`] makes SIGTERM, SIGINT and SIGHUP close them all (each
//! keeper kills its command's tree) before the server exits with 128 + the
//! signal number.
//!
//! The other ways the server stops are covered elsewhere: stdin closed (rmcp
//! cancels the calls still running after its drain; each kills its tree), a
//! dropped call (the process guard closes its lifeline), SIGKILL (the kernel
//! closes every lifeline with the process).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use nix::sys::signal::{SigSet, Signal};
use nix::unistd::Pid;
use proc_tree::keeper::LifelineHandle;

/// The commands in progress: each keeper's lifeline, by process group.
#[derive(Debug, Default)]
pub struct RunningGroups {
    groups: Mutex<HashMap<i32, LifelineHandle>>,
}

impl RunningGroups {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i32, LifelineHandle>> {
        self.groups
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn insert(&self, pgid: Pid, lifeline: LifelineHandle) {
        self.lock().insert(pgid.as_raw(), lifeline);
    }

    /// The command is over (or its own handle cut it): forget its lifeline.
    pub fn remove(&self, pgid: Pid) {
        self.lock().remove(&pgid.as_raw());
    }

    /// Cut every lifeline (each keeper kills its tree); returns how many there were.
    pub fn kill_all(&self) -> usize {
        let mut groups = self.lock();
        for lifeline in groups.values() {
            lifeline.cut();
        }
        let count = groups.len();
        groups.clear();
        count
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
                        "forge-bash: {signal} received; told the keepers of {killed} running command(s) to end them; exiting"
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

    #[tokio::test]
    async fn lifelines_are_held_until_removed() {
        let groups = RunningGroups::new();
        let (first, _first_end) = proc_tree::keeper::lifeline().expect("socket");
        let (second, _second_end) = proc_tree::keeper::lifeline().expect("socket");
        groups.insert(Pid::from_raw(i32::MAX - 1), first.handle().expect("dup"));
        groups.insert(Pid::from_raw(i32::MAX - 2), second.handle().expect("dup"));
        groups.remove(Pid::from_raw(i32::MAX - 1));
        assert_eq!(groups.kill_all(), 1);
        assert_eq!(groups.kill_all(), 0);
    }
}
