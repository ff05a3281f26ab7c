//! Qualified names of MCP tools as the model sees them: `server__tool`,
//! sanitised to `[a-zA-Z0-9_-]`, at most 64 characters. Owns
//! [`QualifiedToolNames`], the two-way map between qualified names and
//! (server, raw tool name) routes. Routing always goes through the reverse
//! map: a name is never split or matched by prefix.
//!
//! Rules, in order:
//! 1. each part is sanitised: every character outside `[a-zA-Z0-9_-]`
//!    becomes `_`;
//! 2. the name is `server__tool`;
//! 3. a name longer than 64 characters keeps its first 55, less any `_` they end
//!    with, and gets `_` plus 8 hex digits of a SHA-256 of the raw server and tool
//!    names (so a hashed name holds `__` only where its own server's part ends: it is
//!    never another server's plain name);
//! 4. routes are named in sorted (server, tool) order; a route whose name is
//!    already taken (by an earlier route or a reserved native tool name) gets
//!    the hashed form of rule 3 even when short, with a counter mixed into
//!    the hash if that too is taken. The result depends only on the set of
//!    routes, not on the order they were given in.
//!
//! The store refuses server names that would make rule 2 ambiguous
//! (`store::validate::unambiguous_server_name`: no `_` or `.` after one another or at
//! the end, and no two servers written alike): the first `__` of a plain name is then
//! where its server's part ends (and a hashed name has no `__` past it, rule 3), so a
//! server's new tool can only ever take a name from another tool of the same server,
//! never another server's.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

/// Longest tool name OpenAI and Anthropic both accept.
pub const MAX_TOOL_NAME_LEN: usize = 64;
/// Between the server and the tool part.
pub const SEPARATOR: &str = "__";
const HASH_LEN: usize = 8;

/// Where a qualified name leads: a server and the tool's raw name there.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ToolRoute {
    pub server: String,
    pub tool: String,
}

impl ToolRoute {
    pub fn new(server: impl Into<String>, tool: impl Into<String>) -> Self {
        Self {
            server: server.into(),
            tool: tool.into(),
        }
    }
}

/// The qualified names of a set of MCP tools, both ways.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QualifiedToolNames {
    by_route: BTreeMap<ToolRoute, String>,
    by_name: BTreeMap<String, ToolRoute>,
}

impl QualifiedToolNames {
    /// Names `routes`; duplicates are named once.
    pub fn build(routes: impl IntoIterator<Item = ToolRoute>) -> Self {
        Self::build_with_reserved(std::iter::empty::<&str>(), routes)
    }

    /// Names `routes` without ever producing one of `reserved` (the native
    /// tool names of the bot).
    pub fn build_with_reserved<'a>(
        reserved: impl IntoIterator<Item = &'a str>,
        routes: impl IntoIterator<Item = ToolRoute>,
    ) -> Self {
        let sorted: BTreeSet<ToolRoute> = routes.into_iter().collect();
        let mut taken: BTreeSet<String> = reserved.into_iter().map(str::to_owned).collect();
        let mut names = Self::default();
        for route in sorted {
            let name = (0u32..)
                .map(|attempt| candidate(&route, attempt))
                .find(|name| !taken.contains(name))
                .unwrap_or_default();
            taken.insert(name.clone());
            names.by_name.insert(name.clone(), route.clone());
            names.by_route.insert(route, name);
        }
        names
    }

    /// The qualified name of a server's tool.
    pub fn qualified(&self, server: &str, tool: &str) -> Option<&str> {
        self.by_route
            .get(&ToolRoute::new(server, tool))
            .map(String::as_str)
    }

    /// Where a qualified name leads.
    pub fn resolve(&self, qualified: &str) -> Option<&ToolRoute> {
        self.by_name.get(qualified)
    }

    /// Every (qualified name, route), sorted by qualified name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ToolRoute)> {
        self.by_name
            .iter()
            .map(|(name, route)| (name.as_str(), route))
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

/// Replaces every character outside `[a-zA-Z0-9_-]` with `_`.
pub fn sanitize(part: &str) -> String {
    part.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Attempt 0 is the plain name when it fits; every other attempt (and an
/// overlong plain name) is the hashed form.
fn candidate(route: &ToolRoute, attempt: u32) -> String {
    let plain = format!(
        "{}{SEPARATOR}{}",
        sanitize(&route.server),
        sanitize(&route.tool)
    );
    if attempt == 0 && plain.len() <= MAX_TOOL_NAME_LEN {
        return plain;
    }
    let mut hasher = Sha256::new();
    hasher.update(route.server.as_bytes());
    hasher.update([0]);
    hasher.update(route.tool.as_bytes());
    if attempt > 1 {
        hasher.update([0]);
        hasher.update(attempt.to_be_bytes());
    }
    let digest = hex::encode(hasher.finalize());
    let keep = MAX_TOOL_NAME_LEN - HASH_LEN - 1;
    // Sanitised names are ASCII: byte slicing is character slicing.
    let prefix = plain[..plain.len().min(keep)].trim_end_matches('_');
    format!("{prefix}_{}", &digest[..HASH_LEN])
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn route(server: &str, tool: &str) -> ToolRoute {
        ToolRoute::new(server, tool)
    }

    /// (case, reserved names, routes, expected names sorted).
    type Case<'a> = (
        &'a str,
        Vec<&'a str>,
        Vec<ToolRoute>,
        Vec<(&'a str, ToolRoute)>,
    );

    #[test]
    fn qualified_names_table() {
        let long_tool = "t".repeat(70);
        let cases: Vec<Case> = vec![
            (
                "plain names join with a double underscore",
                vec![],
                vec![route("forge-bash", "run")],
                vec![("forge-bash__run", route("forge-bash", "run"))],
            ),
            (
                "characters outside [a-zA-Z0-9_-] become underscores",
                vec![],
                vec![route("my server", "read.file"), route("café", "ünï")],
                vec![
                    ("caf____n_", route("café", "ünï")),
                    ("my_server__read_file", route("my server", "read.file")),
                ],
            ),
            (
                "overlong names keep 55 characters and a hash",
                vec![],
                vec![route("forge-filesystem", &long_tool)],
                vec![(
                    "forge-filesystem__ttttttttttttttttttttttttttttttttttttt_14ecc825",
                    route("forge-filesystem", &long_tool),
                )],
            ),
            (
                "a collision is resolved in sorted order: the first keeps the plain name",
                vec![],
                vec![route("a_b", "x"), route("a.b", "x")],
                vec![
                    ("a_b__x", route("a.b", "x")),
                    ("a_b__x_bbd0c890", route("a_b", "x")),
                ],
            ),
            (
                "a reserved native tool name is never produced",
                vec!["docs__search"],
                vec![route("docs", "search")],
                vec![("docs__search_12790ead", route("docs", "search"))],
            ),
            (
                "the same tool twice is named once",
                vec![],
                vec![route("s", "t"), route("s", "t")],
                vec![("s__t", route("s", "t"))],
            ),
        ];
        for (name, reserved, routes, expected) in cases {
            let names = QualifiedToolNames::build_with_reserved(reserved, routes);
            let got: Vec<(&str, ToolRoute)> = names
                .iter()
                .map(|(qualified, route)| (qualified, route.clone()))
                .collect();
            assert_eq!(got, expected, "{name}");
            for (qualified, route) in &got {
                assert!(qualified.len() <= MAX_TOOL_NAME_LEN, "{name}: {qualified}");
                assert_eq!(
                    names.qualified(&route.server, &route.tool),
                    Some(*qualified),
                    "{name}"
                );
                assert_eq!(names.resolve(qualified), Some(route), "{name}");
            }
        }
    }

    #[test]
    fn a_hashed_name_is_never_another_servers_plain_name() {
        // A server of 63 characters whose 55th is `.`: its hashed names kept `A[..54]__`,
        // which a server named `A[..54]` could list as a tool of its own.
        let long_server = format!("{}.bbbbbbbb", "a".repeat(54));
        let short_server = "a".repeat(54);
        let names = QualifiedToolNames::build([route(&long_server, "x")]);
        let (hashed, _) = names.iter().next().expect("one name");
        assert!(!hashed.contains("__"), "{hashed}");
        let digest = &hashed[hashed.len() - HASH_LEN..];
        let both =
            QualifiedToolNames::build([route(&long_server, "x"), route(&short_server, digest)]);
        assert_eq!(both.qualified(&long_server, "x"), Some(hashed));
        assert_eq!(both.len(), 2);
        // Under 54 characters the kept part ends inside the separator: it goes too.
        let at_53 = format!("{}__{}", "s".repeat(53), "t".repeat(20));
        let names = QualifiedToolNames::build([route(&"s".repeat(53), &"t".repeat(20))]);
        let (hashed, _) = names.iter().next().expect("one name");
        assert!(at_53.starts_with(&hashed[..53]), "{hashed}");
        assert_eq!(&hashed[53..54], "_");
        assert_ne!(&hashed[54..55], "_", "{hashed}");
    }

    #[test]
    fn names_do_not_depend_on_input_order() {
        let routes = vec![route("a.b", "x"), route("a_b", "x"), route("a-b", "x")];
        let forward = QualifiedToolNames::build(routes.clone());
        let backward = QualifiedToolNames::build(routes.into_iter().rev());
        assert_eq!(forward, backward);
    }

    #[test]
    fn unknown_names_do_not_resolve_even_with_a_known_prefix() {
        let names = QualifiedToolNames::build([route("forge-bash", "run")]);
        assert_eq!(names.resolve("forge-bash__run_extra"), None);
        assert_eq!(names.resolve("forge-bash__"), None);
    }
}
