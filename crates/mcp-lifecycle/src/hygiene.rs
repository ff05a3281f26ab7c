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
use std::time::Duration;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// A process, named by pid and start time (clock ticks since boot) against pid reuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ProcessId {
    pub pid: u32,
    pub start_time: u64,
}

struct Stat {
    ppid: u32,
    state: char,
    start_time: u64,
}

fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: parse after the last ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

/// The process `pid` as it is now, if it exists.
pub fn identify(pid: u32) -> Option<ProcessId> {
    stat(pid).map(|s| ProcessId {
        pid,
        start_time: s.start_time,
    })
}

/// Whether `process` still exists and has not exited (zombies count as gone).
pub fn is_alive(process: ProcessId) -> bool {
    matches!(stat(process.pid), Some(s) if s.start_time == process.start_time && s.state != 'Z' && s.state != 'X')
}

/// Every live descendant of `root`, found by walking parent links in `/proc`.
pub fn descendants(root: u32) -> BTreeSet<ProcessId> {
    below(&process_table(), root)
}

/// Every live process below `root` in `table` (from [`process_table`]).
pub(crate) fn below(table: &[(ProcessId, u32, char)], root: u32) -> BTreeSet<ProcessId> {
    let mut found = BTreeSet::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for (process, ppid, state) in table {
            if *ppid == parent && *state != 'Z' && found.insert(*process) {
                frontier.push(process.pid);
            }
        }
    }
    found
}

fn to_pid(pid: u32) -> Option<Pid> {
    i32::try_from(pid).ok().map(Pid::from_raw)
}

/// Whether the group id `leader` still names the group of that leader: the leader is not
/// reaped yet (the same start time, zombie or not), or no process holds the pid (the kernel
/// never hands out a pid that is a live group's id, so the group, if any, is still ours). A
/// pid held by another process means ours was reaped and the pid reused, with a group of
/// its own (every server leads one): never signal that one.
fn group_is_ours(leader: u32, start_time: Option<u64>) -> bool {
    match (stat(leader), start_time) {
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

/// A pidfd of `process`: readable once it has exited, whoever its parent is. `Ok(None)` when
/// it is gone already (or its pid now names another process); `Err` when the kernel has no
/// `pidfd_open` (before Linux 5.3).
#[allow(unsafe_code)]
fn pidfd(process: ProcessId) -> std::io::Result<Option<std::os::fd::OwnedFd>> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, process.pid as libc::pid_t, 0) };
    if fd < 0 {
        let error = std::io::Error::last_os_error();
        return match error.raw_os_error() {
            Some(libc::ESRCH) => Ok(None),
            _ => Err(error),
        };
    }
    let raw = i32::try_from(fd).map_err(|_| std::io::Error::other("descriptor out of range"))?;
    // SAFETY: `raw` is a descriptor pidfd_open just opened for us and nobody else owns.
    let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) };
    // Opened after a reuse of the pid: it names another process, ours is gone.
    Ok(is_alive(process).then_some(owned))
}

/// Wait until `process` has exited (its pidfd turns readable), or the kernel cannot say so.
#[allow(unsafe_code)]
async fn exited(process: ProcessId) -> std::io::Result<()> {
    let Some(fd) = pidfd(process)? else {
        return Ok(());
    };
    // SAFETY: `fd` is an open pidfd owned by the `AsyncFd` for its whole life, and an
    // `OwnedFd` always answers `as_raw_fd` with that same descriptor.
    let fd = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
    }
    .map_err(std::io::Error::from)?;
    let _ready = fd.readable().await?;
    Ok(())
}

/// Wait until none of `processes` is alive, at most `limit`; whether all are gone. Each exit
/// is awaited on a pidfd (the processes need not be our children); on a kernel without
/// pidfds, `/proc` is polled every 10 ms instead.
pub async fn wait_gone(processes: &BTreeSet<ProcessId>, limit: Duration) -> bool {
    let waits = processes.iter().map(|process| exited(*process));
    match tokio::time::timeout(limit, futures::future::join_all(waits)).await {
        Ok(results) if results.iter().all(Result::is_ok) => {
            return !processes.iter().any(|p| is_alive(*p));
        }
        Ok(_) => {}
        Err(_) => return !processes.iter().any(|p| is_alive(*p)),
    }
    poll_gone(processes, limit).await
}

/// [`wait_gone`] without pidfds.
async fn poll_gone(processes: &BTreeSet<ProcessId>, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if !processes.iter().any(|p| is_alive(*p)) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        // Descendants re-parented away from us (setsid, double fork) cannot be waited on:
        // their exit is only visible in /proc, polled here until the deadline.
        tokio::time::sleep(Duration::from_millis(10)).await;
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

/// Every process in `/proc` with its parent and state.
pub(crate) fn process_table() -> Vec<(ProcessId, u32, char)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            stat(pid).map(|s| {
                (
                    ProcessId {
                        pid,
                        start_time: s.start_time,
                    },
                    s.ppid,
                    s.state,
                )
            })
        })
        .collect()
}

/// The file of running server leaders: one `pid start_time` line each.
#[derive(Debug)]
pub struct PidRegistry {
    path: PathBuf,
    lock: Mutex<()>,
    /// Held while a server is spawned and recorded, and while the orphan sweep runs.
    gate: Mutex<()>,
}

impl PidRegistry {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            lock: Mutex::new(()),
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

    fn write(&self, entries: &BTreeSet<ProcessId>) {
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
            } else if stat(process.pid).is_none_or(|s| s.start_time == process.start_time)
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
