//! Moving without ever replacing: every trash move is one `rename` that
//! fails when the destination exists.
//!
//! On Linux (glibc) this is `renameat2(RENAME_NOREPLACE)`, atomic, so two
//! moves racing for one name cannot overwrite each other. Where that call is
//! missing or the filesystem refuses the flag, the destination is checked
//! first and a plain `rename` follows (a race window remains there). A move
//! across filesystems (`EXDEV`) is reported, never turned into copy+delete.

use std::io;
use std::path::Path;

/// Why a move did not happen. Nothing moved in every case.
#[derive(Debug, thiserror::Error)]
pub enum MoveError {
    #[error("the destination exists")]
    DestinationExists,
    #[error("source and destination are on different filesystems")]
    CrossDevice,
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Rename `from` to `to` unless `to` exists.
pub fn rename_no_replace(from: &Path, to: &Path) -> Result<(), MoveError> {
    match rename_no_replace_atomic(from, to) {
        Some(result) => result,
        None => {
            if std::fs::symlink_metadata(to).is_ok() {
                return Err(MoveError::DestinationExists);
            }
            std::fs::rename(from, to).map_err(classify)
        }
    }
}

/// `None` when the atomic form is unavailable here.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn rename_no_replace_atomic(from: &Path, to: &Path) -> Option<Result<(), MoveError>> {
    use nix::errno::Errno;
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    match renameat2(AT_FDCWD, from, AT_FDCWD, to, RenameFlags::RENAME_NOREPLACE) {
        Ok(()) => Some(Ok(())),
        Err(Errno::EINVAL | Errno::ENOSYS) => None,
        Err(errno) => Some(Err(classify(io::Error::from_raw_os_error(errno as i32)))),
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn rename_no_replace_atomic(_from: &Path, _to: &Path) -> Option<Result<(), MoveError>> {
    None
}

fn classify(error: io::Error) -> MoveError {
    match error.kind() {
        io::ErrorKind::AlreadyExists => MoveError::DestinationExists,
        io::ErrorKind::CrossesDevices => MoveError::CrossDevice,
        _ => MoveError::Io(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn an_existing_destination_is_never_replaced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let from = dir.path().join("a");
        let to = dir.path().join("b");
        std::fs::write(&from, "a").expect("write");
        std::fs::write(&to, "b").expect("write");
        let error = rename_no_replace(&from, &to).expect_err("destination exists");
        assert!(matches!(error, MoveError::DestinationExists));
        assert_eq!(std::fs::read_to_string(&to).expect("read"), "b");
        assert_eq!(std::fs::read_to_string(&from).expect("read"), "a");

        std::fs::remove_file(&to).expect("rm");
        rename_no_replace(&from, &to).expect("free destination");
        assert_eq!(std::fs::read_to_string(&to).expect("read"), "a");
    }

    #[test]
    fn errors_are_classified_by_kind() {
        let exdev = io::Error::from_raw_os_error(nix::errno::Errno::EXDEV as i32);
        assert!(matches!(classify(exdev), MoveError::CrossDevice));
        let eexist = io::Error::from_raw_os_error(nix::errno::Errno::EEXIST as i32);
        assert!(matches!(classify(eexist), MoveError::DestinationExists));
        let eacces = io::Error::from_raw_os_error(nix::errno::Errno::EACCES as i32);
        assert!(matches!(classify(eacces), MoveError::Io(_)));
    }
}
