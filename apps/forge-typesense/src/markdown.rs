//! Reading a markdown file the way the index stores it: YAML frontmatter
//! (between a first `---` line and a closing `---` or `...`), the body, the
//! first `#` heading and the first paragraph.

use serde_norway::Value;
pub use server_kit::markdown::split_frontmatter;

/// Summaries taken from a first paragraph stop at this many characters.
pub const SUMMARY_MAX_CHARS: usize = 300;

/// A markdown file split into frontmatter fields and body.
#[derive(Debug, Default)]
pub struct Markdown<'a> {
    fields: serde_norway::Mapping,
    pub body: &'a str,
}

impl<'a> Markdown<'a> {
    /// Invalid or non-mapping YAML reads as no frontmatter; the body is then
    /// what follows the block all the same.
    pub fn parse(text: &'a str) -> Self {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        match split_frontmatter(text) {
            Some((yaml, body)) => Markdown {
                fields: match serde_norway::from_str::<Value>(yaml) {
                    Ok(Value::Mapping(fields)) => fields,
                    _ => serde_norway::Mapping::new(),
                },
                body,
            },
            None => Markdown {
                fields: serde_norway::Mapping::new(),
                body: text,
            },
        }
    }

    /// A frontmatter field as text: scalars as written, lists of scalars
    /// joined by `, `; empty or structured values are `None`.
    pub fn field(&self, key: &str) -> Option<String> {
        let text = match self.fields.get(key)? {
            Value::Sequence(items) => items
                .iter()
                .filter_map(scalar)
                .collect::<Vec<_>>()
                .join(", "),
            other => scalar(other)?,
        };
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        (!text.is_empty()).then_some(text)
    }

    /// The text of the first ATX heading (`# Title`, any level).
    pub fn first_heading(&self) -> Option<String> {
        self.body.lines().find_map(|line| {
            let line = line.trim();
            let title = line.strip_prefix('#')?.trim_start_matches('#');
            if !title.is_empty() && !title.starts_with(' ') {
                return None;
            }
            let title = title.trim().trim_end_matches('#').trim();
            (!title.is_empty()).then(|| title.to_owned())
        })
    }

    /// The first paragraph of prose, cut at [`SUMMARY_MAX_CHARS`] (server-kit's rule).
    pub fn first_paragraph(&self) -> Option<String> {
        server_kit::markdown::first_paragraph(self.body, SUMMARY_MAX_CHARS)
    }
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

/// At most `max` bytes of `text`, cut on a character boundary.
pub fn cap_bytes(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn frontmatter_fields_heading_and_paragraph() {
        let doc = Markdown::parse(
            "---\ntitle: Plan\nowner: [ana, bo]\nphase: 2\nnested: {a: 1}\n---\n<!-- c\n-->\n## The  plan ##\n\nFirst\nline.\n\nSecond.\n",
        );
        assert_eq!(
            (
                doc.field("title"),
                doc.field("owner"),
                doc.field("phase"),
                doc.field("nested"),
                doc.first_heading(),
                doc.first_paragraph()
            ),
            (
                Some("Plan".into()),
                Some("ana, bo".into()),
                Some("2".into()),
                None,
                Some("The  plan".into()),
                Some("First line.".into())
            )
        );
    }

    #[test]
    fn bad_or_missing_frontmatter_reads_as_none() {
        let bad = Markdown::parse("---\ntitle: [unclosed\n---\nBody.\n");
        assert_eq!((bad.field("title"), bad.body), (None, "Body.\n"));
        let none = Markdown::parse("#hashtag\n\nText.");
        assert_eq!(
            (
                none.field("title"),
                none.first_heading(),
                none.first_paragraph()
            ),
            (None, None, Some("Text.".into()))
        );
    }

    #[test]
    fn caps_respect_character_boundaries() {
        assert_eq!(cap_bytes("héllo", 2), "h");
        assert_eq!(cap_bytes("héllo", 3), "hé");
        assert_eq!(server_kit::markdown::cap_chars("abcdef", 4), "abc…");
    }
}
