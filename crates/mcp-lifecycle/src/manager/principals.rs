//! Principals' own connections: a principal (an opaque id of the layer above: the app's
//! bots) with OAuth credentials of its own for a remote server (authorized with
//! [`McpServerManager::oauth_start_for`], kept sealed in the records under that principal)
//! gets a connection of its own to that server, with its own tokens; every other request
//! keeps the server's shared connection and token.
//!
//! A principal's connection is a [`Slot`] held by the server's slot, under the same rules as
//! the server's: connected lazily on first use (never at start: it is not always-on), call
//! and init timeouts, reconnect and send once more after a lost session, closed after the
//! idle timeout, `needs-auth` on its own when its tokens are refused (the error names the
//! principal; there is no fall-back to the server's identity). It takes the server's config
//! changes and stops with the server. The server's catalog (tool cache, `tool_search`,
//! bindings) stays the server connection's.
//!
//! Not relayed from a principal's own connection: the server's notifications (log messages,
//! resource and list changes) other than the answers to its own requests.

use crate::error::LifecycleError;
use crate::manager::{McpServerManager, Slot};
use crate::principals::{PrincipalAuthorization, principal_config};
use crate::state::ServerState;
use std::sync::Arc;

impl McpServerManager {
    /// The slot a request for `principal` to `server` goes to: the principal's own connection
    /// when it has an OAuth record of its own for that server, else the server's.
    pub(crate) async fn slot_for(
        &self,
        server: &str,
        principal: Option<&str>,
    ) -> Result<Arc<Slot>, LifecycleError> {
        let slot = self.slot(server)?;
        let Some(principal) = principal else {
            return Ok(slot);
        };
        if let Some(own) = slot
            .principal_slots
            .lock()
            .ok()
            .and_then(|slots| slots.get(principal).cloned())
        {
            return Ok(own);
        }
        let Some(settings) = &self.inner.settings.oauth else {
            return Ok(slot);
        };
        // Looked at in place: most servers are not OAuth ones, and this runs on every call.
        let eligible = slot
            .config
            .lock()
            .map(|config| config.remote.as_ref().is_some_and(crate::oauth::eligible))
            .unwrap_or(false);
        if !eligible {
            return Ok(slot);
        }
        let config = slot.config();
        let has_own = self
            .inner
            .oauth
            .credentials(&config, Some(principal), &self.inner.records, settings)
            .record()
            .await
            .map_err(|error| LifecycleError::OAuth {
                server: config.name.clone(),
                url: mcp_client::shown_url(
                    config
                        .remote
                        .as_ref()
                        .map(|endpoint| endpoint.url.as_str())
                        .unwrap_or_default(),
                ),
                reason: error.to_string(),
            })?
            .is_some();
        Ok(if has_own {
            self.principal_slot(&slot, principal)
        } else {
            slot
        })
    }

    /// `principal`'s own connection to the server of `server_slot`, made (stopped) if new.
    pub(crate) fn principal_slot(&self, server_slot: &Arc<Slot>, principal: &str) -> Arc<Slot> {
        let config = principal_config(&server_slot.config());
        let mut slots = server_slot
            .principal_slots
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        Arc::clone(
            slots.entry(principal.to_owned()).or_insert_with(|| {
                Arc::new(Slot::with_principal(config, Some(principal.to_owned())))
            }),
        )
    }

    /// The principals with an OAuth authorization of their own for `server`, with the state
    /// of their own connections. Empty for a server OAuth does not apply to.
    pub async fn principal_authorizations(
        &self,
        server: &str,
    ) -> Result<Vec<PrincipalAuthorization>, LifecycleError> {
        let slot = self.slot(server)?;
        let config = slot.config();
        if self.inner.settings.oauth.is_none()
            || !config.remote.as_ref().is_some_and(crate::oauth::eligible)
        {
            return Ok(Vec::new());
        }
        let mut found = Vec::new();
        for principal in self.inner.records.oauth_principals(&config.id).await? {
            let Some(status) = self.oauth_status_for(server, Some(&principal)).await? else {
                continue;
            };
            let own = slot
                .principal_slots
                .lock()
                .ok()
                .and_then(|slots| slots.get(&principal).cloned());
            let (state, last_error) = match own {
                Some(own) => {
                    let state = own.lock();
                    (
                        state.phase.state(),
                        state.last_error.as_ref().map(ToString::to_string),
                    )
                }
                None => (ServerState::Stopped, None),
            };
            found.push(PrincipalAuthorization {
                state: if status.authorized {
                    state
                } else {
                    ServerState::NeedsAuth
                },
                principal,
                authorized: status.authorized,
                scopes: status.scopes,
                last_error,
            });
        }
        Ok(found)
    }
}
