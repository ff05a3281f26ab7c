//! The command's process: `SHELL -c COMMAND` started as the leader of its own
//! process group, so that everything it starts (pipelines, background jobs)
//! can be stopped together.
//!
//! - `kill`: SIGTERM to the whole group, up to [`KILL_GRACE`] for the group to
//!   empty, then SIGKILL to the group.
//! - Dropping a [`ShellProcess`] that was not released (the server shut down
//!   or the call future was dropped mid-run) sends SIGKILL to the group.
//! - The shell gets `PR_SET_PDEATHSIG(SIGKILL)`: if forge-bash itself is
//!   killed, the kernel kills the shell. (Only the shell: the kernel clears
//!   the setting in its children. They lose their output pipe with the
//!   server, and die of SIGPIPE on their next write.)
//! - stdin is `/dev/null`: a command never reads the MCP stream.

use std::ffi::OsString;
use std::io;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{SigSet, Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, ChildStderr, ChildStdout, Command};

use crate::shutdown::RunningGroups;

/// How long a group gets between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(1);

/// How often the group is checked for members during the grace.
const GROUP_POLL: Duration = Duration::from_millis(20);

/// A shell running one command, leader of its own process group.
#[derive(Debug)]
pub struct ShellProcess {
    child: Child,
    pgid: Pid,
    groups: Arc<RunningGroups>,
    /// Kill the group on drop (until [`ShellProcess::release`]).
    armed: bool,
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
    let mut builder = Command::new(shell);
    builder
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    die_with_parent(&mut builder);
    let mut child = builder.spawn()?;
    let pid = child
        .id()
        .ok_or_else(|| io::Error::other("the shell exited before its pid was known"))?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(io::Error::other("the shell's pipes were not created"));
    };
    let pgid = Pid::from_raw(i32::try_from(pid).map_err(io::Error::other)?);
    groups.insert(pgid);
    Ok((
        ShellProcess {
            child,
            pgid,
            groups: Arc::clone(groups),
            armed: true,
        },
        Pipes { stdout, stderr },
    ))
}

/// In the forked child: clear the signal mask inherited from the server, and
/// ask the kernel to SIGKILL the shell when forge-bash dies.
///
/// `pre_exec` is unsafe because the closure runs in the forked child before
/// `exec`, where only async-signal-safe calls are allowed. It makes three
/// plain syscalls (`pthread_sigmask`, `prctl`, `getppid`), allocates nothing
/// (errors are raw OS errors) and takes no lock. The `getppid` check closes
/// the race where the server died between `fork` and `prctl`. Tokio spawns
/// from the calling worker thread, which lives as long as the runtime (the
/// death signal follows the forking thread).
#[allow(unsafe_code)]
fn die_with_parent(builder: &mut Command) {
    let parent = nix::unistd::getpid();
    // SAFETY: the closure only makes async-signal-safe syscalls (see above).
    unsafe {
        builder.pre_exec(move || {
            // The server blocks termination signals in its threads (see
            // shutdown.rs) and the mask survives exec: clear it.
            SigSet::empty().thread_set_mask().map_err(io::Error::from)?;
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(io::Error::from)?;
            if nix::unistd::getppid() != parent {
                return Err(io::Error::from(nix::errno::Errno::ESRCH));
            }
            Ok(())
        });
    }
}

impl ShellProcess {
    /// Wait for the shell to exit.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Stop the whole group: SIGTERM, up to [`KILL_GRACE`] for it to empty,
    /// then SIGKILL. Leaves the shell reaped.
    pub async fn kill(&mut self) {
        self.signal(Signal::SIGTERM);
        let deadline = tokio::time::Instant::now() + KILL_GRACE;
        let _ = tokio::time::timeout_at(deadline, self.child.wait()).await;
        while tokio::time::Instant::now() < deadline && self.group_exists() {
            // Linux gives no notification when the last member of a process group exits (only
            // the direct child can be waited on), so the group is polled until the deadline.
            tokio::time::sleep(GROUP_POLL).await;
        }
        self.signal(Signal::SIGKILL);
        let _ = self.child.wait().await;
        self.armed = false;
        self.groups.remove(self.pgid);
    }

    /// The command finished on its own: background jobs that detached their
    /// output stay alive (like `server > log 2>&1 &`).
    pub fn release(mut self) {
        self.armed = false;
        self.groups.remove(self.pgid);
    }

    fn signal(&self, signal: Signal) {
        if let Err(error) = killpg(self.pgid, signal)
            && error != nix::errno::Errno::ESRCH
        {
            tracing::warn!(pgid = self.pgid.as_raw(), %error, ?signal, "cannot signal the process group");
        }
    }

    /// Does any process (zombies included) remain in the group?
    fn group_exists(&self) -> bool {
        killpg(self.pgid, None).is_ok()
    }
}

impl Drop for ShellProcess {
    fn drop(&mut self) {
        if self.armed {
            self.signal(Signal::SIGKILL);
            self.groups.remove(self.pgid);
        }
    }
}
