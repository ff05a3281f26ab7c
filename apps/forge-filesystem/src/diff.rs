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
pub fn unified_patch(label: &str, old: &str, new: &str) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "Index: {label}\n{SEPARATOR}\n--- {label}\toriginal\n+++ {label}\tmodified\n"
    );
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
            range_start(old_start, old_len),
            range_start(new_start, new_len)
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
    out
}

/// One-based start line; an empty range names the line before it.
fn range_start(start: usize, len: usize) -> usize {
    if len == 0 { start } else { start + 1 }
}

/// Wrap a patch in a fence of backticks longer than any run inside it,
/// tagged `diff`, followed by a blank line.
pub fn fenced(patch: &str) -> String {
    let mut ticks = 3;
    while patch.contains(&"`".repeat(ticks)) {
        ticks += 1;
    }
    let fence = "`".repeat(ticks);
    format!("{fence}diff\n{patch}{fence}\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

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
    }
}
