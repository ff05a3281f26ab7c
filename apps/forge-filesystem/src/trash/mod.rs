//! The trash (seed 000 §5.4, the former `uvilo-trash` server): files and
//! folders of the repository are moved to `{REPO_ROOT}/.trash/`, keeping
//! their folder structure and gaining a timestamp suffix, and can be moved
//! back.
//!
//! Rules kept here:
//! - paths are relative to the repository root or absolute inside it, and
//!   confined to it like the file tools' paths ([`crate::paths`]); the last
//!   component is not followed, so trashing a symlink moves the link;
//! - protected paths are refused: `.git`, `.trash`, `.internal/node_modules`,
//!   `.internal/dist`, `.internal/.astro` and anything under them, a `.git`
//!   anywhere (nested repositories), the repository root, and any folder
//!   holding a protected path (`.internal`);
//! - every move is one no-replace rename ([`moving`]): nothing is ever
//!   overwritten, and two trashings of one path in one second both survive
//!   (the second name gets `-2`);
//! - restoring never overwrites an existing path, creates missing parent
//!   folders, and removes folders of `.trash/` left empty behind it.

pub mod confirm;
pub mod inventory;
pub mod moving;
pub mod naming;
pub mod report;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use jiff::civil::DateTime;

use crate::oserror::FsError;
use crate::paths::{AllowedRoot, PathError};
use crate::protect::WriteProtection;
use inventory::{Inventory, take_inventory};
use moving::{MoveError, rename_no_replace};
use naming::{Kind, parse_trashed_name, trashed_name};

/// The trash folder's name under the repository root.
pub const TRASH_DIR: &str = ".trash";

/// Paths the trash never touches, relative to the repository root.
pub const PROTECTED: [&str; 5] = [
    ".git",
    ".trash",
    ".internal/node_modules",
    ".internal/dist",
    ".internal/.astro",
];

/// The most names tried for one path in one second.
const MAX_COUNTER: u32 = 10_000;

#[derive(Debug, thiserror::Error)]
pub enum TrashError {
    #[error(transparent)]
    Path(#[from] PathError),
    #[error("Refusing to trash the repository root itself")]
    RepoRoot,
    #[error("Refusing to trash {}: {rule} is protected and never trashed", .relative.display())]
    Protected { relative: PathBuf, rule: String },
    #[error("Refusing to trash {}: it contains the protected path {rule}", .relative.display())]
    HoldsProtected { relative: PathBuf, rule: String },
    #[error(
        "Refusing to trash {}: it holds too much to be checked for a .git inside ({bound}); trash its parts instead",
        .relative.display()
    )]
    Unchecked {
        relative: PathBuf,
        bound: crate::walk::Bound,
    },
    #[error(
        "Refusing to trash {}: {} inside it cannot be read, so it cannot be checked for a .git",
        .relative.display(),
        .inside.display()
    )]
    UnreadableInside { relative: PathBuf, inside: PathBuf },
    #[error("trash_directory was cancelled")]
    Cancelled,
    #[error("No such file or directory: {}", .relative.display())]
    NotFound { relative: PathBuf },
    #[error("{} is a {}; use {tool} for it", .relative.display(), kind_word(*.actual))]
    WrongKind {
        relative: PathBuf,
        actual: Kind,
        tool: &'static str,
    },
    #[error("Cannot trash {}: its name is not valid UTF-8", .relative.display())]
    NameNotUtf8 { relative: PathBuf },
    #[error(
        "{requested} is not inside the trash; give the trashed path list_trash shows, like .trash/Architecture/Old_Doc__2026-03-14T18-30-00.md"
    )]
    NotInTrash { requested: String },
    #[error("Nothing in the trash at {TRASH_DIR}/{}", .relative.display())]
    NoSuchItem { relative: PathBuf },
    #[error("{TRASH_DIR}/{} has no trash suffix (__YYYY-MM-DDTHH-MM-SS), so its original path is unknown", .relative.display())]
    NotATrashedName { relative: PathBuf },
    #[error("Cannot restore {TRASH_DIR}/{}: {} already exists. Nothing was moved; move the existing one away first.", .trashed.display(), .original.display())]
    DestinationExists { trashed: PathBuf, original: PathBuf },
    #[error("Cannot move {} to {}: they are on different filesystems (EXDEV), and the trash only renames. Nothing was moved.", .from.display(), .to.display())]
    CrossDevice { from: PathBuf, to: PathBuf },
    #[error("Refusing to use {}: it is not a plain folder (a symlink or a file is in the way)", .path.display())]
    Blocked { path: PathBuf },
    #[error("Cannot find a free trash name for {} in this second", .relative.display())]
    NoFreeName { relative: PathBuf },
    #[error(transparent)]
    Fs(#[from] FsError),
}

fn kind_word(kind: Kind) -> &'static str {
    match kind {
        Kind::File => "file",
        Kind::Dir => "directory",
    }
}

/// What a trashing did, as paths relative to the repository root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    pub from: PathBuf,
    pub to: PathBuf,
}

/// The trash of one repository.
#[derive(Debug, Clone)]
pub struct Trash {
    repo: AllowedRoot,
    trash_root: PathBuf,
    /// The operator's protected paths (`FORGE_FS_PROTECTED`) and the root they are relative
    /// to (the workspace's): never moved into the trash (where `empty_trash` would delete
    /// them), nor restored over.
    protection: Option<(AllowedRoot, WriteProtection)>,
}

impl Trash {
    pub fn new(repo: AllowedRoot) -> Self {
        let trash_root = repo.real().join(TRASH_DIR);
        Self {
            repo,
            trash_root,
            protection: None,
        }
    }

    /// Also refuse the operator's protected paths, relative to `root`.
    pub fn protecting(mut self, root: AllowedRoot, protection: WriteProtection) -> Self {
        self.protection = Some((root, protection));
        self
    }

    /// Refuse `requested` (a path of the repository as written) and `path` (the same with
    /// its real parents, its own name as given) when the operator protects either or, for a
    /// folder, something inside it (a rule's real path counts: a protected symlink's target).
    fn check_operator_rules(
        &self,
        requested: &str,
        path: &Path,
        relative: &Path,
    ) -> Result<(), TrashError> {
        let Some((root, protection)) = &self.protection else {
            return Ok(());
        };
        let refused = |rule: String| TrashError::Protected {
            relative: relative.to_path_buf(),
            rule,
        };
        // As written: a path of the repository outside the workspace has no rules.
        let written = self
            .repo
            .absolutize(requested)
            .ok()
            .and_then(|absolute| root.lexical_relative(&absolute.to_string_lossy()).ok());
        if let Some(written) = written
            && let Err(protected) = protection.check_relative(&written)
        {
            return Err(refused(protected.rule));
        }
        if let Err(protected) = protection.check(root.real(), path) {
            return Err(refused(protected.rule));
        }
        if let Some(rule) = protection.held_by(root.real(), path) {
            return Err(TrashError::HoldsProtected {
                relative: relative.to_path_buf(),
                rule: rule.display().to_string(),
            });
        }
        Ok(())
    }

    /// Move `requested` (a `kind`) into the trash, stamped with `now` (UTC). A folder is
    /// looked through first, within `walk`'s bounds: one holding a `.git` (a nested
    /// repository, a submodule, a worktree) is refused as `.git` itself is.
    pub fn trash(
        &self,
        requested: &str,
        kind: Kind,
        now: DateTime,
        walk: &mut crate::walk::Walk<'_>,
    ) -> Result<Moved, TrashError> {
        let entry = self.repo.resolve_entry(requested)?;
        check_protection(&entry.relative)?;
        self.check_operator_rules(requested, &entry.path, &entry.relative)?;
        let relative = entry.relative;
        let metadata = lstat(&entry.path, &relative)?;
        check_kind(&relative, &metadata, kind, "trash_file", "trash_directory")?;
        if metadata.is_dir() {
            match nested_git(&entry.path, walk) {
                Ok(Holds::Nothing) => {}
                Ok(Holds::Git(git)) => {
                    return Err(TrashError::HoldsProtected {
                        rule: relative.join(git).display().to_string(),
                        relative,
                    });
                }
                Ok(Holds::Unreadable(inside)) => {
                    return Err(TrashError::UnreadableInside {
                        inside: relative.join(inside),
                        relative,
                    });
                }
                Err(crate::walk::Stop::Bound(bound)) => {
                    return Err(TrashError::Unchecked { relative, bound });
                }
                Err(crate::walk::Stop::Cancelled) => return Err(TrashError::Cancelled),
            }
        }
        let name = relative
            .file_name()
            .and_then(|name| name.to_str())
            .ok_or_else(|| TrashError::NameNotUtf8 {
                relative: relative.clone(),
            })?;
        let parent = relative.parent().unwrap_or(Path::new(""));
        let folder = self.plain_folders(&Path::new(TRASH_DIR).join(parent))?;
        for counter in 1..=MAX_COUNTER {
            let target_name = trashed_name(name, kind, now, counter);
            let target = folder.join(&target_name);
            match rename_no_replace(&entry.path, &target) {
                Ok(()) => {
                    return Ok(Moved {
                        to: Path::new(TRASH_DIR).join(parent).join(target_name),
                        from: relative,
                    });
                }
                Err(MoveError::DestinationExists) => continue,
                Err(error) => return Err(move_failure(error, &entry.path, &target)),
            }
        }
        Err(TrashError::NoFreeName { relative })
    }

    /// Move a trashed `kind` back to where it came from. `requested` is the
    /// trashed path relative to the repository (`.trash/…`), relative to
    /// the trash folder, or absolute.
    pub fn untrash(&self, requested: &str, kind: Kind) -> Result<Moved, TrashError> {
        let not_in_trash = || TrashError::NotInTrash {
            requested: requested.to_owned(),
        };
        let given = Path::new(requested);
        let in_repo = given.is_absolute()
            || given
                .components()
                .next()
                .is_some_and(|first| first.as_os_str() == TRASH_DIR);
        let located = if in_repo {
            requested.to_owned()
        } else {
            Path::new(TRASH_DIR)
                .join(given)
                .to_string_lossy()
                .into_owned()
        };
        let entry = self
            .repo
            .resolve_entry(&located)
            .map_err(|error| match error {
                PathError::Outside { .. } if !in_repo => not_in_trash(),
                other => TrashError::Path(other),
            })?;
        let inside = entry
            .relative
            .strip_prefix(TRASH_DIR)
            .map_err(|_| not_in_trash())?
            .to_path_buf();
        if inside.as_os_str().is_empty() {
            return Err(not_in_trash());
        }
        let metadata = match fs::symlink_metadata(&entry.path) {
            Ok(metadata) => metadata,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Err(TrashError::NoSuchItem { relative: inside });
            }
            Err(error) => return Err(FsError::new("lstat", &entry.path, error).into()),
        };
        check_kind(
            &entry.relative,
            &metadata,
            kind,
            "untrash_file",
            "untrash_directory",
        )?;
        let parsed = inside
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(|name| parse_trashed_name(name, kind))
            .ok_or_else(|| TrashError::NotATrashedName {
                relative: inside.clone(),
            })?;
        let original = inside
            .parent()
            .unwrap_or(Path::new(""))
            .join(&parsed.original);
        check_protection(&original)?;
        let destination = self.repo.resolve_entry(&original.to_string_lossy())?;
        // Again with the destination's real parents: a folder of the path may have become a
        // symlink (into `.git`, say) since the entry was trashed.
        check_protection(&destination.relative)?;
        self.check_operator_rules(
            &original.to_string_lossy(),
            &destination.path,
            &destination.relative,
        )?;
        let exists = || TrashError::DestinationExists {
            trashed: inside.clone(),
            original: destination.relative.clone(),
        };
        if fs::symlink_metadata(&destination.path).is_ok() {
            return Err(exists());
        }
        if let Some(parent) = destination.path.parent() {
            fs::create_dir_all(parent).map_err(FsError::on("mkdir", parent))?;
        }
        match rename_no_replace(&entry.path, &destination.path) {
            Ok(()) => {}
            Err(MoveError::DestinationExists) => return Err(exists()),
            Err(error) => return Err(move_failure(error, &entry.path, &destination.path)),
        }
        self.remove_empty_folders_above(&entry.path);
        Ok(Moved {
            from: entry.relative,
            to: destination.relative,
        })
    }

    /// What the trash holds now.
    pub fn inventory(&self) -> Result<Inventory, TrashError> {
        self.check_trash_root()?;
        Ok(take_inventory(&self.trash_root)?)
    }

    /// Delete everything inside `.trash/` (the folder itself stays).
    pub fn delete_everything(&self) -> Result<(), TrashError> {
        if !self.check_trash_root()? {
            return Ok(());
        }
        let entries =
            fs::read_dir(&self.trash_root).map_err(FsError::on("scandir", &self.trash_root))?;
        for entry in entries {
            let entry = entry.map_err(FsError::on("scandir", &self.trash_root))?;
            let path = entry.path();
            let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
            let removed = if is_dir {
                fs::remove_dir_all(&path)
            } else {
                fs::remove_file(&path)
            };
            removed.map_err(FsError::on("rm", &path))?;
        }
        Ok(())
    }

    /// `true` when `.trash/` exists as a plain folder, `false` when it does
    /// not exist; an error when something else is in its place.
    fn check_trash_root(&self) -> Result<bool, TrashError> {
        match fs::symlink_metadata(&self.trash_root) {
            Ok(metadata) if metadata.is_dir() => Ok(true),
            Ok(_) => Err(TrashError::Blocked {
                path: self.trash_root.clone(),
            }),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(FsError::new("lstat", &self.trash_root, error).into()),
        }
    }

    /// Make `relative` (under the repository root) a chain of plain folders,
    /// creating what is missing and refusing symlinks or files in the way.
    fn plain_folders(&self, relative: &Path) -> Result<PathBuf, TrashError> {
        let mut current = self.repo.real().to_path_buf();
        for component in relative.components() {
            current.push(component);
            match fs::symlink_metadata(&current) {
                Ok(metadata) if metadata.is_dir() => {}
                Ok(_) => return Err(TrashError::Blocked { path: current }),
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    match fs::create_dir(&current) {
                        Ok(()) => {}
                        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                            if !fs::symlink_metadata(&current).is_ok_and(|m| m.is_dir()) {
                                return Err(TrashError::Blocked { path: current });
                            }
                        }
                        Err(error) => return Err(FsError::new("mkdir", &current, error).into()),
                    }
                }
                Err(error) => return Err(FsError::new("lstat", &current, error).into()),
            }
        }
        Ok(current)
    }

    /// Remove the folders between `moved_out` and `.trash/` that it left
    /// empty; stop at the first that is not empty.
    fn remove_empty_folders_above(&self, moved_out: &Path) {
        let mut folder = moved_out.parent();
        while let Some(current) = folder {
            if current == self.trash_root || !current.starts_with(&self.trash_root) {
                break;
            }
            if fs::remove_dir(current).is_err() {
                break;
            }
            folder = current.parent();
        }
    }
}

fn lstat(path: &Path, relative: &Path) -> Result<fs::Metadata, TrashError> {
    match fs::symlink_metadata(path) {
        Ok(metadata) => Ok(metadata),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Err(TrashError::NotFound {
            relative: relative.to_path_buf(),
        }),
        Err(error) => Err(FsError::new("lstat", path, error).into()),
    }
}

fn check_kind(
    relative: &Path,
    metadata: &fs::Metadata,
    wanted: Kind,
    file_tool: &'static str,
    dir_tool: &'static str,
) -> Result<(), TrashError> {
    let actual = if metadata.is_dir() {
        Kind::Dir
    } else {
        Kind::File
    };
    if actual == wanted {
        return Ok(());
    }
    Err(TrashError::WrongKind {
        relative: relative.to_path_buf(),
        actual,
        tool: match actual {
            Kind::File => file_tool,
            Kind::Dir => dir_tool,
        },
    })
}

/// The first `.git` (a folder, or a file: a worktree's or a submodule's) under `folder`,
/// relative to it; symlinks are not followed, and a folder that cannot be read is skipped.
fn nested_git(folder: &Path, walk: &mut crate::walk::Walk<'_>) -> Result<Holds, crate::walk::Stop> {
    let mut folders = vec![PathBuf::new()];
    while let Some(inside) = folders.pop() {
        let entries = match std::fs::read_dir(folder.join(&inside)) {
            Ok(entries) => entries,
            // Gone since it was listed: nothing in it to trash.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(_) => return Ok(Holds::Unreadable(inside)),
        };
        for entry in entries {
            walk.entry()?;
            let Ok(entry) = entry else {
                return Ok(Holds::Unreadable(inside));
            };
            let name = entry.file_name();
            if name == ".git" {
                return Ok(Holds::Git(inside.join(name)));
            }
            // Installed dependencies and compilers' caches, made again by a build, hold no
            // repository worth keeping and are the folders large enough to reach the walk's
            // bounds; other build output (`build/llvm` may be a clone) is looked through.
            let skipped = name
                .to_str()
                .is_some_and(|name| REMADE_FOLDERS.contains(&name));
            if !skipped && entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                folders.push(inside.join(name));
            }
        }
    }
    Ok(Holds::Nothing)
}

/// Folders [`nested_git`] does not look into.
const REMADE_FOLDERS: [&str; 3] = ["node_modules", "target", "__pycache__"];

/// What [`nested_git`] found under a folder.
#[derive(Debug, PartialEq, Eq)]
enum Holds {
    Nothing,
    /// A `.git`, relative to the folder.
    Git(PathBuf),
    /// A folder that could not be read (so what it holds is not known).
    Unreadable(PathBuf),
}

/// Refuse the root, protected paths, and folders holding a protected path.
pub fn check_protection(relative: &Path) -> Result<(), TrashError> {
    if relative.as_os_str().is_empty() {
        return Err(TrashError::RepoRoot);
    }
    let refused = |rule: &str| TrashError::Protected {
        relative: relative.to_path_buf(),
        rule: rule.to_owned(),
    };
    if let Some(rule) = PROTECTED.iter().find(|rule| relative.starts_with(rule)) {
        return Err(refused(rule));
    }
    if relative.components().any(|part| part.as_os_str() == ".git") {
        return Err(refused(".git"));
    }
    if let Some(rule) = PROTECTED
        .iter()
        .find(|rule| Path::new(rule).starts_with(relative))
    {
        return Err(TrashError::HoldsProtected {
            relative: relative.to_path_buf(),
            rule: (*rule).to_owned(),
        });
    }
    Ok(())
}

fn move_failure(error: MoveError, from: &Path, to: &Path) -> TrashError {
    match error {
        MoveError::CrossDevice => TrashError::CrossDevice {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
        },
        MoveError::DestinationExists => {
            FsError::new("rename", to, io::Error::from(io::ErrorKind::AlreadyExists)).into()
        }
        MoveError::Io(source) => FsError::new("rename", from, source).into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_nested_git_is_found_within_the_walks_bounds() {
        use crate::walk::{Bound, Stop, Walk, WalkLimits};
        let dir = tempfile::tempdir().expect("tempdir");
        for folder in ["a/b/c", "a/d", "e/.git"] {
            std::fs::create_dir_all(dir.path().join(folder)).expect("mkdir");
        }
        let cancel = server_kit::CancellationToken::new();
        let limits = |max_walk_entries| WalkLimits {
            max_walk_entries,
            ..WalkLimits::default()
        };
        let found = nested_git(dir.path(), &mut Walk::new(limits(100), &cancel));
        assert_eq!(found, Ok(Holds::Git(PathBuf::from("e/.git"))));
        let none = nested_git(&dir.path().join("a"), &mut Walk::new(limits(100), &cancel));
        assert_eq!(none, Ok(Holds::Nothing));
        // Installed dependencies are not looked through; other build output is.
        std::fs::create_dir_all(dir.path().join("a/node_modules/dep/.git")).expect("mkdir");
        let deps = nested_git(&dir.path().join("a"), &mut Walk::new(limits(100), &cancel));
        assert_eq!(deps, Ok(Holds::Nothing));
        // A symlink to a folder holding a .git is not followed.
        std::os::unix::fs::symlink(dir.path().join("e"), dir.path().join("a/link")).expect("ln");
        let linked = nested_git(&dir.path().join("a"), &mut Walk::new(limits(100), &cancel));
        assert_eq!(linked, Ok(Holds::Nothing));
        std::fs::create_dir_all(dir.path().join("a/build/llvm/.git")).expect("mkdir");
        let clone = nested_git(&dir.path().join("a"), &mut Walk::new(limits(100), &cancel));
        assert_eq!(clone, Ok(Holds::Git(PathBuf::from("build/llvm/.git"))));
        let bounded = nested_git(dir.path(), &mut Walk::new(limits(2), &cancel));
        assert_eq!(bounded, Err(Stop::Bound(Bound::WalkEntries(2))));
    }

    #[test]
    fn protection_rules() {
        let cases = [
            ("", Some("Refusing to trash the repository root itself")),
            (
                ".git",
                Some("Refusing to trash .git: .git is protected and never trashed"),
            ),
            (
                ".git/config",
                Some("Refusing to trash .git/config: .git is protected and never trashed"),
            ),
            (
                ".trash/x",
                Some("Refusing to trash .trash/x: .trash is protected and never trashed"),
            ),
            (
                ".internal/node_modules/pkg",
                Some(
                    "Refusing to trash .internal/node_modules/pkg: .internal/node_modules is protected and never trashed",
                ),
            ),
            (
                ".internal/.astro",
                Some(
                    "Refusing to trash .internal/.astro: .internal/.astro is protected and never trashed",
                ),
            ),
            (
                "vendor/lib/.git",
                Some("Refusing to trash vendor/lib/.git: .git is protected and never trashed"),
            ),
            (
                ".internal",
                Some(
                    "Refusing to trash .internal: it contains the protected path .internal/node_modules",
                ),
            ),
            (".gitignore", None),
            (".internal/src/page.astro", None),
            ("docs/.trashy", None),
        ];
        for (relative, expected) in cases {
            let got = check_protection(Path::new(relative))
                .err()
                .map(|error| error.to_string());
            assert_eq!(got.as_deref(), expected, "{relative:?}");
        }
    }
}
