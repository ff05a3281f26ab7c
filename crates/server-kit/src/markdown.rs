//! Markdown helpers the knowledge servers share (forge-discovery reads a repository's
//! READMEs and SKILL.md files, forge-typesense indexes them): splitting YAML frontmatter
//! from the body, and capping text for one-line answers.

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
