//! OAuth 2.1 for remote servers (the MCP authorization spec, 2025-11-25), on rmcp's
//! `AuthorizationManager`: which servers use it, connecting with a token, and the
//! authorization flow an operator completes in a browser.
//!
//! Rules:
//! - **Only where the server asks.** A streamable-HTTP server with no `Authorization` header
//!   of its own is connected without a token until it answers `401` with a `Bearer`
//!   challenge; then it is `needs-auth`. A server that never challenges never sees OAuth.
//!   SSE servers take static headers only.
//! - **Discovery** (protected-resource metadata from the challenge or the well-known paths,
//!   then authorization-server metadata with the OAuth and OpenID fallbacks), **PKCE S256**
//!   (an authorization server whose metadata does not list S256 is refused, as the spec has
//!   it; [`pkce_refusal`]), the **`resource` indicator** on every token request and **`iss`** checking (RFC 9207)
//!   are rmcp's. Metadata on private or loopback addresses is accepted only for a server
//!   that is itself on one (rmcp's rule).
//! - **Client registration**, in the spec's order: a client ID metadata document (when the
//!   settings name one and the authorization server supports them), else dynamic client
//!   registration. The client registered (with its secret) is kept with the tokens.
//! - **Tokens** are sealed in the records ([`crate::oauth_credentials`]) and refreshed shortly
//!   before expiry by rmcp, under one lock per server: concurrent calls at expiry cause one
//!   refresh. A refused refresh drops the tokens and the server becomes `needs-auth` (no loop).
//! - **Bound to the resource.** A record (tokens and client registration) is bound to the
//!   resource it was issued for: the canonical resource URI of the server's URL then
//!   (`canonical_resource`: origin and path). Once the URL points elsewhere (an edit, an
//!   imported `mcpServers` document), the record is not used, and nothing of it is sent
//!   anywhere: the server connects without a token and needs authorization again. Checked
//!   before any request, so it holds where the issuer check cannot (discovery without an
//!   issuer).
//! - **Scope step-up**: a `403 insufficient_scope` makes the server `needs-auth` with that
//!   challenge; the next authorization asks for the union of the granted and required scopes.
//! - The flow: [`McpServerManager::oauth_start`] returns the authorization URL (its `state`
//!   remembered for [`PENDING_TTL`]); [`McpServerManager::oauth_complete`] takes the
//!   redirect's `code`, `state` and `iss`, exchanges the code, and the next use connects.
//!   Neither a token, a code nor a client secret is ever logged or returned.
//! - **A principal's own account**: the same flow for one principal
//!   ([`McpServerManager::oauth_start_for`]) keeps that principal's own record; its calls
//!   then go on a connection of its own ([`crate::principals`]) with its own tokens,
//!   refreshed and dropped under the same rules, while every other request keeps the
//!   server's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationSession,
    OAuthClientConfig,
};

use crate::config::{RemoteEndpoint, RemoteTransport, ServerConfig};
use crate::error::LifecycleError;
use crate::oauth_credentials::{ClientRecord, CredentialHandle, OAuthRecord, ServerCredentials};
use crate::records::ServerRecords;
use mcp_client::{cut_urls, shown_url};

/// How long an authorization started with `oauth_start` may take to come back.
pub const PENDING_TTL: Duration = Duration::from_secs(600);

/// What the manager needs to authorize servers: where the authorization server sends the
/// browser back, the key tokens are sealed with, and how BotCraft names itself.
#[derive(Debug, Clone)]
pub struct OAuthSettings {
    /// BotCraft's `/oauth/callback`, as the browser reaches it.
    pub redirect_uri: String,
    pub sealer: secrets::Sealer,
    /// `client_name` in a dynamic registration.
    pub client_name: String,
    /// An HTTPS URL serving BotCraft's client ID metadata document, used as the client id
    /// where the authorization server supports them.
    pub client_metadata_url: Option<String>,
    /// What a `needs-auth` error tells the operator to do; `None`: plain words.
    pub reconnect_hint: Option<ReconnectHint>,
}

/// The app's words for what an operator does when a server, or a principal's own connection
/// to it, needs authorization (its dashboard, its API routes, what its principals are):
/// given the server's name and the principal, the text appended to the `needs-auth` error,
/// starting with its separator (`": an operator must…"`).
#[derive(Clone)]
pub struct ReconnectHint(pub Arc<HintWords>);

/// [`ReconnectHint`]'s function: (server name, principal) → the words.
pub type HintWords = dyn Fn(&str, Option<&str>) -> String + Send + Sync;

impl ReconnectHint {
    /// The words when the app gives none.
    fn plain(principal: Option<&str>) -> String {
        match principal {
            None => ": an operator must authorize it".to_owned(),
            Some(principal) => format!(
                " with {principal:?}'s own credentials: an operator must authorize them, or remove them so that the server's are used"
            ),
        }
    }
}

impl std::fmt::Debug for ReconnectHint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReconnectHint(..)")
    }
}

/// A server's authorization state as reported (health, the API).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthStatus {
    /// A token is stored (it may need a refresh).
    pub authorized: bool,
    /// The scopes granted with it.
    pub scopes: Vec<String>,
}

pub(crate) struct Pending {
    pub(crate) server: String,
    /// The principal whose own authorization this is.
    pub(crate) principal: Option<String>,
    pub(crate) session: AuthorizationSession,
    pub(crate) started: Instant,
}

/// (server id, principal): whose OAuth record.
type CredentialsKey = (String, Option<String>);

/// The manager's OAuth state: each server's credentials, and the flows under way.
#[derive(Default)]
pub(crate) struct OAuthFlows {
    /// By (server id, principal): `None` is the server's record, a principal that
    /// principal's own.
    credentials: Mutex<HashMap<CredentialsKey, Arc<ServerCredentials>>>,
    pub(crate) pending: tokio::sync::Mutex<HashMap<String, Pending>>,
}

/// Whether `config` is a server OAuth may be used for: streamable HTTP, no `Authorization`
/// header of its own.
pub(crate) fn eligible(endpoint: &RemoteEndpoint) -> bool {
    endpoint.transport == RemoteTransport::StreamableHttp
        && !endpoint
            .headers
            .keys()
            .any(|name| name.eq_ignore_ascii_case("authorization"))
}

/// `config`'s URL as it may be shown (empty for a stdio server).
fn shown_endpoint(config: &ServerConfig) -> String {
    config
        .remote
        .as_ref()
        .map(|endpoint| shown_url(&endpoint.url))
        .unwrap_or_default()
}

/// The resource a server's OAuth record is bound to, from its `url`: the MCP authorization
/// spec's canonical resource URI of the server (RFC 8707), as `scheme://host[:port]` (the
/// URL's origin: scheme and host lowercased, the scheme's default port left out, no user
/// info) followed by the path as given (none for the root); no query, no fragment. Two URLs
/// with the same resource reach the same server; any other host, scheme, port or path is
/// another resource. `None` for what is not an absolute `http(s)` URL.
///
/// rmcp's own `resource` parameter on token requests is the protected-resource metadata's
/// `resource`, else the URL as given: that one names the resource to the authorization server;
/// this one is what BotCraft checks its records against.
pub fn canonical_resource(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    if !matches!(parsed.scheme(), "http" | "https") || !parsed.has_host() {
        return None;
    }
    let path = match parsed.path() {
        "/" => "",
        path => path,
    };
    Some(format!("{}{path}", parsed.origin().ascii_serialization()))
}

/// The resource `config`'s OAuth record is bound to ([`canonical_resource`] of its URL);
/// `None` for a server with no http(s) URL.
fn resource_of(config: &ServerConfig) -> Option<String> {
    config
        .remote
        .as_ref()
        .and_then(|endpoint| canonical_resource(&endpoint.url))
}

/// The error of an OAuth step that failed: rmcp's message, its URLs cut to what may be shown.
pub(crate) fn auth_failed(config: &ServerConfig, error: &AuthError) -> LifecycleError {
    LifecycleError::OAuth {
        server: config.name.clone(),
        url: shown_endpoint(config),
        reason: cut_urls(&error.to_string()),
    }
}

impl OAuthFlows {
    /// The records kept in memory of server `server_id` (every principal's), or of every
    /// server (`None`), are read from the store again at their next use.
    pub(crate) async fn forget_cached(&self, server_id: Option<&str>) {
        let kept: Vec<Arc<ServerCredentials>> = self
            .credentials
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|((id, _), _)| server_id.is_none_or(|wanted| id == wanted))
            .map(|(_, credentials)| Arc::clone(credentials))
            .collect();
        for credentials in kept {
            credentials.forget_cached().await;
        }
    }

    /// The record of `config`'s server, or (`principal`) that principal's own record for it,
    /// as usable at `config`'s URL: bound to its resource. Once the URL has another resource
    /// (the config changed), the credentials of the old one are replaced here, so the stored
    /// record is read again and checked against the new resource; a connection or a flow
    /// still holding the old ones keeps them bound to the old resource.
    pub(crate) fn credentials(
        &self,
        config: &ServerConfig,
        principal: Option<&str>,
        records: &Arc<dyn ServerRecords>,
        settings: &OAuthSettings,
    ) -> Arc<ServerCredentials> {
        let resource = resource_of(config);
        let key = (config.id.clone(), principal.map(str::to_owned));
        let mut all = self.credentials.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = all.get(&key) {
            if found.resource() == resource.as_deref() {
                return Arc::clone(found);
            }
            // A connection to the former URL may still hold these: it keeps nothing now.
            found.supersede();
        }
        let credentials = Arc::new(ServerCredentials::new(
            &config.name,
            &config.id,
            principal,
            Arc::clone(records),
            settings.sealer.clone(),
            resource,
        ));
        all.insert(key, Arc::clone(&credentials));
        credentials
    }
}

/// The URL OAuth starts from (discovery, and the `resource` a server without protected
/// resource metadata is named by, sent to the authorization server and through the browser):
/// the server's URL without its user information, which is the server's own credential.
fn oauth_base(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            // Only fails for URLs that cannot have user information, which these have.
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
}

/// An `AuthorizationManager` for `endpoint`, its metadata resolved (from `challenge` when
/// there is one), with the metadata it was given and whether the server published it.
pub(crate) async fn authorization_manager(
    config: &ServerConfig,
    endpoint: &RemoteEndpoint,
    challenge: Option<&str>,
) -> Result<(AuthorizationManager, AuthorizationMetadata, bool), LifecycleError> {
    let manager = AuthorizationManager::new(oauth_base(&endpoint.url).as_str())
        .await
        .map_err(|error| auth_failed(config, &error))?;
    let resolution = manager
        .resolve_metadata_from_challenge(challenge)
        .await
        .map_err(|error| auth_failed(config, &error))?;
    let mut manager = manager;
    manager.set_metadata(resolution.metadata.clone());
    Ok((
        manager,
        resolution.metadata,
        resolution.source.is_discovered(),
    ))
}

/// Why an authorization may not start at an authorization server whose metadata the server
/// published (`discovered`): the MCP authorization spec (2025-11-25) has a client verify PKCE
/// support there and refuse to proceed when `code_challenge_methods_supported` is absent (the
/// server does not support PKCE) or does not list `S256`, the one method BotCraft uses.
/// Endpoints made up for a 2025-03-26 server that publishes no metadata (rmcp's legacy
/// fallback) have nothing to verify: S256 is sent, as that revision requires.
pub(crate) fn pkce_refusal(metadata: &AuthorizationMetadata, discovered: bool) -> Option<String> {
    if !discovered {
        return None;
    }
    match &metadata.code_challenge_methods_supported {
        Some(methods) if methods.iter().any(|method| method == "S256") => None,
        Some(_) => Some(
            "its authorization server does not support PKCE with S256 \
             (code_challenge_methods_supported lists no S256), which the MCP authorization \
             spec requires"
                .to_owned(),
        ),
        None => Some(
            "its authorization server's metadata has no code_challenge_methods_supported: it \
             does not say it supports PKCE, and the MCP authorization spec has a client refuse \
             to proceed"
                .to_owned(),
        ),
    }
}

/// The HTTP client a connection to an OAuth server uses: `http` with a token from the
/// server's stored record (or, for `principal`'s own connection, the principal's),
/// refreshed when due.
/// `None` when there is no token, or the record was issued for another resource than
/// `endpoint`'s (its URL changed: nothing of it is used): the server is then connected
/// without one (and a 401 makes it `needs-auth`).
pub(crate) async fn authorized_client(
    flows: &OAuthFlows,
    records: &Arc<dyn ServerRecords>,
    settings: &OAuthSettings,
    config: &ServerConfig,
    principal: Option<&str>,
    endpoint: &RemoteEndpoint,
    http: reqwest::Client,
) -> Result<Option<AuthClient<reqwest::Client>>, LifecycleError> {
    let credentials = flows.credentials(config, principal, records, settings);
    let record = credentials
        .record()
        .await
        .map_err(|error| auth_failed(config, &error))?;
    let Some(record) = record.filter(OAuthRecord::has_token) else {
        return Ok(None);
    };
    let (mut manager, mut metadata, _) = authorization_manager(config, endpoint, None).await?;
    let current_issuer = metadata.issuer.clone();
    let stored_issuer = record
        .credentials
        .as_ref()
        .and_then(|credentials| credentials.issuer.clone());
    if let (Some(stored), Some(current)) = (&stored_issuer, &current_issuer)
        && stored != current
    {
        tracing::warn!(server = %config.name, "the authorization server's issuer changed; the stored tokens are dropped");
        credentials
            .drop_tokens()
            .await
            .map_err(|error| auth_failed(config, &error))?;
        return Ok(None);
    }
    // The refresh token and the client's secret go only to the token endpoint the client was
    // bound to at its authorization, never to one this discovery names (made without the
    // server's challenge, it may find other metadata, or a server may now name another
    // authorization server); a client never bound (an older record) is bound here.
    let mut record = record;
    match record.client.token_endpoint.clone() {
        Some(bound) if bound != metadata.token_endpoint => {
            tracing::info!(server = %config.name, "the discovered token endpoint differs from the client's; the client's is used");
            metadata.token_endpoint = bound;
            manager.set_metadata(metadata.clone());
        }
        Some(_) => {}
        None => record.client.token_endpoint = Some(metadata.token_endpoint.clone()),
    }
    // Only over https (plain http only to a loopback host).
    if !browser_safe(&metadata.token_endpoint) {
        return Err(LifecycleError::OAuth {
            server: config.name.clone(),
            url: shown_url(&endpoint.url),
            reason: format!(
                "the token endpoint {} is not an https URL (http only on loopback)",
                shown_url(&metadata.token_endpoint)
            ),
        });
    }
    let mut client = OAuthClientConfig::new(&record.client.client_id, &record.client.redirect_uri)
        .with_scopes(record.client.scopes.clone());
    if let Some(secret) = &record.client.client_secret {
        client = client.with_client_secret(secret);
    }
    manager
        .configure_client(client)
        .map_err(|error| auth_failed(config, &error))?;
    manager.set_credential_store(CredentialHandle {
        shared: credentials,
        client: record.client,
    });
    Ok(Some(AuthClient::new(http, manager)))
}

/// The error a call on a `needs-auth` server (or on `principal`'s own connection to it)
/// gets, with `hint`'s words for what to do.
pub(crate) fn needs_auth_error(
    config: &ServerConfig,
    principal: Option<&str>,
    hint: Option<&ReconnectHint>,
) -> LifecycleError {
    LifecycleError::NeedsAuth {
        hint: match hint {
            Some(hint) => (hint.0)(&config.name, principal),
            None => ReconnectHint::plain(principal),
        },
        principal: principal.map(str::to_owned),
        server: config.name.clone(),
        url: shown_endpoint(config),
        challenge: None,
    }
}

/// A client (and its secret, and the refresh token) goes only to the token endpoint it was
/// first used with: bound there at its first use, refused at any other.
pub(crate) fn bind_to_token_endpoint(
    client: &mut ClientRecord,
    token_endpoint: &str,
) -> Result<(), String> {
    match &client.token_endpoint {
        Some(bound) if bound != token_endpoint => Err(format!(
            "the server now names another authorization server (token endpoint {} instead of {}); \
             the client set for the first is not sent there: set the client again if the change is expected",
            shown_url(token_endpoint),
            shown_url(bound)
        )),
        Some(_) => Ok(()),
        None => {
            client.token_endpoint = Some(token_endpoint.to_owned());
            Ok(())
        }
    }
}

/// Whether a browser (or a token request) may be sent to `url`: https, or http to a
/// loopback host.
pub(crate) fn browser_safe(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    match parsed.scheme() {
        "https" => true,
        "http" => match parsed.host_str() {
            Some("localhost") => true,
            Some(host) => host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback()),
            None => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oauth_starts_from_the_url_without_its_user_information() {
        let cases = [
            (
                "https://user:pw@mcp.example.com/mcp?team=a",
                "https://mcp.example.com/mcp?team=a",
            ),
            (
                "https://user@mcp.example.com/mcp",
                "https://mcp.example.com/mcp",
            ),
            ("https://mcp.example.com/mcp", "https://mcp.example.com/mcp"),
            ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/"),
        ];
        for (url, expected) in cases {
            assert_eq!(oauth_base(url), expected, "{url}");
        }
    }

    #[test]
    fn oauth_is_for_streamable_http_servers_without_their_own_authorization() {
        let endpoint = |transport, headers: &[(&str, &str)]| RemoteEndpoint {
            transport,
            url: "https://mcp.example.com/mcp".into(),
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        };
        assert!(eligible(&endpoint(
            RemoteTransport::StreamableHttp,
            &[("X-Team", "a")]
        )));
        assert!(!eligible(&endpoint(
            RemoteTransport::StreamableHttp,
            &[("authorization", "Bearer ${T}")]
        )));
        assert!(!eligible(&endpoint(RemoteTransport::Sse, &[])));
    }

    #[test]
    fn the_resource_is_the_urls_origin_and_path_lowercased_without_query_or_fragment() {
        let cases = [
            (
                "https://mcp.example.com/mcp",
                Some("https://mcp.example.com/mcp"),
            ),
            (
                "HTTPS://MCP.Example.COM/mcp",
                Some("https://mcp.example.com/mcp"),
            ),
            (
                "https://mcp.example.com:443/mcp",
                Some("https://mcp.example.com/mcp"),
            ),
            (
                "http://127.0.0.1:8080/mcp?key=s3cret#top",
                Some("http://127.0.0.1:8080/mcp"),
            ),
            (
                "https://user:pw@mcp.example.com/Team/mcp/",
                Some("https://mcp.example.com/Team/mcp/"),
            ),
            ("https://mcp.example.com/", Some("https://mcp.example.com")),
            ("https://mcp.example.com", Some("https://mcp.example.com")),
            ("http://[::1]:9/mcp", Some("http://[::1]:9/mcp")),
            ("ftp://mcp.example.com/mcp", None),
            ("/mcp", None),
            ("not a url", None),
        ];
        for (url, resource) in cases {
            assert_eq!(canonical_resource(url).as_deref(), resource, "{url}");
        }
    }

    #[test]
    fn a_needs_auth_error_says_what_to_do_in_the_apps_words_or_in_plain_ones() {
        let config = ServerConfig {
            id: "s1".into(),
            name: "hosted".into(),
            command: String::new(),
            args: Vec::new(),
            env: Default::default(),
            remote: Some(RemoteEndpoint {
                transport: RemoteTransport::StreamableHttp,
                url: "https://mcp.example.com/mcp?key=k".into(),
                headers: Default::default(),
            }),
            call_timeout: Duration::from_secs(1),
            init_timeout: Duration::from_secs(1),
            always_on: false,
            idle_timeout: Duration::from_secs(1),
            sandbox: Default::default(),
            version: 0,
        };
        let hint = ReconnectHint(Arc::new(|server: &str, principal: Option<&str>| {
            format!(": ask about {server} for {principal:?}")
        }));
        let cases = [
            (None, None, ": an operator must authorize it"),
            (
                None,
                Some("p1"),
                " with \"p1\"'s own credentials: an operator must authorize them, or remove them so that the server's are used",
            ),
            (Some(&hint), None, ": ask about hosted for None"),
            (
                Some(&hint),
                Some("p1"),
                ": ask about hosted for Some(\"p1\")",
            ),
        ];
        for (hint, principal, words) in cases {
            let error = needs_auth_error(&config, principal, hint);
            assert_eq!(
                error.to_string(),
                format!(
                    "MCP server \"hosted\" (https://mcp.example.com/mcp?…) needs authorization before its tools can be used{words}, then try again"
                ),
            );
            assert!(matches!(
                error,
                LifecycleError::NeedsAuth { principal: ref named, .. } if named.as_deref() == principal
            ));
        }
    }
}
