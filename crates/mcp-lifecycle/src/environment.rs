//! The environment a server process gets: the pass-through variables, then its config's env
//! with `${VAR}` references resolved from the environment the manager was given. Values are
//! never logged.
//!
//! A reference resolves only when the [`EnvPolicy`] allows its name: by default the names the
//! seed uses (`TYPESENSE_URL`, `TYPESENSE_SEARCH_KEY`, `BROWSER_EGRESS_PROXY`), plus what the
//! operator adds. BotCraft's
//! own secrets (its keys, the provider keys, the database URL, their `*_FILE` forms) are never
//! allowed, whatever the list says. So a config created through the API, or imported from a
//! desktop client's `mcpServers` file, cannot pull a secret into its process: it fails to
//! start, naming the variable.

use std::collections::{BTreeMap, BTreeSet};

use env_template::{EnvSegment, parse_env_value};

use crate::config::{PASSED_THROUGH_ENV, ServerConfig};
use crate::error::LifecycleError;

/// Names a `${VAR}` reference may never read: BotCraft's own secrets (exact, or a prefix
/// when the pattern ends in `*`).
pub const SECRET_NAMES: &[&str] = &[
    "BOTCRAFT_*",
    "OPENAI_API_KEY*",
    "ANTHROPIC_API_KEY*",
    "DATABASE_URL*",
    // The database's password as libpq and sqlx read it beside a URL that carries none.
    "PGPASSWORD*",
    "PGPASSFILE*",
];

/// The names `${VAR}` may read by default: those the seed's configs use.
pub const DEFAULT_ALLOWED_REFERENCES: &[&str] = &[
    "TYPESENSE_URL",
    "TYPESENSE_SEARCH_KEY",
    // The browser's egress proxy, which the host starts (the seeded Playwright's).
    "BROWSER_EGRESS_PROXY",
];

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

    /// Whether `name` is one `${VAR}` may read (secret or not).
    pub fn names(&self, name: &str) -> bool {
        self.allowed.contains(name)
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

/// Variables of BotCraft's own process, not of the deployment: never written for tools.
const PROCESS_ONLY_ENV: &[&str] = &["HOME", "USER", "LOGNAME", "PWD", "OLDPWD", "SHLVL", "_"];

/// What the deployment file for tools leaves out besides BotCraft's own secrets (by name,
/// [`SECRET_NAMES`]) and its process's variables.
#[derive(Debug, Clone, Copy)]
pub struct Withheld<'a> {
    /// Variables servers receive through `${VAR}` (`TYPESENSE_SEARCH_KEY`…): meant for the
    /// servers whose config names them, not for every command.
    pub policy: &'a EnvPolicy,
    /// Every secret value BotCraft knows (its keys, the provider keys, the OTLP exporter's
    /// headers…): a variable holding one, under any name, is left out.
    pub values: &'a [String],
}

/// What [`write_deployment_env`] wrote: how many variables, and the names (never the values)
/// of those [`Withheld`] left out, for the start's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeploymentEnv {
    pub written: usize,
    pub withheld: Vec<String>,
}

/// Names of credentials that are not BotCraft's by name but never go to tools: the OTLP
/// exporter's headers (BotCraft's telemetry credentials) and the Typesense admin key.
const WITHHELD_NAMES: &[&str] = &["OTEL_EXPORTER_OTLP_*HEADERS", "TYPESENSE_API_KEY"];

fn withheld_name(name: &str) -> bool {
    WITHHELD_NAMES
        .iter()
        .any(|pattern| match pattern.split_once('*') {
            Some((prefix, suffix)) => name.starts_with(prefix) && name.ends_with(suffix),
            None => name == *pattern,
        })
}

/// The deployment's environment for tools to read (`BOTCRAFT_TOOL_ENV_FILE`, read by
/// forge-bash as its `FORGE_BASH_ENV_FILE`): `source` without BotCraft's secrets (by name, or
/// any variable holding a secret value BotCraft knows), without the variables that go to
/// servers through `${VAR}` and the other credentials of [`Withheld`], and without what
/// belongs to BotCraft's process (`HOME`, `USER`, `PWD`, …), as
/// NUL-separated `KEY=VALUE` entries (the `/proc/PID/environ` format), so the seed's PID-1
/// injection keeps working when tool servers run as a user who cannot read PID 1.
///
/// Written to a new file beside `path` and renamed over it: a planted symlink at `path` is
/// replaced, never followed. The file is 0644: it holds no secret, and the tool user reads it.
pub fn write_deployment_env(
    path: &std::path::Path,
    source: &BTreeMap<String, String>,
    withheld: &Withheld<'_>,
) -> std::io::Result<DeploymentEnv> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut text = Vec::new();
    let mut written = 0;
    let mut left_out = Vec::new();
    for (key, value) in source {
        if EnvPolicy::is_secret(key)
            || PROCESS_ONLY_ENV.contains(&key.as_str())
            || key.contains('=')
            || key.contains('\0')
            || value.contains('\0')
        {
            continue;
        }
        let holds_a_secret = withheld
            .values
            .iter()
            .any(|secret| secret.len() >= 8 && value.contains(secret.as_str()));
        if withheld_name(key) || withheld.policy.names(key) || holds_a_secret {
            left_out.push(key.clone());
            continue;
        }
        text.extend_from_slice(key.as_bytes());
        text.push(b'=');
        text.extend_from_slice(value.as_bytes());
        text.push(0);
        written += 1;
    }
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("the environment file path has no file name"))?;
    let mut temporary_name = std::ffi::OsString::from(".");
    temporary_name.push(name);
    temporary_name.push(format!(".{}.tmp", std::process::id()));
    let temporary = path.with_file_name(temporary_name);
    let _ = std::fs::remove_file(&temporary);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&temporary)?;
    file.write_all(&text)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&temporary, path)?;
    Ok(DeploymentEnv {
        written,
        withheld: left_out,
    })
}

/// `template` (the value of env `key` or of a header of `server`) with every `${VAR}`
/// replaced from `source`, under `policy`: a reference the policy refuses is
/// [`LifecycleError::EnvNotAllowed`], one not set [`LifecycleError::NotConfigured`]. The
/// errors name the variable, never a value.
pub(crate) fn resolve_template(
    server: &str,
    key: &str,
    template: &str,
    source: &BTreeMap<String, String>,
    policy: &EnvPolicy,
) -> Result<String, LifecycleError> {
    let not_configured = |variable: &str| LifecycleError::NotConfigured {
        server: server.to_owned(),
        key: key.to_owned(),
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
                    server: server.to_owned(),
                    key: key.to_owned(),
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
    Ok(value)
}

/// [`server_env`] for a start that only lists tools: an entry whose `${VAR}` is unset is
/// left out (the server starts with nothing) instead of failing the start. A reference the
/// policy refuses still fails it.
pub fn server_env_leaving_out_unset(
    config: &ServerConfig,
    source: &BTreeMap<String, String>,
    policy: &EnvPolicy,
) -> Result<BTreeMap<String, String>, LifecycleError> {
    let mut lenient = config.clone();
    lenient.env.retain(|key, template| {
        !matches!(
            resolve_template(&config.name, key, template, source, policy),
            Err(LifecycleError::NotConfigured { .. })
        )
    });
    server_env(&lenient, source, policy)
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
        let value = resolve_template(&config.name, key, template, source, policy)?;
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
            remote: None,
            call_timeout: Duration::from_secs(1),
            init_timeout: Duration::from_secs(1),
            always_on: false,
            idle_timeout: Duration::from_secs(1),
            sandbox: sandbox::SandboxPolicy::default(),
            version: 0,
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
            ("PGPASSWORD", "pg-pw-1"),
            ("GITHUB_TOKEN", "ghp_1"),
        ]);
        // Listing a secret does not make it readable.
        let policy = EnvPolicy::with_extra("OPENAI_API_KEY, DATABASE_URL_FILE, PGPASSWORD");
        let cases = [
            ("${OPENAI_API_KEY}", "OPENAI_API_KEY", true),
            ("postgres ${DATABASE_URL}", "DATABASE_URL", true),
            ("${BOTCRAFT_API_KEY}", "BOTCRAFT_API_KEY", true),
            ("${PGPASSWORD}", "PGPASSWORD", true),
            ("${PGPASSFILE}", "PGPASSFILE", true),
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
                    (
                        name,
                        is_secret,
                        "BROWSER_EGRESS_PROXY, TYPESENSE_SEARCH_KEY, TYPESENSE_URL"
                    ),
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

    #[test]
    fn the_deployment_file_has_no_secret_and_replaces_a_planted_symlink() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("victim");
        std::fs::write(&target, "keep").expect("write");
        let path = dir.path().join("deployment.env");
        std::os::unix::fs::symlink(&target, &path).expect("symlink");
        let source: BTreeMap<String, String> = [
            ("RAILWAY_ENVIRONMENT", "production"),
            ("HOME", "/var/lib/botcraft"),
            ("REDIS_URL", "redis://cache:6379"),
            ("BOTCRAFT_API_KEY", "admin-secret"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("DATABASE_URL", "postgres://u:p@h/db"),
            ("PGPASSWORD", "pg-secret-77"),
            // BotCraft's telemetry credentials, and the same value under another name.
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "Authorization=Basic otel-9a7d1c",
            ),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x=1"),
            ("COPY_OF_IT", "Basic otel-9a7d1c"),
            // A server's `${VAR}`s, and the Typesense admin key.
            ("TYPESENSE_SEARCH_KEY", "ts-search-4411"),
            ("TYPESENSE_API_KEY", "ts-admin-31b0"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let withheld = Withheld {
            policy: &EnvPolicy::default(),
            values: &["Basic otel-9a7d1c".to_owned()],
        };
        assert_eq!(
            write_deployment_env(&path, &source, &withheld).expect("written"),
            DeploymentEnv {
                written: 2,
                withheld: [
                    "COPY_OF_IT",
                    "OTEL_EXPORTER_OTLP_HEADERS",
                    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                    "TYPESENSE_API_KEY",
                    "TYPESENSE_SEARCH_KEY",
                ]
                .map(String::from)
                .to_vec(),
            }
        );
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "keep");
        assert!(!std::fs::symlink_metadata(&path).expect("meta").is_symlink());
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            "RAILWAY_ENVIRONMENT=production\0REDIS_URL=redis://cache:6379\0"
        );
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
    }
}
