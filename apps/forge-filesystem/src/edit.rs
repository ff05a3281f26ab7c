//! `edit_file`: apply a list of text replacements, answer with a diff.
//!
//! The file and every `oldText`/`newText` have CRLF normalised to LF (so an
//! edited CRLF file is written back with LF endings, as in the reference).
//! Edits apply in order, each to the result of the one before:
//!
//! 1. if `oldText` occurs exactly, its first occurrence is replaced by
//!    `newText`, taken literally;
//! 2. otherwise the first window of lines whose trimmed text equals the
//!    trimmed lines of `oldText` is replaced; the first new line takes the
//!    indentation of the first matched line, and a later new line that is
//!    indented, where the old line at the same position was indented too,
//!    keeps its indentation relative to that old line;
//! 3. otherwise the whole edit fails with
//!    `Could not find exact match for edit:\n{oldText}` and nothing is written.
//!
//! The answer is the fenced unified diff of the real path ([`crate::diff`]);
//! with `dryRun` nothing is written.
//!
//! Bounded as a read is: a file of more than `FORGE_FS_MAX_READ_BYTES` is not edited, edits
//! that would make the text longer than that fail (checked before the text is built: the
//! indentation a line match adds to every new line could otherwise multiply it), and a diff
//! whose JSON form passes it is cut, with a notice saying so. One call takes at most
//! [`MAX_EDITS`] edits, each a pass over the file, within `FORGE_FS_MAX_SECONDS` (the clock
//! and the call's cancellation are read before each edit); nothing is written unless all
//! of them apply.

use std::path::Path;

use crate::diff::{fenced, unified_patch};
use crate::oserror::FsError;
use crate::walk::{Bound, Stop, Walk};
use crate::write::write_atomic;

/// Most edits one `edit_file` call takes.
pub const MAX_EDITS: usize = 1_000;

/// One replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub old_text: String,
    pub new_text: String,
}

#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("Could not find exact match for edit:\n{old_text}")]
    NoMatch { old_text: String },
    #[error(
        "Edit {index} has an empty oldText; give the text to replace (use write_file to write a whole file)"
    )]
    EmptyOldText { index: usize },
    #[error("Cannot edit {}: the file is not valid UTF-8 text", .path.display())]
    NotUtf8 { path: std::path::PathBuf },
    #[error(
        "Cannot edit {}: it has {size} bytes, more than one read takes ({max_bytes}, FORGE_FS_MAX_READ_BYTES); edit it with forge-bash, or split it",
        .path.display()
    )]
    TooLarge {
        path: std::path::PathBuf,
        size: u64,
        max_bytes: u64,
    },
    #[error(
        "Cannot edit: the edited text would have more than {max_bytes} bytes, the most one read takes (FORGE_FS_MAX_READ_BYTES); nothing was written. Write it with write_file, or split the file"
    )]
    Grown { max_bytes: u64 },
    #[error("edit_file takes at most {max} edits in one call; {count} were given")]
    TooManyEdits { count: usize, max: usize },
    #[error("edit_file stopped before its end: {bound}; nothing was written. Give fewer edits")]
    Stopped { bound: Bound },
    #[error("edit_file was cancelled")]
    Cancelled,
    #[error(transparent)]
    Read(#[from] crate::read::ReadError),
    #[error(transparent)]
    Fs(#[from] FsError),
}

impl From<Stop> for EditError {
    fn from(stop: Stop) -> Self {
        match stop {
            Stop::Bound(bound) => Self::Stopped { bound },
            Stop::Cancelled => Self::Cancelled,
        }
    }
}

/// Read `path`, apply `edits`, write the result unless `dry_run`, and return
/// the fenced diff labelled with `path`.
///
/// Only a regular file of at most `max_bytes` is edited (checked on the open file before it
/// is read): a FIFO or a device is refused without blocking, as `read_text_file` does.
pub fn edit_file(
    path: &Path,
    edits: &[Edit],
    dry_run: bool,
    max_bytes: u64,
    walk: &mut Walk<'_>,
) -> Result<String, EditError> {
    use std::io::Read;
    if edits.len() > MAX_EDITS {
        return Err(EditError::TooManyEdits {
            count: edits.len(),
            max: MAX_EDITS,
        });
    }
    let file = crate::read::open_regular(path)?;
    let size = file.metadata().map_err(FsError::on("fstat", path))?.len();
    if size > max_bytes {
        return Err(EditError::TooLarge {
            path: path.to_path_buf(),
            size,
            max_bytes,
        });
    }
    let mut bytes = Vec::new();
    // "open", as before: the reference names the whole read so (EISDIR on a folder).
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(FsError::on("open", path))?;
    let original = String::from_utf8(bytes).map_err(|_| EditError::NotUtf8 {
        path: path.to_path_buf(),
    })?;
    let original = normalize_line_endings(original);
    let modified = apply_edits(&original, edits, max_bytes, walk)?;
    let patch = unified_patch(&path.to_string_lossy(), &original, &modified);
    if !dry_run {
        write_atomic(path, modified.as_bytes())?;
    }
    Ok(answered(patch, max_bytes, dry_run))
}

/// The fenced diff as answered: when its JSON form would pass `max_bytes` (two texts of up to
/// `max_bytes` each, control characters escaped to six bytes), the patch is cut to fit, ended
/// at a line, fenced, and followed by a notice saying so.
fn answered(mut patch: String, max_bytes: u64, dry_run: bool) -> String {
    let max = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    let whole = fenced(&patch);
    if crate::answer::fit_escaped(&whole, max, crate::answer::Part::First).is_none() {
        return whole;
    }
    // Room for the fences (the cut patch has no longer run of backticks than the whole)
    // and the newline that ends a line cut in the middle (two bytes escaped), all counted
    // as the JSON answer carries them.
    let fences = crate::answer::escaped_size(&whole) - crate::answer::escaped_size(&patch);
    let room = max.saturating_sub(fences + 2);
    let kept = crate::answer::fit_escaped(&patch, room, crate::answer::Part::First)
        .map_or(patch.len(), |kept| kept.end);
    // Whole lines only: a line cut in the middle would read as a line of the file. One line
    // longer than the room is kept in part, and ended.
    let kept = patch[..kept]
        .rfind('\n')
        .map_or(kept, |newline| newline + 1);
    patch.truncate(kept);
    if !patch.is_empty() && !patch.ends_with('\n') {
        patch.push('\n');
    }
    let done = if dry_run {
        "nothing was written (dryRun)"
    } else {
        "the edit was written whole"
    };
    format!(
        "{}[forge-filesystem cut this diff: it passes the {max_bytes} bytes one answer takes (FORGE_FS_MAX_READ_BYTES); these are its first {kept} bytes, and {done}. Read the file with head or tail to see the rest]",
        fenced(&patch)
    )
}

/// Apply `edits` in order to `content` (already LF-normalised); [`EditError::Grown`] as soon
/// as the text would pass `max_bytes`, before it is built.
pub fn apply_edits(
    content: &str,
    edits: &[Edit],
    max_bytes: u64,
    walk: &mut Walk<'_>,
) -> Result<String, EditError> {
    let max = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    let grown = || EditError::Grown { max_bytes };
    let mut modified = content.to_owned();
    for (index, edit) in edits.iter().enumerate() {
        walk.check()?;
        let old = normalize_line_endings(edit.old_text.clone());
        let new = normalize_line_endings(edit.new_text.clone());
        if old.is_empty() {
            return Err(EditError::EmptyOldText { index });
        }
        if let Some(at) = modified.find(&old) {
            if modified.len() - old.len() + new.len() > max {
                return Err(grown());
            }
            modified.replace_range(at..at + old.len(), &new);
            continue;
        }
        match replace_line_window(&modified, &old, &new, max) {
            Some(Ok(replaced)) => modified = replaced,
            Some(Err(TooLong)) => return Err(grown()),
            None => {
                return Err(EditError::NoMatch {
                    old_text: edit.old_text.clone(),
                });
            }
        }
    }
    Ok(modified)
}

/// Where `wanted` first appears in `lines` as a run of whole lines, in linear time
/// (Knuth–Morris–Pratt over the lines, each compared as a whole): trying each start in turn
/// costs lines × wanted comparisons, and a file of millions of equal lines with a long
/// `oldText` of them would take minutes.
fn first_window(lines: &[&str], wanted: &[&str]) -> Option<usize> {
    if wanted.is_empty() || wanted.len() > lines.len() {
        return None;
    }
    // Each distinct wanted line gets a number; a line of the file that is none of them can
    // match nothing.
    let mut ids: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    let pattern: Vec<u32> = wanted
        .iter()
        .map(|line| {
            let next = u32::try_from(ids.len()).unwrap_or(u32::MAX - 1);
            *ids.entry(line).or_insert(next)
        })
        .collect();
    // fallback[i]: the length of the longest proper prefix of pattern[..=i] that is also
    // its suffix.
    let mut fallback = vec![0usize; pattern.len()];
    let mut k = 0;
    for i in 1..pattern.len() {
        while k > 0 && pattern[i] != pattern[k] {
            k = fallback[k - 1];
        }
        if pattern[i] == pattern[k] {
            k += 1;
        }
        fallback[i] = k;
    }
    let mut matched = 0;
    for (at, line) in lines.iter().enumerate() {
        let id = ids.get(line).copied().unwrap_or(u32::MAX);
        while matched > 0 && pattern[matched] != id {
            matched = fallback[matched - 1];
        }
        if pattern[matched] == id {
            matched += 1;
        }
        if matched == pattern.len() {
            return Some(at + 1 - pattern.len());
        }
    }
    None
}

/// The text an edit would make passes the cap.
struct TooLong;

/// Step 2: the whitespace-flexible line match; `None` when no window matches, [`TooLong`]
/// when the text it makes would pass `max` bytes (found before it is built).
fn replace_line_window(
    content: &str,
    old: &str,
    new: &str,
    max: usize,
) -> Option<Result<String, TooLong>> {
    let old_lines: Vec<&str> = old.split('\n').collect();
    let trimmed_old: Vec<&str> = old_lines.iter().map(|line| trim_js(line)).collect();
    let content_lines: Vec<&str> = content.split('\n').collect();
    if old_lines.len() > content_lines.len() {
        return None;
    }
    let trimmed_content: Vec<&str> = content_lines.iter().map(|line| trim_js(line)).collect();
    let start = first_window(&trimmed_content, &trimmed_old)?;
    let first_indent = leading_space(content_lines[start]);
    // Each new line may take the first matched line's indentation: the text is counted as
    // it is built, and building stops at the cap.
    let kept: usize = content_lines[..start]
        .iter()
        .chain(&content_lines[start + old_lines.len()..])
        .map(|line| line.len() + 1)
        .sum();
    let mut size = kept;
    let mut new_lines: Vec<String> = Vec::new();
    for (index, line) in new.split('\n').enumerate() {
        let placed = if index == 0 {
            format!("{first_indent}{}", trim_start_js(line))
        } else {
            let old_indent = old_lines.get(index).map_or("", |old| leading_space(old));
            let new_indent = leading_space(line);
            if old_indent.is_empty() || new_indent.is_empty() {
                line.to_owned()
            } else {
                let extra = new_indent
                    .chars()
                    .count()
                    .saturating_sub(old_indent.chars().count());
                format!("{first_indent}{}{}", " ".repeat(extra), trim_start_js(line))
            }
        };
        size += placed.len() + 1;
        // `size` counts one newline more than the text has.
        if size > max.saturating_add(1) {
            return Some(Err(TooLong));
        }
        new_lines.push(placed);
    }
    let mut out = String::with_capacity(content.len() + new.len());
    for line in &content_lines[..start] {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&new_lines.join("\n"));
    for line in &content_lines[start + old_lines.len()..] {
        out.push('\n');
        out.push_str(line);
    }
    Some(Ok(out))
}

/// CRLF to LF.
pub fn normalize_line_endings(text: String) -> String {
    if text.contains("\r\n") {
        text.replace("\r\n", "\n")
    } else {
        text
    }
}

/// JavaScript's whitespace (`\s`, what `trim()` removes): Rust's
/// `char::is_whitespace` minus U+0085, plus U+FEFF.
fn is_js_space(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}'
}

fn trim_js(line: &str) -> &str {
    line.trim_matches(is_js_space)
}

fn trim_start_js(line: &str) -> &str {
    line.trim_start_matches(is_js_space)
}

fn leading_space(line: &str) -> &str {
    &line[..line.len() - trim_start_js(line).len()]
}

#[cfg(test)]
mod tests {

    #[test]
    fn only_regular_files_within_the_cap_are_edited() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("pipe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600))
            .expect("mkfifo");
        let big = dir.path().join("big.txt");
        std::fs::write(&big, "a".repeat(100)).expect("write");
        let edit = [Edit {
            old_text: "a".into(),
            new_text: "b".into(),
        }];
        assert!(matches!(
            edit_file(&fifo, &edit, true, 1000, &mut unbounded()),
            Err(EditError::Read(crate::read::ReadError::NotRegular {
                kind: "FIFO",
                ..
            }))
        ));
        assert!(matches!(
            edit_file(&big, &edit, false, 99, &mut unbounded()),
            Err(EditError::TooLarge {
                size: 100,
                max_bytes: 99,
                ..
            })
        ));
        assert_eq!(std::fs::read_to_string(&big).ok(), Some("a".repeat(100)));
        assert!(edit_file(&big, &edit, false, 100, &mut unbounded()).is_ok());
        assert_eq!(
            std::fs::read_to_string(&big).ok(),
            Some(format!("b{}", "a".repeat(99)))
        );
    }

    use super::*;

    use pretty_assertions::assert_eq;
    use server_kit::CancellationToken;

    use crate::walk::WalkLimits;

    /// A walk with the default bounds and a token nobody cancels.
    fn unbounded() -> Walk<'static> {
        Walk::new(
            WalkLimits::default(),
            Box::leak(Box::new(CancellationToken::new())),
        )
    }

    fn apply(content: &str, edits: &[Edit], max_bytes: u64) -> Result<String, EditError> {
        apply_edits(content, edits, max_bytes, &mut unbounded())
    }

    #[test]
    fn edits_are_counted_and_stop_with_the_clock_or_a_cancel() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "a\n").expect("write");
        let many = vec![edit("a", "a"); MAX_EDITS + 1];
        assert!(matches!(
            edit_file(&path, &many, false, 1000, &mut unbounded()),
            Err(EditError::TooManyEdits {
                count: 1001,
                max: MAX_EDITS
            })
        ));
        let cancel = CancellationToken::new();
        cancel.cancel();
        let mut cancelled = Walk::new(WalkLimits::default(), &cancel);
        assert!(matches!(
            edit_file(&path, &[edit("a", "b")], false, 1000, &mut cancelled),
            Err(EditError::Cancelled)
        ));
        let fresh = CancellationToken::new();
        let limits = WalkLimits {
            max_time: std::time::Duration::ZERO,
            ..WalkLimits::default()
        };
        let error = edit_file(
            &path,
            &[edit("a", "b")],
            false,
            1000,
            &mut Walk::new(limits, &fresh),
        )
        .expect_err("out of time");
        assert!(
            matches!(
                error,
                EditError::Stopped {
                    bound: Bound::Time(_)
                }
            ),
            "{error}"
        );
        assert_eq!(std::fs::read_to_string(&path).ok(), Some("a\n".to_owned()));
    }

    /// The first run of whole lines, as trying each start in turn finds it; and a file of
    /// 200,000 equal lines with a wanted run of 20,000 of them and one other is answered
    /// (trying each start would compare 4·10⁹ lines).
    #[test]
    fn the_first_window_is_found_in_linear_time() {
        let naive = |lines: &[&str], wanted: &[&str]| -> Option<usize> {
            if wanted.is_empty() || wanted.len() > lines.len() {
                return None;
            }
            (0..=lines.len() - wanted.len()).find(|&s| lines[s..s + wanted.len()] == *wanted)
        };
        let cases: &[(&[&str], &[&str])] = &[
            (&["a", "b", "c"], &["b", "c"]),
            (&["a", "a", "b", "a", "a", "a", "b"], &["a", "a", "a", "b"]),
            (&["a", "b", "a", "b", "a", "c"], &["a", "b", "a", "c"]),
            (&["x"], &["x", "y"]),
            (&["a", "b"], &["c"]),
            (&["a", "a", "a"], &["a", "a"]),
            (&["", "", "x"], &["", "x"]),
        ];
        for (lines, wanted) in cases {
            assert_eq!(
                first_window(lines, wanted),
                naive(lines, wanted),
                "{lines:?} {wanted:?}"
            );
        }
        let mut lines = vec!["a"; 200_000];
        let mut wanted = vec!["a"; 20_000];
        wanted.push("b");
        assert_eq!(first_window(&lines, &wanted), None);
        lines.push("b");
        assert_eq!(first_window(&lines, &wanted), Some(200_000 - 20_000));
    }

    fn edit(old: &str, new: &str) -> Edit {
        Edit {
            old_text: old.into(),
            new_text: new.into(),
        }
    }

    #[test]
    fn edits_apply_like_the_reference() {
        let cases: Vec<(&str, &str, Vec<Edit>, &str)> = vec![
            (
                "exact match replaces the first occurrence only",
                "a b a b",
                vec![edit("b", "c")],
                "a c a b",
            ),
            (
                "replacement is literal, no $ patterns",
                "x = 1\n",
                vec![edit("1", "$& $1 $$")],
                "x = $& $1 $$\n",
            ),
            (
                "edits chain on the previous result",
                "one\n",
                vec![edit("one", "two"), edit("two", "three")],
                "three\n",
            ),
            (
                "whitespace-flexible match takes the file's indentation",
                "fn main() {\n        let x = 1;\n        let y = 2;\n}\n",
                vec![edit(
                    "let x = 1;\n  let y = 2;",
                    "let x = 10;\n    let y = 20;",
                )],
                "fn main() {\n        let x = 10;\n          let y = 20;\n}\n",
            ),
            (
                "an unindented new line is kept as written",
                "  if a {\n    b();\n  }\n",
                vec![edit("if a {\n b();\n}", "if a {\nc();\n}")],
                "  if a {\nc();\n}\n",
            ),
        ];
        for (name, content, edits, expected) in cases {
            assert_eq!(
                apply(content, &edits, u64::MAX).expect(name),
                expected,
                "{name}"
            );
        }
    }

    #[test]
    fn a_missing_edit_fails_the_whole_list() {
        let error = apply("a\nb\n", &[edit("a", "A"), edit("zzz", "y")], u64::MAX)
            .expect_err("second edit has no match");
        assert_eq!(
            error.to_string(),
            "Could not find exact match for edit:\nzzz"
        );
    }

    #[test]
    fn empty_old_text_is_refused() {
        let error = apply("a", &[edit("", "x")], u64::MAX).expect_err("empty oldText");
        assert!(matches!(error, EditError::EmptyOldText { index: 0 }));
    }

    #[test]
    fn edits_stop_at_the_cap_before_the_text_is_built() {
        // Each indented new line of a line match takes the first matched line's indentation:
        // 200 lines under an indentation of 1,000 spaces would be 200 kB from 1 kB.
        let content = format!("{}x\n{}", " ".repeat(1000), " y\n".repeat(200));
        let old = format!("x{}", "\n\ty".repeat(200));
        let new = format!("z{}", "\n  w".repeat(200));
        let error = apply(&content, &[edit(&old, &new)], 10_000).expect_err("grown");
        assert!(
            matches!(error, EditError::Grown { max_bytes: 10_000 }),
            "{error}"
        );
        let grown = apply(&content, &[edit(&old, &new)], u64::MAX).expect("no cap");
        assert!(grown.len() > 200_000, "{}", grown.len());
        // Exact replacements: the text may reach the cap, not pass it.
        let at_cap = apply("abc", &[edit("b", "bbbb")], 6).expect("at the cap");
        assert_eq!(at_cap, "abbbbc");
        assert!(matches!(
            apply("abc", &[edit("b", "bbbb")], 5),
            Err(EditError::Grown { max_bytes: 5 })
        ));
        // A line match that lands on the cap exactly is taken.
        assert_eq!(
            apply("  a\nb", &[edit("a ", "cd")], 6).expect("line match at the cap"),
            "  cd\nb"
        );
        assert!(matches!(
            apply("  a\nb", &[edit("a ", "cd")], 5),
            Err(EditError::Grown { max_bytes: 5 })
        ));
    }

    #[test]
    fn a_diff_past_the_cap_is_cut_at_a_line_fenced_and_says_so() {
        let patch = format!("+{}\n+b\n", "\u{1}".repeat(100));
        assert_eq!(answered(patch.clone(), 10_000, true), fenced(&patch));
        let cut = answered(patch, 100, true);
        let (kept, notice) = cut
            .split_once("[forge-filesystem cut this diff")
            .expect("notice");
        // The fence is closed before the notice, and the cut line ended.
        assert!(kept.starts_with("```diff\n+\u{1}"), "{kept:?}");
        assert!(kept.ends_with("\n```\n\n"), "{kept:?}");
        assert!(crate::answer::escaped_size(kept) <= 100, "{kept:?}");
        assert!(notice.contains("nothing was written (dryRun)"), "{notice}");
        assert!(answered("\u{1}".repeat(100), 100, false).contains("the edit was written whole"));
        // Lines that fit whole: the cut falls between two of them.
        let lines = "+abcdefg\n".repeat(30);
        let cut = answered(lines, 100, false);
        let (kept, _) = cut.split_once("[forge-filesystem cut").expect("notice");
        let inside = kept
            .strip_prefix("```diff\n")
            .and_then(|rest| rest.strip_suffix("```\n\n"))
            .expect("fenced");
        assert!(
            !inside.is_empty() && inside.lines().all(|line| line == "+abcdefg"),
            "{inside:?}"
        );
    }

    #[test]
    fn js_whitespace_is_trimmed() {
        assert_eq!(trim_js("\u{feff}\t x \u{a0}"), "x");
        assert_eq!(trim_js("\u{85}x"), "\u{85}x");
        assert_eq!(leading_space("\t  x  "), "\t  ");
    }
}
