//! Remote servers: connecting over streamable HTTP (rmcp's client transport) or HTTP+SSE
//! ([`crate::sse_client`]), the HTTP client BotCraft connects with, a server's headers
//! resolved from `${VAR}` at connect, and the URL as it may be shown.
//!
//! Rules:
//! - One `reqwest` client per manager (connections pooled across servers), with **no
//!   redirects**: a redirect to another host would carry the server's headers (its token).
//! - Header values are resolved at connect time under the same policy as a stdio server's
//!   env (`crate::environment`); an unresolvable or refused reference names the variable.
//! - A URL is shown (logs, errors, health) as `scheme://host[:port]/path`, its query and
//!   fragment replaced by `?…`: tokens are sometimes passed there. Header values are never
//!   shown anywhere.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::client::ClientSide;
use crate::config::{RemoteEndpoint, RemoteTransport, ServerConfig};
use crate::environment::{EnvPolicy, resolve_template};
use crate::error::LifecycleError;
use crate::handshake::{HandshakeFailure, handshake_error, handshake_over};
use crate::process::McpProcess;
use crate::sse_client::SseClientTransport;
use crate::stateless_link::StatelessLink;
use crate::tap::ProgressTap;
use crate::trace_header::TraceHeader;

/// How a remote connection ends: its "exit" (the watch every waiter of the server holds),
/// and whether the server refused the session (an error answer without an id, as a server
/// that restarted and forgot the session gives): then no request in flight on it was
/// processed, and each may be sent again on a new connection.
#[derive(Debug)]
pub(crate) struct ConnectionLoss {
    exit: watch::Sender<Option<crate::error::ExitInfo>>,
    refused: std::sync::atomic::AtomicBool,
    /// The server may use OAuth: a `401`/`403` challenge makes it `needs-auth`.
    pub oauth: bool,
}

impl ConnectionLoss {
    pub(crate) fn new(oauth: bool) -> (Arc<Self>, watch::Receiver<Option<crate::error::ExitInfo>>) {
        let (exit, receiver) = watch::channel(None);
        let loss = Self {
            exit,
            refused: std::sync::atomic::AtomicBool::new(false),
            oauth,
        };
        (Arc::new(loss), receiver)
    }

    /// The connection is gone (first call wins).
    pub(crate) fn lose(&self) {
        self.exit.send_if_modified(|exit| {
            let first = exit.is_none();
            if first {
                *exit = Some(crate::error::ExitInfo {
                    code: None,
                    signal: None,
                });
            }
            first
        });
    }

    /// The server refused the session: lost, and nothing in flight was processed.
    pub(crate) fn refuse(&self) {
        self.refused
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.lose();
    }

    pub(crate) fn was_refused(&self) -> bool {
        self.refused.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// How long a TCP connect to a remote server may take (a call has its own timeout too).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The HTTP client remote servers are reached with.
pub(crate) fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("botcraft/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_else(|error| {
            tracing::warn!(%error, "the HTTP client for remote MCP servers fell back to defaults");
            reqwest::Client::new()
        })
}

/// `url` as it may be shown: without its query and fragment (`?…` marks that there was one).
pub fn shown_url(url: &str) -> String {
    match url.find(['?', '#']) {
        Some(at) => format!("{}?…", &url[..at]),
        None => url.to_owned(),
    }
}

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

/// How a connection to a server that may use OAuth ([`crate::oauth::eligible`]) goes.
pub(crate) enum Auth {
    /// With the stored token (refreshed when due).
    Token(rmcp::transport::auth::AuthClient<reqwest::Client>),
    /// Without a token: a `401` challenge makes the server `needs-auth`.
    Challengeable,
}

/// Connect to the remote server of `config` and complete `initialize` within its init
/// timeout. `headers` (resolved) go with every request; the connection "exits" when its
/// transport closes. `auth` is set for a server OAuth applies to.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn connect(
    config: &ServerConfig,
    endpoint: &RemoteEndpoint,
    headers: HeaderMap,
    http: reqwest::Client,
    auth: Option<Auth>,
    client: ClientSide,
    cancel: CancellationToken,
) -> Result<McpProcess, LifecycleError> {
    let oauth = auth.is_some();
    let url = shown_url(&endpoint.url);
    let (lost, exit) = ConnectionLoss::new(oauth);
    let relay = client.relay();
    let transport_name = endpoint.transport.as_str();
    let connect_error = |reason: String| LifecycleError::Connect {
        server: config.name.clone(),
        url: url.clone(),
        transport: transport_name,
        reason,
    };
    let mut link = None;
    let started = match endpoint.transport {
        RemoteTransport::StreamableHttp => {
            let headers: std::collections::HashMap<HeaderName, HeaderValue> = headers
                .iter()
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect();
            let settings = StreamableHttpClientTransportConfig::with_uri(endpoint.url.as_str())
                .custom_headers(headers.clone());
            if let Some(Auth::Token(authorized)) = auth {
                let authorized = TraceHeader(authorized);
                link = link_for(config, endpoint, &headers, authorized.clone(), &relay);
                let transport = StreamableHttpClientTransport::with_client(authorized, settings);
                let transport = ProgressTap::new(transport, relay, Some(Arc::clone(&lost)));
                handshake_over(config, transport, &exit, client, &cancel).await
            } else {
                let http = TraceHeader(http);
                link = link_for(config, endpoint, &headers, http.clone(), &relay);
                let transport = StreamableHttpClientTransport::with_client(http, settings);
                let transport = ProgressTap::new(transport, relay, Some(Arc::clone(&lost)));
                handshake_over(config, transport, &exit, client, &cancel).await
            }
        }
        RemoteTransport::Sse => {
            let open = SseClientTransport::connect(http, &endpoint.url, headers);
            let transport = tokio::select! {
                opened = tokio::time::timeout(config.init_timeout, open) => match opened {
                    Ok(Ok(transport)) => transport,
                    Ok(Err(error)) => return Err(connect_error(error.to_string())),
                    Err(_) => return Err(handshake_error(config, HandshakeFailure::TimedOut, None, Vec::new())),
                },
                () = cancel.cancelled() => {
                    return Err(handshake_error(config, HandshakeFailure::Cancelled, None, Vec::new()));
                }
            };
            let transport = ProgressTap::new(transport, relay, Some(Arc::clone(&lost)));
            handshake_over(config, transport, &exit, client, &cancel).await
        }
    };
    match started {
        Ok(service) => Ok(McpProcess::remote(config, service, url, lost, exit, link)),
        Err(HandshakeFailure::Refused(error)) => match crate::oauth::challenge_in(error.as_ref()) {
            Some(challenge) if oauth => Err(LifecycleError::NeedsAuth {
                bot: None,
                server: config.name.clone(),
                url,
                challenge: Some(challenge),
            }),
            _ => Err(connect_error(remote_reason(&error))),
        },
        Err(HandshakeFailure::Exited) => Err(connect_error(
            "the connection closed during initialize".to_owned(),
        )),
        Err(failure) => Err(handshake_error(config, failure, None, Vec::new())),
    }
}

/// The 2026-07-28 link of a streamable-HTTP connection ([`StatelessLink`]), over the same
/// HTTP client (with the same OAuth client) and headers.
fn link_for<C>(
    config: &ServerConfig,
    endpoint: &RemoteEndpoint,
    headers: &std::collections::HashMap<HeaderName, HeaderValue>,
    http: C,
    relay: &Arc<crate::relay::Relay>,
) -> Option<Arc<StatelessLink>>
where
    C: rmcp::transport::streamable_http_client::StreamableHttpClient
        + Clone
        + Send
        + Sync
        + 'static,
{
    Some(Arc::new(StatelessLink::new(
        config.name.clone(),
        endpoint.url.clone(),
        headers.clone(),
        http,
        Arc::clone(relay),
        config.init_timeout,
    )))
}

/// Why a remote `initialize` failed: the last two causes of the error chain (rmcp's outer
/// messages name its transport types; the root causes say what happened, "tcp connect
/// error: Connection refused", "HTTP status client error (401 Unauthorized)"). reqwest's
/// messages can carry the URL with its query: every URL-looking word is cut to what
/// [`shown_url`] shows. Header values never reach an error message.
fn remote_reason(error: &rmcp::service::ClientInitializeError) -> String {
    let mut chain = vec![error.to_string()];
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        chain.push(cause.to_string());
        source = cause.source();
    }
    let start = chain.len().saturating_sub(2);
    cut_urls(&chain[start..].join(": "))
}

/// `text` with every URL-looking word cut to what [`shown_url`] shows (error messages of
/// reqwest and rmcp can carry a URL with its query).
pub(crate) fn cut_urls(text: &str) -> String {
    text.split(' ')
        .map(|word| {
            if word.contains("://") {
                shown_url(word)
            } else {
                word.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn urls_are_shown_without_query_or_fragment() {
        let cases = [
            ("https://mcp.example.com/mcp", "https://mcp.example.com/mcp"),
            (
                "https://mcp.example.com/mcp?api_key=s3cret",
                "https://mcp.example.com/mcp?…",
            ),
            ("http://127.0.0.1:9/sse#frag", "http://127.0.0.1:9/sse?…"),
        ];
        for (url, shown) in cases {
            assert_eq!(shown_url(url), shown);
        }
    }

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
