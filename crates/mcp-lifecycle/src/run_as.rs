//! Running MCP servers as another Unix user than BotCraft ([`RunAs`]), so a command a tool
//! server runs, a file it writes or a page it loads cannot read BotCraft's data folder, its
//! memory or `/proc/<botcraft>/environ`, nor signal it.
//!
//! - The drop happens in the child between fork and exec ([`RunAs::drop_privileges`]):
//!   supplementary groups set to the tool user's group only, then the group, then the user,
//!   then every ambient capability cleared, so the program runs with no capability whatever
//!   BotCraft holds. The parent-death signal is set after the drop (a change of credentials
//!   clears it).
//! - BotCraft needs `CAP_SETUID` and `CAP_SETGID` to switch, and `CAP_KILL` to stop and reap
//!   processes of another user: root has them; the image gives them to the `botcraft`
//!   binary as *permitted* file capabilities (`setcap cap_setuid,cap_setgid,cap_kill+p`,
//!   no effective bit, so the binary still runs where they are dropped, as in a
//!   `--cap-drop ALL` container or the seed's init container). BotCraft makes them effective
//!   with [`raise_effective_capabilities`] before it starts any thread (capabilities are per
//!   thread, and a child gets those of the thread that forks it);
//!   [`RunAs::check_capabilities`] then says which one is missing.
//! - The server's `HOME`, `USER` and `LOGNAME` become the tool user's ([`RunAs::apply_env`]):
//!   BotCraft's `HOME` is its data folder in the image.

use std::collections::BTreeMap;

use nix::unistd::{Gid, Uid, User};

/// Capabilities BotCraft needs to run servers as another user: their bit numbers in
/// `/proc/self/status`'s `CapEff`, with their names.
const NEEDED_CAPABILITIES: [(u32, &str); 3] =
    [(5, "CAP_KILL"), (6, "CAP_SETGID"), (7, "CAP_SETUID")];

/// Why a tool user cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunAsError {
    #[error("tool user {spec:?}: no such user (give a name, or UID[:GID])")]
    UnknownUser { spec: String },
    #[error("tool user {spec:?}: the user database cannot be read: {reason}")]
    Lookup { spec: String, reason: String },
    #[error(
        "tool user {spec:?}: the tool user must not be root (it would give tool servers every privilege)"
    )]
    Root { spec: String },
    #[error(
        "running MCP servers as {user:?} needs {missing} (BotCraft has not got it): run BotCraft as root, or give its binary `setcap cap_setuid,cap_setgid,cap_kill+ep`; a container started with no-new-privileges or --cap-drop loses them"
    )]
    MissingCapabilities { user: String, missing: String },
}

/// The user (and group) MCP server processes run as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    pub uid: u32,
    pub gid: u32,
    /// The user's name, when the user database has it.
    pub name: Option<String>,
    /// The user's home folder, when the user database has it.
    pub home: Option<String>,
}

impl RunAs {
    /// A user name, or `UID[:GID]` (a UID without an entry in the user database is allowed;
    /// its group defaults to the UID). Root is refused.
    pub fn resolve(spec: &str) -> Result<Self, RunAsError> {
        let spec = spec.trim();
        let lookup = |result: nix::Result<Option<User>>| {
            result.map_err(|error| RunAsError::Lookup {
                spec: spec.to_owned(),
                reason: error.to_string(),
            })
        };
        let numeric = spec.split_once(':').map_or_else(
            || spec.parse::<u32>().ok().map(|uid| (uid, None)),
            |(uid, gid)| Some((uid.parse::<u32>().ok()?, Some(gid.parse::<u32>().ok()?))),
        );
        let run_as = match numeric {
            Some((uid, gid)) => {
                let user = lookup(User::from_uid(Uid::from_raw(uid)))?;
                Self {
                    uid,
                    gid: gid.or(user.as_ref().map(|u| u.gid.as_raw())).unwrap_or(uid),
                    name: user.as_ref().map(|u| u.name.clone()),
                    home: user.map(|u| u.dir.display().to_string()),
                }
            }
            None => {
                let user =
                    lookup(User::from_name(spec))?.ok_or_else(|| RunAsError::UnknownUser {
                        spec: spec.to_owned(),
                    })?;
                Self {
                    uid: user.uid.as_raw(),
                    gid: user.gid.as_raw(),
                    name: Some(user.name),
                    home: Some(user.dir.display().to_string()),
                }
            }
        };
        if run_as.uid == 0 {
            return Err(RunAsError::Root {
                spec: spec.to_owned(),
            });
        }
        Ok(run_as)
    }

    /// How logs and errors name the user.
    pub fn label(&self) -> String {
        match &self.name {
            Some(name) => format!("{name} ({}:{})", self.uid, self.gid),
            None => format!("{}:{}", self.uid, self.gid),
        }
    }

    /// Fail unless this process may switch to the user and signal its processes (after
    /// [`raise_effective_capabilities`]).
    pub fn check_capabilities(&self) -> Result<(), RunAsError> {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let effective = status
            .lines()
            .find_map(|line| line.strip_prefix("CapEff:"))
            .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
            .unwrap_or(0);
        let missing: Vec<&str> = NEEDED_CAPABILITIES
            .iter()
            .filter(|(bit, _)| effective & (1 << bit) == 0)
            .map(|(_, name)| *name)
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(RunAsError::MissingCapabilities {
                user: self.label(),
                missing: missing.join(", "),
            })
        }
    }

    /// `env` with the tool user's `HOME`, `USER` and `LOGNAME` (dropped when unknown, never
    /// BotCraft's own).
    pub fn apply_env(&self, env: &mut BTreeMap<String, String>) {
        for key in ["HOME", "USER", "LOGNAME"] {
            env.remove(key);
        }
        if let Some(home) = &self.home {
            env.insert("HOME".into(), home.clone());
        }
        if let Some(name) = &self.name {
            env.insert("USER".into(), name.clone());
            env.insert("LOGNAME".into(), name.clone());
        }
    }

    /// In the child, between fork and exec: become the user, with no capability left.
    /// Only async-signal-safe calls (setgroups, setresgid, setresuid, prctl).
    pub(crate) fn drop_privileges(uid: u32, gid: u32) -> std::io::Result<()> {
        let (uid, gid) = (Uid::from_raw(uid), Gid::from_raw(gid));
        nix::unistd::setgroups(&[gid])?;
        nix::unistd::setresgid(gid, gid, gid)?;
        nix::unistd::setresuid(uid, uid, uid)?;
        clear_ambient_capabilities()?;
        // Holding root's uid after this would be a bug: check, do not assume.
        if nix::unistd::geteuid() != uid || nix::unistd::getegid() != gid {
            return Err(std::io::Error::other("the privilege drop did not hold"));
        }
        Ok(())
    }
}

/// `capget`/`capset`'s header (`_LINUX_CAPABILITY_VERSION_3`, this process).
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// One 32-bit half of the capability sets.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// Effective := permitted, for the calling thread and the threads it starts afterwards: call
/// it on the main thread before the async runtime exists. Without permitted capabilities it
/// changes nothing.
#[allow(unsafe_code)]
pub fn raise_effective_capabilities() -> std::io::Result<()> {
    let mut header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget(2) with a valid header and room for the two halves version 3 writes.
    let got = unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut header as *mut CapHeader,
            data.as_mut_ptr(),
        )
    };
    if got != 0 {
        return Err(std::io::Error::last_os_error());
    }
    for half in &mut data {
        half.effective = half.permitted;
    }
    // SAFETY: capset(2) with the header and data capget filled in.
    let set = unsafe {
        libc::syscall(
            libc::SYS_capset,
            &mut header as *mut CapHeader,
            data.as_ptr(),
        )
    };
    if set == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn clear_ambient_capabilities() -> std::io::Result<()> {
    crate::prctl::set(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn users_resolve_by_name_or_number_and_root_is_refused() {
        let nobody = RunAs::resolve("nobody").expect("Debian has nobody");
        assert_eq!(nobody.name.as_deref(), Some("nobody"));
        assert_eq!(RunAs::resolve(&nobody.uid.to_string()), Ok(nobody.clone()));
        let bare = RunAs::resolve("54321:54322").expect("numeric ids need no entry");
        assert_eq!(
            bare,
            RunAs {
                uid: 54321,
                gid: 54322,
                name: None,
                home: None
            }
        );
        assert_eq!(RunAs::resolve("54321").map(|r| r.gid), Ok(54321));
        for root in ["root", "0", "0:0"] {
            assert!(
                matches!(RunAs::resolve(root), Err(RunAsError::Root { .. })),
                "{root}"
            );
        }
        assert!(matches!(
            RunAs::resolve("no-such-user-here"),
            Err(RunAsError::UnknownUser { .. })
        ));
    }

    #[test]
    fn the_environment_names_the_tool_user_not_botcraft() {
        let run_as = RunAs {
            uid: 10002,
            gid: 10002,
            name: Some("botcraft-tools".into()),
            home: Some("/home/botcraft-tools".into()),
        };
        let mut env: BTreeMap<String, String> = [
            ("HOME", "/var/lib/botcraft"),
            ("USER", "botcraft"),
            ("PATH", "/usr/bin"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        run_as.apply_env(&mut env);
        assert_eq!(env["HOME"], "/home/botcraft-tools");
        assert_eq!(env["USER"], "botcraft-tools");
        assert_eq!(env["LOGNAME"], "botcraft-tools");
        assert_eq!(env["PATH"], "/usr/bin");
        let mut bare_env = env.clone();
        RunAs {
            name: None,
            home: None,
            ..run_as
        }
        .apply_env(&mut bare_env);
        assert!(!bare_env.contains_key("HOME") && !bare_env.contains_key("USER"));
    }
}
