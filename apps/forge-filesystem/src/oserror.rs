//! Operating-system errors as the model sees them.
//!
//! The reference server reports a failed system call the Node way:
//! `ENOENT: no such file or directory, open '/ws/missing.txt'`. [`FsError`]
//! carries the call, the path and the `io::Error`, and prints that shape, so
//! a model used to the reference reads the same messages.

use std::io;
use std::path::{Path, PathBuf};

/// A failed filesystem call on one path.
#[derive(Debug, thiserror::Error)]
#[error("{}", describe(.source, .call, .path))]
pub struct FsError {
    /// The system call, in Node's words: `open`, `read`, `scandir`, `realpath`…
    pub call: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

impl FsError {
    pub fn new(call: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self {
            call,
            path: path.into(),
            source,
        }
    }

    /// A closure for `map_err` that wraps an `io::Error` for `call` on `path`.
    pub fn on<'a>(call: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> Self + 'a {
        move |source| Self::new(call, path, source)
    }
}

/// `CODE: description, call 'path'`, or the plain error with the call and
/// path when the error carries no OS code.
pub fn describe(error: &io::Error, call: &str, path: &Path) -> String {
    match error.raw_os_error() {
        Some(raw) => {
            let errno = nix::errno::Errno::from_raw(raw);
            let text = lowercase_first(errno.desc());
            format!("{errno:?}: {text}, {call} '{}'", path.display())
        }
        None => format!("{error}, {call} '{}'", path.display()),
    }
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A wrapped `io::Error` (tempfile wraps its errors with the temp file's
/// path, hiding the errno) turned back into a plain OS error of the same
/// kind, so the message carries an errno and our path instead.
pub fn os_cause(error: io::Error) -> io::Error {
    if error.raw_os_error().is_some() {
        return error;
    }
    use nix::errno::Errno;
    let errno = match error.kind() {
        io::ErrorKind::NotFound => Errno::ENOENT,
        io::ErrorKind::PermissionDenied => Errno::EACCES,
        io::ErrorKind::AlreadyExists => Errno::EEXIST,
        io::ErrorKind::NotADirectory => Errno::ENOTDIR,
        io::ErrorKind::IsADirectory => Errno::EISDIR,
        io::ErrorKind::ReadOnlyFilesystem => Errno::EROFS,
        io::ErrorKind::StorageFull => Errno::ENOSPC,
        io::ErrorKind::QuotaExceeded => Errno::EDQUOT,
        io::ErrorKind::InvalidFilename => Errno::ENAMETOOLONG,
        _ => return error,
    };
    errno_error(errno)
}

/// An `io::Error` for an errno, for the cases we detect before the kernel does.
pub fn errno_error(errno: nix::errno::Errno) -> io::Error {
    io::Error::from_raw_os_error(errno as i32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn os_errors_read_like_node() {
        let cases = [
            (
                FsError::new(
                    "open",
                    "/ws/missing.txt",
                    errno_error(nix::errno::Errno::ENOENT),
                ),
                "ENOENT: no such file or directory, open '/ws/missing.txt'",
            ),
            (
                FsError::new("read", "/ws/dir", errno_error(nix::errno::Errno::EISDIR)),
                "EISDIR: is a directory, read '/ws/dir'",
            ),
            (
                FsError::new("open", "/ws/x", io::Error::other("boom")),
                "boom, open '/ws/x'",
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(error.to_string(), expected);
        }
    }

    #[test]
    fn wrapped_errors_get_their_errno_back() {
        let wrapped = io::Error::new(io::ErrorKind::NotFound, "at path /tmp/x.tmp");
        let error = FsError::new("open", "/ws/a/b.txt", os_cause(wrapped));
        assert_eq!(
            error.to_string(),
            "ENOENT: no such file or directory, open '/ws/a/b.txt'"
        );
    }
}
