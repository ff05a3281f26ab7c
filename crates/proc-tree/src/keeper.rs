//! The keeper: a command run under a small subreaper that ends the command's whole tree.
//!
//! A process group reaches what a command starts only until something calls `setsid()` or
//! double-forks, and `PR_SET_PDEATHSIG` covers one process, not its children. So the owner
//! (forge-bash) runs each command as `OWNER --keep-command PROGRAM ARGS…`: the keeper
//! becomes a child subreaper (every orphan of the command re-parents to it, whatever it
//! called), starts the command in its own process group (the keeper's) and waits.
//!
//! The keeper's stdin is its [`Lifeline`]: one end of a UNIX stream socket whose other end
//! only the owner holds. On it the keeper says `exit N` once the command has exited (`N`:
//! its code, or `128 + signal`), or `error MESSAGE` when it could not start it; the owner
//! says `r` (release) when it is done with a command that ended on its own.
//!
//! - **The command exits** and nothing it started is left: the keeper exits.
//! - **The command exits and left processes**: the keeper stays, their subreaper, until the
//!   owner releases it (they are jobs the command meant to leave, `server > log &`: the
//!   keeper exits and leaves them) or stops it.
//! - **SIGTERM, SIGINT or SIGHUP** (the owner stopping it): passed to every descendant (a
//!   group signal does not reach those that left the group); once the command has exited
//!   and every descendant is gone, the keeper exits.
//! - **The lifeline is cut** (the owner shut it down, dropped it or died, even by SIGKILL):
//!   every descendant is killed (SIGKILL) and reaped, then the keeper exits.
//!
//! When the keeper has exited after a stop, nothing of the command's tree is alive, unless
//! a descendant could not be killed (another user's, after `sudo`): the keeper gives up on
//! those after [`GIVE_UP`] and says so.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::net::Shutdown;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, Signal, kill};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use crate::table::{descendants, is_alive};

/// The first argument that makes a program run as a keeper.
pub const ARG: &str = "--keep-command";

/// How long a keeper ending a tree waits for descendants it cannot kill.
pub const GIVE_UP: Duration = Duration::from_secs(5);

/// What the keeper said of the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It exited with this code (`128 + N` for signal `N`).
    Exited(i32),
    /// It could not be started: why.
    NotStarted(String),
}

/// The owner's end of a keeper's lifeline. Cut ([`Lifeline::cut`], a drop, the owner's
/// death), it makes the keeper kill the command's whole tree.
#[derive(Debug)]
pub struct Lifeline {
    stream: tokio::io::BufReader<tokio::net::UnixStream>,
}

/// A second handle on a lifeline, to cut it from elsewhere (at shutdown). Dropping it does
/// nothing.
#[derive(Debug)]
pub struct LifelineHandle(UnixStream);

/// A lifeline, and its other end to give the keeper as its stdin. Both are close-on-exec,
/// so no other child of the owner holds them. Call inside a tokio runtime.
pub fn lifeline() -> io::Result<(Lifeline, Stdio)> {
    let (ours, theirs) = UnixStream::pair()?;
    ours.set_nonblocking(true)?;
    let stream = tokio::net::UnixStream::from_std(ours)?;
    Ok((
        Lifeline {
            stream: tokio::io::BufReader::new(stream),
        },
        Stdio::from(OwnedFd::from(theirs)),
    ))
}

impl Lifeline {
    /// A handle that can cut this lifeline.
    pub fn handle(&self) -> io::Result<LifelineHandle> {
        let fd = self.stream.get_ref().as_fd().try_clone_to_owned()?;
        Ok(LifelineHandle(UnixStream::from(fd)))
    }

    /// Wait for what the keeper says of the command. An end of file means the keeper died
    /// without a word.
    pub async fn outcome(&mut self) -> io::Result<Outcome> {
        let mut line = String::new();
        if self.stream.read_line(&mut line).await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the command's keeper ended without saying how the command ended",
            ));
        }
        let line = line.trim_end();
        if let Some(code) = line.strip_prefix("exit ") {
            return code
                .parse()
                .map(Outcome::Exited)
                .map_err(|_| io::Error::other(format!("the keeper said {line:?}")));
        }
        Ok(Outcome::NotStarted(
            line.strip_prefix("error ").unwrap_or(line).to_owned(),
        ))
    }

    /// The command ended on its own and the owner is done: the keeper leaves what the
    /// command left in the background, and exits.
    pub async fn release(mut self) {
        let _ = self.stream.get_mut().write_all(b"r").await;
    }

    /// Make the keeper kill the command's tree now.
    pub fn cut(&self) {
        cut(self.stream.get_ref().as_fd());
    }
}

impl Drop for Lifeline {
    fn drop(&mut self) {
        // A shutdown, not only a close: a handle's copy of the socket must not keep it open.
        // Data written before (a release) still arrives first.
        cut(self.stream.get_ref().as_fd());
    }
}

impl LifelineHandle {
    /// Make the keeper kill the command's tree now.
    pub fn cut(&self) {
        let _ = self.0.shutdown(Shutdown::Both);
    }
}

/// Shut the socket down (through a duplicate: a shutdown acts on the socket, not the
/// descriptor), so the keeper reads an end of file whoever else holds it.
fn cut(fd: std::os::fd::BorrowedFd<'_>) {
    if let Ok(duplicate) = fd.try_clone_to_owned() {
        let _ = UnixStream::from(duplicate).shutdown(Shutdown::Both);
    }
}

/// The arguments that run `program args…` under a keeper: pass them to the owner's own
/// executable (`/proc/self/exe`).
pub fn arguments(program: &OsStr, args: &[&OsStr]) -> Vec<OsString> {
    let mut all = vec![OsString::from(ARG), program.to_os_string()];
    all.extend(args.iter().map(|arg| arg.to_os_string()));
    all
}

/// When this process was started as a keeper (its first argument is [`ARG`]), keep the
/// command and exit; otherwise return. Call it first thing in `main`, before any thread.
pub fn run_if_asked() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(ARG)) {
        return;
    }
    let Some(program) = args.next() else {
        say(&format!("error {ARG}: no program given"));
        std::process::exit(127);
    };
    let rest: Vec<OsString> = args.collect();
    std::process::exit(keep(&program, &rest))
}

/// One line to the owner on the lifeline (our stdin, a socket).
fn say(line: &str) {
    let Ok(fd) = io::stdin().as_fd().try_clone_to_owned() else {
        return;
    };
    // A duplicate of fd 0: dropping it closes the duplicate only.
    let _ = UnixStream::from(fd).write_all(format!("{line}\n").as_bytes());
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Running,
    /// Asked to stop: the keeper exits once the command and everything it started are gone.
    Stopping,
    /// The owner let go of a command that ended on its own.
    Released,
    /// The lifeline was cut: end everything now.
    Cut,
}

fn keep(program: &OsStr, args: &[OsString]) -> i32 {
    let mut watched = SigSet::empty();
    for signal in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
    ] {
        watched.add(signal);
    }
    let prepared = nix::sys::prctl::set_child_subreaper(true)
        .and_then(|()| watched.thread_block())
        .and_then(|()| {
            SignalFd::with_flags(&watched, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        });
    let signals = match prepared {
        Ok(signals) => signals,
        Err(error) => {
            say(&format!("error cannot keep the command: {error}"));
            return 127;
        }
    };
    let command = match spawn(program, args) {
        Ok(command) => command,
        Err(error) => {
            say(&format!(
                "error cannot start {}: {error}",
                program.to_string_lossy()
            ));
            return 127;
        }
    };
    match watch(command, &signals) {
        Ok(code) => code,
        Err(error) => {
            // Never leave the command without its keeper.
            end_tree(&signals);
            say(&format!("error the keeper failed: {error}"));
            127
        }
    }
}

fn watch(command: Pid, signals: &SignalFd) -> io::Result<i32> {
    // The output pipes are the command's alone: the owner reads them until they close.
    let null = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
    nix::unistd::dup2_stdout(&null)?;
    nix::unistd::dup2_stderr(&null)?;
    drop(null);
    let stdin = io::stdin();
    let mut mode = Mode::Running;
    let mut status: Option<i32> = None;
    loop {
        if mode == Mode::Cut {
            end_tree(signals);
            return Ok(status.unwrap_or(128 + Signal::SIGKILL as i32));
        }
        if let Some(code) = status {
            let done = match mode {
                Mode::Released => true,
                Mode::Running | Mode::Stopping => descendants(std::process::id()).is_empty(),
                Mode::Cut => false,
            };
            if done {
                return Ok(code);
            }
        }
        let (lifeline_ready, signals_ready) = {
            let mut fds = [
                PollFd::new(stdin.as_fd(), PollFlags::POLLIN),
                PollFd::new(signals.as_fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(Errno::EINTR) => continue,
                Err(error) => return Err(error.into()),
            }
            let ready = |fd: &PollFd| fd.revents().is_some_and(|r| !r.is_empty());
            (ready(&fds[0]), ready(&fds[1]))
        };
        if lifeline_ready {
            match read_lifeline() {
                Heard::Nothing => {}
                Heard::Release if status.is_some() => mode = Mode::Released,
                Heard::Release => {}
                Heard::Cut => mode = Mode::Cut,
            }
        }
        if signals_ready {
            while let Ok(Some(info)) = signals.read_signal() {
                let Ok(signal) = Signal::try_from(info.ssi_signo as i32) else {
                    continue;
                };
                if signal != Signal::SIGCHLD {
                    if mode == Mode::Running {
                        mode = Mode::Stopping;
                    }
                    signal_descendants(signal);
                }
            }
        }
        if status.is_none()
            && let Some(code) = reap(command)
        {
            status = Some(code);
            say(&format!("exit {code}"));
        } else {
            reap(command);
        }
    }
}

enum Heard {
    Nothing,
    Release,
    Cut,
}

fn read_lifeline() -> Heard {
    let mut bytes = [0u8; 64];
    match nix::unistd::read(io::stdin().as_fd(), &mut bytes) {
        Ok(0) => Heard::Cut,
        Ok(count) if bytes[..count].contains(&b'r') => Heard::Release,
        Ok(_) | Err(Errno::EINTR | Errno::EAGAIN) => Heard::Nothing,
        Err(_) => Heard::Cut,
    }
}

/// Start the command in our own group, with the signal mask cleared (we block the signals
/// we watch, and a mask survives exec) and stdin from `/dev/null`.
#[allow(unsafe_code)]
fn spawn(program: &OsStr, args: &[OsString]) -> io::Result<Pid> {
    let mut command = Command::new(program);
    command.args(args).stdin(Stdio::null());
    // SAFETY: the closure makes one async-signal-safe call (pthread_sigmask) and allocates
    // nothing.
    unsafe {
        command.pre_exec(|| SigSet::empty().thread_set_mask().map_err(io::Error::from));
    }
    let child = command.spawn()?;
    let pid = i32::try_from(child.id()).map_err(io::Error::other)?;
    // Waited for with waitpid below; a std `Child` never waits on drop.
    drop(child);
    Ok(Pid::from_raw(pid))
}

/// Reap every child that has exited; the command's exit code when it was among them.
fn reap(command: Pid) -> Option<i32> {
    let mut code = None;
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, exit)) if pid == command => code = Some(exit),
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == command => {
                code = Some(128 + signal as i32);
            }
            Ok(WaitStatus::StillAlive) | Err(_) => return code,
            Ok(_) => {}
        }
    }
}

fn signal_descendants(signal: Signal) {
    for process in descendants(std::process::id()) {
        if is_alive(process)
            && let Ok(pid) = i32::try_from(process.pid)
        {
            let _ = kill(Pid::from_raw(pid), signal);
        }
    }
}

/// Kill every descendant and reap until no child is left, for at most [`GIVE_UP`] (a
/// descendant of another user cannot be killed). A process forked while the table was read
/// is found on the next round: its parent's death re-parents it to us.
fn end_tree(signals: &SignalFd) {
    let deadline = Instant::now() + GIVE_UP;
    loop {
        signal_descendants(Signal::SIGKILL);
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => break,
                Err(Errno::ECHILD) => return,
                Err(Errno::EINTR) | Ok(_) => {}
                Err(_) => return,
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let stuck: Vec<u32> = descendants(std::process::id())
                .iter()
                .map(|p| p.pid)
                .collect();
            say(&format!("error the keeper could not end {stuck:?}"));
            return;
        }
        // The next child's exit (SIGCHLD), or the deadline.
        let mut fds = [PollFd::new(signals.as_fd(), PollFlags::POLLIN)];
        let wait = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
        let _ = poll(&mut fds, wait);
        while let Ok(Some(_)) = signals.read_signal() {}
    }
}
