//! Markdown files as the repository writes them: optional YAML frontmatter
//! between `---` lines, then the body.
//!
//! Owns splitting the two, reading scalar frontmatter fields (`summary`,
//! `phase`, the Agent Skills `name` and `description`), finding a document's
//! summary (server-kit's first paragraph, at this server's cap), and the `Phase:` line
//! used when the frontmatter has none.

use serde_norway::Value;
use server_kit::markdown::first_paragraph;
pub use server_kit::markdown::{cap_chars, split_frontmatter};

/// The longest summary we show; longer paragraphs end in `…`.
pub const SUMMARY_MAX_CHARS: usize = 240;

/// Longest skill description kept, in characters: the Agent Skills format's own limit for
/// `description` (a longer one is cut, ending in `…`).
pub const DESCRIPTION_MAX_CHARS: usize = 1024;

/// A markdown file split into its frontmatter and body.
#[derive(Debug, Default)]
pub struct Document<'a> {
    pub frontmatter: Frontmatter,
    pub body: &'a str,
}

impl<'a> Document<'a> {
    pub fn parse(text: &'a str) -> Self {
        match split_frontmatter(text) {
            Some((yaml, body)) => Document {
                frontmatter: Frontmatter::parse(yaml),
                body,
            },
            None => Document {
                frontmatter: Frontmatter::default(),
                body: text.strip_prefix('\u{feff}').unwrap_or(text),
            },
        }
    }

    /// The frontmatter `summary` (or `description`), else the first paragraph
    /// of the body, capped at [`SUMMARY_MAX_CHARS`].
    pub fn summary(&self) -> Option<String> {
        self.frontmatter
            .text("summary")
            .or_else(|| self.frontmatter.text("description"))
            .map(|text| cap_chars(&collapse_whitespace(&text), SUMMARY_MAX_CHARS))
            .or_else(|| first_paragraph(self.body, SUMMARY_MAX_CHARS))
    }
}

/// The YAML mapping at the top of a markdown file. Invalid YAML (or YAML
/// that is not a mapping) reads as an empty frontmatter with `error` set.
#[derive(Debug, Default)]
pub struct Frontmatter {
    fields: serde_norway::Mapping,
    pub error: Option<String>,
}

impl Frontmatter {
    pub fn parse(yaml: &str) -> Self {
        match serde_norway::from_str::<Value>(yaml) {
            Ok(Value::Mapping(fields)) => Frontmatter {
                fields,
                error: None,
            },
            Ok(Value::Null) => Frontmatter::default(),
            Ok(_) => Frontmatter {
                fields: serde_norway::Mapping::new(),
                error: Some("the frontmatter is not a key: value mapping".to_owned()),
            },
            Err(error) => Frontmatter {
                fields: serde_norway::Mapping::new(),
                error: Some(error.to_string()),
            },
        }
    }

    /// A field as text: strings, numbers and booleans as written, a list of
    /// those joined by `, `. Empty or structured values read as `None`.
    pub fn text(&self, key: &str) -> Option<String> {
        let text = match self.fields.get(key)? {
            Value::Sequence(items) => items
                .iter()
                .filter_map(scalar_text)
                .collect::<Vec<_>>()
                .join(", "),
            other => scalar_text(other)?,
        };
        let trimmed = text.trim();
        (!trimmed.is_empty()).then(|| trimmed.to_owned())
    }
}

fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

/// The value of a `Phase: X` line in the body (also `**Phase:** X`,
/// `- Phase: X`), the fallback when the frontmatter has no `phase`.
pub fn phase_line(body: &str) -> Option<String> {
    body.lines().find_map(|raw| {
        let line: String = raw.chars().filter(|c| *c != '*' && *c != '_').collect();
        let line = line.trim_start();
        let line = line
            .strip_prefix("- ")
            .or_else(|| line.strip_prefix("+ "))
            .unwrap_or(line)
            .trim_start();
        let head = line.get(..5)?;
        if !head.eq_ignore_ascii_case("phase") {
            return None;
        }
        let value = line[5..].trim_start().strip_prefix(':')?.trim();
        (!value.is_empty()).then(|| value.to_owned())
    })
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn frontmatter_is_split_from_the_body() {
        let cases: &[(&str, Option<(&str, &str)>)] = &[
            ("---\na: 1\n---\nbody\n", Some(("a: 1\n", "body\n"))),
            ("---\r\na: 1\r\n---\r\nbody", Some(("a: 1\r\n", "body"))),
            ("\u{feff}---\na: 1\n...\nbody", Some(("a: 1\n", "body"))),
            ("---\n---\nbody", Some(("", "body"))),
            ("---\na: 1\nno closing line\n", None),
            ("# Title\n---\n", None),
            ("", None),
        ];
        for (text, expected) in cases {
            assert_eq!(split_frontmatter(text), *expected, "for {text:?}");
        }
    }

    #[test]
    fn frontmatter_fields_read_as_text() {
        let front = Frontmatter::parse(
            "name: pdf-tools\nphase: 2\ndraft: true\nowners: [ana, bo]\ndescription: >\n  Folded\n  text.\nempty: ''\nnested: {a: 1}\n",
        );
        let read: Vec<Option<String>> = [
            "name",
            "phase",
            "draft",
            "owners",
            "description",
            "empty",
            "nested",
            "missing",
        ]
        .iter()
        .map(|key| front.text(key))
        .collect();
        assert_eq!(
            read,
            vec![
                Some("pdf-tools".into()),
                Some("2".into()),
                Some("true".into()),
                Some("ana, bo".into()),
                Some("Folded text.".into()),
                None,
                None,
                None,
            ]
        );
        assert_eq!(front.error, None);
    }

    #[test]
    fn invalid_frontmatter_is_empty_with_an_error() {
        let front = Frontmatter::parse("name: [unclosed\n");
        assert_eq!(front.text("name"), None);
        assert!(front.error.is_some());
        let list = Frontmatter::parse("- a\n- b\n");
        assert_eq!(
            list.error.as_deref(),
            Some("the frontmatter is not a key: value mapping")
        );
    }

    #[test]
    fn summary_prefers_frontmatter_then_first_paragraph() {
        let cases = [
            (
                "---\nsummary: From the front.\n---\n# T\n\nBody.\n",
                Some("From the front."),
            ),
            (
                "---\ndescription: Described.\n---\nBody.\n",
                Some("Described."),
            ),
            (
                "# Title\n\n<!-- note\nmore -->\n\n```\ncode\n```\n\nFirst  line\nsecond line.\n\nNext.",
                Some("First line second line."),
            ),
            ("# Only a heading\n\n---\n", None),
            ("", None),
        ];
        for (text, expected) in cases {
            assert_eq!(
                Document::parse(text).summary().as_deref(),
                expected,
                "for {text:?}"
            );
        }
    }

    #[test]
    fn phase_line_accepts_common_spellings() {
        let cases = [
            ("Phase: Build", Some("Build")),
            ("**Phase:** Design review", Some("Design review")),
            ("- phase : Planning", Some("Planning")),
            ("Phases are listed below", None),
            ("Phase:", None),
            ("The phase: is not at the start", None),
        ];
        for (text, expected) in cases {
            assert_eq!(phase_line(text).as_deref(), expected, "for {text:?}");
        }
    }

    #[test]
    fn long_text_is_capped_on_a_char_boundary() {
        assert_eq!(cap_chars("héllo wörld", 5), "héll…");
        assert_eq!(cap_chars("short", 5), "short");
    }
}
