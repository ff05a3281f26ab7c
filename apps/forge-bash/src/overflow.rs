//! Overflow files: `{log_dir}/cmd-N.txt`, one per call whose output passed
//! the reply limits, holding its full output.
//!
//! N is unique across concurrent calls and restarts: the counter starts past
//! the highest `cmd-N.txt` already in the directory (scanned on first use),
//! and each file is created with `create_new`; a name that exists (another
//! server sharing the directory) moves on to the next N.

use std::fs::File;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How many taken names in a row before giving up (only reachable when
/// something else keeps creating `cmd-N.txt` files as fast as we do).
const MAX_ATTEMPTS: u32 = 10_000;

/// An overflow file could not be created.
#[derive(Debug, thiserror::Error)]
pub enum OverflowError {
    #[error("cannot create the log directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create {path}: {source}")]
    CreateFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no free cmd-N.txt name in {path} after {MAX_ATTEMPTS} attempts")]
    Exhausted { path: PathBuf },
}

/// A freshly created, empty overflow file.
#[derive(Debug)]
pub struct OverflowFile {
    pub path: PathBuf,
    pub file: File,
}

/// The overflow files of one server.
#[derive(Debug)]
pub struct OverflowFiles {
    dir: PathBuf,
    /// The next N to try; `None` until the directory was scanned.
    next: Mutex<Option<u64>>,
}

impl OverflowFiles {
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            next: Mutex::new(None),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Create the next `cmd-N.txt`.
    pub fn create(&self) -> Result<OverflowFile, OverflowError> {
        crate::log_dir::secure(&self.dir).map_err(|cause| OverflowError::CreateDir {
            path: self.dir.clone(),
            source: std::io::Error::other(cause),
        })?;
        let mut next = self
            .next
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut number = match *next {
            Some(number) => number,
            None => highest_number(&self.dir).map_or(1, |n| n + 1),
        };
        for _ in 0..MAX_ATTEMPTS {
            let path = self.dir.join(format!("cmd-{number}.txt"));
            match crate::log_dir::create_options()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(file) => {
                    *next = Some(number + 1);
                    return Ok(OverflowFile { path, file });
                }
                Err(error) if error.kind() == ErrorKind::AlreadyExists => number += 1,
                Err(source) => return Err(OverflowError::CreateFile { path, source }),
            }
        }
        *next = Some(number);
        Err(OverflowError::Exhausted {
            path: self.dir.clone(),
        })
    }
}

/// The highest N of the `cmd-N.txt` files in `dir`.
fn highest_number(dir: &Path) -> Option<u64> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name();
            let name = name.to_str()?;
            name.strip_prefix("cmd-")?
                .strip_suffix(".txt")?
                .parse::<u64>()
                .ok()
        })
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn numbers_continue_after_existing_files_and_skip_taken_names() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("cmd-7.txt"), "old").expect("write");
        std::fs::write(dir.path().join("cmd-x.txt"), "junk").expect("write");
        let files = OverflowFiles::new(dir.path().to_owned());
        assert_eq!(
            files.create().expect("create").path,
            dir.path().join("cmd-8.txt")
        );
        // Another server took 9 meanwhile.
        std::fs::write(dir.path().join("cmd-9.txt"), "theirs").expect("write");
        let third = files.create().expect("create");
        assert_eq!(third.path, dir.path().join("cmd-10.txt"));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("cmd-9.txt")).expect("read"),
            "theirs"
        );
    }

    #[test]
    fn a_restart_continues_the_numbering() {
        let dir = tempfile::tempdir().expect("tempdir");
        let logs = dir.path().join("logs");
        let first = OverflowFiles::new(logs.clone());
        assert_eq!(first.create().expect("create").path, logs.join("cmd-1.txt"));
        assert_eq!(first.create().expect("create").path, logs.join("cmd-2.txt"));
        let restarted = OverflowFiles::new(logs.clone());
        assert_eq!(
            restarted.create().expect("create").path,
            logs.join("cmd-3.txt")
        );
    }

    #[test]
    fn concurrent_creates_get_distinct_numbers() {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = OverflowFiles::new(dir.path().to_owned());
        let mut numbers: Vec<u64> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    scope.spawn(|| {
                        let created = files.create().expect("create");
                        let name = created.path.file_name().expect("name").to_string_lossy();
                        name.trim_start_matches("cmd-")
                            .trim_end_matches(".txt")
                            .parse::<u64>()
                            .expect("number")
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("thread"))
                .collect()
        });
        numbers.sort_unstable();
        assert_eq!(numbers, (1..=8).collect::<Vec<u64>>());
    }
}
