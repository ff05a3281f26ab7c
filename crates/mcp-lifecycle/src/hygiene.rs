//! Process hygiene: no process BotCraft started, nor any descendant, outlives a stop.
//!
//! A server runs as the leader of its own process group, so one `killpg` reaches npx, node and
//! whatever they fork in the group. Chromium calls `setsid()` and leaves the group, so before
//! signalling, the descendants are snapshotted from `/proc` (pid and start time, so a reused
//! pid is never signalled) and signalled by pid as well. The pid registry records running
//! servers in a file so the next BotCraft start reaps what a crash left behind.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
pub use proc_tree::{ProcessId, descendants, identify, is_alive, wait_gone};

fn to_pid(pid: u32) -> Option<Pid> {
    i32::try_from(pid).ok().map(Pid::from_raw)
}

/// Whether the group id `leader` still names the group of that leader: the leader is not
/// reaped yet (the same start time, zombie or not), or no process holds the pid (the kernel
/// never hands out a pid that is a live group's id, so the group, if any, is still ours). A
/// pid held by another process means ours was reaped and the pid reused, with a group of
/// its own (every server leads one): never signal that one.
fn group_is_ours(leader: u32, start_time: Option<u64>) -> bool {
    match (identify(leader), start_time) {
        (None, _) => true,
        (Some(now), Some(start)) => now.start_time == start,
        (Some(_), None) => false,
    }
}

/// Send `signal` to the group led by `leader` (its start time `leader_start`, when known;
/// see [`group_is_ours`]) and to every process of `snapshot` still alive.
pub fn signal_tree(
    leader: u32,
    leader_start: Option<u64>,
    snapshot: &BTreeSet<ProcessId>,
    signal: Signal,
) {
    if let Some(pgid) = to_pid(leader)
        && group_is_ours(leader, leader_start)
    {
        // ESRCH (the group is empty) is the good case.
        let _ = killpg(pgid, signal);
    }
    for process in snapshot {
        if is_alive(*process)
            && let Some(pid) = to_pid(process.pid)
        {
            let _ = kill(pid, signal);
        }
    }
}

/// `pid start_time` lines, as the registry files hold them.
fn format_entries(entries: &BTreeSet<ProcessId>) -> String {
    entries
        .iter()
        .map(|p| format!("{} {}\n", p.pid, p.start_time))
        .collect()
}

/// `pid start_time` lines.
fn parse_entries(text: &str) -> BTreeSet<ProcessId> {
    text.lines()
        .filter_map(|line| {
            let (pid, start) = line.split_once(' ')?;
            Some(ProcessId {
                pid: pid.parse().ok()?,
                start_time: start.parse().ok()?,
            })
        })
        .collect()
}

/// The file of running server leaders: one `pid start_time` line each.
#[derive(Debug)]
pub struct PidRegistry {
    path: PathBuf,
    lock: Mutex<()>,
    /// Set by [`PidRegistry::discard`]: nothing is written any more.
    discarded: std::sync::atomic::AtomicBool,
    /// Held while a server is spawned and recorded, and while the orphan sweep runs.
    gate: Mutex<()>,
}

impl PidRegistry {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            lock: Mutex::new(()),
            discarded: std::sync::atomic::AtomicBool::new(false),
            gate: Mutex::new(()),
        }
    }

    /// Held while a server is spawned and recorded, and while the orphan sweep runs, so the
    /// sweep never takes a server just spawned for an orphan.
    pub fn spawn_gate(&self) -> std::sync::MutexGuard<'_, ()> {
        self.gate.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The recorded server processes.
    pub fn recorded(&self) -> BTreeSet<ProcessId> {
        let _guard = self.lock.lock();
        self.read()
    }

    /// Where the whole tree below BotCraft is recorded (`pids.tree` beside the registry).
    fn tree_path(&self) -> PathBuf {
        let mut name = self
            .path
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_default();
        name.push(".tree");
        self.path.with_file_name(name)
    }

    /// Record every process below BotCraft, so a start after a SIGKILL of BotCraft ends
    /// them all (a `setsid` grandchild too), not only the servers.
    pub fn record_tree(&self, tree: &BTreeSet<ProcessId>) {
        let _guard = self.lock.lock();
        if self.is_discarded() {
            return;
        }
        let text = format_entries(tree);
        if std::fs::read_to_string(self.tree_path()).ok().as_deref() == Some(text.as_str()) {
            return;
        }
        match std::fs::write(self.tree_path(), text) {
            // Said once the file holds it (tests wait on this line before a SIGKILL).
            Ok(()) => tracing::debug!(
                pids = ?tree.iter().map(|p| p.pid).collect::<Vec<_>>(),
                "process tree recorded"
            ),
            Err(error) => {
                tracing::warn!(path = %self.tree_path().display(), %error, "cannot write the process tree")
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> BTreeSet<ProcessId> {
        parse_entries(&std::fs::read_to_string(&self.path).unwrap_or_default())
    }

    fn is_discarded(&self) -> bool {
        self.discarded.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Remove the registry's files for good (an owner that stopped everything and exits, or
    /// the registry of a dead owner once reaped): later records are not written.
    pub fn discard(&self) {
        let _guard = self.lock.lock();
        self.discarded
            .store(true, std::sync::atomic::Ordering::SeqCst);
        for path in [self.path.clone(), self.tree_path()] {
            let _ = std::fs::remove_file(path);
        }
    }

    fn write(&self, entries: &BTreeSet<ProcessId>) {
        if self.is_discarded() {
            return;
        }
        if let Err(error) = std::fs::write(&self.path, format_entries(entries)) {
            tracing::warn!(path = %self.path.display(), %error, "cannot write the pid registry");
        }
    }

    pub fn record(&self, process: ProcessId) {
        let _guard = self.lock.lock();
        let mut entries = self.read();
        entries.insert(process);
        self.write(&entries);
    }

    pub fn forget(&self, process: ProcessId) {
        let _guard = self.lock.lock();
        let mut entries = self.read();
        entries.remove(&process);
        self.write(&entries);
    }

    /// Kill every recorded process that is still the same process (and its group and
    /// descendants), then empty the file. A leader that is gone may have left its group
    /// behind (children of a killed server): that group is killed too. Its pgid is the
    /// leader's pid, which the kernel does not hand out again while the group exists, so a
    /// pid found reused (another start time) means the group is gone. Returns the pids
    /// whose process or group was signalled.
    pub fn reap(&self) -> Vec<u32> {
        let _guard = self.lock.lock();
        let mut reaped = Vec::new();
        for process in self.read() {
            let Some(pid) = to_pid(process.pid) else {
                continue;
            };
            if is_alive(process) {
                let tree = descendants(process.pid);
                signal_tree(
                    process.pid,
                    Some(process.start_time),
                    &tree,
                    Signal::SIGKILL,
                );
                let _ = kill(pid, Signal::SIGKILL);
                reaped.push(process.pid);
            } else if identify(process.pid).is_none_or(|now| now.start_time == process.start_time)
                && killpg(pid, Signal::SIGKILL).is_ok()
            {
                reaped.push(process.pid);
            }
        }
        self.write(&BTreeSet::new());
        // The tree recorded below the last BotCraft: each process that is still the same
        // process (start time checked) is killed.
        let tree = parse_entries(&std::fs::read_to_string(self.tree_path()).unwrap_or_default());
        for process in tree {
            if is_alive(process)
                && let Some(pid) = to_pid(process.pid)
                && kill(pid, Signal::SIGKILL).is_ok()
            {
                reaped.push(process.pid);
            }
        }
        let _ = std::fs::remove_file(self.tree_path());
        reaped.sort_unstable();
        reaped.dedup();
        reaped
    }
}
