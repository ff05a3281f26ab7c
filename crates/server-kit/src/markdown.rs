//! Markdown helpers the knowledge servers share (forge-discovery reads a repository's
//! READMEs and SKILL.md files, forge-typesense indexes them): splitting YAML frontmatter
//! from the body, a body's first paragraph, capping text for one-line answers, and the
//! folders a repository walk never enters.

/// `Some((yaml, body))` when `text` (after an optional BOM) starts with a `---` line and a
/// later `---` (or `...`) line closes the block.
pub fn split_frontmatter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first_end = text.find('\n')?;
    if text[..first_end].trim_end() != "---" {
        return None;
    }
    let start = first_end + 1;
    let mut offset = start;
    for line in text[start..].split_inclusive('\n') {
        if matches!(line.trim_end(), "---" | "...") {
            return Some((&text[start..offset], &text[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// `text` cut to at most `max` characters, ending in `…` when cut.
pub fn cap_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some(_) => {
            let kept: String = text.chars().take(max.saturating_sub(1)).collect();
            format!("{}…", kept.trim_end())
        }
    }
}

/// Folder names a repository walk never enters, besides hidden ones (names starting with
/// `.`): build output and dependencies, never knowledge.
pub const SKIPPED_NAMES: [&str; 7] = [
    "node_modules",
    "target",
    "dist",
    "build",
    "out",
    "__pycache__",
    "coverage",
];

/// Whether a walk skips the folder `name` (hidden, or one of [`SKIPPED_NAMES`]).
pub fn is_skipped(name: &str) -> bool {
    name.starts_with('.') || SKIPPED_NAMES.contains(&name)
}

/// The first paragraph of prose, its whitespace collapsed and cut at `max_chars`:
/// headings, blank lines, HTML comments, rules and code fences before it are skipped, and
/// it ends at the next of them.
pub fn first_paragraph(body: &str, max_chars: usize) -> Option<String> {
    let mut lines: Vec<&str> = Vec::new();
    let mut in_fence = false;
    let mut in_comment = false;
    for raw in body.lines() {
        let line = raw.trim();
        if in_comment {
            in_comment = !line.contains("-->");
            continue;
        }
        if line.starts_with("```") || line.starts_with("~~~") {
            if !lines.is_empty() {
                break;
            }
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let is_break =
            line.is_empty() || line.starts_with('#') || is_rule(line) || line.starts_with("<!--");
        if is_break {
            if !lines.is_empty() {
                break;
            }
            in_comment = line.starts_with("<!--") && !line.contains("-->");
            continue;
        }
        lines.push(line);
    }
    if lines.is_empty() {
        return None;
    }
    let text = lines
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    Some(cap_chars(&text, max_chars))
}

/// A thematic break: three or more of one of `-`, `*`, `=`.
fn is_rule(line: &str) -> bool {
    line.len() >= 3
        && (line.chars().all(|c| c == '-')
            || line.chars().all(|c| c == '*')
            || line.chars().all(|c| c == '='))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn frontmatter_splits_only_when_closed() {
        let cases: &[(&str, Option<(&str, &str)>)] = &[
            ("---\nname: a\n---\nbody\n", Some(("name: a\n", "body\n"))),
            ("\u{feff}---\nx: 1\n...\nrest", Some(("x: 1\n", "rest"))),
            ("---\nname: a\nbody\n", None),
            ("# title\n---\n", None),
            ("", None),
        ];
        for (text, expected) in cases {
            assert_eq!(split_frontmatter(text), *expected, "{text:?}");
        }
    }

    #[test]
    fn cap_chars_counts_characters() {
        assert_eq!(cap_chars("héllo", 5), "héllo");
        assert_eq!(cap_chars("héllo wörld", 6), "héllo…");
    }
}
