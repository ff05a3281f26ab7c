//! Enforcement with Landlock: the ruleset of a [`Plan`] is built in the parent
//! ([`Prepared::new`], which may allocate and open paths), and entered in the child between
//! fork and exec ([`Prepared::enter`]: two system calls, nothing else), after the child has
//! dropped to the tool user and before its parent-death signal is set.
//!
//! Handled: every filesystem right of the kernel's ABI (up to 6: reads, writes, executes,
//! links and renames across folders, truncation, device ioctls), TCP bind and connect
//! (ABI 4) unless the network is open, and scoping (ABI 6): no signal to, and no abstract
//! Unix socket of, a process outside the sandbox. Landlock also refuses `ptrace` (and with it
//! `/proc/PID/mem`, `environ`, …) of any process outside the sandbox, and mounts. What it has
//! no rule for, a Unix socket with a path, the child's seccomp filter refuses to make
//! ([`SyscallFilter`]) unless the policy allows it, and with confined TCP the sockets and
//! sends its TCP rules do not see (Multipath TCP, SCTP, other families, TCP Fast Open); the
//! filter holds on a kernel without Landlock too.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, NetPort, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope,
};

use crate::plan::{NetworkPlan, Plan};
use crate::syscall_filter::SyscallFilter;

/// The newest Landlock ABI BotCraft asks for; older kernels get what they offer.
const TARGET_ABI: ABI = ABI::V6;

/// What this kernel offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Availability {
    /// Landlock is enforced (its ABI version as the kernel reports it).
    Landlock { abi: i32 },
    /// No Landlock here (an old kernel, or disabled at boot): servers run unconfined.
    Unavailable,
}

impl Availability {
    /// The word health and the API show: `landlock` or `unavailable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Landlock { .. } => "landlock",
            Self::Unavailable => "unavailable",
        }
    }
}

/// Ask the kernel (`landlock_create_ruleset` with the version flag).
#[allow(unsafe_code)]
pub fn availability() -> Availability {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the version query takes no attribute pointer and a zero size; it returns an
    // integer and creates nothing.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    match i32::try_from(version) {
        Ok(abi) if abi >= 1 => Availability::Landlock { abi },
        _ => Availability::Unavailable,
    }
}

/// Why a sandbox could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("the sandbox's ruleset cannot be built: {0}")]
    Ruleset(#[from] landlock::RulesetError),
    #[error("the private folder's path holds a NUL byte")]
    Nul,
    #[error("the sandbox cannot prepare the folder {path} its server makes: {source}")]
    MadeDir {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the sandbox cannot open {path}: {source}")]
    Open {
        path: String,
        #[source]
        source: landlock::PathFdError,
    },
}

/// A ruleset ready to be entered by a child.
#[derive(Debug)]
pub struct Prepared {
    /// `None` when the kernel has no Landlock: the child only sets no_new_privs.
    ruleset: Option<OwnedFd>,
    /// The private folder the child makes (as its own user, mode 0700) and may use whole.
    private_dir: Option<CString>,
    /// Read-write folders the child makes if they are missing (as its own user, mode 0700;
    /// a folder already there is taken, a link is not) and may use whole: each as the folder
    /// it goes in, opened here, and its name there (no link on its path swapped in later is
    /// followed).
    made_dirs: Vec<(OwnedFd, CString)>,
    /// The rights of a read-write folder, as the kernel's bits.
    write_bits: u64,
    /// The seccomp filter the child installs last (`None`: the policy allows Unix sockets and
    /// every port).
    syscall_filter: Option<SyscallFilter>,
}

/// `struct landlock_path_beneath_attr` (packed in the kernel's UAPI).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;

impl Prepared {
    /// Build the ruleset of `plan`. `private_dir` (which must not exist yet) is made by the
    /// child, after it has become the tool user, and is read-write for it: a parent that
    /// may not give a folder to another user (no `CAP_CHOWN`) still gives it a private one.
    pub fn new(plan: &Plan, private_dir: Option<&std::path::Path>) -> Result<Self, SandboxError> {
        let abi = TARGET_ABI;
        // What this kernel handles, for the rule the child adds itself.
        let kernel_abi = match availability() {
            Availability::Landlock { abi: version } => ABI::from(version.min(abi as i32)),
            Availability::Unavailable => ABI::Unsupported,
        };
        let write_bits = AccessFs::from_all(kernel_abi).bits();
        let private_dir = private_dir
            .map(|dir| CString::new(dir.as_os_str().as_bytes()))
            .transpose()
            .map_err(|_| SandboxError::Nul)?;
        let made_dirs = plan
            .made_by_child
            .iter()
            .map(|dir| {
                let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
                    return Err(SandboxError::MadeDir {
                        path: dir.display().to_string(),
                        source: std::io::ErrorKind::InvalidInput.into(),
                    });
                };
                let parent_fd = open_folder(parent).map_err(|source| SandboxError::MadeDir {
                    path: dir.display().to_string(),
                    source,
                })?;
                let name = CString::new(name.as_bytes()).map_err(|_| SandboxError::Nul)?;
                Ok((parent_fd, name))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut ruleset = Ruleset::default().handle_access(AccessFs::from_all(abi))?;
        if matches!(plan.network, NetworkPlan::Connect(_)) {
            ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
        }
        let mut created = ruleset.scope(Scope::from_all(abi))?.create()?;
        let read = AccessFs::from_read(abi);
        let all = AccessFs::from_all(abi);
        for (paths, access) in [
            (&plan.read_exec, read),
            (&plan.read_write, all),
            (&plan.devices, all),
        ] {
            for path in paths {
                let fd = PathFd::new(path).map_err(|source| SandboxError::Open {
                    path: path.display().to_string(),
                    source,
                })?;
                let access = if path.is_dir() {
                    access
                } else {
                    access & file_rights(abi)
                };
                created = created.add_rule(PathBeneath::new(fd, access))?;
            }
        }
        if let NetworkPlan::Connect(ports) = &plan.network {
            for port in ports {
                created = created.add_rule(NetPort::new(*port, AccessNet::ConnectTcp))?;
            }
        }
        Ok(Self {
            ruleset: created.into(),
            private_dir,
            made_dirs,
            write_bits,
            syscall_filter: SyscallFilter::for_sandbox(plan.unix_sockets, plan.inet_sockets()),
        })
    }

    /// In the child, between fork and exec: no new privileges, the private folder made and
    /// allowed, then the ruleset, then the system-call filter. Only async-signal-safe system calls; nothing allocated.
    #[allow(unsafe_code)]
    pub fn enter(&self) -> std::io::Result<()> {
        // SAFETY: prctl(2) with integer arguments only.
        let set = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
        if set != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if let Some(dir) = &self.private_dir {
            // SAFETY: mkdir(2) with a NUL-terminated path this value owns.
            if unsafe { libc::mkdir(dir.as_ptr(), 0o700) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(fd) = &self.ruleset {
                self.allow_private_dir(fd, dir)?;
            }
        }
        for (parent, name) in &self.made_dirs {
            // SAFETY: mkdirat(2) in a folder descriptor and with a NUL-terminated name this
            // value owns.
            if unsafe { libc::mkdirat(parent.as_raw_fd(), name.as_ptr(), 0o700) } != 0 {
                let error = std::io::Error::last_os_error();
                if error.raw_os_error() != Some(libc::EEXIST) {
                    return Err(error);
                }
            }
            if let Some(fd) = &self.ruleset {
                // SAFETY: openat(2) in a folder descriptor this value owns, with a name it
                // owns; the descriptor is closed by `allow_dir` on every path.
                let dir_fd = unsafe {
                    libc::openat(
                        parent.as_raw_fd(),
                        name.as_ptr(),
                        libc::O_PATH | libc::O_CLOEXEC | libc::O_DIRECTORY | libc::O_NOFOLLOW,
                    )
                };
                if dir_fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                self.allow_dir(fd, dir_fd)?;
            }
        }
        if let Some(fd) = &self.ruleset {
            // SAFETY: landlock_restrict_self(2) with a ruleset descriptor this value owns and
            // no flags; it changes only the calling thread's credentials.
            let restricted = unsafe {
                libc::syscall(
                    libc::SYS_landlock_restrict_self,
                    fd.as_raw_fd(),
                    0 as libc::c_uint,
                )
            };
            if restricted != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        // Last: with or without Landlock, the filter holds (it needs no_new_privs, set above).
        if let Some(filter) = &self.syscall_filter {
            filter.install()?;
        }
        Ok(())
    }

    /// The child's own folder, read-write: open it (no symlink followed) and add the rule.
    #[allow(unsafe_code)]
    fn allow_private_dir(&self, ruleset: &OwnedFd, dir: &CString) -> std::io::Result<()> {
        // SAFETY: open(2) with a NUL-terminated path this value owns; the descriptor is
        // closed below on every path.
        let dir_fd = unsafe {
            libc::open(
                dir.as_ptr(),
                libc::O_PATH | libc::O_CLOEXEC | libc::O_DIRECTORY | libc::O_NOFOLLOW,
            )
        };
        if dir_fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        self.allow_dir(ruleset, dir_fd)
    }

    /// Add the rule for the open folder `dir_fd` (an `O_PATH` descriptor), read-write, and
    /// close it.
    #[allow(unsafe_code)]
    fn allow_dir(&self, ruleset: &OwnedFd, dir_fd: libc::c_int) -> std::io::Result<()> {
        let attr = PathBeneathAttr {
            allowed_access: self.write_bits,
            parent_fd: dir_fd,
        };
        // SAFETY: landlock_add_rule(2) with the ruleset this value owns and an attribute on
        // this stack frame, which outlives the call.
        let added = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset.as_raw_fd(),
                LANDLOCK_RULE_PATH_BENEATH,
                &attr as *const PathBeneathAttr,
                0 as libc::c_uint,
            )
        };
        let error = std::io::Error::last_os_error();
        // SAFETY: close(2) of the descriptor opened above.
        unsafe { libc::close(dir_fd) };
        if added != 0 {
            return Err(error);
        }
        Ok(())
    }

    /// Whether entering confines anything (the kernel has Landlock).
    pub fn enforced(&self) -> bool {
        self.ruleset.is_some()
    }
}

/// The rights that apply to a file that is not a folder.
fn file_rights(abi: ABI) -> BitFlags<AccessFs> {
    AccessFs::from_file(abi)
}

/// `folder` opened as a path descriptor (closed on exec), for the child to make a folder in.
#[allow(unsafe_code)]
fn open_folder(folder: &std::path::Path) -> std::io::Result<OwnedFd> {
    use std::os::fd::FromRawFd as _;
    let path = CString::new(folder.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: open(2) with a NUL-terminated path owned here.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_CLOEXEC | libc::O_DIRECTORY,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor just opened and owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
