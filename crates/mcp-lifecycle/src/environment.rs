//! The environment a server process gets: the pass-through variables, then its config's env
//! with `${VAR}` references resolved from the environment the manager was given. Values are
//! never logged.

use std::collections::BTreeMap;

use store::env_template::{EnvSegment, parse_env_value};

use crate::config::{PASSED_THROUGH_ENV, ServerConfig};
use crate::error::LifecycleError;

/// The full, explicit environment of `config`'s process.
pub fn server_env(
    config: &ServerConfig,
    source: &BTreeMap<String, String>,
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
        )?;
        assert_eq!(
            env,
            map(&[("MODE", "m"), ("PATH", "/bin"), ("URL", "http://h:1")])
        );
        Ok(())
    }

    #[test]
    fn unresolved_reference_names_the_variable() {
        let result = server_env(&config(&[("KEY", "${TYPESENSE_KEY}")]), &BTreeMap::new());
        match result {
            Err(LifecycleError::NotConfigured {
                server,
                key,
                variable,
            }) => {
                assert_eq!(
                    (server.as_str(), key.as_str(), variable.as_str()),
                    ("s", "KEY", "TYPESENSE_KEY")
                );
            }
            other => panic!("expected NotConfigured, got {other:?}"),
        }
    }
}
