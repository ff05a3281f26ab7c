//! What the trash holds: its items, their sizes, and a fingerprint of the
//! whole tree (for `empty_trash`'s confirmation).
//!
//! An item is an entry of `.trash/` whose name carries a trash suffix (see
//! [`super::naming`]); a folder without one is structure mirroring the
//! original tree and is walked into. A file without a suffix (put there by
//! hand) is listed too, with no original path. Symlinks are never followed.
//! Sizes are bytes: a file's length, a folder's total of everything inside.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use jiff::civil::DateTime;
use sha2::{Digest, Sha256};

use super::naming::{Kind, parse_trashed_name};
use crate::oserror::FsError;

/// One item in the trash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrashItem {
    /// Path relative to `.trash/`.
    pub trashed: PathBuf,
    /// Path relative to the repository root it came from; `None` when the
    /// name carries no trash suffix.
    pub original: Option<PathBuf>,
    pub kind: Kind,
    /// Bytes; a folder's total.
    pub size: u64,
    /// From the name's suffix (UTC).
    pub trashed_at: Option<DateTime>,
}

/// The trash at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inventory {
    /// Sorted by original path (unrecognised items by their trashed path),
    /// then by trashed path.
    pub items: Vec<TrashItem>,
    /// Entries of any kind below `.trash/`, structure folders included.
    pub entries: u64,
    pub total_bytes: u64,
    /// SHA-256 over every entry's path, kind, size, modification time and
    /// inode: any change to the trash changes it.
    pub fingerprint: [u8; 32],
}

/// Take stock of `trash_root`; a missing trash is an empty one.
pub fn take_inventory(trash_root: &Path) -> Result<Inventory, FsError> {
    let mut items = Vec::new();
    let mut hasher = Sha256::new();
    let mut entries = 0u64;
    if !trash_root.exists() {
        return Ok(Inventory {
            items,
            entries,
            total_bytes: 0,
            fingerprint: hasher.finalize().into(),
        });
    }
    // (folder relative to the trash root, inside an item: the item's index)
    let mut stack: Vec<(PathBuf, Option<usize>)> = vec![(PathBuf::new(), None)];
    while let Some((relative, owner)) = stack.pop() {
        let folder = trash_root.join(&relative);
        for (name, metadata) in sorted_entries(&folder)? {
            let child = relative.join(&name);
            entries += 1;
            hash_entry(&mut hasher, &child, &metadata);
            let is_dir = metadata.is_dir();
            let bytes = if is_dir { 0 } else { metadata.len() };
            if let Some(index) = owner {
                items[index].size += bytes;
                if is_dir {
                    stack.push((child, Some(index)));
                }
                continue;
            }
            let kind = if is_dir { Kind::Dir } else { Kind::File };
            let parsed = name
                .to_str()
                .and_then(|name| parse_trashed_name(name, kind));
            match (parsed, is_dir) {
                (None, true) => stack.push((child, None)),
                (parsed, _) => {
                    let original = parsed
                        .as_ref()
                        .map(|parsed| relative.join(&parsed.original));
                    items.push(TrashItem {
                        trashed: child.clone(),
                        original,
                        kind,
                        size: bytes,
                        trashed_at: parsed.map(|parsed| parsed.trashed_at),
                    });
                    if is_dir {
                        stack.push((child, Some(items.len() - 1)));
                    }
                }
            }
        }
    }
    items.sort_by(|a, b| {
        let key_a = a.original.as_ref().unwrap_or(&a.trashed);
        let key_b = b.original.as_ref().unwrap_or(&b.trashed);
        key_a.cmp(key_b).then_with(|| a.trashed.cmp(&b.trashed))
    });
    let total_bytes = items.iter().map(|item| item.size).sum();
    Ok(Inventory {
        items,
        entries,
        total_bytes,
        fingerprint: hasher.finalize().into(),
    })
}

fn sorted_entries(folder: &Path) -> Result<Vec<(std::ffi::OsString, fs::Metadata)>, FsError> {
    let mut entries = Vec::new();
    for entry in fs::read_dir(folder).map_err(FsError::on("scandir", folder))? {
        let entry = entry.map_err(FsError::on("scandir", folder))?;
        let path = entry.path();
        let metadata = fs::symlink_metadata(&path).map_err(FsError::on("lstat", &path))?;
        entries.push((entry.file_name(), metadata));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

fn hash_entry(hasher: &mut Sha256, relative: &Path, metadata: &fs::Metadata) {
    use std::os::unix::ffi::OsStrExt;
    hasher.update(relative.as_os_str().as_bytes());
    hasher.update([0u8]);
    hasher.update(metadata.mode().to_le_bytes());
    hasher.update(metadata.len().to_le_bytes());
    hasher.update(metadata.mtime().to_le_bytes());
    hasher.update(metadata.mtime_nsec().to_le_bytes());
    hasher.update(metadata.ino().to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;
    use pretty_assertions::assert_eq;

    #[test]
    fn items_structure_and_sizes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let trash = dir.path();
        fs::create_dir_all(trash.join("Architecture")).expect("mkdir");
        fs::write(
            trash.join("Architecture/Old_Doc__2026-03-14T18-30-00.md"),
            "12345",
        )
        .expect("w");
        fs::create_dir_all(trash.join("drafts__2026-03-14T18-30-01/inner")).expect("mkdir");
        fs::write(trash.join("drafts__2026-03-14T18-30-01/a.txt"), "abc").expect("w");
        fs::write(trash.join("drafts__2026-03-14T18-30-01/inner/b.txt"), "de").expect("w");
        fs::write(trash.join("stray.txt"), "x").expect("w");

        let inventory = take_inventory(trash).expect("inventory");
        assert_eq!(
            inventory.items,
            vec![
                TrashItem {
                    trashed: PathBuf::from("Architecture/Old_Doc__2026-03-14T18-30-00.md"),
                    original: Some(PathBuf::from("Architecture/Old_Doc.md")),
                    kind: Kind::File,
                    size: 5,
                    trashed_at: Some(date(2026, 3, 14).at(18, 30, 0, 0)),
                },
                TrashItem {
                    trashed: PathBuf::from("drafts__2026-03-14T18-30-01"),
                    original: Some(PathBuf::from("drafts")),
                    kind: Kind::Dir,
                    size: 5,
                    trashed_at: Some(date(2026, 3, 14).at(18, 30, 1, 0)),
                },
                TrashItem {
                    trashed: PathBuf::from("stray.txt"),
                    original: None,
                    kind: Kind::File,
                    size: 1,
                    trashed_at: None,
                },
            ]
        );
        assert_eq!(inventory.total_bytes, 11);
        assert_eq!(inventory.entries, 7);

        let before = inventory.fingerprint;
        fs::write(trash.join("drafts__2026-03-14T18-30-01/inner/c.txt"), "").expect("w");
        assert_ne!(
            take_inventory(trash).expect("inventory").fingerprint,
            before
        );
    }

    #[test]
    fn a_missing_trash_is_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        let inventory = take_inventory(&dir.path().join(".trash")).expect("inventory");
        assert_eq!((inventory.items.len(), inventory.entries), (0, 0));
    }
}
