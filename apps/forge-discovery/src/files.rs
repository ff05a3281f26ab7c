//! A project's files: walking the project folder (skipping what the layout
//! skips) and naming each file's type from its extension.

use std::fmt;
use std::fs;
use std::path::Path;
use std::time::SystemTime;

use crate::layout::{LayoutError, is_skipped};

/// `get_project_files` lists at most this many files.
pub const MAX_PROJECT_FILES: usize = 1000;
/// `get_project_files` descends at most this many folders deep.
pub const MAX_PROJECT_DEPTH: usize = 12;
/// What kind of file an entry is, from its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Markdown,
    Text,
    Data,
    Document,
    Spreadsheet,
    Presentation,
    Image,
    Audio,
    Video,
    Archive,
    Code,
    Other,
}

impl FileKind {
    pub fn of(name: &str) -> FileKind {
        let ext = match name.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() => ext.to_ascii_lowercase(),
            _ => return FileKind::Other,
        };
        match ext.as_str() {
            "md" | "markdown" | "mdx" => FileKind::Markdown,
            "txt" | "log" | "rst" | "org" => FileKind::Text,
            "json" | "jsonl" | "yaml" | "yml" | "toml" | "csv" | "tsv" | "xml" | "ini" => {
                FileKind::Data
            }
            "pdf" | "doc" | "docx" | "odt" | "rtf" | "html" | "htm" => FileKind::Document,
            "xls" | "xlsx" | "ods" | "numbers" => FileKind::Spreadsheet,
            "ppt" | "pptx" | "odp" | "key" => FileKind::Presentation,
            "png" | "jpg" | "jpeg" | "gif" | "svg" | "webp" | "bmp" | "ico" | "tiff" => {
                FileKind::Image
            }
            "mp3" | "wav" | "ogg" | "flac" | "m4a" => FileKind::Audio,
            "mp4" | "mov" | "webm" | "mkv" | "avi" => FileKind::Video,
            "zip" | "tar" | "gz" | "tgz" | "bz2" | "xz" | "7z" => FileKind::Archive,
            "rs" | "ts" | "tsx" | "js" | "jsx" | "mjs" | "py" | "sh" | "bash" | "go" | "java"
            | "rb" | "c" | "h" | "cpp" | "css" | "scss" | "sql" | "swift" | "kt" => FileKind::Code,
            _ => FileKind::Other,
        }
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileKind::Markdown => "markdown",
            FileKind::Text => "text",
            FileKind::Data => "data",
            FileKind::Document => "document",
            FileKind::Spreadsheet => "spreadsheet",
            FileKind::Presentation => "presentation",
            FileKind::Image => "image",
            FileKind::Audio => "audio",
            FileKind::Video => "video",
            FileKind::Archive => "archive",
            FileKind::Code => "code",
            FileKind::Other => "other",
        })
    }
}

/// One file of a project.
#[derive(Debug, Clone)]
pub struct ProjectFile {
    /// Relative to the project folder, `/` separators.
    pub path: String,
    pub size: u64,
    pub modified: Option<SystemTime>,
    pub kind: FileKind,
}

/// The files of a project, sorted by path.
#[derive(Debug, Clone)]
pub struct ProjectFiles {
    pub files: Vec<ProjectFile>,
    /// Files found beyond [`MAX_PROJECT_FILES`].
    pub more: usize,
    pub total_size: u64,
}

/// Visit every regular file under `dir` (not following symlinked folders,
/// skipping hidden and build folders), `prefix` being `dir` relative to the
/// walk's root.
pub fn walk_files(
    dir: &Path,
    prefix: &str,
    depth: usize,
    visit: &mut dyn FnMut(ProjectFile),
) -> Result<(), LayoutError> {
    let entries = fs::read_dir(dir).map_err(|source| LayoutError::Unreadable {
        path: dir.to_owned(),
        source,
    })?;
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if is_skipped(&name) {
            continue;
        }
        let path = format!("{prefix}{name}");
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        if file_type.is_dir() {
            if depth < MAX_PROJECT_DEPTH {
                walk_files(&entry.path(), &format!("{path}/"), depth + 1, visit)?;
            }
            continue;
        }
        // Regular files, and symlinks that point at one.
        let Ok(meta) = fs::metadata(entry.path()) else {
            continue;
        };
        if meta.is_file() {
            visit(ProjectFile {
                kind: FileKind::of(&name),
                path,
                size: meta.len(),
                modified: meta.modified().ok(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn file_kinds_follow_the_extension() {
        let cases = [
            ("README.md", FileKind::Markdown),
            ("data.CSV", FileKind::Data),
            ("deck.pptx", FileKind::Presentation),
            ("photo.jpeg", FileKind::Image),
            ("main.rs", FileKind::Code),
            ("Makefile", FileKind::Other),
            (".env", FileKind::Other),
        ];
        for (name, kind) in cases {
            assert_eq!(FileKind::of(name), kind, "for {name}");
        }
    }
}
