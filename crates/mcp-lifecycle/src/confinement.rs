//! How the launcher sandboxes a stdio server ([`confine`]): its stored policy
//! (`ServerConfig::sandbox`) made concrete for one spawn with the `sandbox` crate.
//!
//! For each spawn of a confined server:
//! - a private temporary folder (made by the child as the tool user, mode 0700), removed when
//!   the process ends, is its `TMPDIR`, `TMP`, `TEMP` and `HOME` (a home outside the sandbox would be unusable,
//!   and the user's own holds their keys);
//! - its `readWrite` / `readOnly` entries are expanded against its own environment
//!   (`${WORKSPACE_ROOT}`); an entry naming an unset variable is left out, and a read-write
//!   folder that does not exist yet is made the tool user's: here, or, where BotCraft may
//!   not give a folder away or write where it goes, by the child once it is that user;
//! - it starts in the workspace;
//! - the ruleset is built here and entered by the child after it dropped to the tool user.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use env_template::{EnvSegment, parse_env_value};
use sandbox::{Plan, Prepared, SpawnContext};

use crate::config::ServerConfig;
use crate::error::LifecycleError;
use crate::run_as::RunAs;

/// What the manager knows for every sandbox: set by `botcraft serve`; `None` in
/// [`crate::ManagerSettings`] runs every server unconfined (a library user's choice).
#[derive(Debug, Clone)]
pub struct SandboxSettings {
    /// The bots' workspace: read-write for every confined server, and where it starts.
    pub workspace: Option<PathBuf>,
    /// Folders no tool may ever reach (BotCraft's data folder).
    pub forbidden: Vec<PathBuf>,
    /// What this kernel offers (asked once at start).
    pub availability: sandbox::Availability,
    /// Where the private temporary folders of this process's servers are made (one folder
    /// per BotCraft process: [`ToolTmpRoot`]).
    pub tmp_root: PathBuf,
}

/// The folder under the system's temporary folder that holds one BotCraft process's private
/// tool folders: `botcraft-tools-PID-RANDOM`, mode 1733 (anyone may make an entry, nobody may list
/// or remove another's), so a tool user makes its own inside. Removed with this value; the
/// folders of a BotCraft that died without removing them are swept at the next start.
#[derive(Debug)]
pub struct ToolTmpRoot(PathBuf);

impl ToolTmpRoot {
    const PREFIX: &'static str = "botcraft-tools-";

    /// Make this process's folder, after sweeping those of processes that are gone.
    pub fn create() -> std::io::Result<Self> {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        let base = std::env::temp_dir();
        for entry in std::fs::read_dir(&base)?.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|name| name.strip_prefix(Self::PREFIX))
                .and_then(|rest| rest.split('-').next())
                .and_then(|pid| pid.parse::<i32>().ok())
            else {
                continue;
            };
            let gone = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
                == Err(nix::errno::Errno::ESRCH);
            let ours = entry.metadata().is_ok_and(|meta| {
                std::os::unix::fs::MetadataExt::uid(&meta) == nix::unistd::geteuid().as_raw()
            });
            if gone && ours {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        // The pid, for the sweep; a random part, since BotCraft in a PID namespace of its own
        // shares its pid (and /tmp) with others.
        let root = base.join(format!(
            "{}{}-{:08x}",
            Self::PREFIX,
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::DirBuilder::new().mode(0o700).create(&root)?;
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o1733))?;
        Ok(Self(root))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ToolTmpRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One spawn's sandbox, kept for as long as the process runs.
pub(crate) struct Confinement {
    pub prepared: Arc<Prepared>,
    /// Where the server starts (the workspace).
    pub cwd: Option<PathBuf>,
    /// Its private temporary folder, removed with this value.
    pub _private_tmp: PrivateTmp,
}

/// A private temporary folder the child makes (as the tool user, mode 0700): removed, as
/// far as BotCraft may, when the process is gone.
pub(crate) struct PrivateTmp(PathBuf);

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn failed(config: &ServerConfig, reason: impl Into<String>) -> LifecycleError {
    LifecycleError::Sandbox {
        server: config.name.clone(),
        reason: reason.into(),
    }
}

/// The sandbox of one spawn of `config`, and `env` changed to match; `None` when its policy
/// says it runs unconfined.
pub(crate) fn confine(
    config: &ServerConfig,
    env: &mut BTreeMap<String, String>,
    settings: &SandboxSettings,
    run_as: Option<&RunAs>,
) -> Result<Option<Confinement>, LifecycleError> {
    let policy = &config.sandbox;
    if !policy.enabled {
        return Ok(None);
    }
    // Named here, made by the child once it is the tool user (mkdir fails on anything
    // planted under the name, so nobody else's folder is ever used).
    // Short: programs make Unix sockets below their TMPDIR (Chromium's singleton socket), and
    // a socket's path is at most 107 bytes, so no server name goes in it.
    let private_tmp = PrivateTmp(
        settings
            .tmp_root
            .join(format!("{:012x}", rand::random::<u64>() >> 16)),
    );
    let tmp = private_tmp.0.display().to_string();
    for key in ["TMPDIR", "TMP", "TEMP", "HOME"] {
        env.insert(key.to_owned(), tmp.clone());
    }
    let expand = |entry: &str| expand(entry, env);
    let mut dropped = Vec::new();
    // An entry naming a variable this server has not got stands for nothing here (the seed's
    // `${FORGE_BASH_ENV_FILE}` where no file is written): left out quietly.
    // (as configured, as expanded): a dropped entry is logged as configured, never with the
    // values of its variables.
    let expanded = |entries: &[String]| -> Vec<(String, String)> {
        entries
            .iter()
            .filter_map(|entry| {
                let value = expand(entry);
                if value.is_none() {
                    tracing::debug!(server = %config.name, %entry, "sandbox entry names an unset variable");
                }
                value.map(|value| (entry.clone(), value))
            })
            .collect()
    };
    let read_write_pairs = expanded(&policy.read_write);
    let read_only_pairs = expanded(&policy.read_only);
    let values = |pairs: &[(String, String)]| -> Vec<String> {
        pairs.iter().map(|(_, value)| value.clone()).collect()
    };
    let (mut read_write, read_only) = (values(&read_write_pairs), values(&read_only_pairs));
    // A missing read-write folder is made here and given to the tool user; where this
    // process may not (no `CAP_CHOWN`, or no right to write the folder it goes in: the
    // image's workspace is the tool user's), the child makes it once it is that user.
    let mut made_by_child = Vec::new();
    for (entry, value) in &read_write_pairs {
        let path = Path::new(value);
        if !path.is_absolute() || path.exists() {
            continue;
        }
        // Only a folder whose parent is there already: the child makes one level, and what
        // this process made on the way to it would not be the tool user's.
        let parent_there = path.parent().is_some_and(Path::exists);
        match make_private_dir(path, run_as) {
            Ok(()) => {}
            Err(_) if run_as.is_some() && parent_there => {
                // Made but not given away: the child makes it again, its own.
                let _ = std::fs::remove_dir(path);
                read_write.retain(|kept| kept != value);
                made_by_child.push(path.to_path_buf());
            }
            Err(error) => {
                return Err(failed(
                    config,
                    format!(
                        "cannot make the read-write folder {entry}: {}",
                        error.kind()
                    ),
                ));
            }
        }
    }
    // An entry naming an unset variable allows nothing (the server has no such service).
    let network = sandbox::network_plan(&policy.network, expand);
    let context = SpawnContext {
        program: program_path(&config.command, env.get("PATH").map(String::as_str)),
        path_env: env.get("PATH").cloned(),
        workspace: settings.workspace.clone(),
        private_tmp: None,
        forbidden: settings.forbidden.clone(),
    };
    // The network's entries left out join the plan's own (below).
    let mut plan = Plan::new(&context, &read_write, &read_only, network);
    plan.unix_sockets = policy.unix_sockets;
    for path in &made_by_child {
        plan.make_in_child(path, &context);
    }
    dropped.extend(plan.dropped.iter().map(|reason| {
        read_write_pairs
            .iter()
            .chain(&read_only_pairs)
            .filter(|(entry, value)| entry != value)
            .fold(reason.clone(), |reason, (entry, value)| {
                reason.replace(value, entry)
            })
    }));
    for reason in &dropped {
        tracing::warn!(server = %config.name, %reason, "sandbox entry left out");
    }
    let prepared = Prepared::new(&plan, Some(&private_tmp.0))
        .map_err(|error| failed(config, error.to_string()))?;
    Ok(Some(Confinement {
        prepared: Arc::new(prepared),
        cwd: settings.workspace.clone().filter(|dir| dir.is_dir()),
        _private_tmp: private_tmp,
    }))
}

/// `entry` with each `${NAME}` replaced by the server's own variable (the store's template
/// syntax, `env_template`); `None` when one is unset or empty, or the entry is
/// malformed (the store refuses those on write).
fn expand(entry: &str, env: &BTreeMap<String, String>) -> Option<String> {
    let mut out = String::new();
    for segment in parse_env_value(entry).ok()? {
        match segment {
            EnvSegment::Literal(text) => out.push_str(text),
            EnvSegment::Reference(name) => {
                out.push_str(env.get(name).filter(|value| !value.is_empty())?);
            }
        }
    }
    Some(out)
}

/// The program as `execvp` would find it.
fn program_path(command: &str, path: Option<&str>) -> Option<PathBuf> {
    if command.contains('/') {
        return std::path::absolute(command).ok();
    }
    std::env::split_paths(path?)
        .map(|dir| dir.join(command))
        .find(|candidate| candidate.is_file())
}

fn make_private_dir(path: &Path, run_as: Option<&RunAs>) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)?;
    give_to(path, run_as)
}

/// The folder made the tool user's (when tools run as another user).
fn give_to(path: &Path, run_as: Option<&RunAs>) -> std::io::Result<()> {
    match run_as {
        Some(user) => nix::unistd::chown(
            path,
            Some(nix::unistd::Uid::from_raw(user.uid)),
            Some(nix::unistd::Gid::from_raw(user.gid)),
        )
        .map_err(std::io::Error::from),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn entries_expand_from_the_servers_own_variables() {
        let env: BTreeMap<String, String> = [("ROOT", "/srv/w"), ("EMPTY", "")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let cases = [
            ("${ROOT}", Some("/srv/w")),
            ("${ROOT}/logs", Some("/srv/w/logs")),
            ("/plain", Some("/plain")),
            ("${MISSING}", None),
            ("${EMPTY}", None),
            ("${ROOT", None),
            ("${1BAD}", None),
        ];
        for (entry, expected) in cases {
            assert_eq!(expand(entry, &env).as_deref(), expected, "{entry}");
        }
    }
}
