//! Where a remote server's OAuth record lives: sealed in the records ([`ServerRecords`]; the
//! store's `"McpOAuthToken"`),
//! cached here in the clear for the running connection, written through on every change.
//!
//! The record is the client this host registered (or was given) at the authorization server
//! and the credentials rmcp's `AuthorizationManager` keeps (tokens, granted scopes, issuer).
//! It is sealed with the manager's [`secrets::Sealer`], bound to the server's id, so a record
//! copied onto another server does not open. A record that does not open (the key changed)
//! reads as absent: the server needs authorization again.
//!
//! A principal (the app's: a bot) may have a record of its own for a server
//! ([`crate::principals`]): the same shape, sealed bound to the server's id *and* the
//! principal, so it opens neither as the server's record nor as another principal's.
//!
//! Refresh coordination: every connection of one server (or of one principal's own) shares
//! one [`ServerCredentials`] and its refresh lock, which rmcp holds across load, token
//! request and save.

use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};

use crate::records::ServerRecords;

/// The OAuth client BotCraft is at a server's authorization server.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct ClientRecord {
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    pub redirect_uri: String,
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Given by an operator (registered out of band), not registered by BotCraft: kept
    /// across authorizations instead of registering anew.
    #[serde(default)]
    pub preregistered: bool,
}

impl std::fmt::Debug for ClientRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRecord")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[hidden]"),
            )
            .field("redirect_uri", &self.redirect_uri)
            .field("scopes", &self.scopes)
            .field("preregistered", &self.preregistered)
            .finish()
    }
}

/// What is sealed in the records for one server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct OAuthRecord {
    pub client: ClientRecord,
    #[serde(default)]
    pub credentials: Option<StoredCredentials>,
}

impl OAuthRecord {
    /// Whether the record holds an access token (it may have expired: refresh decides).
    pub fn has_token(&self) -> bool {
        self.credentials
            .as_ref()
            .is_some_and(|c| c.token_response.is_some())
    }
}

/// One server's record (or one principal's own record for it): the sealed record and its
/// clear cache.
pub(crate) struct ServerCredentials {
    server: String,
    server_id: String,
    /// Set for a principal's own record.
    principal: Option<String>,
    /// What the sealed record is bound to: the server's id, or the server's and the
    /// principal (the word `bot` in it is the sealed records' format, kept so that records
    /// sealed before still open).
    binding: String,
    records: Arc<dyn ServerRecords>,
    sealer: secrets::Sealer,
    cache: tokio::sync::Mutex<Option<Option<OAuthRecord>>>,
    refresh: Arc<tokio::sync::Mutex<()>>,
}

impl ServerCredentials {
    pub fn new(
        server: &str,
        server_id: &str,
        principal: Option<&str>,
        records: Arc<dyn ServerRecords>,
        sealer: secrets::Sealer,
    ) -> Self {
        Self {
            server: server.to_owned(),
            server_id: server_id.to_owned(),
            principal: principal.map(str::to_owned),
            binding: match principal {
                None => server_id.to_owned(),
                Some(principal) => format!("{server_id}\u{0}bot\u{0}{principal}"),
            },
            records,
            sealer,
            cache: tokio::sync::Mutex::new(None),
            refresh: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    fn store_error(&self, what: &str, error: impl std::fmt::Display) -> AuthError {
        AuthError::CredentialStoreError(format!(
            "OAuth record of MCP server {:?}: {what}: {error}",
            self.server
        ))
    }

    /// The record, from the cache or the store.
    pub async fn record(&self) -> Result<Option<OAuthRecord>, AuthError> {
        let mut cache = self.cache.lock().await;
        if let Some(record) = cache.as_ref() {
            return Ok(record.clone());
        }
        let sealed = self
            .records
            .oauth_record(&self.server_id, self.principal.as_deref())
            .await
            .map_err(|error| self.store_error("cannot read it", error))?;
        let record = match sealed {
            None => None,
            Some(sealed) => match self.sealer.open(&sealed, &self.binding) {
                Ok(clear) => match serde_json::from_slice::<OAuthRecord>(&clear) {
                    Ok(record) => Some(record),
                    Err(error) => {
                        tracing::warn!(server = %self.server, %error, "the stored OAuth record is not readable; the server needs authorization again");
                        None
                    }
                },
                Err(error) => {
                    tracing::warn!(server = %self.server, %error, "the stored OAuth record does not open with this secret key; the server needs authorization again");
                    None
                }
            },
        };
        *cache = Some(record.clone());
        Ok(record)
    }

    /// Keep `record` (sealed in the records, clear in the cache).
    pub async fn put(&self, record: OAuthRecord) -> Result<(), AuthError> {
        let clear = serde_json::to_vec(&record)
            .map_err(|error| self.store_error("cannot encode it", error))?;
        let sealed = self.sealer.seal(&clear, &self.binding);
        let mut cache = self.cache.lock().await;
        self.records
            .put_oauth_record(&self.server_id, self.principal.as_deref(), &sealed)
            .await
            .map_err(|error| self.store_error("cannot write it", error))?;
        *cache = Some(Some(record));
        Ok(())
    }

    /// Forget the record (sign out).
    pub async fn clear(&self) -> Result<(), AuthError> {
        let mut cache = self.cache.lock().await;
        self.records
            .delete_oauth_record(&self.server_id, self.principal.as_deref())
            .await
            .map_err(|error| self.store_error("cannot delete it", error))?;
        *cache = Some(None);
        Ok(())
    }

    /// Drop the tokens, keep the client registration (a refresh token was refused, or the
    /// authorization server's issuer changed).
    pub async fn drop_tokens(&self) -> Result<(), AuthError> {
        match self.record().await? {
            Some(mut record) if record.credentials.is_some() => {
                record.credentials = None;
                self.put(record).await
            }
            _ => Ok(()),
        }
    }
}

/// rmcp's view of one server's credentials, as one client (`client`) sees them: a save
/// keeps that client with the tokens it got.
pub(crate) struct CredentialHandle {
    pub shared: Arc<ServerCredentials>,
    pub client: ClientRecord,
}

#[async_trait::async_trait]
impl CredentialStore for CredentialHandle {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self
            .shared
            .record()
            .await?
            .filter(|record| record.client.client_id == self.client.client_id)
            .and_then(|record| record.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.shared
            .put(OAuthRecord {
                client: self.client.clone(),
                credentials: Some(credentials),
            })
            .await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.shared.drop_tokens().await
    }

    /// A refused refresh token is dropped, so the next request does not try it again: the
    /// server is then `needs-auth` until someone signs in (no refresh loop).
    async fn on_refresh_token_rejected(
        &self,
        _credentials: &StoredCredentials,
    ) -> Result<(), AuthError> {
        tracing::warn!(server = %self.shared.server, "the authorization server refused the refresh token; the server needs authorization again");
        self.shared.drop_tokens().await
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let guard = Arc::clone(&self.shared.refresh).lock_owned().await;
        Ok(Some(CredentialRefreshGuard::new(guard)))
    }
}
