//! `${VAR}` references in a server's env values and a remote server's header values: the
//! syntax, owned here; the store checks values against it when they are written, the
//! lifecycle resolves references when a server starts.
//!
//! A value is literal text with `${NAME}` references, `NAME` matching `[A-Za-z_][A-Za-z0-9_]*`.
//! A `$` not followed by `{` is literal. An unclosed `${` or a bad name is malformed.

/// One piece of an env value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvSegment<'a> {
    Literal(&'a str),
    Reference(&'a str),
}

/// A value with an unclosed `${` or a reference whose name is not a variable name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MalformedReference;

/// Split `value` into literal text and `${NAME}` references.
pub fn parse_env_value(value: &str) -> Result<Vec<EnvSegment<'_>>, MalformedReference> {
    let mut segments = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        if start > 0 {
            segments.push(EnvSegment::Literal(&rest[..start]));
        }
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or(MalformedReference)?;
        let name = &after[..end];
        if !is_variable_name(name) {
            return Err(MalformedReference);
        }
        segments.push(EnvSegment::Reference(name));
        rest = &after[end + 1..];
    }
    if !rest.is_empty() {
        segments.push(EnvSegment::Literal(rest));
    }
    Ok(segments)
}

/// `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(first) if first.is_ascii_alphabetic() || first == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn splits_literals_and_references() {
        let cases: &[(&str, Result<Vec<EnvSegment<'_>>, MalformedReference>)] = &[
            ("", Ok(vec![])),
            ("plain", Ok(vec![EnvSegment::Literal("plain")])),
            ("${A}", Ok(vec![EnvSegment::Reference("A")])),
            (
                "http://${HOST}:${PORT}/x",
                Ok(vec![
                    EnvSegment::Literal("http://"),
                    EnvSegment::Reference("HOST"),
                    EnvSegment::Literal(":"),
                    EnvSegment::Reference("PORT"),
                    EnvSegment::Literal("/x"),
                ]),
            ),
            ("$HOME and $", Ok(vec![EnvSegment::Literal("$HOME and $")])),
            ("${UNCLOSED", Err(MalformedReference)),
            ("${}", Err(MalformedReference)),
            ("${input:token}", Err(MalformedReference)),
            ("${1X}", Err(MalformedReference)),
        ];
        for (value, expected) in cases {
            assert_eq!(&parse_env_value(value), expected, "value {value:?}");
        }
    }
}
