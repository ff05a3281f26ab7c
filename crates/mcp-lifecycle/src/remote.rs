//! Remote servers as the lifecycle runs them: a server's headers resolved from `${VAR}` at
//! connect, and a connection ([`mcp_client::connect`]) that becomes an [`McpProcess`], its
//! failures [`LifecycleError`]s naming the server, the URL as shown and the root cause.
//!
//! Rules:
//! - Header values are resolved at connect time under the same policy as a stdio server's
//!   env (`crate::environment`); an unresolvable or refused reference names the variable.
//! - Header values are marked sensitive and never shown anywhere; URLs are shown as
//!   [`mcp_client::shown_url`] shows them.

use std::collections::BTreeMap;

use mcp_client::{Auth, ClientSide, ConnectError, RemoteTarget, shown_url};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;

use crate::config::{RemoteEndpoint, ServerConfig, transport_name};
use crate::environment::{EnvPolicy, resolve_template};
use crate::error::LifecycleError;
use crate::handshake::handshake_error;
use crate::process::McpProcess;

/// The headers of `endpoint` with every `${VAR}` resolved from `source` under `policy`.
pub(crate) fn resolve_headers(
    config: &ServerConfig,
    endpoint: &RemoteEndpoint,
    source: &BTreeMap<String, String>,
    policy: &EnvPolicy,
) -> Result<HeaderMap, LifecycleError> {
    let mut headers = HeaderMap::new();
    for (name, template) in &endpoint.headers {
        let key = format!("header {name}");
        let value = resolve_template(&config.name, &key, template, source, policy)?;
        let bad = || LifecycleError::BadHeader {
            server: config.name.clone(),
            name: name.clone(),
        };
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
        let mut value = HeaderValue::from_str(&value).map_err(|_| bad())?;
        value.set_sensitive(true);
        headers.insert(header, value);
    }
    Ok(headers)
}

/// Connect to the remote server of `config` and complete `initialize` within its init
/// timeout. `headers` (resolved) go with every request; the connection "exits" when its
/// transport closes. `auth` is set for a server OAuth applies to.
pub(crate) async fn connect(
    config: &ServerConfig,
    endpoint: &RemoteEndpoint,
    headers: HeaderMap,
    http: reqwest::Client,
    auth: Option<Auth>,
    client: ClientSide,
    cancel: CancellationToken,
) -> Result<McpProcess, LifecycleError> {
    let target = RemoteTarget {
        server: &config.name,
        transport: endpoint.transport,
        url: &endpoint.url,
        headers,
        init_timeout: config.init_timeout,
    };
    match mcp_client::connect(target, http, auth, client, cancel).await {
        Ok(connection) => Ok(McpProcess::remote(config, connection)),
        Err(ConnectError::Unreachable { reason }) => Err(LifecycleError::Connect {
            server: config.name.clone(),
            url: shown_url(&endpoint.url),
            transport: transport_name(endpoint.transport),
            reason,
        }),
        Err(ConnectError::NeedsAuth { challenge }) => Err(LifecycleError::NeedsAuth {
            principal: None,
            server: config.name.clone(),
            url: shown_url(&endpoint.url),
            hint: String::new(),
            challenge: Some(challenge),
        }),
        Err(ConnectError::Handshake(failure)) => {
            Err(handshake_error(config, failure, None, Vec::new()))
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use std::time::Duration;

    use crate::config::RemoteTransport;

    use super::*;

    #[test]
    fn headers_resolve_under_the_env_policy() {
        let endpoint = |headers: &[(&str, &str)]| RemoteEndpoint {
            transport: RemoteTransport::StreamableHttp,
            url: "http://127.0.0.1:1/mcp".into(),
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect(),
        };
        let config = ServerConfig {
            id: String::new(),
            name: "hosted".into(),
            command: String::new(),
            args: vec![],
            env: BTreeMap::new(),
            remote: None,
            call_timeout: Duration::from_secs(1),
            init_timeout: Duration::from_secs(1),
            always_on: false,
            idle_timeout: Duration::from_secs(1),
            sandbox: sandbox::SandboxPolicy::default(),
            version: 0,
        };
        let source = BTreeMap::from([
            ("HOSTED_TOKEN".to_owned(), "t0k".to_owned()),
            ("OPENAI_API_KEY".to_owned(), "sk".to_owned()),
        ]);
        let policy = EnvPolicy::allowing(["HOSTED_TOKEN"]);
        let headers = resolve_headers(
            &config,
            &endpoint(&[
                ("Authorization", "Bearer ${HOSTED_TOKEN}"),
                ("X-Team", "core"),
            ]),
            &source,
            &policy,
        )
        .expect("resolves");
        assert_eq!(
            headers.get("authorization").map(HeaderValue::is_sensitive),
            Some(true)
        );
        assert_eq!(
            headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.to_str().unwrap_or_default()))
                .collect::<Vec<_>>(),
            vec![("authorization", "Bearer t0k"), ("x-team", "core")]
        );
        let refused = resolve_headers(
            &config,
            &endpoint(&[("Authorization", "Bearer ${OPENAI_API_KEY}")]),
            &source,
            &policy,
        );
        assert!(
            matches!(&refused, Err(LifecycleError::EnvNotAllowed { variable, secret: true, .. }) if variable == "OPENAI_API_KEY"),
            "{refused:?}"
        );
        let missing = resolve_headers(
            &config,
            &endpoint(&[("X-Key", "${HOSTED_OTHER}")]),
            &source,
            &EnvPolicy::allowing(["HOSTED_OTHER"]),
        );
        assert!(
            matches!(&missing, Err(LifecycleError::NotConfigured { variable, .. }) if variable == "HOSTED_OTHER"),
            "{missing:?}"
        );
    }
}
