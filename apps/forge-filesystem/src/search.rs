//! `search_files`: a streamed, pre-order walk matching a glob against each
//! entry's path relative to the searched folder.
//!
//! Matching follows the reference (minimatch with `dot: true`):
//! case-sensitive; `*`, `?` and `[…]` never cross a `/`; `**` as a whole
//! segment crosses any number of folders; dot-files match like any other
//! name; a pattern without `/` (`*.md`) matches entries directly in the
//! searched folder only; `{a,b}` alternates; a leading `!` negates. Not
//! supported: minimatch's extglobs (`+(a|b)`) and numeric ranges (`{1..3}`).
//!
//! The walk reads one folder at a time, sorts its entries by name bytes (the
//! reference's order) and keeps only the folders on the current path in
//! memory; matches are written out as they are found. An entry matching an
//! exclude pattern is skipped, and a folder so excluded is not entered.
//! Symlinks are never followed: one whose target stays inside the root is
//! matched like a file, one leading outside (or nowhere) is left out. A
//! subfolder that cannot be read is skipped.

use std::ffi::OsString;
use std::fs::{self, FileType};
use std::path::{Path, PathBuf};

use globset::{Candidate, GlobBuilder, GlobMatcher};
use server_kit::CancellationToken;

use crate::oserror::FsError;
use crate::paths::AllowedRoot;

/// How many entries are visited between two looks at the cancel token.
const CANCEL_CHECK_EVERY: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("Invalid glob pattern {pattern:?}: {source}")]
    BadPattern {
        pattern: String,
        #[source]
        source: globset::Error,
    },
    #[error("search_files was cancelled")]
    Cancelled,
    #[error(transparent)]
    Fs(#[from] FsError),
}

/// One compiled glob.
#[derive(Debug, Clone)]
pub struct Pattern {
    matcher: GlobMatcher,
    negated: bool,
}

impl Pattern {
    pub fn compile(pattern: &str) -> Result<Self, SearchError> {
        let bangs = pattern.len() - pattern.trim_start_matches('!').len();
        let body = collapse_inner_globstars(&pattern[bangs..]);
        let glob = GlobBuilder::new(&body)
            .literal_separator(true)
            .backslash_escape(true)
            .empty_alternates(true)
            .build()
            .map_err(|source| SearchError::BadPattern {
                pattern: pattern.to_owned(),
                source,
            })?;
        Ok(Self {
            matcher: glob.compile_matcher(),
            negated: bangs % 2 == 1,
        })
    }

    fn is_match(&self, candidate: &Candidate<'_>) -> bool {
        self.matcher.is_match_candidate(candidate) != self.negated
    }
}

/// minimatch treats `**` inside a segment (`a**b`) as `*`; globset refuses it.
fn collapse_inner_globstars(pattern: &str) -> String {
    pattern
        .split('/')
        .map(|segment| {
            if segment == "**" || !segment.contains("**") {
                segment.to_owned()
            } else {
                let mut out = String::with_capacity(segment.len());
                for c in segment.chars() {
                    if !(c == '*' && out.ends_with('*')) {
                        out.push(c);
                    }
                }
                out
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// What to look for.
#[derive(Debug, Clone)]
pub struct SearchQuery {
    pub pattern: Pattern,
    pub excludes: Vec<Pattern>,
}

impl SearchQuery {
    pub fn compile(pattern: &str, excludes: &[String]) -> Result<Self, SearchError> {
        Ok(Self {
            pattern: Pattern::compile(pattern)?,
            excludes: excludes
                .iter()
                .map(|exclude| Pattern::compile(exclude))
                .collect::<Result<_, _>>()?,
        })
    }
}

/// The matches, absolute paths in walk order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchResults {
    /// The paths joined by `\n`.
    pub text: String,
    pub count: usize,
}

struct Frame {
    folder: PathBuf,
    relative: PathBuf,
    entries: std::vec::IntoIter<(OsString, FileType)>,
}

impl Frame {
    fn open(folder: PathBuf, relative: PathBuf) -> Result<Self, FsError> {
        let mut entries = Vec::new();
        for entry in fs::read_dir(&folder).map_err(FsError::on("scandir", &folder))? {
            let entry = entry.map_err(FsError::on("scandir", &folder))?;
            if let Ok(kind) = entry.file_type() {
                entries.push((entry.file_name(), kind));
            }
        }
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(Self {
            folder,
            relative,
            entries: entries.into_iter(),
        })
    }
}

/// Search under `folder` (a real path inside `root`).
pub fn search_files(
    folder: &Path,
    root: &AllowedRoot,
    query: &SearchQuery,
    cancel: &CancellationToken,
) -> Result<SearchResults, SearchError> {
    let mut results = SearchResults::default();
    let mut stack = vec![Frame::open(folder.to_path_buf(), PathBuf::new())?];
    let mut visited = 0usize;
    while let Some(frame) = stack.last_mut() {
        let Some((name, kind)) = frame.entries.next() else {
            stack.pop();
            continue;
        };
        visited += 1;
        if visited.is_multiple_of(CANCEL_CHECK_EVERY) && cancel.is_cancelled() {
            return Err(SearchError::Cancelled);
        }
        let full = frame.folder.join(&name);
        let relative = frame.relative.join(&name);
        if kind.is_symlink() && !stays_inside(&full, root) {
            continue;
        }
        let candidate = Candidate::new(&relative);
        if query
            .excludes
            .iter()
            .any(|exclude| exclude.is_match(&candidate))
        {
            continue;
        }
        if query.pattern.is_match(&candidate) {
            if results.count > 0 {
                results.text.push('\n');
            }
            results.text.push_str(&full.to_string_lossy());
            results.count += 1;
        }
        if kind.is_dir() {
            match Frame::open(full, relative) {
                Ok(child) => stack.push(child),
                Err(error) => tracing::debug!(%error, "search_files skips a folder it cannot read"),
            }
        }
    }
    Ok(results)
}

fn stays_inside(link: &Path, root: &AllowedRoot) -> bool {
    fs::canonicalize(link).is_ok_and(|real| real.starts_with(root.real()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn globs_match_like_minimatch_with_dot() {
        let cases = [
            ("*.md", "a.md", true),
            ("*.md", "sub/a.md", false),
            ("*.md", ".hidden.md", true),
            ("**/*.md", "a.md", true),
            ("**/*.md", "sub/deep/a.md", true),
            ("sub/**", "sub", false),
            ("sub/**", "sub/x/y", true),
            ("**", ".git/config", true),
            ("*.MD", "a.md", false),
            ("!*.md", "a.md", false),
            ("!*.md", "sub/a.md", true),
            ("a**b", "axxb", true),
            ("a**b", "ax/xb", false),
            ("{src,lib}/*.rs", "lib/x.rs", true),
            ("?.txt", "a.txt", true),
            ("?.txt", "/.txt", false),
        ];
        for (pattern, path, expected) in cases {
            let compiled = Pattern::compile(pattern).expect(pattern);
            assert_eq!(
                compiled.is_match(&Candidate::new(Path::new(path))),
                expected,
                "{pattern} vs {path}"
            );
        }
    }
}
