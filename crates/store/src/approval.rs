//! When a bot's tool call waits for a person: [`ApprovalPolicy`], kept per binding (for the
//! server's tools) and per bot (for its native tools), and the one rule that reads it,
//! [`ApprovalPolicy::asks`].
//!
//! On the wire (API, store) a policy is `"never"`, `"always"`, `"writes"` (ask unless the
//! tool declares `readOnlyHint: true`) or a list of tool-name globs to ask for (`*` any run of
//! characters, `?` one character; matched against the tool's own name, not the qualified one).
//! A glob asks for a tool when it matches the tool's own name or the name the model and the
//! chat show for it (each character outside `[A-Za-z0-9_-]` written `_`), in either case
//! ignoring letter case: a server's `Delete Repo` is asked for by `delete_*`. A policy asks
//! more often this way, never less.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Globs one policy may list at most.
pub const MAX_APPROVAL_GLOBS: usize = 100;

/// When a call of a tool is held until a person approves it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ApprovalPolicy {
    /// Never: the tool runs when the model calls it.
    #[default]
    Never,
    /// Every call asks.
    Always,
    /// Every call asks unless the tool declares itself read-only (`readOnlyHint: true`).
    Writes,
    /// Calls of the tools whose names match one of these globs ask.
    Tools(Vec<String>),
}

impl ApprovalPolicy {
    /// Whether a call of tool `name` (its own name), which declares `read_only`, asks first.
    pub fn asks(&self, name: &str, read_only: bool) -> bool {
        match self {
            Self::Never => false,
            Self::Always => true,
            Self::Writes => !read_only,
            Self::Tools(globs) => {
                let shown: String = name
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                            c
                        } else {
                            '_'
                        }
                    })
                    .collect();
                let names = [
                    name.to_owned(),
                    shown.to_lowercase(),
                    name.to_lowercase(),
                    shown,
                ];
                globs.iter().any(|glob| {
                    let lower = glob.to_lowercase();
                    names
                        .iter()
                        .any(|name| glob_matches(glob, name) || glob_matches(&lower, name))
                })
            }
        }
    }

    /// The policy as the API writes it.
    pub fn to_value(&self) -> serde_json::Value {
        match self {
            Self::Never => "never".into(),
            Self::Always => "always".into(),
            Self::Writes => "writes".into(),
            Self::Tools(globs) => globs.clone().into(),
        }
    }

    /// A policy from the API's JSON; `None` for anything else.
    pub fn from_value(value: &serde_json::Value) -> Option<Self> {
        match value {
            serde_json::Value::String(word) => match word.as_str() {
                "never" => Some(Self::Never),
                "always" => Some(Self::Always),
                "writes" => Some(Self::Writes),
                _ => None,
            },
            serde_json::Value::Array(items) => items
                .iter()
                .map(|item| item.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .map(Self::Tools),
            _ => None,
        }
    }
}

impl Serialize for ApprovalPolicy {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ApprovalPolicy {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Self::from_value(&value).ok_or_else(|| {
            serde::de::Error::custom(
                "an approval policy is \"never\", \"always\", \"writes\" or a list of tool-name globs",
            )
        })
    }
}

/// `name` matches `glob` whole: `*` any run of characters (none included), `?` exactly one.
pub fn glob_matches(glob: &str, name: &str) -> bool {
    let glob: Vec<char> = glob.chars().collect();
    let name: Vec<char> = name.chars().collect();
    // Iterative wildcard matching with one backtrack point (the last `*`).
    let (mut g, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if g < glob.len() && (glob[g] == '?' || glob[g] == name[n]) {
            g += 1;
            n += 1;
        } else if g < glob.len() && glob[g] == '*' {
            star = Some((g, n));
            g += 1;
        } else if let Some((star_g, star_n)) = star {
            g = star_g + 1;
            n = star_n + 1;
            star = Some((star_g, star_n + 1));
        } else {
            return false;
        }
    }
    glob[g..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn globs_match_whole_names() {
        let cases = [
            ("run", "run", true),
            ("run", "runner", false),
            ("*", "", true),
            ("*", "anything", true),
            ("empty_*", "empty_trash", true),
            ("empty_*", "trash_file", false),
            ("*_file", "trash_file", true),
            ("?un", "run", true),
            ("?un", "rrun", false),
            ("a*b*c", "a-b-b-c", true),
            ("a*b*c", "a-c-b", false),
            ("**", "x", true),
            ("é*", "écrire", true),
        ];
        for (glob, name, expected) in cases {
            assert_eq!(glob_matches(glob, name), expected, "{glob} ~ {name}");
        }
    }

    #[test]
    fn each_policy_asks_as_documented() {
        let globs = ApprovalPolicy::Tools(vec!["empty_*".into()]);
        let cases = [
            (ApprovalPolicy::Never, "write_file", false, false),
            (ApprovalPolicy::Always, "read_text_file", true, true),
            (ApprovalPolicy::Writes, "read_text_file", true, false),
            (ApprovalPolicy::Writes, "run", false, true),
            (globs.clone(), "empty_trash", false, true),
            (globs.clone(), "write_file", false, false),
            // The name as shown (`Empty_Trash`, `empty_trash`), in any case.
            (globs.clone(), "Empty Trash", false, true),
            (globs.clone(), "EMPTY.TRASH", false, true),
            (globs.clone(), "empty", false, false),
            (
                ApprovalPolicy::Tools(vec!["DELETE repo".into()]),
                "delete REPO",
                false,
                true,
            ),
            (
                ApprovalPolicy::Tools(vec!["del*".into()]),
                "remove",
                true,
                false,
            ),
        ];
        for (policy, name, read_only, expected) in cases {
            assert_eq!(policy.asks(name, read_only), expected, "{policy:?} {name}");
        }
    }

    #[test]
    fn policies_round_trip_as_json_and_refuse_other_shapes() {
        for (policy, value) in [
            (ApprovalPolicy::Never, json!("never")),
            (ApprovalPolicy::Always, json!("always")),
            (ApprovalPolicy::Writes, json!("writes")),
            (ApprovalPolicy::Tools(vec!["run".into()]), json!(["run"])),
        ] {
            assert_eq!(serde_json::to_value(&policy).ok(), Some(value.clone()));
            assert_eq!(
                serde_json::from_value::<ApprovalPolicy>(value).ok(),
                Some(policy)
            );
        }
        for bad in [
            json!("sometimes"),
            json!(3),
            json!([1]),
            json!({"tools": []}),
        ] {
            assert!(
                serde_json::from_value::<ApprovalPolicy>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }
}
