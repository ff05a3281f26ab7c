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
//!
//! Bounded ([`crate::walk`]): at most `FORGE_FS_MAX_ENTRIES` matches and
//! `FORGE_FS_MAX_READ_BYTES` bytes of answer, at most `FORGE_FS_MAX_WALK_ENTRIES` folder
//! entries read (which bounds the names held in memory) and `FORGE_FS_MAX_SECONDS` of
//! walking. A search that reaches a bound answers the matches found so far, followed by a
//! notice naming the bound; a cancelled one stops at once. The patterns are bounded too: at
//! most [`MAX_EXCLUDES`] exclude patterns of at most [`MAX_PATTERN_BYTES`] each (and the
//! pattern itself), the plain excludes matched as one set (the negated ones, rare, each on
//! its own), and the clock is read while entries are matched as well as while they are read.

use std::ffi::OsString;
use std::fs::{self, FileType};
use std::path::{Path, PathBuf};

use globset::{Candidate, Glob, GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};

use crate::oserror::FsError;
use crate::paths::AllowedRoot;
use crate::walk::{Bound, Lines, Stop, Walk};

/// Most exclude patterns one search takes.
pub const MAX_EXCLUDES: usize = 1_000;

/// Longest pattern (or exclude pattern) taken, in bytes.
pub const MAX_PATTERN_BYTES: usize = 4_096;

/// Entries matched between two looks at the clock and the cancel token.
const CHECK_EVERY: u32 = 256;

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("excludePatterns holds {count} patterns; a search takes at most {max}")]
    TooManyExcludes { count: usize, max: usize },
    #[error("A glob pattern of {len} bytes is too long; a search takes patterns of at most {max}")]
    PatternTooLong { len: usize, max: usize },
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
        let (glob, negated) = glob(pattern)?;
        Ok(Self {
            matcher: glob.compile_matcher(),
            negated,
        })
    }

    fn is_match(&self, candidate: &Candidate<'_>) -> bool {
        self.matcher.is_match_candidate(candidate) != self.negated
    }
}

/// `pattern` as a glob, and whether it is negated (an odd number of leading `!`).
fn glob(pattern: &str) -> Result<(Glob, bool), SearchError> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(SearchError::PatternTooLong {
            len: pattern.len(),
            max: MAX_PATTERN_BYTES,
        });
    }
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
    Ok((glob, bangs % 2 == 1))
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
    pub excludes: Excludes,
}

/// The exclude patterns: the plain ones matched as one set, the negated ones (an entry is
/// excluded when it does not match one) each on its own.
#[derive(Debug, Clone)]
pub struct Excludes {
    plain: GlobSet,
    negated: Vec<GlobMatcher>,
}

impl Excludes {
    fn compile(excludes: &[String]) -> Result<Self, SearchError> {
        if excludes.len() > MAX_EXCLUDES {
            return Err(SearchError::TooManyExcludes {
                count: excludes.len(),
                max: MAX_EXCLUDES,
            });
        }
        let mut plain = GlobSetBuilder::new();
        let mut negated = Vec::new();
        for exclude in excludes {
            match glob(exclude)? {
                (glob, false) => {
                    plain.add(glob);
                }
                (glob, true) => negated.push(glob.compile_matcher()),
            }
        }
        let plain = plain.build().map_err(|source| SearchError::BadPattern {
            pattern: "excludePatterns".to_owned(),
            source,
        })?;
        Ok(Self { plain, negated })
    }

    fn excluded(&self, candidate: &Candidate<'_>) -> bool {
        self.plain.is_match_candidate(candidate)
            || self
                .negated
                .iter()
                .any(|matcher| !matcher.is_match_candidate(candidate))
    }
}

impl SearchQuery {
    pub fn compile(pattern: &str, excludes: &[String]) -> Result<Self, SearchError> {
        Ok(Self {
            pattern: Pattern::compile(pattern)?,
            excludes: Excludes::compile(excludes)?,
        })
    }
}

/// The matches, absolute paths in walk order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchResults {
    /// The paths joined by `\n`, and how many.
    pub matches: Lines,
    /// The bound that stopped the walk before its end, if one did.
    pub stopped: Option<Bound>,
}

impl SearchResults {
    /// The tool's answer: the paths, or `No matches found`, and the notice of a bound.
    pub fn render(self) -> String {
        let found = if self.matches.count == 0 {
            "No matches found".to_owned()
        } else {
            self.matches.text
        };
        match self.stopped {
            None => found,
            Some(bound) => format!(
                "{found}\n\n[forge-filesystem stopped this search before its end: {bound}; the {} matches above are those found until then. Narrow the path or the pattern, or add excludePatterns]",
                self.matches.count
            ),
        }
    }
}

struct Frame {
    folder: PathBuf,
    relative: PathBuf,
    entries: std::vec::IntoIter<(OsString, FileType)>,
}

impl Frame {
    /// The entries of `folder`, each counted by `walk`; a bound stops the read (and the walk).
    fn open(folder: PathBuf, relative: PathBuf, walk: &mut Walk<'_>) -> Result<Self, Opened> {
        let mut entries = Vec::new();
        let listing = fs::read_dir(&folder)
            .map_err(|error| Opened::Unreadable(FsError::on("scandir", &folder)(error)))?;
        for entry in listing {
            walk.entry().map_err(Opened::Stopped)?;
            let entry = entry
                .map_err(|error| Opened::Unreadable(FsError::on("scandir", &folder)(error)))?;
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

/// Why a folder's entries were not had.
enum Opened {
    Unreadable(FsError),
    Stopped(Stop),
}

/// Search under `folder` (a real path inside `root`), within `walk`'s bounds.
pub fn search_files(
    folder: &Path,
    root: &AllowedRoot,
    query: &SearchQuery,
    walk: &mut Walk<'_>,
) -> Result<SearchResults, SearchError> {
    let mut results = SearchResults::default();
    let stopped = |results: SearchResults, stop: Stop| match stop {
        Stop::Cancelled => Err(SearchError::Cancelled),
        Stop::Bound(bound) => Ok(SearchResults {
            stopped: Some(bound),
            ..results
        }),
    };
    let first = match Frame::open(folder.to_path_buf(), PathBuf::new(), walk) {
        Ok(frame) => frame,
        Err(Opened::Unreadable(error)) => return Err(error.into()),
        Err(Opened::Stopped(stop)) => return stopped(results, stop),
    };
    let mut stack = vec![first];
    let mut matched = 0u32;
    while let Some(frame) = stack.last_mut() {
        let Some((name, kind)) = frame.entries.next() else {
            stack.pop();
            continue;
        };
        let full = frame.folder.join(&name);
        let relative = frame.relative.join(&name);
        if kind.is_symlink() && !stays_inside(&full, root) {
            continue;
        }
        matched = matched.wrapping_add(1);
        if matched.is_multiple_of(CHECK_EVERY)
            && let Err(stop) = walk.check()
        {
            return stopped(results, stop);
        }
        let candidate = Candidate::new(&relative);
        if query.excludes.excluded(&candidate) {
            continue;
        }
        if query.pattern.is_match(&candidate)
            && let Err(bound) = results.matches.push(&full.to_string_lossy(), walk.limits())
        {
            return stopped(results, Stop::Bound(bound));
        }
        if kind.is_dir() {
            match Frame::open(full, relative, walk) {
                Ok(child) => stack.push(child),
                Err(Opened::Stopped(stop)) => return stopped(results, stop),
                Err(Opened::Unreadable(error)) => {
                    tracing::debug!(%error, "search_files skips a folder it cannot read")
                }
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
    use server_kit::CancellationToken;

    use crate::config::RootSetting;
    use crate::walk::WalkLimits;
    use std::time::Duration;

    /// `count` files `fNNNN.md` in a fresh root, searched with `limits` for `*.md`.
    fn search_many(
        count: usize,
        limits: WalkLimits,
        cancel: &CancellationToken,
    ) -> (Result<SearchResults, SearchError>, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = fs::canonicalize(dir.path()).expect("realpath");
        for index in 0..count {
            fs::write(real.join(format!("f{index:04}.md")), "").expect("write");
        }
        let root = AllowedRoot::open(&RootSetting {
            var: "WORKSPACE_ROOT",
            path: real.clone(),
            is_default: false,
        })
        .expect("root");
        let query = SearchQuery::compile("*.md", &[]).expect("pattern");
        let got = search_files(&real, &root, &query, &mut Walk::new(limits, cancel));
        (got, real)
    }

    #[test]
    fn a_search_stops_at_each_bound_with_what_it_found_and_says_so() {
        let unbounded = WalkLimits::default();
        let notice = |bound: &str, count: usize| {
            format!(
                "\n\n[forge-filesystem stopped this search before its end: {bound}; the {count} matches above are those found until then. Narrow the path or the pattern, or add excludePatterns]"
            )
        };
        let cases = [
            (
                WalkLimits {
                    max_entries: 3,
                    ..unbounded
                },
                3,
                notice("one answer shows at most 3 (FORGE_FS_MAX_ENTRIES)", 3),
            ),
            (
                WalkLimits {
                    max_walk_entries: 10,
                    ..unbounded
                },
                0,
                notice(
                    "one call reads at most 10 folder entries (FORGE_FS_MAX_WALK_ENTRIES)",
                    0,
                ),
            ),
            (
                WalkLimits {
                    max_time: Duration::ZERO,
                    ..unbounded
                },
                0,
                notice("one call walks for at most 0 s (FORGE_FS_MAX_SECONDS)", 0),
            ),
        ];
        for (limits, shown, tail) in cases {
            let (got, real) = search_many(2000, limits, &CancellationToken::new());
            let text = got.expect("search").render();
            let paths: Vec<String> = (0..shown)
                .map(|index| real.join(format!("f{index:04}.md")).display().to_string())
                .collect();
            let found = if shown == 0 {
                "No matches found".to_owned()
            } else {
                paths.join("\n")
            };
            assert_eq!(text, format!("{found}{tail}"), "{limits:?}");
        }
        // The byte bound: as many whole paths as fit in 60 bytes, then the notice.
        let limits = WalkLimits {
            max_bytes: 60,
            ..unbounded
        };
        let (got, real) = search_many(2000, limits, &CancellationToken::new());
        let per = real.join("f0000.md").display().to_string().len();
        let fit = 61 / (per + 1);
        let paths: Vec<String> = (0..fit)
            .map(|index| real.join(format!("f{index:04}.md")).display().to_string())
            .collect();
        let found = if fit == 0 {
            "No matches found".to_owned()
        } else {
            paths.join("\n")
        };
        assert_eq!(
            got.expect("search").render(),
            format!(
                "{found}{}",
                notice(
                    "one answer holds at most 60 bytes (FORGE_FS_MAX_READ_BYTES)",
                    fit
                )
            )
        );
        let cancel = CancellationToken::new();
        cancel.cancel();
        let (got, _) = search_many(2000, unbounded, &cancel);
        assert!(matches!(got, Err(SearchError::Cancelled)), "{got:?}");
    }

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
            let candidate = Candidate::new(Path::new(path));
            assert_eq!(
                compiled.is_match(&candidate),
                expected,
                "{pattern} vs {path}"
            );
            // As an exclude pattern, alone and in a set with others that match nothing.
            for excludes in [
                vec![pattern.to_owned()],
                vec![
                    "nothing".to_owned(),
                    pattern.to_owned(),
                    "zzz/**".to_owned(),
                ],
            ] {
                let set = Excludes::compile(&excludes).expect(pattern);
                assert_eq!(set.excluded(&candidate), expected, "{excludes:?} vs {path}");
            }
        }
    }
}
