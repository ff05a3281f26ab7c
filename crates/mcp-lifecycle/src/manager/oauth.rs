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
//!   it), the **`resource` indicator** on every token request and **`iss`** checking (RFC 9207)
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
//!   (`crate::oauth::canonical_resource`: origin and path). Once the URL points elsewhere
//!   (an edit, an imported `mcpServers` document), the record is not used, and nothing of it
//!   is sent anywhere: the server connects without a token and needs authorization again.
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

use crate::config::ServerConfig;
use crate::error::LifecycleError;
use crate::manager::{McpServerManager, Slot};
use crate::oauth::{
    OAuthSettings, OAuthStatus, PENDING_TTL, Pending, auth_failed, authorization_manager,
    bind_to_token_endpoint, browser_safe, eligible, needs_auth_error, pkce_refusal,
};
use crate::oauth_credentials::{ClientRecord, CredentialHandle, OAuthRecord};
use crate::records::ServerRecords;
use mcp_client::shown_url;
use rmcp::transport::auth::{
    AuthError, AuthorizationRequest, AuthorizationSession, WWWAuthenticateParams,
};
use std::sync::Arc;
use std::time::Instant;

impl McpServerManager {
    /// Start authorizing `server`: discover its authorization server, register BotCraft
    /// there if needed, and return the URL to open in a browser. `challenge` is the last
    /// `WWW-Authenticate` the server answered with, when there was one.
    pub async fn oauth_start(&self, server: &str) -> Result<String, LifecycleError> {
        self.oauth_start_for(server, None).await
    }

    /// [`Self::oauth_start`] for `principal` alone: the authorization becomes the
    /// principal's own record for `server`, and its calls then use it instead of the
    /// server's ([`crate::principals`]). A client registered out of band for the server is
    /// used for the principal too.
    pub async fn oauth_start_for(
        &self,
        server: &str,
        principal: Option<&str>,
    ) -> Result<String, LifecycleError> {
        let server_slot = self.slot(server)?;
        let slot = match principal {
            Some(principal) => server_slot
                .principal_slots
                .lock()
                .ok()
                .and_then(|slots| slots.get(principal).cloned())
                .unwrap_or_else(|| Arc::clone(&server_slot)),
            None => Arc::clone(&server_slot),
        };
        let config = server_slot.config();
        let (settings, records) = self.oauth_parts(&config)?;
        let Some(endpoint) = config.remote.clone().filter(eligible) else {
            return Err(LifecycleError::OAuthUnavailable {
                server: config.name.clone(),
                reason: "only a streamable-HTTP server without an Authorization header of its own uses OAuth".into(),
            });
        };
        let challenge = slot.lock().auth_challenge.clone();
        let (mut manager, metadata, discovered) =
            authorization_manager(&config, &endpoint, challenge.as_deref()).await?;
        if let Some(reason) = pkce_refusal(&metadata, discovered) {
            return Err(LifecycleError::OAuth {
                server: config.name.clone(),
                url: shown_url(&endpoint.url),
                reason,
            });
        }
        // The code, the PKCE verifier, a client's secret and the tokens travel to these: only
        // over https (plain http only to a loopback host), as the browser's endpoint.
        for (what, url) in [
            ("token endpoint", Some(&metadata.token_endpoint)),
            (
                "registration endpoint",
                metadata.registration_endpoint.as_ref(),
            ),
        ] {
            if let Some(url) = url.filter(|url| !browser_safe(url)) {
                return Err(LifecycleError::OAuth {
                    server: config.name.clone(),
                    url: shown_url(&endpoint.url),
                    reason: format!(
                        "the {what} {} is not an https URL (http only on loopback)",
                        shown_url(url)
                    ),
                });
            }
        }
        let credentials = self
            .inner
            .oauth
            .credentials(&config, principal, &records, &settings);
        let previous = credentials
            .record()
            .await
            .map_err(|error| auth_failed(&config, &error))?;
        // A principal's first authorization uses the client an operator registered for the
        // server.
        let server_client = match (principal, &previous) {
            (Some(_), None) => self
                .inner
                .oauth
                .credentials(&config, None, &records, &settings)
                .record()
                .await
                .map_err(|error| auth_failed(&config, &error))?
                .map(|record| record.client)
                .filter(|client| client.preregistered),
            _ => None,
        };

        // Scopes: the union of what was granted and what the challenge requires (step-up),
        // or, on a first authorization, the challenge's, else the resource's.
        let challenged_scope = challenge.as_deref().and_then(|header| {
            let base = reqwest::Url::parse(&endpoint.url).ok()?;
            WWWAuthenticateParams::parse(header, &base).scope
        });
        let scopes = match &previous {
            Some(previous) if challenged_scope.is_some() => {
                let granted: Vec<&str> =
                    previous.client.scopes.iter().map(String::as_str).collect();
                let mut union = manager.select_scopes(challenged_scope.as_deref(), &granted);
                for scope in &previous.client.scopes {
                    if !union.contains(scope) {
                        union.push(scope.clone());
                    }
                }
                union
            }
            _ => manager.select_initial_scopes(&[]).await,
        };

        let metadata_supports_cimd = metadata
            .additional_fields
            .get("client_id_metadata_document_supported")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        let mut request = AuthorizationRequest::new(&settings.redirect_uri)
            .with_client_name(&settings.client_name)
            .with_scopes(scopes.clone());
        let preregistered = previous
            .as_ref()
            .map(|record| record.client.clone())
            .filter(|client| client.preregistered)
            .or(server_client);
        let client = if let Some(mut client) = preregistered {
            bind_to_token_endpoint(&mut client, &metadata.token_endpoint).map_err(|reason| {
                LifecycleError::OAuth {
                    server: config.name.clone(),
                    url: shown_url(&endpoint.url),
                    reason,
                }
            })?;
            request = request.with_preregistered_client(&client.client_id);
            if let Some(secret) = &client.client_secret {
                request = request.with_client_secret(secret);
            }
            client.redirect_uri = settings.redirect_uri.clone();
            client.scopes = scopes.clone();
            client
        } else {
            match (&settings.client_metadata_url, metadata_supports_cimd) {
                (Some(url), true) => {
                    request = request.with_client_metadata_url(url);
                    ClientRecord {
                        client_id: url.clone(),
                        client_secret: None,
                        redirect_uri: settings.redirect_uri.clone(),
                        scopes: scopes.clone(),
                        preregistered: false,
                        token_endpoint: Some(metadata.token_endpoint.clone()),
                    }
                }
                _ => {
                    let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
                    let registered = manager
                        .register_client(&settings.client_name, &settings.redirect_uri, &scope_refs)
                        .await
                        .map_err(|error| auth_failed(&config, &error))?;
                    request = request.with_preregistered_client(&registered.client_id);
                    if let Some(secret) = &registered.client_secret {
                        request = request.with_client_secret(secret);
                    }
                    ClientRecord {
                        client_id: registered.client_id,
                        client_secret: registered.client_secret,
                        redirect_uri: settings.redirect_uri.clone(),
                        scopes: scopes.clone(),
                        preregistered: false,
                        token_endpoint: Some(metadata.token_endpoint.clone()),
                    }
                }
            }
        };
        manager.set_credential_store(CredentialHandle {
            shared: credentials,
            client,
        });
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, error)| auth_failed(&config, &error))?;
        let url = session.get_authorization_url().to_owned();
        // The URL comes from the server's metadata and goes to a browser: only http(s), and
        // plain http only to a loopback host (a `javascript:` endpoint would run in the page
        // that opens it).
        if !browser_safe(&url) {
            return Err(LifecycleError::OAuth {
                server: config.name.clone(),
                url: shown_url(&endpoint.url),
                reason: format!(
                    "the authorization endpoint {} is not an https URL (http only on loopback)",
                    shown_url(&url)
                ),
            });
        }
        let state = reqwest::Url::parse(&url)
            .ok()
            .and_then(|parsed| {
                parsed
                    .query_pairs()
                    .find(|(key, _)| key == "state")
                    .map(|(_, value)| value.into_owned())
            })
            .ok_or_else(|| LifecycleError::OAuth {
                server: config.name.clone(),
                url: shown_url(&endpoint.url),
                reason: "the authorization URL carries no state".into(),
            })?;
        let mut pending = self.inner.oauth.pending.lock().await;
        pending.retain(|_, flow| flow.started.elapsed() < PENDING_TTL);
        pending.insert(
            state,
            Pending {
                server: config.name.clone(),
                principal: principal.map(str::to_owned),
                session,
                started: Instant::now(),
            },
        );
        tracing::info!(server = %config.name, principal = principal.unwrap_or_default(), "OAuth authorization started");
        Ok(url)
    }

    /// An authorization the authorization server refused (a redirect with `error`): ends the
    /// flow `state` names and returns its server's name. `OAuthUnknownState` for a `state` no
    /// flow under way has (anyone can send a browser to the callback with an `error`).
    pub async fn oauth_refused(&self, state: &str) -> Result<String, LifecycleError> {
        let mut pending = self.inner.oauth.pending.lock().await;
        pending.retain(|_, flow| flow.started.elapsed() < PENDING_TTL);
        let flow = pending
            .remove(state)
            .ok_or(LifecycleError::OAuthUnknownState)?;
        tracing::info!(server = %flow.server, "OAuth authorization refused by the authorization server");
        Ok(flow.server)
    }

    /// Complete an authorization: the redirect's `code`, `state` and (RFC 9207) `iss`.
    /// Returns the server's name; its next use connects with the new token.
    pub async fn oauth_complete(
        &self,
        code: &str,
        state: &str,
        issuer: Option<&str>,
    ) -> Result<String, LifecycleError> {
        let flow = {
            let mut pending = self.inner.oauth.pending.lock().await;
            pending.retain(|_, flow| flow.started.elapsed() < PENDING_TTL);
            pending.remove(state)
        };
        let Some(flow) = flow else {
            return Err(LifecycleError::OAuthUnknownState);
        };
        let slot = self.slot(&flow.server)?;
        let config = slot.config();
        let exchanged = flow
            .session
            .handle_callback_with_issuer(code, state, issuer)
            .await;
        if let Err(error) = exchanged {
            // A redirect with a forged or missing `iss` must not spend the flow: the genuine
            // redirect may still come.
            if matches!(error, AuthError::AuthorizationServerMismatch { .. }) {
                self.inner
                    .oauth
                    .pending
                    .lock()
                    .await
                    .insert(state.to_owned(), flow);
            }
            let error = auth_failed(&config, &error);
            tracing::warn!(server = %config.name, %error, "OAuth callback refused");
            return Err(error);
        }
        let slot = match &flow.principal {
            Some(principal) => self.principal_slot(&slot, principal),
            None => slot,
        };
        self.authorized(&slot).await;
        tracing::info!(server = %config.name, principal = flow.principal.as_deref().unwrap_or_default(), "OAuth authorization completed");
        Ok(config.name.clone())
    }

    /// Use a client registered out of band at `server`'s authorization server (its id and,
    /// for a confidential client, its secret, sealed with the tokens). Replaces the record:
    /// tokens of another client are dropped, and the next authorization uses this client.
    /// Bound, as tokens are, to the resource of the server's URL as it is now: once the URL
    /// points elsewhere the client is not used (nor its secret sent), and is set again.
    pub async fn oauth_set_client(
        &self,
        server: &str,
        client_id: &str,
        client_secret: Option<&str>,
    ) -> Result<(), LifecycleError> {
        let slot = self.slot(server)?;
        let config = slot.config();
        let (settings, records) = self.oauth_parts(&config)?;
        let unavailable = |reason: &str| LifecycleError::OAuthUnavailable {
            server: config.name.clone(),
            reason: reason.to_owned(),
        };
        if config
            .remote
            .as_ref()
            .is_none_or(|endpoint| !eligible(endpoint))
        {
            return Err(unavailable(
                "only a streamable-HTTP server without an Authorization header of its own uses OAuth",
            ));
        }
        if client_id.trim().is_empty() || client_id.chars().any(char::is_control) {
            return Err(unavailable(
                "the client id is empty or holds control characters",
            ));
        }
        let credentials = self
            .inner
            .oauth
            .credentials(&config, None, &records, &settings);
        credentials
            .put(OAuthRecord::new(
                ClientRecord {
                    client_id: client_id.trim().to_owned(),
                    client_secret: client_secret
                        .map(str::to_owned)
                        .filter(|secret| !secret.is_empty()),
                    redirect_uri: settings.redirect_uri.clone(),
                    scopes: Vec::new(),
                    preregistered: true,
                    token_endpoint: None,
                },
                None,
            ))
            .await
            .map_err(|error| auth_failed(&config, &error))?;
        tracing::info!(server = %config.name, "OAuth client set by an operator");
        Ok(())
    }

    /// The OAuth records of the server with id `server_id` (`None`: of every server) changed
    /// in the store, written by another replica: the ones kept in memory are read again at
    /// their next use (a sign-out there takes the tokens away here too), and a principal's
    /// own connection whose record is gone closes, so that its calls go on the server's
    /// again, as on the replica that signed it out.
    pub async fn oauth_records_changed(&self, server_id: Option<&str>) {
        self.inner.oauth.forget_cached(server_id).await;
        for (_, slot) in self.slots() {
            let own: Vec<(String, Arc<Slot>)> = slot
                .principal_slots
                .lock()
                .map(|slots| {
                    slots
                        .iter()
                        .map(|(p, s)| (p.clone(), Arc::clone(s)))
                        .collect()
                })
                .unwrap_or_default();
            let id = slot.config().id.clone();
            if own.is_empty() || server_id.is_some_and(|wanted| wanted != id) {
                continue;
            }
            let Ok(owners) = self.inner.records.oauth_principals(&id).await else {
                continue;
            };
            for (principal, connection) in own {
                if owners.contains(&principal) {
                    continue;
                }
                let removed = slot
                    .principal_slots
                    .lock()
                    .ok()
                    .and_then(|mut slots| slots.remove(&principal));
                if removed.is_some() {
                    self.stop_slot(&connection, crate::spans::StopReason::Credentials)
                        .await;
                }
            }
        }
    }

    /// Forget `server`'s OAuth record (its tokens and client registration). The principals
    /// with an authorization of their own keep it.
    pub async fn oauth_sign_out(&self, server: &str) -> Result<(), LifecycleError> {
        self.oauth_sign_out_for(server, None).await
    }

    /// [`Self::oauth_sign_out`], or (`principal`) forget that principal's own record: its
    /// own connection closes and its calls go on the server's again.
    pub async fn oauth_sign_out_for(
        &self,
        server: &str,
        principal: Option<&str>,
    ) -> Result<(), LifecycleError> {
        let slot = self.slot(server)?;
        let config = slot.config();
        let (settings, records) = self.oauth_parts(&config)?;
        let credentials = self
            .inner
            .oauth
            .credentials(&config, principal, &records, &settings);
        credentials
            .clear()
            .await
            .map_err(|error| auth_failed(&config, &error))?;
        match principal {
            None => {
                self.stop_slot(&slot, crate::spans::StopReason::Credentials)
                    .await
            }
            Some(principal) => {
                let removed = slot
                    .principal_slots
                    .lock()
                    .ok()
                    .and_then(|mut slots| slots.remove(principal));
                if let Some(removed) = removed {
                    self.stop_slot(&removed, crate::spans::StopReason::Credentials)
                        .await;
                }
            }
        }
        Ok(())
    }

    /// `server`'s authorization, when it is a server OAuth applies to and it has a record.
    pub async fn oauth_status(&self, server: &str) -> Result<Option<OAuthStatus>, LifecycleError> {
        self.oauth_status_for(server, None).await
    }

    /// [`Self::oauth_status`], or (`principal`) that principal's own authorization for `server`.
    pub async fn oauth_status_for(
        &self,
        server: &str,
        principal: Option<&str>,
    ) -> Result<Option<OAuthStatus>, LifecycleError> {
        let slot = self.slot(server)?;
        let config = slot.config();
        let Ok((settings, records)) = self.oauth_parts(&config) else {
            return Ok(None);
        };
        if !config.remote.as_ref().is_some_and(eligible) {
            return Ok(None);
        }
        let credentials = self
            .inner
            .oauth
            .credentials(&config, principal, &records, &settings);
        let record = credentials.record().await.ok().flatten();
        Ok(record.map(|record| OAuthStatus {
            authorized: record.has_token(),
            scopes: record
                .credentials
                .map(|c| c.granted_scopes)
                .filter(|scopes| !scopes.is_empty())
                .unwrap_or(record.client.scopes),
        }))
    }

    fn oauth_parts(
        &self,
        config: &ServerConfig,
    ) -> Result<(OAuthSettings, Arc<dyn ServerRecords>), LifecycleError> {
        match &self.inner.settings.oauth {
            Some(settings) => Ok((settings.clone(), Arc::clone(&self.inner.records))),
            None => Err(LifecycleError::OAuthUnavailable {
                server: config.name.clone(),
                reason: "OAuth is not set up on this host (no secret key or callback URL)".into(),
            }),
        }
    }
}

impl McpServerManager {
    /// The error a call on `slot` gets while it waits for an authorization.
    pub(crate) fn needs_auth_error(&self, slot: &crate::manager::Slot) -> LifecycleError {
        let hint = self
            .inner
            .settings
            .oauth
            .as_ref()
            .and_then(|oauth| oauth.reconnect_hint.as_ref());
        needs_auth_error(&slot.config(), slot.principal.as_deref(), hint)
    }

    /// `slot` answered with an OAuth challenge: it waits for an authorization now (no
    /// restart, no backoff); a connection it had is closed.
    pub(crate) fn mark_needs_auth(
        &self,
        slot: &Arc<crate::manager::Slot>,
        challenge: Option<String>,
    ) -> LifecycleError {
        let config = slot.config();
        let error = self.needs_auth_error(slot);
        let previous = {
            let mut state = slot.lock();
            if challenge.is_some() {
                state.auth_challenge = challenge;
            }
            state.last_error = Some(error.clone());
            state.start_failures = 0;
            state.retry_at = None;
            state.replace(crate::manager::Phase::NeedsAuth)
        };
        if let crate::manager::Phase::Running(process) = previous {
            process.lose_connection();
            let grace = self.inner.settings.stop_grace;
            tokio::spawn(async move { process.stop(grace).await });
        }
        tracing::warn!(server = %config.name, principal = slot.principal.as_deref().unwrap_or_default(), "MCP server needs authorization");
        error
    }

    /// `slot` was just authorized: it leaves `needs-auth` (a running connection is closed,
    /// so that the next use connects with the new token); an always-on server connects now.
    async fn authorized(&self, slot: &Arc<crate::manager::Slot>) {
        let running = matches!(slot.lock().phase, crate::manager::Phase::Running(_));
        if running {
            self.stop_slot(slot, crate::spans::StopReason::Credentials)
                .await;
        }
        {
            let mut state = slot.lock();
            if matches!(
                state.phase,
                crate::manager::Phase::NeedsAuth | crate::manager::Phase::Error
            ) {
                state.set(crate::manager::Phase::Stopped);
            }
            state.last_error = None;
            state.auth_challenge = None;
            state.start_failures = 0;
            state.retry_at = None;
        }
        let config = slot.config();
        if config.always_on
            && let Err(error) = self.start_server(&config.name).await
        {
            tracing::warn!(server = %config.name, %error, "the authorized server did not connect");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An operator's client is bound to the token endpoint of its first use; another one is
    /// refused, and the binding stays.
    #[test]
    fn an_operators_client_goes_only_to_its_first_token_endpoint() {
        let mut client = ClientRecord {
            client_id: "operator-client".to_owned(),
            client_secret: Some("s3cret".to_owned()),
            redirect_uri: "https://bots.example.com/oauth/callback".to_owned(),
            scopes: Vec::new(),
            preregistered: true,
            token_endpoint: None,
        };
        let first = "https://auth.example.com/token";
        assert_eq!(bind_to_token_endpoint(&mut client, first), Ok(()));
        assert_eq!(client.token_endpoint.as_deref(), Some(first));
        assert_eq!(bind_to_token_endpoint(&mut client, first), Ok(()));
        let refused = bind_to_token_endpoint(&mut client, "https://evil-as.example/token");
        assert!(
            refused
                .as_ref()
                .is_err_and(|reason| reason.contains("https://evil-as.example/token")
                    && !reason.contains("s3cret")),
            "{refused:?}"
        );
        assert_eq!(client.token_endpoint.as_deref(), Some(first));
    }

    #[test]
    fn only_http_urls_a_browser_may_open_are_handed_out() {
        for (url, safe) in [
            ("https://auth.example.com/authorize?x=1", true),
            ("http://127.0.0.1:9000/authorize", true),
            ("http://localhost:9000/authorize", true),
            ("http://[::1]:9000/authorize", true),
            ("http://auth.example.com/authorize", false),
            ("javascript:alert(1)", false),
            ("data:text/html,hi", false),
            ("not a url", false),
        ] {
            assert_eq!(browser_safe(url), safe, "{url}");
        }
    }
}
