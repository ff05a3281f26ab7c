//! Trashed names: `__YYYY-MM-DDTHH-MM-SS` (UTC) added before the extension,
//! and read back off again.
//!
//! - `Old_Doc.md` → `Old_Doc__2026-03-14T18-30-00.md`
//! - `archive.tar.gz` → `archive.tar__2026-03-14T18-30-00.gz` (the extension
//!   is what follows the last dot, as Python's `os.path.splitext` says)
//! - `Makefile`, `.env` → suffix at the end (`.env__2026-03-14T18-30-00`):
//!   leading dots do not start an extension
//! - a directory → suffix at the end (`Architecture__2026-03-14T18-30-00`)
//! - the second name taken in the same second gets a counter:
//!   `Old_Doc__2026-03-14T18-30-00-2.md`, then `-3`, …
//!
//! Reading a name back takes the last such suffix that gives the name again
//! when what it leaves is trashed at its time, so a name that already held a
//! timestamp survives the round trip.

use std::sync::LazyLock;

use jiff::civil::DateTime;
use regex::Regex;

/// The time format of the suffix.
const STAMP_FORMAT: &str = "%Y-%m-%dT%H-%M-%S";

/// A suffix at the start of the text: `__` and the stamp, and a counter.
static SUFFIX: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"^__(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})T(?P<h>\d{2})-(?P<mi>\d{2})-(?P<s>\d{2})(?:-(?P<n>[1-9]\d*))?",
    )
    .ok()
});

/// Whether the trashed thing is a file (anything but a directory) or a folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    File,
    Dir,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Dir => "dir",
        }
    }
}

/// The name `original` gets in the trash at `time` (UTC); `counter` 1 is the
/// plain name, 2 and up add `-N`.
pub fn trashed_name(original: &str, kind: Kind, time: DateTime, counter: u32) -> String {
    let stamp = time.strftime(STAMP_FORMAT).to_string();
    let suffix = if counter > 1 {
        format!("__{stamp}-{counter}")
    } else {
        format!("__{stamp}")
    };
    let (stem, extension) = match kind {
        Kind::Dir => (original, ""),
        Kind::File => split_extension(original),
    };
    format!("{stem}{suffix}{extension}")
}

/// `("archive.tar", ".gz")`; `(".env", "")`; `("Makefile", "")`.
fn split_extension(name: &str) -> (&str, &str) {
    let leading_dots = name.len() - name.trim_start_matches('.').len();
    match name[leading_dots..].rfind('.') {
        Some(at) => name.split_at(leading_dots + at),
        None => (name, ""),
    }
}

/// A trashed name read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedName {
    /// The name before it was trashed.
    pub original: String,
    /// When it was trashed (UTC, to the second).
    pub trashed_at: DateTime,
    /// 1 for the plain name, N for `-N`.
    pub counter: u32,
}

/// Read a trashed name of a `kind` back; `None` when it carries no valid suffix. Of the
/// suffixes a name may hold (a name trashed may already have held one), the one read is the
/// last that gives the name again when the original it leaves is trashed at its time: so
/// `a__<t1>.b__<t0>` (the file `a.b__<t0>`, trashed at `t1`) reads as that file, not as
/// `a__<t1>.b` trashed at `t0`, which would be trashed as `a__<t1>__<t0>.b`.
pub fn parse_trashed_name(name: &str, kind: Kind) -> Option<ParsedName> {
    let suffix = SUFFIX.as_ref()?;
    // Every `__`, overlapping ones included (`a___<t>` is `a_` trashed), the last first.
    (0..name.len())
        .rev()
        .filter(|&at| name.is_char_boundary(at) && name[at..].starts_with("__"))
        .filter_map(|at| {
            let captures = suffix.captures(&name[at..])?;
            let stem = &name[..at];
            let rest = &name[at + captures.get(0)?.end()..];
            let number = |key: &str| -> Option<i32> { captures.name(key)?.as_str().parse().ok() };
            let trashed_at = DateTime::new(
                i16::try_from(number("y")?).ok()?,
                i8::try_from(number("mo")?).ok()?,
                i8::try_from(number("d")?).ok()?,
                i8::try_from(number("h")?).ok()?,
                i8::try_from(number("mi")?).ok()?,
                i8::try_from(number("s")?).ok()?,
                0,
            )
            .ok()?;
            let counter = match captures.name("n") {
                Some(n) => n.as_str().parse().ok()?,
                None => 1,
            };
            if stem.is_empty() {
                return None;
            }
            let original = format!("{stem}{rest}");
            // `.` and `..` name no entry of their own: restored, they would land elsewhere.
            if original == "." || original == ".." {
                return None;
            }
            (trashed_name(&original, kind, trashed_at, counter) == name).then_some(ParsedName {
                original,
                trashed_at,
                counter,
            })
        })
        .next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;
    use pretty_assertions::assert_eq;

    fn at() -> DateTime {
        date(2026, 3, 14).at(18, 30, 0, 0)
    }

    #[test]
    fn dot_names_are_not_read_back() {
        for kind in [Kind::File, Kind::Dir] {
            for name in ["..__2026-03-14T18-30-00", ".__2026-03-14T18-30-00"] {
                assert_eq!(parse_trashed_name(name, kind), None, "{name}");
            }
        }
        assert_eq!(
            parse_trashed_name("...__2026-03-14T18-30-00", Kind::Dir).map(|p| p.original),
            Some("...".to_owned())
        );
    }

    #[test]
    fn names_round_trip() {
        let cases = [
            (
                "Old_Doc.md",
                Kind::File,
                1,
                "Old_Doc__2026-03-14T18-30-00.md",
            ),
            (
                "archive.tar.gz",
                Kind::File,
                1,
                "archive.tar__2026-03-14T18-30-00.gz",
            ),
            ("Makefile", Kind::File, 1, "Makefile__2026-03-14T18-30-00"),
            (".env", Kind::File, 1, ".env__2026-03-14T18-30-00"),
            (
                ".env.local",
                Kind::File,
                1,
                ".env__2026-03-14T18-30-00.local",
            ),
            ("..odd", Kind::File, 1, "..odd__2026-03-14T18-30-00"),
            ("trailing.", Kind::File, 1, "trailing__2026-03-14T18-30-00."),
            (
                "Architecture",
                Kind::Dir,
                1,
                "Architecture__2026-03-14T18-30-00",
            ),
            ("v1.2", Kind::Dir, 1, "v1.2__2026-03-14T18-30-00"),
            (
                "Old_Doc.md",
                Kind::File,
                2,
                "Old_Doc__2026-03-14T18-30-00-2.md",
            ),
            (
                "Old_Doc.md",
                Kind::File,
                12,
                "Old_Doc__2026-03-14T18-30-00-12.md",
            ),
            (
                "log__2020-01-01T00-00-00.txt",
                Kind::File,
                1,
                "log__2020-01-01T00-00-00__2026-03-14T18-30-00.txt",
            ),
            ("a_", Kind::File, 1, "a___2026-03-14T18-30-00"),
            (
                "a.b__2026-01-01T00-00-00",
                Kind::File,
                1,
                "a__2026-03-14T18-30-00.b__2026-01-01T00-00-00",
            ),
            (
                "a__2026-03-14T18-30-00.b",
                Kind::Dir,
                1,
                "a__2026-03-14T18-30-00.b__2026-03-14T18-30-00",
            ),
        ];
        for (original, kind, counter, trashed) in cases {
            assert_eq!(
                trashed_name(original, kind, at(), counter),
                trashed,
                "{original}"
            );
            assert_eq!(
                parse_trashed_name(trashed, kind),
                Some(ParsedName {
                    original: original.to_owned(),
                    trashed_at: at(),
                    counter,
                }),
                "{trashed}"
            );
        }
    }

    #[test]
    fn names_without_a_valid_suffix_are_not_trashed_names() {
        for name in [
            "notes.md",
            "Architecture",
            "__2026-03-14T18-30-00.md",
            "x__2026-13-14T18-30-00.md",
            "x__2026-03-14T18-30-00.md.bak",
            "x__2026-03-14T18-30-00-0",
        ] {
            for kind in [Kind::File, Kind::Dir] {
                assert_eq!(parse_trashed_name(name, kind), None, "{name}");
            }
        }
    }
}
