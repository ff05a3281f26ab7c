//! The command's process: `SHELL -c COMMAND` under a keeper (`proc_tree::keeper`): forge-bash
//! re-runs itself as `forge-bash --keep-command SHELL -c COMMAND`, the leader of a new process
//! group, and the keeper starts the shell in that group, as a child subreaper.
//!
//! - `wait`: the shell's exit code, as the keeper tells it on the lifeline.
//! - `kill`: SIGTERM to the whole group (the keeper passes it on to every descendant, those
//!   that left the group too), up to [`KILL_GRACE`] for the keeper to exit, which it does
//!   once the shell and everything it started are gone. Past the grace the lifeline is cut
//!   (the keeper SIGKILLs the tree at once); past a second grace, SIGKILL to the group.
//! - `release`: the command ended on its own; background jobs it left (`server > log &`)
//!   are left alone, and the keeper exits.
//! - Dropping a [`ShellProcess`] that was not released (the server shut down or the call
//!   future was dropped mid-run) cuts its lifeline: the keeper kills the tree.
//! - forge-bash killed, even by SIGKILL: the kernel closes every lifeline with it, and each
//!   keeper kills its command's tree, `setsid` and double-forked descendants included.
//! - stdin is `/dev/null` for the shell: a command never reads the MCP stream.

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{SigSet, Signal, killpg};
use nix::unistd::Pid;
use proc_tree::keeper::{self, Lifeline};
use tokio::process::{Child, ChildStderr, ChildStdout, Command};

use crate::shutdown::RunningGroups;

/// How long a group gets between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(1);

/// A shell running one command under its keeper, leader of its own process group.
#[derive(Debug)]
pub struct ShellProcess {
    child: Child,
    pgid: Pid,
    groups: Arc<RunningGroups>,
    /// Cut on drop (until [`ShellProcess::release`] takes it).
    lifeline: Option<Lifeline>,
}

/// How the shell ended, as its keeper told it.
#[derive(Debug)]
pub enum ShellEnd {
    Exited(i32),
    /// The keeper could not start the shell (or keep it): why.
    NotStarted(String),
}

/// The pipes of a started command.
#[derive(Debug)]
pub struct Pipes {
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
}

/// Start `shell -c command` in `cwd` with exactly `env`, its group tracked
/// in `groups` while it runs.
pub fn spawn(
    groups: &Arc<RunningGroups>,
    shell: &Path,
    command: &str,
    cwd: &Path,
    env: &[(OsString, OsString)],
) -> io::Result<(ShellProcess, Pipes)> {
    let (lifeline, keeper_stdin) = keeper::lifeline()?;
    let mut builder = Command::new(OWN_EXECUTABLE);
    builder
        .args(keeper::arguments(
            shell.as_os_str(),
            &[OsStr::new("-c"), OsStr::new(command)],
        ))
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(keeper_stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    clear_signal_mask(&mut builder);
    let mut child = builder.spawn()?;
    let pid = child
        .id()
        .ok_or_else(|| io::Error::other("the shell exited before its pid was known"))?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(io::Error::other("the shell's pipes were not created"));
    };
    let pgid = Pid::from_raw(i32::try_from(pid).map_err(io::Error::other)?);
    groups.insert(pgid, lifeline.handle()?);
    Ok((
        ShellProcess {
            child,
            pgid,
            groups: Arc::clone(groups),
            lifeline: Some(lifeline),
        },
        Pipes { stdout, stderr },
    ))
}

/// forge-bash's own executable, to run as the keeper (`/proc/self/exe` is resolved in the
/// forked child, which still is forge-bash).
const OWN_EXECUTABLE: &str = "/proc/self/exe";

/// In the forked child: clear the signal mask inherited from the server (it blocks
/// termination signals in its threads, see shutdown.rs, and the mask survives exec).
///
/// `pre_exec` is unsafe because the closure runs in the forked child before `exec`, where
/// only async-signal-safe calls are allowed. It makes one plain syscall
/// (`pthread_sigmask`) and allocates nothing (errors are raw OS errors).
#[allow(unsafe_code)]
fn clear_signal_mask(builder: &mut Command) {
    // SAFETY: the closure only makes an async-signal-safe syscall (see above).
    unsafe {
        builder.pre_exec(|| SigSet::empty().thread_set_mask().map_err(io::Error::from));
    }
}

impl ShellProcess {
    /// Wait for the shell to exit: its code, as its keeper says it.
    pub async fn wait(&mut self) -> io::Result<ShellEnd> {
        let Some(lifeline) = &mut self.lifeline else {
            return Err(io::Error::other("the command was already let go"));
        };
        Ok(match lifeline.outcome().await? {
            keeper::Outcome::Exited(code) => ShellEnd::Exited(code),
            keeper::Outcome::NotStarted(why) => ShellEnd::NotStarted(why),
        })
    }

    /// Stop the command's whole tree: SIGTERM, up to [`KILL_GRACE`] for the keeper to end
    /// it; then the lifeline is cut (the keeper SIGKILLs the tree), and after another grace
    /// the group is SIGKILLed. Leaves the keeper reaped, and with it the tree.
    pub async fn kill(&mut self) {
        self.signal(Signal::SIGTERM);
        if tokio::time::timeout(KILL_GRACE, self.child.wait())
            .await
            .is_err()
        {
            if let Some(lifeline) = &self.lifeline {
                lifeline.cut();
            }
            if tokio::time::timeout(KILL_GRACE, self.child.wait())
                .await
                .is_err()
            {
                tracing::warn!(
                    pgid = self.pgid.as_raw(),
                    "the command's keeper did not exit; killing its group"
                );
                self.signal(Signal::SIGKILL);
                let _ = self.child.wait().await;
            }
        }
        self.lifeline = None;
        self.groups.remove(self.pgid);
    }

    /// The command finished on its own: background jobs that detached their output stay
    /// alive (like `server > log 2>&1 &`); the keeper lets them go and exits.
    pub async fn release(mut self) {
        self.groups.remove(self.pgid);
        if let Some(lifeline) = self.lifeline.take() {
            lifeline.release().await;
        }
    }

    fn signal(&self, signal: Signal) {
        if let Err(error) = killpg(self.pgid, signal)
            && error != nix::errno::Errno::ESRCH
        {
            tracing::warn!(pgid = self.pgid.as_raw(), %error, ?signal, "cannot signal the process group");
        }
    }
}

impl Drop for ShellProcess {
    fn drop(&mut self) {
        // Cutting the lifeline (the drop of `lifeline` does) makes the keeper kill the tree;
        // a SIGKILL to the group would kill the keeper first, before it could reach what left
        // the group.
        if self.lifeline.is_some() {
            self.groups.remove(self.pgid);
        }
    }
}
