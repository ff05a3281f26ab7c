//! Environment injection: variables from a NUL-separated `KEY=VALUE` file
//! (by default `/proc/1/environ`, the container's init environment, where a
//! platform such as Railway puts its variables) that the server's own
//! environment lacks are added to every command's environment.
//!
//! Read once at startup; the merged environment is passed to each spawned
//! command (the server never calls `set_var`).
//!
//! BotCraft's own secrets are never injected, even though they sit in PID 1's environment
//! in a container: [`DEFAULT_INJECT_DENY`] (BotCraft's settings and keys, the provider keys,
//! the database URL and password, each with its `*_FILE` form, the OTLP exporter's settings
//! and the Typesense admin key) plus the operator's
//! `FORGE_BASH_INJECT_DENY` ([`DenyList`]).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Names never injected: exact, or a prefix when the pattern ends in `*`.
pub const DEFAULT_INJECT_DENY: &[&str] = &[
    "BOTCRAFT_*",
    "OPENAI_API_KEY*",
    "ANTHROPIC_API_KEY*",
    "DATABASE_URL*",
    "PGPASSWORD*",
    "PGPASSFILE*",
    // The other credentials BotCraft withholds from tools: its telemetry exporter's headers
    // and the Typesense admin key.
    "OTEL_EXPORTER_OTLP_*",
    "TYPESENSE_API_KEY*",
];

/// The names dropped from the injected variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DenyList {
    patterns: Vec<String>,
}

impl DenyList {
    /// The defaults plus `extra` (`FORGE_BASH_INJECT_DENY`: comma-separated names or
    /// `PREFIX*` patterns; it adds to the defaults, never replaces them).
    pub fn with_extra(extra: Option<&str>) -> Self {
        let patterns = DEFAULT_INJECT_DENY
            .iter()
            .map(|pattern| (*pattern).to_owned())
            .chain(
                extra
                    .unwrap_or_default()
                    .split(',')
                    .map(str::trim)
                    .filter(|pattern| !pattern.is_empty())
                    .map(str::to_owned),
            )
            .collect();
        Self { patterns }
    }

    pub fn denies(&self, name: &OsStr) -> bool {
        let name = name.as_bytes();
        self.patterns
            .iter()
            .any(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix.as_bytes()),
                None => name == pattern.as_bytes(),
            })
    }

    /// `vars` without the denied names.
    pub fn filter(&self, vars: EnvVars) -> EnvVars {
        vars.into_iter()
            .filter(|(name, _)| !self.denies(name))
            .collect()
    }
}

/// A command environment: variables in order, names unique.
pub type EnvVars = Vec<(OsString, OsString)>;

/// Parse NUL-separated `KEY=VALUE` entries. Entries without `=` or with an
/// empty name are skipped; the first entry for a name wins.
pub fn parse_environ(bytes: &[u8]) -> EnvVars {
    let mut vars: EnvVars = Vec::new();
    for entry in bytes.split(|&b| b == 0) {
        let Some(eq) = entry.iter().position(|&b| b == b'=') else {
            continue;
        };
        if eq == 0 {
            continue;
        }
        let name = OsStr::from_bytes(&entry[..eq]).to_owned();
        if vars.iter().any(|(existing, _)| *existing == name) {
            continue;
        }
        vars.push((name, OsStr::from_bytes(&entry[eq + 1..]).to_owned()));
    }
    vars
}

/// The server's own variables followed by the injected ones it lacks.
/// Returns the merged environment and the names that were added.
pub fn merge(own: EnvVars, injected: EnvVars) -> (EnvVars, Vec<OsString>) {
    let mut merged = own;
    let mut added = Vec::new();
    for (name, value) in injected {
        if merged.iter().any(|(existing, _)| *existing == name) {
            continue;
        }
        added.push(name.clone());
        merged.push((name, value));
    }
    (merged, added)
}

/// Read and parse the env file; `None` when it cannot be read (a debug log
/// says why: on a developer machine `/proc/1/environ` is usually not
/// readable, and that is fine).
pub fn read_env_file(path: &Path) -> Option<EnvVars> {
    match std::fs::read(path) {
        Ok(bytes) => Some(parse_environ(&bytes)),
        Err(error) => {
            tracing::debug!(path = %path.display(), %error, "env file not read; no variables injected");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn vars(pairs: &[(&str, &str)]) -> EnvVars {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn botcraft_secrets_and_the_extra_names_are_never_injected() {
        let deny = DenyList::with_extra(Some(" STRIPE_KEY , AWS_* "));
        let injected = vars(&[
            ("RAILWAY_ENVIRONMENT", "production"),
            ("BOTCRAFT_API_KEY", "bc_1"),
            ("BOTCRAFT_BOT_KEYS", "forge=k"),
            ("OPENAI_API_KEY", "sk-1"),
            ("OPENAI_API_KEY_FILE", "/run/secrets/openai"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("DATABASE_URL", "postgres://u:p@h/db"),
            ("PGPASSWORD", "pg"),
            ("PGPASSFILE", "/run/secrets/pgpass"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Basic x"),
            ("TYPESENSE_API_KEY", "ts-admin"),
            ("STRIPE_KEY", "s"),
            ("STRIPE_KEYS", "kept: exact names are exact"),
            ("AWS_SECRET_ACCESS_KEY", "a"),
            ("TYPESENSE_URL", "http://ts"),
        ]);
        assert_eq!(
            deny.filter(injected),
            vars(&[
                ("RAILWAY_ENVIRONMENT", "production"),
                ("STRIPE_KEYS", "kept: exact names are exact"),
                ("TYPESENSE_URL", "http://ts"),
            ])
        );
    }

    #[test]
    fn parses_nul_separated_entries() {
        let parsed = parse_environ(b"A=1\0B=x=y\0junk\0=nameless\0C=\0A=2\0");
        assert_eq!(parsed, vars(&[("A", "1"), ("B", "x=y"), ("C", "")]));
    }

    #[test]
    fn merge_adds_only_missing_names() {
        let (merged, added) = merge(
            vars(&[("PATH", "/bin"), ("HOME", "/root")]),
            vars(&[("PATH", "/other"), ("RAILWAY_ENV", "prod")]),
        );
        assert_eq!(
            merged,
            vars(&[("PATH", "/bin"), ("HOME", "/root"), ("RAILWAY_ENV", "prod")])
        );
        assert_eq!(added, vec![OsString::from("RAILWAY_ENV")]);
    }

    #[test]
    fn unreadable_file_is_skipped() {
        assert_eq!(read_env_file(Path::new("/nonexistent/environ")), None);
    }
}
