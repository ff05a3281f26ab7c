//! The log folder (`FORGE_BASH_LOG_DIR`, default `$TMPDIR/forge-bash`, else `/tmp/forge-bash`) holds the audit log and
//! the overflow files, i.e. every command and its output. In a shared `/tmp` another user can
//! plant the folder, or a symlink to a folder of theirs, before the server first runs, and
//! then read (or swap) what it writes. So before each call the folder is made safe:
//!
//! - missing: created with mode 0700 (its missing parents too);
//! - a symlink, not a folder, or owned by another user: refused, and the call fails with
//!   `not_configured` naming the folder and the cause;
//! - ours but readable or writable by others: narrowed to 0700.
//!
//! Files in it are created 0600 without following a symlink ([`create_options`]).

use std::fs::{self, DirBuilder, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why the log folder cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LogDirError {
    #[error(
        "The log folder {} (FORGE_BASH_LOG_DIR) is a symlink; refusing to write commands and their output through it. Remove it, or set FORGE_BASH_LOG_DIR to a folder of this user.",
        .path.display()
    )]
    Symlink { path: PathBuf },
    #[error(
        "The log folder {} (FORGE_BASH_LOG_DIR) is not a folder. Set FORGE_BASH_LOG_DIR to a folder of this user.",
        .path.display()
    )]
    NotAFolder { path: PathBuf },
    #[error(
        "The log folder {} (FORGE_BASH_LOG_DIR) belongs to uid {owner}, not to this server's user (uid {me}); refusing to write commands and their output there. Set FORGE_BASH_LOG_DIR to a folder of this user.",
        .path.display()
    )]
    NotOurs { path: PathBuf, owner: u32, me: u32 },
    #[error("The log folder {} (FORGE_BASH_LOG_DIR) cannot be prepared: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// This process's effective uid.
fn my_uid() -> Option<u32> {
    Some(nix::unistd::geteuid().as_raw())
}

/// Create `path` 0700 if missing; refuse a symlink, a non-folder or another user's folder;
/// narrow our own folder to 0700.
pub fn secure(path: &Path) -> Result<(), LogDirError> {
    let io_error = |source| LogDirError::Io {
        path: path.to_owned(),
        source,
    };
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(path)
                .map_err(io_error)?;
            fs::symlink_metadata(path).map_err(io_error)?
        }
        Err(error) => return Err(io_error(error)),
    };
    if meta.file_type().is_symlink() {
        return Err(LogDirError::Symlink {
            path: path.to_owned(),
        });
    }
    if !meta.is_dir() {
        return Err(LogDirError::NotAFolder {
            path: path.to_owned(),
        });
    }
    if let Some(me) = my_uid()
        && meta.uid() != me
    {
        return Err(LogDirError::NotOurs {
            path: path.to_owned(),
            owner: meta.uid(),
            me,
        });
    }
    if meta.mode() & 0o077 != 0 {
        fs::set_permissions(path, Permissions::from_mode(0o700)).map_err(io_error)?;
    }
    Ok(())
}

/// Options for a new file in the log folder: mode 0600, never through a symlink.
pub fn create_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options
        .mode(0o600)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits());
    options
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).expect("stat").mode() & 0o7777
    }

    #[test]
    fn a_missing_folder_is_created_private_and_an_open_one_narrowed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fresh = dir.path().join("a/b");
        secure(&fresh).expect("created");
        assert_eq!(mode(&fresh), 0o700);
        let open = dir.path().join("open");
        fs::create_dir(&open).expect("mkdir");
        fs::set_permissions(&open, Permissions::from_mode(0o777)).expect("chmod");
        secure(&open).expect("narrowed");
        assert_eq!(mode(&open), 0o700);
    }

    #[test]
    fn a_symlink_or_a_file_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("theirs");
        fs::create_dir(&target).expect("mkdir");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).expect("ln");
        assert!(matches!(secure(&link), Err(LogDirError::Symlink { .. })));
        let file = dir.path().join("file");
        fs::write(&file, "x").expect("write");
        assert!(matches!(secure(&file), Err(LogDirError::NotAFolder { .. })));
    }

    #[test]
    fn files_are_private_and_never_follow_a_symlink() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("new.txt");
        create_options()
            .write(true)
            .create_new(true)
            .open(&path)
            .expect("create");
        assert_eq!(mode(&path), 0o600);
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&path, &link).expect("ln");
        let followed = create_options().append(true).create(true).open(&link);
        assert!(followed.is_err(), "O_NOFOLLOW refuses the symlink");
    }
}
