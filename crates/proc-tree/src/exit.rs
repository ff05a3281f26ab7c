//! Waiting for processes to exit, whoever their parent is.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::table::{ProcessId, is_alive};

/// A pidfd of `process`: readable once it has exited, whoever its parent is. `Ok(None)` when
/// it is gone already (or its pid now names another process); `Err` when the kernel has no
/// `pidfd_open` (before Linux 5.3).
#[allow(unsafe_code)]
fn pidfd(process: ProcessId) -> std::io::Result<Option<std::os::fd::OwnedFd>> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, process.pid as libc::pid_t, 0) };
    if fd < 0 {
        let error = std::io::Error::last_os_error();
        return match error.raw_os_error() {
            Some(libc::ESRCH) => Ok(None),
            _ => Err(error),
        };
    }
    let raw = i32::try_from(fd).map_err(|_| std::io::Error::other("descriptor out of range"))?;
    // SAFETY: `raw` is a descriptor pidfd_open just opened for us and nobody else owns.
    let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) };
    // Opened after a reuse of the pid: it names another process, ours is gone.
    Ok(is_alive(process).then_some(owned))
}

/// Wait until `process` has exited (its pidfd turns readable), or the kernel cannot say so.
#[allow(unsafe_code)]
async fn exited(process: ProcessId) -> std::io::Result<()> {
    let Some(fd) = pidfd(process)? else {
        return Ok(());
    };
    // SAFETY: `fd` is an open pidfd owned by the `AsyncFd` for its whole life, and an
    // `OwnedFd` always answers `as_raw_fd` with that same descriptor.
    let fd = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
    }
    .map_err(std::io::Error::from)?;
    let _ready = fd.readable().await?;
    Ok(())
}

/// Wait until none of `processes` is alive, at most `limit`; whether all are gone. Each exit
/// is awaited on a pidfd (the processes need not be our children); on a kernel without
/// pidfds, `/proc` is polled every 10 ms instead.
pub async fn wait_gone(processes: &BTreeSet<ProcessId>, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    let waits = processes.iter().map(|process| exited(*process));
    match tokio::time::timeout_at(deadline, futures::future::join_all(waits)).await {
        Ok(results) if results.iter().all(Result::is_ok) => {
            return !processes.iter().any(|p| is_alive(*p));
        }
        Ok(_) => {}
        Err(_) => return !processes.iter().any(|p| is_alive(*p)),
    }
    // Some pidfd could not be had: poll for what is left of the same limit.
    poll_gone(processes, deadline).await
}

/// [`wait_gone`] without pidfds.
async fn poll_gone(processes: &BTreeSet<ProcessId>, deadline: tokio::time::Instant) -> bool {
    loop {
        if !processes.iter().any(|p| is_alive(*p)) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        // Without pidfds an exit of a process that is not our child is only visible in
        // /proc, polled here until the deadline.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
