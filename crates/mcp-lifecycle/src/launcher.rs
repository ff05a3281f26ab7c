//! Spawning a server process: an explicit environment (nothing inherited), piped stdio, its own
//! process group (`ProcessGroup::leader()`), killed with its group when dropped, and SIGKILL
//! on the death of BotCraft (`PR_SET_PDEATHSIG`).

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::Arc;

use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop, ProcessGroup};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

use crate::config::ServerConfig;
use crate::error::LifecycleError;

/// A spawned server with its pipes taken out.
pub struct Spawned {
    pub child: Box<dyn ChildWrapper>,
    pub pid: u32,
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
}

fn spawn_error(config: &ServerConfig, source: std::io::Error) -> LifecycleError {
    LifecycleError::Spawn {
        server: config.name.clone(),
        command: config.command.clone(),
        source: Arc::new(source),
    }
}

/// Start `config`'s command with exactly `env`.
///
/// Call from an async task, never from `spawn_blocking`: the parent-death signal fires when
/// the *thread* that forked exits, and blocking-pool threads come and go.
pub fn spawn(
    config: &ServerConfig,
    env: &BTreeMap<String, String>,
) -> Result<Spawned, LifecycleError> {
    let mut command = CommandWrap::with_new(&config.command, |command| {
        command
            .args(&config.args)
            .env_clear()
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
    });
    command.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    set_parent_death_signal(command.command_mut());
    let mut child = command
        .spawn()
        .map_err(|error| spawn_error(config, error))?;
    let missing = || spawn_error(config, std::io::Error::other("a stdio pipe is missing"));
    let stdin = child.stdin().take().ok_or_else(missing)?;
    let stdout = child.stdout().take().ok_or_else(missing)?;
    let stderr = child.stderr().take().ok_or_else(missing)?;
    let pid = child.id().ok_or_else(missing)?;
    Ok(Spawned {
        child,
        pid,
        stdin,
        stdout,
        stderr,
    })
}

#[allow(unsafe_code)]
fn set_parent_death_signal(command: &mut tokio::process::Command) {
    // SAFETY: the closure runs in the child between fork and exec and only calls prctl(2),
    // which is async-signal-safe; it touches no memory shared with the parent.
    unsafe {
        command.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)
        });
    }
}
