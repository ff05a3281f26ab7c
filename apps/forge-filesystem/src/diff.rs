//! The unified diff `edit_file` answers with, in the reference's exact shape
//! (the `diff` package's `createTwoFilesPatch`):
//!
//! ```text
//! Index: /ws/notes.md
//! ===================================================================
//! --- /ws/notes.md<TAB>original
//! +++ /ws/notes.md<TAB>modified
//! @@ -1,3 +1,3 @@
//!  a
//! -b
//! +B
//!  c
//! ```
//!
//! (`<TAB>` stands for a tab.) Four lines of context; hunk ranges always carry a count (`-1,1`), and an
//! empty range starts one line earlier (`-0,0`); a line without a final
//! newline is followed by `\ No newline at end of file`. Lines are compared
//! with their newline, so `c` and `c\n` differ. The diff itself comes from
//! `similar` (Myers, with a time limit so a pathological input still ends,
//! then with a valid but not minimal diff).

use std::fmt::Write;
use std::time::Duration;

use similar::{Algorithm, ChangeTag, TextDiff};

/// Lines of context around each change.
const CONTEXT: usize = 4;
/// How long the diff may search for a minimal answer.
const DIFF_TIME_LIMIT: Duration = Duration::from_secs(5);
const SEPARATOR: &str = "===================================================================";

/// The patch from `old` to `new`, both labelled `label`.
///
/// Only the changed window is diffed: the lines both texts share at their
/// start and end, beyond the [`CONTEXT`] lines a hunk shows, cannot appear in
/// the patch, so they are cut before diffing and the line numbers shifted
/// back. On a large file with a small edit this keeps the diff's memory and
/// time to the size of the edit.
pub fn unified_patch(label: &str, old: &str, new: &str) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "Index: {label}\n{SEPARATOR}\n--- {label}\toriginal\n+++ {label}\tmodified\n"
    );
    let window = changed_window(old, new);
    write_hunks(
        &mut out,
        &old[window.start..old.len() - window.end_trim],
        &new[window.start..new.len() - window.end_trim],
        window.skipped_lines,
    );
    out
}

/// The part of two texts worth diffing.
#[derive(Debug, PartialEq, Eq)]
struct Window {
    /// Byte where both windows start (after `skipped_lines` whole lines).
    start: usize,
    skipped_lines: usize,
    /// Bytes cut from the end of both texts (whole shared lines).
    end_trim: usize,
}

fn changed_window(old: &str, new: &str) -> Window {
    let (a, b) = (old.as_bytes(), new.as_bytes());
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    // Whole shared lines at the start: those before the line holding the first difference.
    let shared_start = a[..prefix]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |i| i + 1);
    let shared_lines = a[..shared_start].iter().filter(|&&c| c == b'\n').count();
    let skipped_lines = shared_lines.saturating_sub(CONTEXT);
    let start = nth_line_start(a, skipped_lines);

    // Shared bytes at the end, not reaching into the shared start.
    let room = a.len().min(b.len()) - shared_start;
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(room)
        .take_while(|(x, y)| x == y)
        .count();
    // Whole shared lines at the end: from the first line start inside the shared suffix.
    let from = a.len() - suffix;
    let first_whole = if from == 0 || a[from - 1] == b'\n' {
        Some(from)
    } else {
        a[from..]
            .iter()
            .position(|&c| c == b'\n')
            .map(|i| from + i + 1)
    };
    let end_trim = match first_whole {
        Some(line_start) if line_start < a.len() => {
            // Keep CONTEXT of those lines; cut the rest (they end with the text).
            let keep_end = nth_line_start_from(a, line_start, CONTEXT);
            a.len() - keep_end
        }
        _ => 0,
    };
    Window {
        start,
        skipped_lines,
        end_trim,
    }
}

/// Byte offset where line `n` (0-based) starts.
fn nth_line_start(text: &[u8], n: usize) -> usize {
    nth_line_start_from(text, 0, n)
}

/// Byte offset `n` lines after `from` (or the end).
fn nth_line_start_from(text: &[u8], from: usize, n: usize) -> usize {
    let mut at = from;
    for _ in 0..n {
        match text[at..].iter().position(|&c| c == b'\n') {
            Some(i) => at += i + 1,
            None => return text.len(),
        }
    }
    at
}

/// The hunks of `old` → `new`, line numbers shifted by `offset` lines.
fn write_hunks(out: &mut String, old: &str, new: &str, offset: usize) {
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .timeout(DIFF_TIME_LIMIT)
        .diff_lines(old, new);
    for group in diff.grouped_ops(CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_start = first.old_range().start;
        let old_len = last.old_range().end - old_start;
        let new_start = first.new_range().start;
        let new_len = last.new_range().end - new_start;
        let _ = writeln!(
            out,
            "@@ -{},{old_len} +{},{new_len} @@",
            range_start(old_start + offset, old_len),
            range_start(new_start + offset, new_len)
        );
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    ChangeTag::Equal => ' ',
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                };
                let line = change.value();
                out.push(sign);
                out.push_str(line);
                if change.missing_newline() {
                    out.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
}

/// One-based start line; an empty range names the line before it.
fn range_start(start: usize, len: usize) -> usize {
    if len == 0 { start } else { start + 1 }
}

/// Wrap a patch in a fence of backticks longer than any run inside it,
/// tagged `diff`, followed by a blank line.
///
/// The longest run is found in one pass: searching the patch for ever longer runs costs the
/// square of the longest one (a file of megabytes of backticks took hours).
pub fn fenced(patch: &str) -> String {
    let (mut longest, mut run) = (0usize, 0usize);
    for byte in patch.bytes() {
        run = if byte == b'`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}diff\n{patch}{fence}\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// The patch without windowing, for comparison.
    fn full_patch(old: &str, new: &str) -> String {
        let mut out = String::from(HEADER);
        write_hunks(&mut out, old, new, 0);
        out
    }

    #[test]
    fn windowed_patch_equals_the_full_diff() {
        let lines: Vec<String> = (0..60).map(|i| format!("line {i}\n")).collect();
        let base: String = lines.concat();
        let mut cases: Vec<String> = Vec::new();
        for at in [0, 1, 3, 4, 5, 9, 30, 54, 55, 56, 58, 59] {
            let mut changed = lines.clone();
            changed[at] = format!("changed {at}\n");
            cases.push(changed.concat());
            let mut inserted = lines.clone();
            inserted.insert(at, "new line\n".into());
            cases.push(inserted.concat());
            let mut removed = lines.clone();
            removed.remove(at);
            cases.push(removed.concat());
        }
        let mut two = lines.clone();
        two[10] = "x\n".into();
        two[40] = "y\n".into();
        cases.push(two.concat());
        cases.push(base.trim_end_matches('\n').to_owned());
        cases.push(format!("{base}tail without newline"));
        cases.push(String::new());
        cases.push(base.clone());
        for new in &cases {
            assert_eq!(
                unified_patch("/p", &base, new),
                full_patch(&base, new),
                "{new:?}"
            );
            assert_eq!(
                unified_patch("/p", new, &base),
                full_patch(new, &base),
                "{new:?}"
            );
        }
    }

    const HEADER: &str = "Index: /p\n===================================================================\n--- /p\toriginal\n+++ /p\tmodified\n";

    /// Expected outputs taken from the reference (`diff` 8.0.4,
    /// `createTwoFilesPatch(p, p, old, new, 'original', 'modified')`).
    #[test]
    fn patches_match_the_reference() {
        let numbered = |changed: &[usize]| -> String {
            (1..=20)
                .map(|i| {
                    if changed.contains(&i) {
                        format!("{i}x\n")
                    } else {
                        format!("{i}\n")
                    }
                })
                .collect()
        };
        let cases: Vec<(String, String, &str)> = vec![
            (
                "a\nb\nc".into(),
                "a\nB\nc".into(),
                "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n\\ No newline at end of file\n",
            ),
            ("a\nb\nc\n".into(), "a\nb\nc\n".into(), ""),
            (
                "a\nb".into(),
                "a\nb\nc".into(),
                "@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+b\n+c\n\\ No newline at end of file\n",
            ),
            ("".into(), "x\n".into(), "@@ -0,0 +1,1 @@\n+x\n"),
            ("x\n".into(), "".into(), "@@ -1,1 +0,0 @@\n-x\n"),
            (
                numbered(&[]),
                numbered(&[2, 19]),
                "@@ -1,6 +1,6 @@\n 1\n-2\n+2x\n 3\n 4\n 5\n 6\n@@ -15,6 +15,6 @@\n 15\n 16\n 17\n 18\n-19\n+19x\n 20\n",
            ),
            (
                "a\nb\nc\n".into(),
                "a\nc\n".into(),
                "@@ -1,3 +1,2 @@\n a\n-b\n c\n",
            ),
            (
                "a\nb\nc\nd\n".into(),
                "a\nX\nY\nd\n".into(),
                "@@ -1,4 +1,4 @@\n a\n-b\n-c\n+X\n+Y\n d\n",
            ),
            (
                "a\n".into(),
                "b".into(),
                "@@ -1,1 +1,1 @@\n-a\n+b\n\\ No newline at end of file\n",
            ),
        ];
        for (old, new, hunks) in cases {
            assert_eq!(
                unified_patch("/p", &old, &new),
                format!("{HEADER}{hunks}"),
                "{old:?} -> {new:?}"
            );
        }
    }

    #[test]
    fn fence_outgrows_backticks_inside() {
        assert_eq!(fenced("x\n"), "```diff\nx\n```\n\n");
        assert_eq!(fenced("a ``` b\n"), "````diff\na ``` b\n````\n\n");
        assert_eq!(fenced("a ```` b\n"), "`````diff\na ```` b\n`````\n\n");
        assert_eq!(fenced("a `` b\n"), "```diff\na `` b\n```\n\n");
        assert_eq!(fenced("`` ```` `\n"), "`````diff\n`` ```` `\n`````\n\n");
    }
}
