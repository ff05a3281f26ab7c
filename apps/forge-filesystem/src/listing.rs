//! `list_directory`: one `[DIR] name` or `[FILE] name` line per entry.
//!
//! Entries come in byte order of their names (what Node's `readdir` gives on
//! Linux), joined by `\n` with no trailing newline; an empty folder gives an
//! empty text. Only real directories are `[DIR]`: a symlink, even to a
//! folder, is `[FILE]`, as in the reference.
//!
//! Bounded ([`crate::walk`]): the listing shows the first `FORGE_FS_MAX_ENTRIES` names in that
//! order, kept in a bounded heap while the folder is read, so a folder of millions of entries
//! costs that many names of memory, not millions; the folder is read at most
//! `FORGE_FS_MAX_WALK_ENTRIES` entries far and for `FORGE_FS_MAX_SECONDS`. A cut listing ends
//! with a notice saying how many entries the folder has (or "more than" when it was not read
//! to its end) and which bound cut it.

use std::collections::BinaryHeap;
use std::ffi::OsString;
use std::fs;
use std::path::Path;

use crate::oserror::FsError;
use crate::walk::{Bound, Lines, Stop, Walk};

/// Why a listing gave nothing.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    #[error(transparent)]
    Fs(#[from] FsError),
    #[error("list_directory was cancelled")]
    Cancelled,
}

/// The listing of `folder`, within `walk`'s bounds.
pub fn list_directory(folder: &Path, walk: &mut Walk<'_>) -> Result<String, ListError> {
    let keep = usize::try_from(walk.limits().max_entries).unwrap_or(usize::MAX);
    // A max-heap of the smallest `keep` names seen: the largest is dropped first.
    let mut smallest: BinaryHeap<(OsString, bool)> = BinaryHeap::new();
    let mut total = 0u64;
    let mut unread = None;
    for entry in fs::read_dir(folder).map_err(FsError::on("scandir", folder))? {
        match walk.entry() {
            Ok(()) => {}
            Err(Stop::Cancelled) => return Err(ListError::Cancelled),
            Err(Stop::Bound(bound)) => {
                unread = Some(bound);
                break;
            }
        }
        let entry = entry.map_err(FsError::on("scandir", folder))?;
        let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
        total += 1;
        smallest.push((entry.file_name(), is_dir));
        if smallest.len() > keep {
            smallest.pop();
        }
    }
    let mut lines = Lines::default();
    let mut cut = unread;
    for (name, is_dir) in smallest.into_sorted_vec() {
        let tag = if is_dir { "[DIR]" } else { "[FILE]" };
        if let Err(bound) = lines.push(&format!("{tag} {}", name.to_string_lossy()), walk.limits())
        {
            cut = cut.or(Some(bound));
            break;
        }
    }
    if cut.is_none() && total > lines.count {
        cut = Some(Bound::Entries(walk.limits().max_entries));
    }
    let Some(bound) = cut else {
        return Ok(lines.text);
    };
    let size = if unread.is_some() {
        format!("more than {total}")
    } else {
        total.to_string()
    };
    Ok(format!(
        "{}\n\n[forge-filesystem cut this listing: the folder has {size} entries and {bound}; these are the first {} by name. Find others with search_files and a pattern]",
        lines.text, lines.count
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walk::WalkLimits;
    use pretty_assertions::assert_eq;
    use server_kit::CancellationToken;
    use std::time::Duration;

    fn list(folder: &Path, limits: WalkLimits) -> Result<String, ListError> {
        let cancel = CancellationToken::new();
        list_directory(folder, &mut Walk::new(limits, &cancel))
    }

    #[test]
    fn byte_order_dirs_and_symlinks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs::create_dir(root.join("sub")).expect("mkdir");
        for name in ["zeta.md", "Alpha.md", ".hidden", "ab.txt"] {
            fs::write(root.join(name), "").expect("write");
        }
        std::os::unix::fs::symlink(root.join("sub"), root.join("link")).expect("symlink");
        assert_eq!(
            list(root, WalkLimits::default()).expect("list"),
            "[FILE] .hidden\n[FILE] Alpha.md\n[FILE] ab.txt\n[FILE] link\n[DIR] sub\n[FILE] zeta.md"
        );
    }

    #[test]
    fn a_large_folder_is_cut_at_each_bound_and_says_so() {
        let dir = tempfile::tempdir().expect("tempdir");
        for index in 0..50 {
            fs::write(dir.path().join(format!("f{index:02}")), "").expect("write");
        }
        let unbounded = WalkLimits::default();
        let first = |count: usize| -> String {
            (0..count)
                .map(|index| format!("[FILE] f{index:02}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let cases = [
            (
                WalkLimits {
                    max_entries: 3,
                    ..unbounded
                },
                format!(
                    "{}\n\n[forge-filesystem cut this listing: the folder has 50 entries and one answer shows at most 3 (FORGE_FS_MAX_ENTRIES); these are the first 3 by name. Find others with search_files and a pattern]",
                    first(3)
                ),
            ),
            (
                WalkLimits {
                    max_bytes: 22,
                    ..unbounded
                },
                format!(
                    "{}\n\n[forge-filesystem cut this listing: the folder has 50 entries and one answer holds at most 22 bytes (FORGE_FS_MAX_READ_BYTES); these are the first 2 by name. Find others with search_files and a pattern]",
                    first(2)
                ),
            ),
        ];
        for (limits, expected) in cases {
            assert_eq!(list(dir.path(), limits).expect("list"), expected);
        }
        // Read only 10 entries of 50 (in directory order): the first 10 of those, by name.
        let short = list(
            dir.path(),
            WalkLimits {
                max_walk_entries: 10,
                ..unbounded
            },
        )
        .expect("list");
        assert_eq!(
            short.lines().filter(|l| l.starts_with("[FILE]")).count(),
            10
        );
        assert!(
            short.ends_with("[forge-filesystem cut this listing: the folder has more than 10 entries and one call reads at most 10 folder entries (FORGE_FS_MAX_WALK_ENTRIES); these are the first 10 by name. Find others with search_files and a pattern]"),
            "{short}"
        );
    }

    #[test]
    fn a_listing_past_its_time_answers_what_it_read_and_a_cancelled_one_stops() {
        let dir = tempfile::tempdir().expect("tempdir");
        for index in 0..2048 {
            fs::write(dir.path().join(format!("f{index:04}")), "").expect("write");
        }
        // The clock is looked at every 1,024 entries read.
        let timed = list(
            dir.path(),
            WalkLimits {
                max_time: Duration::ZERO,
                ..WalkLimits::default()
            },
        )
        .expect("list");
        assert!(
            timed.ends_with("[forge-filesystem cut this listing: the folder has more than 1023 entries and one call walks for at most 0 s (FORGE_FS_MAX_SECONDS); these are the first 1023 by name. Find others with search_files and a pattern]"),
            "{timed}"
        );
        let cancel = CancellationToken::new();
        cancel.cancel();
        let got = list_directory(dir.path(), &mut Walk::new(WalkLimits::default(), &cancel));
        assert!(matches!(got, Err(ListError::Cancelled)), "{got:?}");
    }
}
