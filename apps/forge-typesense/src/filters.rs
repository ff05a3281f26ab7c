//! Typesense `filter_by` strings built from the tool's filter parameters.
//!
//! Each value is quoted with backticks (`department:=`Forge``), so commas,
//! brackets, `&&`, `||` and `:=` inside a value are part of the value and
//! cannot add a clause. A backtick cannot be quoted in Typesense 0.24's
//! filter syntax, so a value holding one is refused (a tool error) rather
//! than altered.

/// A filter value that cannot be expressed safely.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error(
        "The {field} filter contains a backtick (`), which a Typesense filter value cannot hold; remove it and search again."
    )]
    Backtick { field: &'static str },
}

/// `field:=`value`` — an exact match on one value.
pub fn exact(field: &'static str, value: &str) -> Result<String, FilterError> {
    if value.contains('`') {
        return Err(FilterError::Backtick { field });
    }
    Ok(format!("{field}:=`{value}`"))
}

/// The clauses of the given `(field, value)` pairs, in order, joined with
/// ` && `. Unset and empty (or blank) values add nothing; `None` when no
/// clause remains.
pub fn filter_by(pairs: &[(&'static str, Option<&str>)]) -> Result<Option<String>, FilterError> {
    let mut clauses = Vec::new();
    for (field, value) in pairs {
        if let Some(value) = value.filter(|v| !v.trim().is_empty()) {
            clauses.push(exact(field, value)?);
        }
    }
    Ok((!clauses.is_empty()).then(|| clauses.join(" && ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn values_are_quoted_so_they_cannot_add_clauses() {
        let cases: &[(&str, Result<&str, FilterError>)] = &[
            ("Forge", Ok("department:=`Forge`")),
            (
                "Forge && visibility:=private",
                Ok("department:=`Forge && visibility:=private`"),
            ),
            (
                "Forge || owner:=ana",
                Ok("department:=`Forge || owner:=ana`"),
            ),
            ("[Forge,Sales]", Ok("department:=`[Forge,Sales]`")),
            ("a, b", Ok("department:=`a, b`")),
            ("Forge)(", Ok("department:=`Forge)(`")),
            ("R&D", Ok("department:=`R&D`")),
            ("\"quoted\"", Ok("department:=`\"quoted\"`")),
            ("naïve", Ok("department:=`naïve`")),
            (
                "x` && visibility:=`private",
                Err(FilterError::Backtick {
                    field: "department",
                }),
            ),
            (
                "`",
                Err(FilterError::Backtick {
                    field: "department",
                }),
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(
                exact("department", value),
                expected.clone().map(str::to_owned),
                "for {value:?}"
            );
        }
    }

    #[test]
    fn clauses_join_in_order_and_skip_unset_values() {
        type Pairs<'a> = &'a [(&'static str, Option<&'a str>)];
        let cases: &[(Pairs, Option<&str>)] = &[
            (&[("department", None), ("project", None)], None),
            (
                &[("department", Some("Forge")), ("project", None)],
                Some("department:=`Forge`"),
            ),
            (
                &[("department", Some("Forge")), ("project", Some("Taxonomy"))],
                Some("department:=`Forge` && project:=`Taxonomy`"),
            ),
            (
                &[("department", Some("  ")), ("owner", Some("ana"))],
                Some("owner:=`ana`"),
            ),
        ];
        for (pairs, expected) in cases {
            assert_eq!(
                filter_by(pairs).expect("no backticks").as_deref(),
                *expected,
                "for {pairs:?}"
            );
        }
        let error = filter_by(&[("department", Some("Forge")), ("owner", Some("a`b"))])
            .expect_err("backtick");
        assert_eq!(
            error.to_string(),
            "The owner filter contains a backtick (`), which a Typesense filter value cannot hold; remove it and search again."
        );
    }
}
