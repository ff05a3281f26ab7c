//! The audit log: one TSV line per `run` call, blocked and killed ones too,
//! appended to `{log_dir}/audit-{YYYY-MM-DD}.tsv` (UTC date).
//!
//! Columns: time (RFC 3339, UTC, milliseconds), outcome (the exit code, or
//! `blocked`, `timeout`, `max_buffer`, `cancelled`, `failed`, `shutdown`),
//! duration in milliseconds, working directory, command. Tabs, newlines,
//! carriage returns and backslashes in the last two are escaped as `\t`,
//! `\n`, `\r`, `\\`, so a line is always one record.
//!
//! Each line is written with one `write` on a file opened with `O_APPEND`,
//! under a lock shared by the calls of this server, so concurrent calls (and
//! other servers sharing the directory) never interleave inside a line.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use jiff::Timestamp;

/// How a call ended, as the audit log writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Exit(i32),
    Blocked,
    Timeout,
    MaxBuffer,
    Cancelled,
    /// The command could not be started (bad working directory, no shell).
    Failed,
    /// The server stopped while the command ran.
    Shutdown,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Exit(code) => write!(f, "{code}"),
            Outcome::Blocked => f.write_str("blocked"),
            Outcome::Timeout => f.write_str("timeout"),
            Outcome::MaxBuffer => f.write_str("max_buffer"),
            Outcome::Cancelled => f.write_str("cancelled"),
            Outcome::Failed => f.write_str("failed"),
            Outcome::Shutdown => f.write_str("shutdown"),
        }
    }
}

/// One audit record.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    pub started: Timestamp,
    pub outcome: Outcome,
    pub duration: Duration,
    pub cwd: &'a Path,
    pub command: &'a str,
}

impl Entry<'_> {
    /// The TSV line, newline included.
    pub fn line(&self) -> String {
        format!(
            "{:.3}\t{}\t{}\t{}\t{}\n",
            self.started,
            self.outcome,
            self.duration.as_millis(),
            escape(&self.cwd.to_string_lossy()),
            escape(self.command)
        )
    }
}

/// Escape a field so it holds no tab or line break.
pub fn escape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    for c in field.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            _ => out.push(c),
        }
    }
    out
}

/// An audit line could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot append to the audit log {path}: {source}")]
pub struct AuditError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// The audit log of one server.
#[derive(Debug)]
pub struct AuditLog {
    dir: PathBuf,
    lock: Mutex<()>,
}

impl AuditLog {
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            lock: Mutex::new(()),
        }
    }

    /// The file for the UTC day of `time`.
    pub fn path_for(&self, time: Timestamp) -> PathBuf {
        let date = time.to_zoned_datetime(jiff::tz::TimeZone::UTC).date();
        self.dir.join(format!("audit-{date}.tsv"))
    }

    /// Append one line (creating the directory and the file if needed).
    pub fn append(&self, entry: &Entry<'_>) -> Result<(), AuditError> {
        let path = self.path_for(entry.started);
        let error = |source| AuditError {
            path: path.clone(),
            source,
        };
        let line = entry.line();
        let _guard = self
            .lock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        crate::log_dir::secure(&self.dir).map_err(|cause| error(std::io::Error::other(cause)))?;
        let mut file = crate::log_dir::create_options()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(error)?;
        file.write_all(line.as_bytes()).map_err(error)
    }

    /// Append, or say on stderr why not (the call goes on either way).
    pub fn record(&self, entry: &Entry<'_>) {
        if let Err(error) = self.append(entry) {
            tracing::warn!("{error}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn entry<'a>(outcome: Outcome, command: &'a str) -> Entry<'a> {
        Entry {
            started: "2026-11-30T12:34:56.789123Z".parse().expect("timestamp"),
            outcome,
            duration: Duration::from_millis(42),
            cwd: Path::new("/work\tdir"),
            command,
        }
    }

    #[test]
    fn line_escapes_tabs_newlines_and_backslashes() {
        assert_eq!(
            entry(Outcome::Exit(1), "printf 'a\\tb'\techo\nls\r").line(),
            "2026-11-30T12:34:56.789Z\t1\t42\t/work\\tdir\tprintf 'a\\\\tb'\\techo\\nls\\r\n"
        );
    }

    #[test]
    fn outcomes_have_stable_names() {
        let names: Vec<String> = [
            Outcome::Exit(0),
            Outcome::Exit(-1),
            Outcome::Blocked,
            Outcome::Timeout,
            Outcome::MaxBuffer,
            Outcome::Cancelled,
            Outcome::Failed,
            Outcome::Shutdown,
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            names,
            [
                "0",
                "-1",
                "blocked",
                "timeout",
                "max_buffer",
                "cancelled",
                "failed",
                "shutdown"
            ]
        );
    }

    #[test]
    fn appends_whole_lines_to_the_daily_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = AuditLog::new(dir.path().join("nested"));
        log.append(&entry(Outcome::Blocked, "rm x"))
            .expect("append");
        log.append(&entry(Outcome::Exit(0), "ls")).expect("append");
        let text =
            std::fs::read_to_string(dir.path().join("nested/audit-2026-11-30.tsv")).expect("read");
        assert_eq!(
            text,
            "2026-11-30T12:34:56.789Z\tblocked\t42\t/work\\tdir\trm x\n\
             2026-11-30T12:34:56.789Z\t0\t42\t/work\\tdir\tls\n"
        );
    }
}
