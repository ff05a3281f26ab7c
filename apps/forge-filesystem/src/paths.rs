//! Confinement: every path a tool touches resolves inside one root folder.
//!
//! A requested path is made absolute (relative paths resolve against the
//! root), normalised lexically (`.` and `..` folded, like Node's
//! `path.resolve`) and checked to lie inside the root; then its real path
//! (every symlink followed) is checked again, so a symlink anywhere along the
//! way cannot lead out. A path that does not exist yet is checked through its
//! nearest existing ancestor. The messages are the reference server's:
//! `Access denied - path outside allowed directories: …` and
//! `Access denied - symlink target outside allowed directories: …`.
//!
//! What is checked here is checked at call time; a tree that changes between
//! the check and the use (a symlink swapped in by another process) is not
//! defended against, as in the reference.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::config::RootSetting;
use crate::oserror::FsError;

/// A configured root that cannot be used: the call that needs it fails with
/// `not_configured`, naming the variable.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    #[error("{var} is not configured: {} ({}) does not exist. Set {var} to an existing directory.", .path.display(), origin(*.is_default))]
    Missing {
        var: &'static str,
        path: PathBuf,
        is_default: bool,
    },
    #[error("{var} is not configured: {} ({}) is not a directory. Set {var} to an existing directory.", .path.display(), origin(*.is_default))]
    NotADirectory {
        var: &'static str,
        path: PathBuf,
        is_default: bool,
    },
    #[error("{var} is not configured: {} is not an absolute path. Set {var} to an absolute path.", .path.display())]
    NotAbsolute { var: &'static str, path: PathBuf },
    #[error("{var} is not configured: {} cannot be resolved: {source}", .path.display())]
    Unresolvable {
        var: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

fn origin(is_default: bool) -> &'static str {
    if is_default { "the default" } else { "as set" }
}

/// A requested path that is refused or cannot be resolved.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error("Access denied - path contains a NUL byte: {}", .requested.escape_debug())]
    NulByte { requested: String },
    #[error(
        "Access denied - `~` is not expanded; give a path relative to {root} or absolute inside it: {requested}"
    )]
    HomeRelative { requested: String, root: String },
    #[error("Access denied - Windows-style path received on a POSIX host: {requested}")]
    WindowsPath { requested: String },
    #[error("Access denied - path outside allowed directories: {} not in {root}", .absolute.display())]
    Outside { absolute: PathBuf, root: String },
    #[error("Access denied - symlink target outside allowed directories: {} not in {root}", .real.display())]
    SymlinkOutside { real: PathBuf, root: String },
    #[error("Access denied - symlink target does not exist, so it cannot be checked: {}", .link.display())]
    DanglingSymlink { link: PathBuf },
    #[error(
        "Access denied - {} has {links} hard links: the same file lives under other names too, possibly outside allowed directories, so it is neither read nor written here",
        .real.display()
    )]
    HardLinked { real: PathBuf, links: u64 },
    #[error(transparent)]
    Fs(#[from] FsError),
}

/// A root folder, resolved once per call.
#[derive(Debug, Clone)]
pub struct AllowedRoot {
    /// The configured path, normalised lexically.
    lexical: PathBuf,
    /// Its real path.
    real: PathBuf,
}

/// A path inside the root named without following its last component (the
/// trash moves a symlink itself, not what it points at).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The real parent joined with the last component.
    pub path: PathBuf,
    /// `path` relative to the real root; empty for the root itself.
    pub relative: PathBuf,
}

impl AllowedRoot {
    /// Resolve a configured root: it must be an absolute path to an existing
    /// directory.
    pub fn open(setting: &RootSetting) -> Result<Self, RootError> {
        let var = setting.var;
        if !setting.path.is_absolute() {
            return Err(RootError::NotAbsolute {
                var,
                path: setting.path.clone(),
            });
        }
        let lexical = normalize(&setting.path);
        let real = match fs::canonicalize(&lexical) {
            Ok(real) => real,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Err(RootError::Missing {
                    var,
                    path: setting.path.clone(),
                    is_default: setting.is_default,
                });
            }
            Err(source) => {
                return Err(RootError::Unresolvable {
                    var,
                    path: setting.path.clone(),
                    source,
                });
            }
        };
        if !real.is_dir() {
            return Err(RootError::NotADirectory {
                var,
                path: setting.path.clone(),
                is_default: setting.is_default,
            });
        }
        Ok(Self { lexical, real })
    }

    /// The root's real path.
    pub fn real(&self) -> &Path {
        &self.real
    }

    /// Resolve `requested` to the real path a tool should use, following
    /// every symlink. A path that does not exist resolves through its
    /// nearest existing ancestor, with the missing rest appended.
    ///
    /// A regular file with more than one hard link is refused: a link made to a file outside
    /// the roots (before the sandbox, or by another user) would otherwise pass every path
    /// check, since its path lies inside.
    pub fn resolve(&self, requested: &str) -> Result<PathBuf, PathError> {
        use std::os::unix::fs::MetadataExt;
        let absolute = self.absolutize(requested)?;
        let real = self.resolve_absolute(&absolute)?;
        if let Ok(meta) = fs::metadata(&real)
            && meta.is_file()
            && meta.nlink() > 1
        {
            return Err(PathError::HardLinked {
                real,
                links: meta.nlink(),
            });
        }
        Ok(real)
    }

    /// Resolve `requested` without following its last component: the real
    /// parent, checked, joined with the name as given.
    pub fn resolve_entry(&self, requested: &str) -> Result<Entry, PathError> {
        let absolute = self.absolutize(requested)?;
        let path = match (absolute.parent(), absolute.file_name()) {
            (Some(parent), Some(name)) if !self.strip_root(&absolute).as_os_str().is_empty() => {
                self.resolve_absolute(parent)?.join(name)
            }
            _ => self.real.clone(),
        };
        let relative = path
            .strip_prefix(&self.real)
            .map(Path::to_path_buf)
            .map_err(|_| PathError::SymlinkOutside {
                real: path.clone(),
                root: self.display(),
            })?;
        Ok(Entry { path, relative })
    }

    /// `requested` relative to the root as written: `.` and `..` folded, no symlink
    /// followed (the name a protection rule is written against).
    pub fn lexical_relative(&self, requested: &str) -> Result<PathBuf, PathError> {
        let absolute = self.absolutize(requested)?;
        Ok(self.strip_root(&absolute).to_path_buf())
    }

    /// The lexical step: refuse NUL bytes, `~` and drive letters; make the
    /// path absolute against the root; fold `.` and `..`; check the result
    /// lies inside the root.
    pub fn absolutize(&self, requested: &str) -> Result<PathBuf, PathError> {
        if requested.contains('\0') {
            return Err(PathError::NulByte {
                requested: requested.to_owned(),
            });
        }
        if requested == "~" || requested.starts_with("~/") {
            return Err(PathError::HomeRelative {
                requested: requested.to_owned(),
                root: self.display(),
            });
        }
        if is_windows_drive_path(requested) {
            return Err(PathError::WindowsPath {
                requested: requested.to_owned(),
            });
        }
        let absolute = normalize(&self.lexical.join(requested));
        if absolute.starts_with(&self.lexical) || absolute.starts_with(&self.real) {
            Ok(absolute)
        } else {
            Err(PathError::Outside {
                absolute,
                root: self.display(),
            })
        }
    }

    fn resolve_absolute(&self, absolute: &Path) -> Result<PathBuf, PathError> {
        match fs::canonicalize(absolute) {
            Ok(real) => self.check_real(real),
            Err(error) if error.kind() == io::ErrorKind::NotFound => self.resolve_missing(absolute),
            Err(error) => Err(FsError::new("realpath", absolute, error).into()),
        }
    }

    /// Walk from the real root, one component at a time, until a component
    /// does not exist; every existing component's real path must stay inside.
    fn resolve_missing(&self, absolute: &Path) -> Result<PathBuf, PathError> {
        let relative = self.strip_root(absolute);
        let components: Vec<Component<'_>> = relative.components().collect();
        let mut current = self.real.clone();
        for (index, component) in components.iter().enumerate() {
            let candidate = current.join(component);
            match fs::symlink_metadata(&candidate) {
                Ok(_) => {
                    current = match fs::canonicalize(&candidate) {
                        Ok(real) => self.check_real(real)?,
                        Err(error) if error.kind() == io::ErrorKind::NotFound => {
                            return Err(PathError::DanglingSymlink { link: candidate });
                        }
                        Err(error) => return Err(FsError::new("realpath", candidate, error).into()),
                    };
                }
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    current.extend(&components[index..]);
                    return Ok(current);
                }
                Err(error) => return Err(FsError::new("lstat", candidate, error).into()),
            }
        }
        Ok(current)
    }

    fn check_real(&self, real: PathBuf) -> Result<PathBuf, PathError> {
        if real.starts_with(&self.real) {
            Ok(real)
        } else {
            Err(PathError::SymlinkOutside {
                real,
                root: self.display(),
            })
        }
    }

    /// `absolute` relative to whichever form of the root it starts with.
    fn strip_root<'a>(&self, absolute: &'a Path) -> &'a Path {
        absolute
            .strip_prefix(&self.lexical)
            .or_else(|_| absolute.strip_prefix(&self.real))
            .unwrap_or(absolute)
    }

    /// The root as the messages name it: the configured path, and the real
    /// path when it differs (as the reference lists its allowed folders).
    pub fn display(&self) -> String {
        if self.lexical == self.real {
            self.real.display().to_string()
        } else {
            format!("{}, {}", self.lexical.display(), self.real.display())
        }
    }
}

/// Fold `.` and `..` without touching the filesystem; `..` at `/` stays `/`.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::RootDir => out.push(Component::RootDir),
            Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

fn is_windows_drive_path(requested: &str) -> bool {
    let bytes = requested.as_bytes();
    bytes.len() >= 2
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && (bytes.len() == 2 || bytes[2] == b'/' || bytes[2] == b'\\')
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn normalize_folds_dots_lexically() {
        let cases = [
            ("/ws/a/./b", "/ws/a/b"),
            ("/ws/a/../b", "/ws/b"),
            ("/ws/../../..", "/"),
            ("/ws//a/", "/ws/a"),
            ("/ws/a/b/../../c", "/ws/c"),
        ];
        for (input, expected) in cases {
            assert_eq!(
                normalize(Path::new(input)),
                PathBuf::from(expected),
                "{input}"
            );
        }
    }

    #[test]
    fn drive_letters_are_recognised() {
        let cases = [
            ("C:\\Users", true),
            ("c:/x", true),
            ("D:", true),
            ("C:file", false),
            ("ab:c", false),
            ("notes.md", false),
        ];
        for (input, expected) in cases {
            assert_eq!(is_windows_drive_path(input), expected, "{input}");
        }
    }

    #[test]
    fn missing_root_names_the_variable() {
        let setting = RootSetting {
            var: "WORKSPACE_ROOT",
            path: PathBuf::from("/definitely/not/here"),
            is_default: true,
        };
        let error = AllowedRoot::open(&setting).expect_err("missing root");
        assert_eq!(
            error.to_string(),
            "WORKSPACE_ROOT is not configured: /definitely/not/here (the default) does not exist. Set WORKSPACE_ROOT to an existing directory."
        );
    }

    #[test]
    fn a_hard_link_to_a_file_outside_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root_dir = dir.path().join("root");
        fs::create_dir(&root_dir).expect("mkdir");
        fs::write(dir.path().join("secret"), "bck_secret").expect("write");
        fs::hard_link(dir.path().join("secret"), root_dir.join("innocent.txt")).expect("link");
        fs::write(root_dir.join("plain.txt"), "plain").expect("write");
        let root = AllowedRoot::open(&RootSetting {
            var: "WORKSPACE_ROOT",
            path: root_dir.clone(),
            is_default: false,
        })
        .expect("root");
        assert!(matches!(
            root.resolve("innocent.txt"),
            Err(PathError::HardLinked { links: 2, .. })
        ));
        assert!(root.resolve("plain.txt").is_ok());
        assert!(root.resolve("new.txt").is_ok());
    }

    #[test]
    fn resolve_keeps_new_paths_under_the_real_root() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir(dir.path().join("a")).expect("mkdir");
        let root = AllowedRoot::open(&RootSetting {
            var: "WORKSPACE_ROOT",
            path: dir.path().to_path_buf(),
            is_default: false,
        })
        .expect("root");
        let real = fs::canonicalize(dir.path()).expect("realpath");
        assert_eq!(
            root.resolve("a/new/file.txt").expect("resolves"),
            real.join("a/new/file.txt")
        );
        assert_eq!(
            root.resolve_entry("a").expect("entry"),
            Entry {
                path: real.join("a"),
                relative: PathBuf::from("a"),
            }
        );
        assert_eq!(
            root.resolve_entry(".").expect("root entry").relative,
            PathBuf::new()
        );
    }
}
