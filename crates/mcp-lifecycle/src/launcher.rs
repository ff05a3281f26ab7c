//! Spawning a server process: an explicit environment (nothing inherited), piped stdio, its own
//! session and process group (`ProcessSession`: `setsid`, so neither the server nor what it
//! runs has BotCraft's controlling terminal, whose input a `TIOCSTI` could fill with a
//! command for the shell that started BotCraft), killed with its group when dropped, in its own
//! cgroup when there is one (the child moves itself in before anything else), optionally as
//! another user ([`RunAs`], the drop done in the child), sandboxed (the Landlock ruleset of
//! `crate::confinement`, entered after the drop, starting in the workspace), and SIGKILL on the death of BotCraft
//! (`PR_SET_PDEATHSIG`, set last: a change of credentials clears it).

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::Arc;

use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop, ProcessSession};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

use crate::config::ServerConfig;
use crate::error::LifecycleError;
use crate::run_as::RunAs;

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
    run_as: Option<&RunAs>,
    cgroup: Option<&crate::cgroup::ServerCgroup>,
    confinement: Option<&crate::confinement::Confinement>,
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
    command.wrap(ProcessSession).wrap(KillOnDrop);
    let workspace = confinement.and_then(|confinement| confinement.cwd.as_deref());
    if let Some(dir) = workspace.or_else(|| start_dir(run_as).map(std::path::Path::new)) {
        command.command_mut().current_dir(dir);
    }
    prepare_child(
        command.command_mut(),
        run_as.map(|user| (user.uid, user.gid)),
        cgroup.map(crate::cgroup::ServerCgroup::procs_fd),
        confinement.map(|confinement| Arc::clone(&confinement.prepared)),
    );
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

/// Where a server of another user starts: its home when known (BotCraft's working folder is
/// its data folder in the image, which the tool user cannot enter).
fn start_dir(run_as: Option<&RunAs>) -> Option<&str> {
    run_as
        .and_then(|user| user.home.as_deref())
        .filter(|home| std::path::Path::new(home).is_dir())
}

#[allow(unsafe_code)]
fn prepare_child(
    command: &mut tokio::process::Command,
    ids: Option<(u32, u32)>,
    cgroup_procs: Option<std::os::fd::RawFd>,
    sandbox: Option<Arc<sandbox::Prepared>>,
) {
    // SAFETY: the closure runs in the child between fork and exec and only makes
    // async-signal-safe system calls (write, close_range, setgroups, setresgid, setresuid,
    // prctl, landlock_restrict_self); it
    // allocates nothing and touches no memory shared with the parent. `cgroup_procs` is a
    // descriptor the parent keeps open until the spawn has returned.
    unsafe {
        command.pre_exec(move || {
            if let Some(fd) = cgroup_procs {
                // "0" moves the writer: in before the credentials change (the write is
                // checked against them) and before exec. A refusal leaves the server to the
                // subreaper and /proc tracking; the parent checks where it landed.
                let _ = libc::write(fd, b"0".as_ptr().cast(), 1);
            }
            // No descriptor BotCraft itself inherited without close-on-exec (a socket of
            // whatever started it) reaches the server: every one past stdio closes on exec.
            // Kernels before 5.11 refuse the flag; nothing else here needs it.
            let _ = libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            if let Some((uid, gid)) = ids {
                RunAs::drop_privileges(uid, gid)?;
            }
            // After the drop (Landlock needs no privilege, and no_new_privs keeps the
            // program from regaining any), before the parent-death signal.
            if let Some(sandbox) = &sandbox {
                sandbox.enter()?;
            }
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)
        });
    }
}
