//! The keeper: a command run under a small subreaper that ends the command's whole tree.
//!
//! A process group reaches what a command starts only until something calls `setsid()` or
//! double-forks, and `PR_SET_PDEATHSIG` covers one process, not its children. So the owner
//! (forge-bash) runs each command as `OWNER --keep-command PROGRAM ARGS…`: the keeper
//! becomes a child subreaper (every orphan of the command re-parents to it, whatever it
//! called), starts the command in its own process group and waits.
//!
//! - **The command exits** on its own: the keeper exits with the command's status (a signal
//!   `N` as `128 + N`). Jobs that the command left in the background are left alone.
//! - **SIGTERM, SIGINT or SIGHUP** (the owner stopping it): passed to every descendant (a
//!   group signal does not reach those that left the group); once the command has exited,
//!   whatever is left is killed, and the keeper exits.
//! - **The lifeline closes** (its stdin: a pipe whose only write end the owner holds, so it
//!   closes when the owner drops it or dies, even by SIGKILL): every descendant is killed
//!   (SIGKILL) and reaped, then the keeper exits.
//!
//! When the keeper has exited after a stop, nothing of the command's tree is alive: it reaps
//! until it has no child left, and as a subreaper every descendant is, in the end, its child.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, Signal, kill};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use crate::table::{descendants, is_alive};

/// The first argument that makes a program run as a keeper.
pub const ARG: &str = "--keep-command";

/// The owner's end of a keeper's lifeline. Dropping it (or the owner's death) makes the
/// keeper kill the command's whole tree.
#[derive(Debug)]
pub struct Lifeline(#[allow(dead_code)] OwnedFd);

/// A lifeline, and the read end to give the keeper as its stdin. Both ends are
/// close-on-exec, so no other child of the owner holds the write end.
pub fn lifeline() -> io::Result<(Lifeline, Stdio)> {
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    Ok((Lifeline(write), Stdio::from(read)))
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
        eprintln!("{ARG}: no program given");
        std::process::exit(127);
    };
    let rest: Vec<OsString> = args.collect();
    let code = keep(&program, &rest).unwrap_or_else(|error| {
        eprintln!("{ARG}: {error}");
        127
    });
    std::process::exit(code)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Running,
    /// Asked to stop: the command's exit ends the rest of the tree.
    Stopping,
    /// The lifeline closed: end everything now.
    Orphaned,
}

fn keep(program: &OsStr, args: &[OsString]) -> io::Result<i32> {
    nix::sys::prctl::set_child_subreaper(true)?;
    let mut watched = SigSet::empty();
    for signal in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
    ] {
        watched.add(signal);
    }
    watched.thread_block()?;
    let signals = SignalFd::with_flags(&watched, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)?;
    let command = spawn(program, args)?;
    // The output pipes are the command's alone: the owner reads them until they close.
    let null = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
    nix::unistd::dup2_stdout(&null)?;
    nix::unistd::dup2_stderr(&null)?;
    drop(null);
    let stdin = io::stdin();
    let mut mode = Mode::Running;
    let mut status = None;
    loop {
        match (mode, status) {
            (Mode::Running, Some(code)) => return Ok(code),
            (Mode::Stopping, Some(code)) => {
                end_tree();
                return Ok(code);
            }
            (Mode::Orphaned, _) => {
                end_tree();
                return Ok(status.unwrap_or(128 + Signal::SIGKILL as i32));
            }
            _ => {}
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
        if lifeline_ready && lifeline_closed() {
            mode = Mode::Orphaned;
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
        status = status.or(reap(command));
    }
}

/// Start the command in our own group, with the signal mask cleared (we block the signals
/// we watch, and a mask survives exec).
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

/// Whether the lifeline reads end of file (or fails): the owner let go or died.
fn lifeline_closed() -> bool {
    let mut byte = [0u8; 64];
    match nix::unistd::read(io::stdin().as_fd(), &mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(Errno::EINTR | Errno::EAGAIN) => false,
        Err(_) => true,
    }
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

/// Kill every descendant and reap until no child is left. A process forked while the
/// table was read is found on the next round: its parent's death re-parents it to us, and
/// that death wakes the blocking wait.
fn end_tree() {
    loop {
        signal_descendants(Signal::SIGKILL);
        match waitpid(None, None) {
            Err(Errno::ECHILD) => return,
            Err(Errno::EINTR) | Ok(_) => {}
            Err(_) => return,
        }
    }
}
