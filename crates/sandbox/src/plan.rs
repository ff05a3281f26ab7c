//! What one spawn of a server may touch: [`Plan`], made from the server's
//! [`SandboxPolicy`](crate::SandboxPolicy) (its `${VAR}` entries already expanded by the caller)
//! and what BotCraft knows at the spawn ([`SpawnContext`]).
//!
//! Every sandboxed server gets:
//! - the system folders ([`SYSTEM_READ_ONLY`]) to read and execute;
//! - its program's folder, the folders of its `PATH`, and for a Node program the
//!   `node_modules` tree it lives in, to read and execute;
//! - the workspace and a private temporary folder (its `TMPDIR` and `HOME`) to read, write
//!   and execute — the workspace to read and execute only when the policy lists it among its
//!   `readOnly` entries (a server that may write one folder of it lists that one among its
//!   `readWrite` ones: Playwright's output folder);
//! - the device files every program expects ([`DEVICES`]) and `/dev/shm`.
//!
//! Nothing else: BotCraft's data folder, its checkout, other users' homes and the machine's
//! `/tmp` are outside every allowed hierarchy. `/proc` is readable, but Landlock itself
//! refuses a sandboxed process `ptrace` access to any process outside its domain, and with
//! it `/proc/PID/environ`, `mem`, `maps`, `fd` and the like of BotCraft.

use std::path::{Path, PathBuf};

use crate::policy::NetworkPolicy;

/// Folders every sandboxed server may read and execute (those that exist).
pub const SYSTEM_READ_ONLY: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys",
];

/// Device files every sandboxed server may read and write (those that exist).
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    // Not `/dev/tty`: a server has no controlling terminal (its own session), and BotCraft's
    // is not for it.
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// What BotCraft knows when it spawns a server, beyond its policy.
#[derive(Debug, Clone, Default)]
pub struct SpawnContext {
    /// The program as it will be executed (absolute, after a `PATH` search).
    pub program: Option<PathBuf>,
    /// The server's `PATH` value.
    pub path_env: Option<String>,
    /// The bots' workspace.
    pub workspace: Option<PathBuf>,
    /// The private temporary folder made for this spawn.
    pub private_tmp: Option<PathBuf>,
    /// Folders that must never be reachable whatever the policy says (BotCraft's data
    /// folder): an entry at or above one of them is dropped.
    pub forbidden: Vec<PathBuf>,
}

/// Where TCP may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkPlan {
    All,
    /// Connect to these ports only; never listen. Empty: no TCP at all.
    Connect(Vec<u16>),
}

/// The concrete allow-list of one spawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub read_exec: Vec<PathBuf>,
    pub read_write: Vec<PathBuf>,
    pub devices: Vec<PathBuf>,
    /// Read-write folders that do not exist yet, made by the child as the tool user
    /// ([`Plan::make_in_child`]).
    pub made_by_child: Vec<PathBuf>,
    pub network: NetworkPlan,
    /// Whether the server may make Unix sockets of its own (`socket(AF_UNIX)`); when not,
    /// [`crate::SyscallFilter::for_sandbox`] refuses them. `false` unless the policy
    /// says `"unixSockets": true`.
    pub unix_sockets: bool,
    /// Whether the server may make UDP sockets while its TCP is confined
    /// ([`Plan::inet_sockets`]): `false` unless its network may need a name looked up
    /// ([`NetworkRules::looks_up_names`]), which a resolver does over UDP.
    pub datagrams: bool,
    /// Policy entries left out, with why (for the operator's log).
    pub dropped: Vec<String>,
}

impl Plan {
    /// The IPv4 and IPv6 sockets the system-call filter lets the server make.
    pub fn inet_sockets(&self) -> crate::InetSockets {
        match self.network {
            NetworkPlan::All => crate::InetSockets::Any,
            NetworkPlan::Connect(_) if self.datagrams => crate::InetSockets::TcpAndDatagrams,
            NetworkPlan::Connect(_) => crate::InetSockets::Tcp,
        }
    }

    /// The plan for a server whose policy lists `read_write` and `read_only` (expanded) and
    /// `network` ([`network_plan`]'s rules, whose entries left out join [`Plan::dropped`]; or
    /// a [`NetworkPlan`] alone, with no name to look up).
    pub fn new(
        context: &SpawnContext,
        read_write: &[String],
        read_only: &[String],
        network: impl Into<NetworkRules>,
    ) -> Self {
        let network = network.into();
        let mut plan = Self {
            read_exec: Vec::new(),
            read_write: Vec::new(),
            devices: Vec::new(),
            made_by_child: Vec::new(),
            network: network.plan,
            unix_sockets: false,
            datagrams: network.looks_up_names,
            dropped: network.dropped,
        };
        // Resolved once: a folder holding one of these is never allowed.
        let forbidden: Vec<PathBuf> = context
            .forbidden
            .iter()
            .map(|secret| std::fs::canonicalize(secret).unwrap_or_else(|_| secret.clone()))
            .collect();
        let forbidden = forbidden.as_slice();
        for dir in SYSTEM_READ_ONLY {
            plan.add_read(Path::new(dir), forbidden);
        }
        if let Some(program) = &context.program {
            for dir in program_dirs(program) {
                plan.add_read(&dir, forbidden);
            }
        }
        for dir in context
            .path_env
            .iter()
            .flat_map(|path| std::env::split_paths(path))
        {
            if dir.is_absolute() {
                plan.add_read(&dir, forbidden);
            }
        }
        for entry in read_only {
            plan.add_entry(entry, false, forbidden);
        }
        // Listed read-only, the workspace is only that (its entry above added it so).
        let workspace_read_only = context.workspace.as_ref().is_some_and(|workspace| {
            let workspace = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.clone());
            read_only
                .iter()
                .any(|entry| std::fs::canonicalize(entry).is_ok_and(|entry| entry == workspace))
        });
        let workspace = context.workspace.as_ref().filter(|_| !workspace_read_only);
        for dir in [workspace, context.private_tmp.as_ref()]
            .into_iter()
            .flatten()
        {
            plan.add_write(dir, forbidden);
        }
        let workspace = context.workspace.as_ref().map(|workspace| {
            std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.clone())
        });
        for entry in read_write {
            // A folder named inside the workspace must be inside it once resolved: a link
            // planted there by whatever writes the workspace (a command, another server) would
            // otherwise hand this server another folder to write.
            if let Some(workspace) = &workspace
                && leads_out_of(Path::new(entry), workspace)
            {
                plan.dropped.push(format!(
                    "{entry:?}: leads out of the workspace through a link"
                ));
                continue;
            }
            plan.add_entry(entry, true, forbidden);
        }
        plan.devices = DEVICES
            .iter()
            .map(PathBuf::from)
            .filter(|path| path.exists())
            .collect();
        plan
    }

    /// A read-write folder that does not exist yet, to be made by the child once it is the
    /// tool user (a parent that may not give a folder to another user, without `CAP_CHOWN`,
    /// cannot make one the tool user may write), in a folder that exists. `false` (and the
    /// reason kept) when it cannot be: a relative path, a missing parent, or a parent named
    /// through the workspace that leads out of it. (A new folder holds nothing: it may go
    /// where BotCraft's data folder is, as the workspace of `scripts/run.sh` does.)
    pub fn make_in_child(&mut self, path: &Path, context: &SpawnContext) -> bool {
        let shown = path.display();
        let parent = match path.parent() {
            Some(parent) if path.is_absolute() && path.file_name().is_some() => parent,
            _ => {
                self.dropped.push(format!(
                    "{shown:?}: not an absolute folder path once expanded"
                ));
                return false;
            }
        };
        let Ok(real_parent) = std::fs::canonicalize(parent) else {
            self.dropped
                .push(format!("{shown:?}: its parent folder does not exist"));
            return false;
        };
        let workspace = context.workspace.as_ref().map(|workspace| {
            std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.clone())
        });
        let leads_out = workspace.as_ref().is_some_and(|workspace| {
            let through = parent.ancestors().any(|folder| {
                std::fs::canonicalize(folder).is_ok_and(|folder| folder == *workspace)
            });
            through && !real_parent.starts_with(workspace)
        });
        if leads_out {
            self.dropped.push(format!(
                "{shown:?}: leads out of the workspace through a link"
            ));
            return false;
        }
        self.made_by_child
            .push(real_parent.join(path.file_name().unwrap_or_default()));
        true
    }

    fn add_entry(&mut self, entry: &str, write: bool, forbidden: &[PathBuf]) {
        let path = Path::new(entry);
        if !path.is_absolute() {
            self.dropped
                .push(format!("{entry:?}: not an absolute path once expanded"));
        } else if !path.exists() {
            self.dropped.push(format!("{entry:?}: does not exist"));
        } else if write {
            self.add_write(path, forbidden);
        } else {
            self.add_read(path, forbidden);
        }
    }

    fn allowed(&mut self, path: &Path, forbidden: &[PathBuf]) -> Option<PathBuf> {
        let path = std::fs::canonicalize(path).ok()?;
        let forbidden = forbidden.iter().find(|secret| secret.starts_with(&path));
        match forbidden {
            // The workspace may sit inside the data folder (scripts/run.sh's layout): allowed,
            // since it holds none of the data folder; a folder holding the data folder is not.
            Some(secret) => {
                self.dropped.push(format!(
                    "{}: holds {}, which no tool may reach",
                    path.display(),
                    secret.display()
                ));
                None
            }
            None => Some(path),
        }
    }

    fn add_read(&mut self, path: &Path, forbidden: &[PathBuf]) {
        if let Some(path) = self.allowed(path, forbidden)
            && !self.read_exec.contains(&path)
        {
            self.read_exec.push(path);
        }
    }

    fn add_write(&mut self, path: &Path, forbidden: &[PathBuf]) {
        if let Some(path) = self.allowed(path, forbidden)
            && !self.read_write.contains(&path)
        {
            self.read_write.push(path);
        }
    }
}

/// Whether `entry`, named through the workspace (a folder on its path is the workspace,
/// however written: through a link, with `..`), resolves outside it.
fn leads_out_of(entry: &Path, workspace: &Path) -> bool {
    let through = entry
        .ancestors()
        .skip(1)
        .any(|folder| std::fs::canonicalize(folder).is_ok_and(|folder| folder == workspace));
    through && std::fs::canonicalize(entry).is_ok_and(|real| !real.starts_with(workspace))
}

/// The folders a program needs to run: its own (as named and as resolved), and the topmost
/// `node_modules` above either (a Node program loads its dependencies from there).
fn program_dirs(program: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let resolved = std::fs::canonicalize(program).ok();
    for path in std::iter::once(program.to_path_buf()).chain(resolved) {
        if let Some(parent) = path.parent() {
            dirs.push(parent.to_path_buf());
        }
        if let Some(modules) = path
            .ancestors()
            .filter(|dir| dir.file_name().is_some_and(|name| name == "node_modules"))
            .last()
        {
            dirs.push(modules.to_path_buf());
        }
    }
    dirs
}

/// A policy's network for one spawn ([`network_plan`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkRules {
    pub plan: NetworkPlan,
    /// The server may need a name looked up, which a resolver does over UDP (DNS), so its
    /// UDP sockets stay ([`Plan::datagrams`]): an allowed entry is a bare port (the hosts it
    /// is for are not known here) or a URL whose host is not one address
    /// ([`crate::names_a_host`]). `false` for `"none"`, and for a list of addresses alone
    /// (the seeded `${TYPESENSE_URL}` as `http://127.0.0.1:8108`, the built-in egress proxy).
    pub looks_up_names: bool,
    /// Entries left out, with why (for the operator's log).
    pub dropped: Vec<String>,
}

impl From<NetworkPlan> for NetworkRules {
    /// `plan` with no name to look up and nothing left out.
    fn from(plan: NetworkPlan) -> Self {
        Self {
            plan,
            looks_up_names: false,
            dropped: Vec::new(),
        }
    }
}

/// The ports a policy's network resolves to, given each named entry's expansion, with the
/// entries left out and why. Fails closed: an entry that does not resolve (`expand` gives
/// `None`: its variable is unset, so the server has no such service) or names no port allows
/// nothing, and the others still apply.
pub fn network_plan(
    policy: &NetworkPolicy,
    expand: impl Fn(&str) -> Option<String>,
) -> NetworkRules {
    let entries = match policy {
        NetworkPolicy::All => return NetworkPlan::All.into(),
        NetworkPolicy::None => return NetworkPlan::Connect(Vec::new()).into(),
        NetworkPolicy::Connect(entries) => entries,
    };
    let mut ports = Vec::new();
    let mut looks_up_names = false;
    let mut dropped = Vec::new();
    for entry in entries {
        let port = match entry {
            crate::policy::NetworkEntry::Port(port) => {
                looks_up_names = true;
                Some(*port)
            }
            crate::policy::NetworkEntry::Named(text) => match expand(text) {
                // Unset: nothing to say (the service is not configured here).
                None => continue,
                Some(expanded) => {
                    let port = crate::policy::port_of(&expanded);
                    looks_up_names |= port.is_some() && crate::policy::names_a_host(&expanded);
                    port
                }
            },
        };
        match port {
            Some(port) if !ports.contains(&port) => ports.push(port),
            Some(_) => {}
            None => dropped.push(format!("network {entry:?}: names no TCP port")),
        }
    }
    NetworkRules {
        plan: NetworkPlan::Connect(ports),
        looks_up_names,
        dropped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A read-write folder named through the workspace, however the workspace is written (as
    /// it is, through a link, with `..`), is dropped when a link leads it out; one that stays
    /// inside is kept.
    #[test]
    fn a_write_entry_through_the_workspace_that_leads_out_is_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        let (workspace, outside) = (root.join("ws"), root.join("outside"));
        for folder in [&workspace, &outside, &workspace.join("inside")] {
            std::fs::create_dir_all(folder).expect("mkdir");
        }
        std::os::unix::fs::symlink(&outside, workspace.join("out")).expect("symlink");
        std::os::unix::fs::symlink(&workspace, root.join("link")).expect("symlink");
        let context = SpawnContext {
            workspace: Some(workspace.clone()),
            ..SpawnContext::default()
        };
        let plan_of = |entry: PathBuf| {
            Plan::new(
                &context,
                &[entry.display().to_string()],
                &[],
                NetworkPlan::All,
            )
        };
        for entry in [
            workspace.join("out"),
            root.join("link/out"),
            workspace.join("../ws/out"),
        ] {
            let plan = plan_of(entry.clone());
            assert!(!plan.read_write.contains(&outside), "{entry:?}: {plan:?}");
            assert!(
                plan.dropped.iter().any(|why| why.contains("leads out")),
                "{entry:?}: {plan:?}"
            );
        }
        let plan = plan_of(root.join("link/inside"));
        assert!(
            plan.read_write.contains(&workspace.join("inside")),
            "{plan:?}"
        );
    }

    #[test]
    fn the_data_folder_is_never_in_a_plan_but_a_workspace_inside_it_is() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        let workspace = data.join("workspace");
        std::fs::create_dir_all(&workspace).expect("mkdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        let context = SpawnContext {
            workspace: Some(workspace.clone()),
            forbidden: vec![data.clone()],
            ..SpawnContext::default()
        };
        let plan = Plan::new(
            &context,
            &[
                data.display().to_string(),
                dir.path().display().to_string(),
                "relative".into(),
                "/no/such/folder".into(),
            ],
            &[],
            NetworkPlan::All,
        );
        assert_eq!(plan.read_write, vec![root.join("data/workspace")]);
        assert!(!plan.read_exec.iter().any(|path| path.starts_with(&root)));
        assert_eq!(plan.dropped.len(), 4, "{:?}", plan.dropped);
    }

    #[test]
    fn a_node_program_reads_its_node_modules() {
        let dir = tempfile::tempdir().expect("tempdir");
        let modules = dir.path().join("app/node_modules");
        std::fs::create_dir_all(modules.join(".bin")).expect("mkdir");
        std::fs::create_dir_all(modules.join("@scope/tool")).expect("mkdir");
        std::fs::write(modules.join("@scope/tool/cli.js"), "").expect("write");
        std::os::unix::fs::symlink("../@scope/tool/cli.js", modules.join(".bin/tool"))
            .expect("symlink");
        let dirs = program_dirs(&modules.join(".bin/tool"));
        let canonical = std::fs::canonicalize(&modules).expect("canonical");
        assert!(dirs.contains(&modules), "{dirs:?}");
        assert!(dirs.contains(&canonical.join("@scope/tool")), "{dirs:?}");
    }

    #[test]
    fn network_entries_resolve_to_ports_and_fail_closed() {
        use crate::policy::NetworkEntry;
        let policy = NetworkPolicy::Connect(vec![
            NetworkEntry::Port(443),
            NetworkEntry::Named("${TYPESENSE_URL}".into()),
            NetworkEntry::Named("https://example.com".into()),
            NetworkEntry::Named("${NOT_A_URL}".into()),
            NetworkEntry::Named("${UNSET}".into()),
        ]);
        let expand = |text: &str| match text {
            "${TYPESENSE_URL}" => Some("http://127.0.0.1:8108".to_owned()),
            "${NOT_A_URL}" => Some("typesense".to_owned()),
            "${UNSET}" => None,
            other => Some(other.to_owned()),
        };
        let rules = network_plan(&policy, expand);
        assert_eq!(rules.plan, NetworkPlan::Connect(vec![443, 8108]));
        assert_eq!(rules.dropped.len(), 1, "{:?}", rules.dropped);
        assert!(rules.looks_up_names, "a bare port, and example.com");
        assert_eq!(
            network_plan(&NetworkPolicy::None, |_| None),
            NetworkPlan::Connect(Vec::new()).into()
        );
        assert_eq!(
            network_plan(&NetworkPolicy::All, |_| None),
            NetworkPlan::All.into()
        );
    }

    /// A policy that may need a name looked up keeps the server's UDP sockets (a resolver asks
    /// DNS over UDP): a bare port, or a URL whose host is not one address. Addresses, and
    /// entries that allow nothing, do not.
    #[test]
    fn only_an_entry_that_may_need_a_lookup_keeps_udp() {
        use crate::policy::NetworkEntry;
        let cases: [(&str, Option<&str>, bool); 14] = [
            ("8108", None, true),
            ("${URL}", Some("http://127.0.0.1:8108"), false),
            ("${URL}", Some("http://[::1]:8108/x"), false),
            ("${URL}", Some("http://user:p@ss@10.0.0.5"), false),
            ("${URL}", Some("http://[fe80::1%25eth0]:80"), false),
            ("${URL}", Some("http://[::1]"), false),
            (
                "${URL}",
                Some("http://typesense.search.svc.cluster.local:8108"),
                true,
            ),
            ("${URL}", Some("https://localhost"), true),
            ("${URL}", Some("http://127.1:8108"), true),
            ("${URL}", Some("mongodb://10.0.0.1:27017,db2:27017"), true),
            ("${URL}", Some("mongodb://[::1]:27017,db2:27017"), true),
            ("${URL}", Some("http://:8108"), true),
            // Names no port: left out, so it allows nothing to look up.
            ("${URL}", Some("typesense:8108"), false),
            // Unset: no such service.
            ("${URL}", None, false),
        ];
        for (entry, value, looks_up) in cases {
            let entry = match entry.parse::<u16>() {
                Ok(port) => NetworkEntry::Port(port),
                Err(_) => NetworkEntry::Named(entry.to_owned()),
            };
            let rules = network_plan(&NetworkPolicy::Connect(vec![entry]), |_| {
                value.map(str::to_owned)
            });
            assert_eq!(rules.looks_up_names, looks_up, "{value:?}");
            // The plan takes it from the rules: no caller sets it apart.
            let plan = Plan::new(&SpawnContext::default(), &[], &[], rules);
            assert_eq!(plan.datagrams, looks_up, "{value:?}");
            let inet = if looks_up {
                crate::InetSockets::TcpAndDatagrams
            } else {
                crate::InetSockets::Tcp
            };
            assert_eq!(plan.inet_sockets(), inet, "{value:?}");
        }
        let open = Plan::new(&SpawnContext::default(), &[], &[], NetworkPlan::All);
        assert_eq!(open.inet_sockets(), crate::InetSockets::Any);
    }
}
