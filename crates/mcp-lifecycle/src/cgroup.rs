//! A cgroup v2 per server, where the machine lets BotCraft make one.
//!
//! A process group and the orphan sweep see a server's tree through `/proc` parent links and
//! a sweep every second, so a grandchild that calls `setsid` less than a sweep before a
//! SIGKILL of BotCraft can escape both. A cgroup holds every descendant from its first
//! moment, whatever it calls, and `cgroup.kill` ends them all at once.
//!
//! - [`Cgroups::create`] finds the cgroup2 mount that shows BotCraft's own cgroup
//!   (`/proc/self/mountinfo`, `/proc/self/cgroup`), and makes `botcraft.NS.PID.START` below
//!   it (BotCraft's pid namespace, pid and start time); one per process. No controller is enabled, so the no-internal-process rule does
//!   not apply. `None` (said once) where the hierarchy is absent or read-only: the
//!   subreaper and `/proc` tracking then stand alone.
//! - [`Cgroups::server`] makes one cgroup per server start and opens its `cgroup.procs`;
//!   the launcher's forked child writes `0` into it before `exec` (moving itself), so the
//!   server is inside before it runs a single instruction of its own.
//! - [`ServerCgroup::kill`] writes `1` to `cgroup.kill` (Linux 5.14+; before that, SIGKILL
//!   to each member of the server's cgroup, which has no child cgroups of its own); the last
//!   handle dropped kills and removes the cgroup.
//! - [`Cgroups::reap_dead`], at start: the `botcraft.NS.PID.START` cgroups of BotCrafts of
//!   our pid namespace that are no longer alive (a SIGKILL left them) are killed and removed,
//!   and only those: a live BotCraft beside us, or one of another namespace, keeps its own.
//!   So the next start cleans up after a SIGKILL when it runs in the same parent cgroup
//!   (the same service or container); a start elsewhere does not see them.

use std::collections::BTreeSet;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use proc_tree::ProcessId;

/// BotCraft's cgroup: one child cgroup per server start.
#[derive(Debug)]
pub struct Cgroups {
    base: PathBuf,
    /// `base` as `/proc/PID/cgroup` names it.
    path: String,
    next: AtomicU64,
    /// Server cgroups whose removal found them still populated (their members were dying).
    pending: Mutex<Vec<PathBuf>>,
}

/// The cgroup of one server start.
#[derive(Debug)]
pub struct ServerCgroup {
    dir: PathBuf,
    /// `dir` as `/proc/PID/cgroup` names it.
    path: String,
    procs: OwnedFd,
    owner: Arc<Cgroups>,
}

const PREFIX: &str = "botcraft.";

/// The cgroup2 mounts: each mount point with the root of the hierarchy it shows.
fn cgroup2_mounts(mountinfo: &str) -> Vec<(PathBuf, String)> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (mount, fs) = line.split_once(" - ")?;
            if fs.split_whitespace().next()? != "cgroup2" {
                return None;
            }
            let fields: Vec<&str> = mount.split_whitespace().collect();
            // Spaces and the like are octal escapes in mountinfo (`\040`).
            let point = fields.get(4)?.replace("\\040", " ");
            Some((PathBuf::from(point), (*fields.get(3)?).to_owned()))
        })
        .collect()
}

/// The folder of our cgroup `own`: under the first cgroup2 mount whose root is `own` or an
/// ancestor of it (compared by path components); `None` when no mount shows it.
fn own_dir(mounts: &[(PathBuf, String)], own: &str) -> Option<PathBuf> {
    mounts.iter().find_map(|(point, root)| {
        let relative = Path::new(own).strip_prefix(Path::new(root)).ok()?;
        Some(point.join(relative))
    })
}

/// This process's cgroup in the unified hierarchy (`0::/path`).
fn own_cgroup(proc_cgroup: &str) -> Option<String> {
    proc_cgroup
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .map(str::to_owned)
}

/// This process's pid namespace (the inode of `/proc/self/ns/pid`): pids and start times
/// mean something only inside it.
fn pid_namespace() -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid").ok().map(|m| m.ino())
}

/// `botcraft.NS.PID.START` → the pid namespace and the BotCraft it belongs to.
fn owner_of(name: &str) -> Option<(u64, ProcessId)> {
    let mut parts = name.strip_prefix(PREFIX)?.split('.');
    let namespace = parts.next()?.parse().ok()?;
    let pid = parts.next()?.parse().ok()?;
    let start_time = parts.next()?.parse().ok()?;
    if parts.next().is_some() {
        return None;
    }
    Some((namespace, ProcessId { pid, start_time }))
}

/// A server name as a cgroup folder name: letters, digits, `-` and `_`, at most 48.
fn folder_name(server: &str, serial: u64) -> String {
    let clean: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    format!("{clean}.{serial}")
}

/// Kill every process of the cgroup at `dir`: `cgroup.kill`, or SIGKILL to each member on
/// kernels before 5.14.
fn kill_dir(dir: &Path) {
    let killed = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("cgroup.kill"))
        .and_then(|mut file| file.write_all(b"1"));
    if killed.is_err() {
        for process in members_of(dir) {
            if let Ok(pid) = i32::try_from(process.pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
}

fn members_of(dir: &Path) -> BTreeSet<ProcessId> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|pid| pid.trim().parse().ok())
        .filter_map(proc_tree::identify)
        .collect()
}

/// The child cgroups of `dir`.
fn children_of(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
                .map(|entry| entry.path())
                .collect()
        })
        .unwrap_or_default()
}

impl Cgroups {
    /// BotCraft's cgroup below its own, or `None` (said in the log) where the machine does
    /// not allow one. One per process: a second call while the first lives gets the same.
    pub fn create() -> Option<Arc<Self>> {
        static ONE: Mutex<std::sync::Weak<Cgroups>> = Mutex::new(std::sync::Weak::new());
        let mut one = ONE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(live) = one.upgrade() {
            return Some(live);
        }
        let created = Self::make();
        if let Some(created) = &created {
            *one = Arc::downgrade(created);
        }
        created
    }

    fn make() -> Option<Arc<Self>> {
        let unavailable = |why: &str| {
            tracing::info!("{why}: server trees are tracked by the subreaper and /proc");
            None
        };
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mounts = cgroup2_mounts(&mountinfo);
        if mounts.is_empty() {
            return unavailable("no cgroup2 hierarchy");
        }
        let proc_cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let Some(own) = own_cgroup(&proc_cgroup) else {
            return unavailable("no unified cgroup in /proc/self/cgroup");
        };
        let (Some(me), Some(namespace)) =
            (proc_tree::identify(std::process::id()), pid_namespace())
        else {
            return unavailable("cannot name this process");
        };
        let Some(dir) = own_dir(&mounts, &own) else {
            return unavailable("our cgroup is not under any cgroup2 mount");
        };
        let name = format!("{PREFIX}{namespace}.{}.{}", me.pid, me.start_time);
        let base = dir.join(&name);
        let path = format!("{}/{name}", own.trim_end_matches('/'));
        match std::fs::create_dir(&base) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => {
                return unavailable(&format!(
                    "cannot make the cgroup {}: {error}",
                    base.display()
                ));
            }
        }
        tracing::debug!(path = %base.display(), "a cgroup v2 per server");
        Some(Arc::new(Self {
            base,
            path,
            next: AtomicU64::new(1),
            pending: Mutex::new(Vec::new()),
        }))
    }

    /// BotCraft's own cgroup folder.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// A new cgroup for a start of `server`.
    pub fn server(self: &Arc<Self>, server: &str) -> std::io::Result<ServerCgroup> {
        // The base again, should it have been removed while it was empty (at a shutdown).
        std::fs::create_dir_all(&self.base)?;
        let (dir, path) = loop {
            let serial = self.next.fetch_add(1, Ordering::Relaxed);
            let name = folder_name(server, serial);
            let dir = self.base.join(&name);
            match std::fs::create_dir(&dir) {
                Ok(()) => break (dir, format!("{}/{name}", self.path)),
                // Never share a cgroup with another start.
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
        };
        let procs = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
            .inspect_err(|_| {
                let _ = std::fs::remove_dir(&dir);
            })?;
        Ok(ServerCgroup {
            dir,
            path,
            procs: procs.into(),
            owner: Arc::clone(self),
        })
    }

    /// Kill and remove the cgroups that BotCrafts no longer alive left beside ours; their
    /// folders, for the log.
    pub fn reap_dead(&self) -> Vec<PathBuf> {
        let Some(parent) = self.base.parent() else {
            return Vec::new();
        };
        let mut reaped = Vec::new();
        for dir in children_of(parent) {
            let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            let Some((namespace, owner)) = owner_of(name) else {
                continue;
            };
            // Another pid namespace's BotCraft cannot be checked from here: left alone.
            if dir == self.base || Some(namespace) != pid_namespace() || proc_tree::is_alive(owner)
            {
                continue;
            }
            for server in children_of(&dir) {
                kill_dir(&server);
                self.remove_later(server);
            }
            kill_dir(&dir);
            self.remove_later(dir.clone());
            reaped.push(dir);
        }
        self.tidy();
        reaped
    }

    fn remove_later(&self, dir: PathBuf) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.push(dir);
        }
    }

    /// Remove the cgroups whose members have all gone since they were killed (children
    /// before parents); the orphan sweep calls it.
    pub fn tidy(&self) {
        let Ok(mut pending) = self.pending.lock() else {
            return;
        };
        // Deepest first: a parent cannot go before its children.
        pending.sort_by_key(|dir| std::cmp::Reverse(dir.components().count()));
        pending.retain(|dir| match std::fs::remove_dir(dir) {
            Ok(()) => false,
            Err(error) => error.kind() != std::io::ErrorKind::NotFound,
        });
    }
}

impl Cgroups {
    /// Remove BotCraft's own cgroup if no server cgroup is left in it (at shutdown; a later
    /// start makes it again).
    pub fn remove_if_empty(&self) {
        let _ = std::fs::remove_dir(&self.base);
    }
}

/// BotCraft's cgroup goes with it when empty (a SIGKILL leaves it to the next start).
impl Drop for Cgroups {
    fn drop(&mut self) {
        self.tidy();
        self.remove_if_empty();
    }
}

impl ServerCgroup {
    /// The open `cgroup.procs` (close-on-exec): a forked child writes `0` to it to move in.
    pub fn procs_fd(&self) -> RawFd {
        self.procs.as_raw_fd()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every process in the cgroup now.
    pub fn members(&self) -> BTreeSet<ProcessId> {
        members_of(&self.dir)
    }

    /// Whether `pid` is in this cgroup.
    pub fn holds(&self, pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
            .ok()
            .and_then(|text| own_cgroup(&text))
            .is_some_and(|path| path == self.path)
    }

    /// SIGKILL every member at once.
    pub fn kill(&self) {
        kill_dir(&self.dir);
    }
}

impl Drop for ServerCgroup {
    fn drop(&mut self) {
        self.kill();
        if std::fs::remove_dir(&self.dir).is_err() {
            self.owner.remove_later(self.dir.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_unified_mount_and_our_path_are_found() {
        let mountinfo = "\
35 24 0:30 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755
40 35 0:35 / /sys/fs/cgroup/memory rw,relatime shared:15 - cgroup cgroup rw,memory
45 35 0:40 / /sys/fs/cgroup/unified rw,relatime shared:20 - cgroup2 cgroup2 rw
";
        let mounts = cgroup2_mounts(mountinfo);
        assert_eq!(
            mounts,
            vec![(PathBuf::from("/sys/fs/cgroup/unified"), "/".to_owned())]
        );
        let cgroup = "4:memory:/x\n1:cpu:/\n0::/system.slice/botcraft.service\n";
        assert_eq!(
            own_cgroup(cgroup).as_deref(),
            Some("/system.slice/botcraft.service")
        );
        let at = |point: &str, root: &str| vec![(PathBuf::from(point), root.to_owned())];
        let cases = [
            (
                at("/sys/fs/cgroup", "/"),
                "/system.slice/a",
                Some("/sys/fs/cgroup/system.slice/a"),
            ),
            (
                at("/sys/fs/cgroup", "/kubepods/pod1"),
                "/kubepods/pod1/c",
                Some("/sys/fs/cgroup/c"),
            ),
            // Component-wise: /pod1 is no ancestor of /pod10.
            (
                at("/sys/fs/cgroup", "/kubepods/pod1"),
                "/kubepods/pod10/c",
                None,
            ),
            // A mount whose root is not ours: nothing to use.
            (at("/sys/fs/cgroup", "/other"), "/", None),
        ];
        for (mounts, own, expected) in cases {
            assert_eq!(own_dir(&mounts, own), expected.map(PathBuf::from), "{own}");
        }
    }

    #[test]
    fn names_are_safe_and_owners_parse() {
        assert_eq!(folder_name("my server/../x", 3), "my_server____x.3");
        assert_eq!(
            owner_of("botcraft.9.123.456"),
            Some((
                9,
                ProcessId {
                    pid: 123,
                    start_time: 456
                }
            ))
        );
        assert_eq!(owner_of("botcraft.123.456"), None);
        assert_eq!(owner_of("botcraft.9.123.456.7"), None);
        assert_eq!(owner_of("other.1.2"), None);
    }
}
