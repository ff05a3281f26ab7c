//! The environment a server process gets: the pass-through variables, then its config's env
//! with `${VAR}` references resolved from the environment the manager was given. Values are
//! never logged.
//!
//! A reference resolves only when the [`EnvPolicy`] allows its name: by default the names the
//! seed uses (`TYPESENSE_URL`, `TYPESENSE_SEARCH_KEY`), plus what the operator adds. BotCraft's
//! own secrets (its keys, the provider keys, the database URL, their `*_FILE` forms) are never
//! allowed, whatever the list says. So a config created through the API, or imported from a
//! desktop client's `mcpServers` file, cannot pull a secret into its process: it fails to
//! start, naming the variable.

use std::collections::{BTreeMap, BTreeSet};

use store::env_template::{EnvSegment, parse_env_value};

use crate::config::{PASSED_THROUGH_ENV, ServerConfig};
use crate::error::LifecycleError;

/// Names a `${VAR}` reference may never read: BotCraft's own secrets (exact, or a prefix
/// when the pattern ends in `*`).
pub const SECRET_NAMES: &[&str] = &[
    "BOTCRAFT_*",
    "OPENAI_API_KEY*",
    "ANTHROPIC_API_KEY*",
    "DATABASE_URL*",
];

/// The names `${VAR}` may read by default: those the seed's configs use.
pub const DEFAULT_ALLOWED_REFERENCES: &[&str] = &["TYPESENSE_URL", "TYPESENSE_SEARCH_KEY"];

/// Which `${VAR}` references resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvPolicy {
    allowed: BTreeSet<String>,
}

impl Default for EnvPolicy {
    fn default() -> Self {
        Self::allowing(DEFAULT_ALLOWED_REFERENCES.iter().copied())
    }
}

impl EnvPolicy {
    /// Exactly these names (secrets still refused).
    pub fn allowing<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            allowed: names.into_iter().map(Into::into).collect(),
        }
    }

    /// The defaults plus `extra` (comma-separated names, e.g. `BOTCRAFT_SERVER_ENV`).
    pub fn with_extra(extra: &str) -> Self {
        let mut policy = Self::default();
        policy.allowed.extend(
            extra
                .split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(str::to_owned),
        );
        policy
    }

    /// Whether `name` is one of BotCraft's own secrets.
    pub fn is_secret(name: &str) -> bool {
        SECRET_NAMES
            .iter()
            .any(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == *pattern,
            })
    }

    /// Whether a reference to `name` resolves.
    pub fn allows(&self, name: &str) -> bool {
        !Self::is_secret(name) && self.allowed.contains(name)
    }

    /// The allowed names, for error messages.
    pub fn allowed(&self) -> Vec<String> {
        self.allowed
            .iter()
            .filter(|name| !Self::is_secret(name))
            .cloned()
            .collect()
    }
}

/// The full, explicit environment of `config`'s process.
pub fn server_env(
    config: &ServerConfig,
    source: &BTreeMap<String, String>,
    policy: &EnvPolicy,
) -> Result<BTreeMap<String, String>, LifecycleError> {
    let mut env: BTreeMap<String, String> = PASSED_THROUGH_ENV
        .iter()
        .filter_map(|key| {
            source
                .get(*key)
                .map(|value| ((*key).to_owned(), value.clone()))
        })
        .collect();
    for (key, template) in &config.env {
        let not_configured = |variable: &str| LifecycleError::NotConfigured {
            server: config.name.clone(),
            key: key.clone(),
            variable: variable.to_owned(),
        };
        // The store refuses malformed references on write; one that slipped in is unresolvable.
        let segments = parse_env_value(template).map_err(|_| not_configured(template))?;
        let mut value = String::new();
        for segment in segments {
            match segment {
                EnvSegment::Literal(text) => value.push_str(text),
                EnvSegment::Reference(name) if !policy.allows(name) => {
                    return Err(LifecycleError::EnvNotAllowed {
                        server: config.name.clone(),
                        key: key.clone(),
                        variable: name.to_owned(),
                        secret: EnvPolicy::is_secret(name),
                        allowed: policy.allowed().join(", "),
                    });
                }
                EnvSegment::Reference(name) => {
                    value.push_str(source.get(name).ok_or_else(|| not_configured(name))?);
                }
            }
        }
        env.insert(key.clone(), value);
    }
    Ok(env)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use pretty_assertions::assert_eq;

    use super::*;

    fn config(env: &[(&str, &str)]) -> ServerConfig {
        ServerConfig {
            id: String::new(),
            name: "s".into(),
            command: "c".into(),
            args: vec![],
            env: env
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect(),
            call_timeout: Duration::from_secs(1),
            init_timeout: Duration::from_secs(1),
            always_on: false,
            idle_timeout: Duration::from_secs(1),
        }
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    #[test]
    fn references_resolve_and_only_listed_variables_pass_through() -> Result<(), LifecycleError> {
        let source = map(&[("PATH", "/bin"), ("HOST", "h"), ("SECRET_OTHER", "x")]);
        let env = server_env(
            &config(&[("URL", "http://${HOST}:1"), ("MODE", "m")]),
            &source,
            &EnvPolicy::with_extra("HOST"),
        )?;
        assert_eq!(
            env,
            map(&[("MODE", "m"), ("PATH", "/bin"), ("URL", "http://h:1")])
        );
        Ok(())
    }

    #[test]
    fn unresolved_reference_names_the_variable() {
        let result = server_env(
            &config(&[("KEY", "${TYPESENSE_SEARCH_KEY}")]),
            &BTreeMap::new(),
            &EnvPolicy::default(),
        );
        match result {
            Err(LifecycleError::NotConfigured {
                server,
                key,
                variable,
            }) => {
                assert_eq!(
                    (server.as_str(), key.as_str(), variable.as_str()),
                    ("s", "KEY", "TYPESENSE_SEARCH_KEY")
                );
            }
            other => panic!("expected NotConfigured, got {other:?}"),
        }
    }

    #[test]
    fn secrets_and_unlisted_names_never_resolve() {
        let source = map(&[
            ("OPENAI_API_KEY", "sk-1"),
            ("DATABASE_URL", "postgres://u:p@h/db"),
            ("BOTCRAFT_API_KEY", "bc_1"),
            ("GITHUB_TOKEN", "ghp_1"),
        ]);
        // Listing a secret does not make it readable.
        let policy = EnvPolicy::with_extra("OPENAI_API_KEY, DATABASE_URL_FILE");
        let cases = [
            ("${OPENAI_API_KEY}", "OPENAI_API_KEY", true),
            ("postgres ${DATABASE_URL}", "DATABASE_URL", true),
            ("${BOTCRAFT_API_KEY}", "BOTCRAFT_API_KEY", true),
            ("${GITHUB_TOKEN}", "GITHUB_TOKEN", false),
        ];
        for (template, name, is_secret) in cases {
            match server_env(&config(&[("K", template)]), &source, &policy) {
                Err(LifecycleError::EnvNotAllowed {
                    variable,
                    secret,
                    allowed,
                    ..
                }) => assert_eq!(
                    (variable.as_str(), secret, allowed.as_str()),
                    (name, is_secret, "TYPESENSE_SEARCH_KEY, TYPESENSE_URL"),
                    "{template}"
                ),
                other => panic!("{template}: expected EnvNotAllowed, got {other:?}"),
            }
        }
        let error = server_env(&config(&[("K", "${OPENAI_API_KEY}")]), &source, &policy)
            .expect_err("refused")
            .to_string();
        assert!(!error.contains("sk-1"), "{error}");
    }
}
