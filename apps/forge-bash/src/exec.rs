//! Running one command to its end: reads stdout and stderr concurrently as
//! they arrive into a [`Capture`], and stops the whole process group on the
//! time limit, the output limit or cancellation.
//!
//! The command is done when both pipes are closed and the shell has exited.
//! A background job that keeps the pipes open keeps the command running (up
//! to the time limit); one that redirects its output does not.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use crate::capture::{Capture, Stream};
use crate::process_group::{self, ShellEnd};
use crate::shutdown::RunningGroups;

/// Bytes read from a pipe at a time.
const READ_CHUNK: usize = 64 * 1024;

/// What to run and within which limits.
#[derive(Debug, Clone, Copy)]
pub struct Execution<'a> {
    pub groups: &'a Arc<RunningGroups>,
    pub shell: &'a Path,
    pub command: &'a str,
    pub cwd: &'a Path,
    pub env: &'a [(OsString, OsString)],
    pub timeout: Duration,
    pub max_buffer_bytes: u64,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The shell exited with this code (128 + N when killed by signal N).
    Exited(i32),
    /// The time limit passed; the group was killed.
    TimedOut,
    /// The output passed the max buffer; the group was killed.
    BufferExceeded,
    /// The request was cancelled; the group was killed.
    Cancelled,
}

/// The command could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("cannot start {shell}: {source}")]
    Spawn {
        shell: String,
        source: std::io::Error,
    },
    #[error("lost track of the command: {0}")]
    Wait(std::io::Error),
}

/// Run `execution` to its end, feeding its output to `capture`.
pub async fn execute(
    execution: Execution<'_>,
    capture: &mut Capture<'_>,
    cancel: &CancellationToken,
) -> Result<Ending, ExecError> {
    let (mut process, pipes) = process_group::spawn(
        execution.groups,
        execution.shell,
        execution.command,
        execution.cwd,
        execution.env,
    )
    .map_err(|source| ExecError::Spawn {
        shell: execution.shell.display().to_string(),
        source,
    })?;
    let (mut stdout, mut stderr) = (pipes.stdout, pipes.stderr);
    let deadline = tokio::time::sleep(execution.timeout);
    tokio::pin!(deadline);
    let mut out_buf = vec![0u8; READ_CHUNK];
    let mut err_buf = vec![0u8; READ_CHUNK];
    let (mut out_open, mut err_open) = (true, true);
    let interrupted = loop {
        if !out_open && !err_open {
            break None;
        }
        let (stream, read) = tokio::select! {
            biased;
            () = cancel.cancelled() => break Some(Ending::Cancelled),
            () = &mut deadline => break Some(Ending::TimedOut),
            read = stdout.read(&mut out_buf), if out_open => (Stream::Stdout, read),
            read = stderr.read(&mut err_buf), if err_open => (Stream::Stderr, read),
        };
        let count = match read {
            Ok(count) => count,
            Err(error) => {
                tracing::warn!(?stream, %error, "reading the command's output failed");
                0
            }
        };
        if count == 0 {
            match stream {
                Stream::Stdout => out_open = false,
                Stream::Stderr => err_open = false,
            }
            continue;
        }
        let chunk = match stream {
            Stream::Stdout => &out_buf[..count],
            Stream::Stderr => &err_buf[..count],
        };
        let room = execution
            .max_buffer_bytes
            .saturating_sub(capture.read_bytes());
        let allowed = usize::try_from(room).unwrap_or(usize::MAX).min(chunk.len());
        capture.push(stream, &chunk[..allowed]).await;
        if allowed < chunk.len() {
            break Some(Ending::BufferExceeded);
        }
    };
    let ending = match interrupted {
        Some(ending) => ending,
        None => {
            let status = tokio::select! {
                biased;
                () = cancel.cancelled() => None,
                () = &mut deadline => Some(None),
                status = process.wait() => Some(Some(status)),
            };
            match status {
                None => Ending::Cancelled,
                Some(None) => Ending::TimedOut,
                Some(Some(end)) => match end.map_err(ExecError::Wait)? {
                    ShellEnd::Exited(code) => {
                        process.release().await;
                        return Ok(Ending::Exited(code));
                    }
                    ShellEnd::NotStarted(reason) => {
                        process.kill().await;
                        return Err(ExecError::Spawn {
                            shell: execution.shell.display().to_string(),
                            source: std::io::Error::other(reason),
                        });
                    }
                },
            }
        }
    };
    process.kill().await;
    Ok(ending)
}
