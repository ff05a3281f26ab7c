//! What the tools read from one markdown file (summary, phase, skill name
//! and description), cached by path and file identity (size, modification
//! and change times, inode), so a repeated call re-reads only the files that
//! changed. A file that changes on disk is read again on the next call.
//!
//! What a tool reads is opened by [`open_own_file`]: never through a symlink, so a link in
//! the repository to a file outside it (`/proc/self/environ`, a key) gives nothing away.

use std::collections::HashMap;
use std::fs;
use std::io::Read as _;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::markdown::{DESCRIPTION_MAX_CHARS, Document, SUMMARY_MAX_CHARS, cap_chars, phase_line};
use server_kit::markdown::first_paragraph;

/// Where a project's phase came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhaseSource {
    /// The README frontmatter's `phase:` field.
    Frontmatter,
    /// A `Phase: X` line in the README body.
    ReadmeLine,
    /// The README says nothing about the phase.
    NotSet,
    /// The project has no README.md.
    NoReadme,
}

/// The facts of one markdown file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// Frontmatter `summary` or `description`, else the first paragraph.
    pub summary: Option<String>,
    /// Frontmatter `description`, else the first paragraph.
    pub description: Option<String>,
    /// Frontmatter `name`.
    pub name: Option<String>,
    pub phase: Option<String>,
    pub phase_source: PhaseSource,
}

impl Facts {
    pub fn from_text(text: &str) -> Facts {
        let document = Document::parse(text);
        let (phase, phase_source) = match document.frontmatter.text("phase") {
            Some(phase) => (Some(phase), PhaseSource::Frontmatter),
            None => match phase_line(document.body) {
                Some(phase) => (Some(phase), PhaseSource::ReadmeLine),
                None => (None, PhaseSource::NotSet),
            },
        };
        Facts {
            summary: document.summary(),
            description: document
                .frontmatter
                .text("description")
                .map(|description| cap_chars(&description, DESCRIPTION_MAX_CHARS))
                .or_else(|| first_paragraph(document.body, SUMMARY_MAX_CHARS)),
            name: document.frontmatter.text("name"),
            phase,
            phase_source,
        }
    }
}

/// A file's identity: if any part changes, the file is read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified_ns: i128,
    changed_ns: i128,
    inode: u64,
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Stamp {
        Stamp {
            len: meta.len(),
            modified_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            changed_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
            inode: meta.ino(),
        }
    }
}

/// Past this many entries the cache starts over (paths of deleted files
/// would otherwise pile up).
const MAX_ENTRIES: usize = 50_000;
/// Bytes of a markdown file read for its facts.
const MAX_FACTS_BYTES: u64 = 1024 * 1024;

/// The regular file at `path` opened for reading, unless its last component is a symlink
/// (the walks follow no symlinked folder) or it is not a regular file (a FIFO would block).
pub fn open_own_file(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(std::io::Error::other("not a regular file"))
    }
}

/// Facts by path, shared by all calls of one server.
#[derive(Debug, Default)]
pub struct FactsCache {
    entries: Mutex<HashMap<PathBuf, (Stamp, Arc<Facts>)>>,
}

impl FactsCache {
    /// The facts of the markdown file at `path`; `None` when it cannot be read.
    pub fn facts(&self, path: &Path) -> Option<Arc<Facts>> {
        // The link's own metadata: a symlink is not a file of its own, and has no facts.
        let meta = fs::symlink_metadata(path).ok()?;
        if !meta.is_file() {
            return None;
        }
        let stamp = Stamp::of(&meta);
        if let Ok(entries) = self.entries.lock()
            && let Some((cached, facts)) = entries.get(path)
            && *cached == stamp
        {
            return Some(Arc::clone(facts));
        }
        // Facts come from the frontmatter and the first paragraph: the start of the file is
        // enough, and a file of gigabytes (sparse, or a symlink to one) costs no more.
        let mut bytes = Vec::new();
        open_own_file(path)
            .ok()?
            .take(MAX_FACTS_BYTES)
            .read_to_end(&mut bytes)
            .ok()?;
        let facts = Arc::new(Facts::from_text(&String::from_utf8_lossy(&bytes)));
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
            entries.insert(path.to_owned(), (stamp, Arc::clone(&facts)));
        }
        Some(facts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn facts_come_from_frontmatter_then_body() {
        let facts = Facts::from_text(
            "---\nname: pdf\ndescription: PDFs.\nphase: Build\n---\n# T\n\nFirst.\n",
        );
        assert_eq!(
            facts,
            Facts {
                summary: Some("PDFs.".into()),
                description: Some("PDFs.".into()),
                name: Some("pdf".into()),
                phase: Some("Build".into()),
                phase_source: PhaseSource::Frontmatter,
            }
        );
        let body_only = Facts::from_text("# T\n\nFirst para.\n\nPhase: Design\n");
        assert_eq!(
            (body_only.summary, body_only.phase, body_only.phase_source),
            (
                Some("First para.".into()),
                Some("Design".into()),
                PhaseSource::ReadmeLine
            )
        );
    }

    #[test]
    fn nothing_is_read_through_a_symlink() {
        let dir = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("outside");
        let secret = outside.path().join("key.md");
        fs::write(&secret, "# Key\n\nTOKEN-123\n").expect("write");
        let link = dir.path().join("README.md");
        std::os::unix::fs::symlink(&secret, &link).expect("link");
        let cache = FactsCache::default();
        assert!(cache.facts(&secret).is_some(), "the file itself has facts");
        assert_eq!(cache.facts(&link), None);
        assert!(open_own_file(&link).is_err());
        assert!(open_own_file(dir.path()).is_err(), "a folder is not a file");
    }

    #[test]
    fn a_description_is_cut_at_the_agent_skills_limit() {
        let long = "d".repeat(5000);
        let facts = Facts::from_text(&format!("---\nname: x\ndescription: {long}\n---\n"));
        let description = facts.description.expect("description");
        assert_eq!(description.chars().count(), DESCRIPTION_MAX_CHARS);
        assert!(description.ends_with('…'), "{description}");
        let short = Facts::from_text("---\ndescription: PDFs.\n---\n");
        assert_eq!(short.description.as_deref(), Some("PDFs."));
    }

    #[test]
    fn a_changed_file_is_read_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("README.md");
        let cache = FactsCache::default();
        fs::write(&path, "---\nphase: One\n---\n").expect("write");
        let first = cache.facts(&path).expect("facts");
        assert!(Arc::ptr_eq(&first, &cache.facts(&path).expect("cached")));
        fs::write(&path, "---\nphase: Two\n---\n").expect("rewrite, same size");
        assert_eq!(
            cache.facts(&path).expect("facts").phase.as_deref(),
            Some("Two")
        );
        fs::remove_file(&path).expect("remove");
        assert_eq!(cache.facts(&path), None);
    }
}
