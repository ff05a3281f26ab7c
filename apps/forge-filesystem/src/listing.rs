//! `list_directory`: one `[DIR] name` or `[FILE] name` line per entry.
//!
//! Entries come in byte order of their names (what Node's `readdir` gives on
//! Linux), joined by `\n` with no trailing newline; an empty folder gives an
//! empty text. Only real directories are `[DIR]`: a symlink, even to a
//! folder, is `[FILE]`, as in the reference.

use std::fs;
use std::path::Path;

use crate::oserror::FsError;

/// The listing of `folder`.
pub fn list_directory(folder: &Path) -> Result<String, FsError> {
    let mut entries: Vec<(std::ffi::OsString, bool)> = Vec::new();
    for entry in fs::read_dir(folder).map_err(FsError::on("scandir", folder))? {
        let entry = entry.map_err(FsError::on("scandir", folder))?;
        let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
        entries.push((entry.file_name(), is_dir));
    }
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let lines: Vec<String> = entries
        .iter()
        .map(|(name, is_dir)| {
            let tag = if *is_dir { "[DIR]" } else { "[FILE]" };
            format!("{tag} {}", name.to_string_lossy())
        })
        .collect();
    Ok(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

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
            list_directory(root).expect("list"),
            "[FILE] .hidden\n[FILE] Alpha.md\n[FILE] ab.txt\n[FILE] link\n[DIR] sub\n[FILE] zeta.md"
        );
    }
}
