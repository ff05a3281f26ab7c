//! Atomic file writes, shared by `write_file` and `edit_file`.
//!
//! The content goes to a temporary file in the target's folder, which is then
//! renamed over the target: a reader sees the old file or the new one, never
//! half of either. An existing file's permission bits are carried over to the
//! new one (read, write and execute: never set-user-id, set-group-id or sticky, which
//! would make a program written by a tool run as this server's user), set before the
//! content is written (the new content is never readable more widely than the old); a
//! new file gets `0666` minus the umask, like any created file.
//! Ownership is not carried over, and nothing is fsynced.

use std::fs::{self, Permissions};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::oserror::{FsError, errno_error, os_cause};

/// Replace (or create) `path` with `content`, atomically.
pub fn write_atomic(path: &Path, content: &[u8]) -> Result<(), FsError> {
    let existing_mode = match fs::metadata(path) {
        Ok(metadata) if metadata.is_dir() => {
            return Err(FsError::new(
                "open",
                path,
                errno_error(nix::errno::Errno::EISDIR),
            ));
        }
        Ok(metadata) => Some(metadata.permissions().mode() & 0o777),
        Err(_) => None,
    };
    let folder = path
        .parent()
        .ok_or_else(|| FsError::new("open", path, errno_error(nix::errno::Errno::EISDIR)))?;
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(Permissions::from_mode(0o666))
        .tempfile_in(folder)
        .map_err(|error| FsError::new("open", path, os_cause(error)))?;
    if let Some(mode) = existing_mode {
        temp.as_file()
            .set_permissions(Permissions::from_mode(mode))
            .map_err(FsError::on("chmod", path))?;
    }
    temp.write_all(content)
        .map_err(|error| FsError::new("write", path, os_cause(error)))?;
    temp.persist(path)
        .map_err(|error| FsError::new("rename", path, os_cause(error.error)))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn replaces_content_and_keeps_the_mode() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("script.sh");
        fs::write(&path, "old").expect("write");
        fs::set_permissions(&path, Permissions::from_mode(0o750)).expect("chmod");
        write_atomic(&path, b"new").expect("atomic write");
        assert_eq!(fs::read_to_string(&path).expect("read"), "new");
        let mode = fs::metadata(&path).expect("stat").permissions().mode() & 0o7777;
        assert_eq!(mode, 0o750);
        let names: Vec<_> = fs::read_dir(dir.path())
            .expect("readdir")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("script.sh")]);
    }

    #[test]
    fn set_id_bits_are_not_carried_over() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tool");
        fs::write(&path, "old").expect("write");
        fs::set_permissions(&path, Permissions::from_mode(0o4755)).expect("chmod");
        let before = fs::metadata(&path).expect("stat").permissions().mode() & 0o7777;
        assert_eq!(
            before, 0o4755,
            "the set-user-id bit is set before the write"
        );
        write_atomic(&path, b"new").expect("atomic write");
        let mode = fs::metadata(&path).expect("stat").permissions().mode() & 0o7777;
        assert_eq!(mode, 0o755);
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let error = write_atomic(dir.path(), b"x").expect_err("directory");
        assert!(
            error
                .to_string()
                .starts_with("EISDIR: is a directory, open")
        );
    }
}
