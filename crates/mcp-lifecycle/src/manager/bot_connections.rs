//! The per-bot OAuth override: a bot with OAuth credentials of its own for a remote server
//! (authorized with [`McpServerManager::oauth_start_for`], kept sealed in
//! `"McpOAuthBotToken"`) gets a connection of its own to that server, with its own tokens;
//! every other bot keeps the server's shared connection and token.
//!
//! A bot's connection is a [`Slot`] held by the server's slot, under the same rules as the
//! server's: connected lazily on the bot's first use (never at start: it is not always-on),
//! call and init timeouts, reconnect and send once more after a lost session, closed after
//! the idle timeout, `needs-auth` on its own when the bot's tokens are refused (then the bot
//! is told how to connect again; it does not fall back to the server's identity). It takes
//! the server's config changes and stops with the server. The server's catalog (tool cache,
//! `tool_search`, bindings) stays the server connection's.
//!
//! Not relayed from a bot's own connection: the server's notifications (log messages,
//! resource and list changes) other than the answer to the bot's own requests.

use crate::bot_connections::{BotAuthorization, bot_config};
use crate::error::LifecycleError;
use crate::manager::{McpServerManager, Slot};
use crate::state::ServerState;
use std::sync::Arc;

impl McpServerManager {
    /// The slot a request of `bot` (its id) to `server` goes to: the bot's own connection when
    /// it has an OAuth record of its own for that server, else the server's.
    pub(crate) async fn slot_for(
        &self,
        server: &str,
        bot: Option<&str>,
    ) -> Result<Arc<Slot>, LifecycleError> {
        let slot = self.slot(server)?;
        let Some(bot) = bot else {
            return Ok(slot);
        };
        if let Some(own) = slot
            .bot_slots
            .lock()
            .ok()
            .and_then(|slots| slots.get(bot).cloned())
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
            .credentials(&config, Some(bot), &self.inner.records, settings)
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
            self.bot_slot(&slot, bot)
        } else {
            slot
        })
    }

    /// Bot `bot`'s own connection to the server of `server_slot`, made (stopped) if new.
    pub(crate) fn bot_slot(&self, server_slot: &Arc<Slot>, bot: &str) -> Arc<Slot> {
        let config = bot_config(&server_slot.config());
        let mut slots = server_slot
            .bot_slots
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        Arc::clone(
            slots
                .entry(bot.to_owned())
                .or_insert_with(|| Arc::new(Slot::with_bot(config, Some(bot.to_owned())))),
        )
    }

    /// The bots with an OAuth authorization of their own for `server`, with the state of
    /// their own connections. Empty for a server OAuth does not apply to.
    pub async fn bot_authorizations(
        &self,
        server: &str,
    ) -> Result<Vec<BotAuthorization>, LifecycleError> {
        let slot = self.slot(server)?;
        let config = slot.config();
        if self.inner.settings.oauth.is_none()
            || !config.remote.as_ref().is_some_and(crate::oauth::eligible)
        {
            return Ok(Vec::new());
        }
        let mut found = Vec::new();
        for bot_id in self.inner.records.bot_oauth_overrides(&config.id).await? {
            let Some(status) = self.oauth_status_for(server, Some(&bot_id)).await? else {
                continue;
            };
            let own = slot
                .bot_slots
                .lock()
                .ok()
                .and_then(|slots| slots.get(&bot_id).cloned());
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
            found.push(BotAuthorization {
                state: if status.authorized {
                    state
                } else {
                    ServerState::NeedsAuth
                },
                bot_id,
                authorized: status.authorized,
                scopes: status.scopes,
                last_error,
            });
        }
        Ok(found)
    }
}
