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
//! It is also bound to the resource it was issued for: the canonical resource URI of the
//! server's URL when it was written ([`crate::oauth::canonical_resource`]: origin and path),
//! sealed inside it. A record is used only while the server's URL has that same resource;
//! after a config change that points the server elsewhere (another host, scheme, port or
//! path: an edit, an imported `mcpServers` document keeping the server's id), it reads as
//! absent, with a warning, and nothing of it (token, refresh token, client secret) is sent
//! anywhere: the server needs authorization again. The record stays stored (the URL put back,
//! it is used again) until an authorization, a client set or a sign-out replaces it. A record
//! sealed before this binding names no resource: at its first read it is bound to the URL the
//! server has then (what was trusted before the binding) and sealed again, so nobody
//! authorizes again after the upgrade.
//!
//! A principal (the app's: a bot) may have a record of its own for a server
//! ([`crate::principals`]): the same shape, sealed bound to the server's id *and* the
//! principal, so it opens neither as the server's record nor as another principal's, and
//! bound to the resource as the server's is.
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
    /// The token endpoint an operator's client (and its secret) was first used with: it is
    /// never used with another one (a server whose metadata later names another
    /// authorization server does not get the secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
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
            .field("token_endpoint", &self.token_endpoint)
            .finish()
    }
}

/// What is sealed in the records for one server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct OAuthRecord {
    /// The resource the record was issued for ([`crate::oauth::canonical_resource`] of the
    /// server's URL), set by [`ServerCredentials::put`]: the record is used only for that
    /// resource. `None` in a record sealed before records were bound to one: never used.
    #[serde(default)]
    pub resource: Option<String>,
    pub client: ClientRecord,
    #[serde(default)]
    pub credentials: Option<StoredCredentials>,
}

impl OAuthRecord {
    /// A record of `client` and `credentials`, bound to its resource when it is put.
    pub fn new(client: ClientRecord, credentials: Option<StoredCredentials>) -> Self {
        Self {
            resource: None,
            client,
            credentials,
        }
    }

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
    /// The resource of the server's URL these credentials are for
    /// ([`crate::oauth::canonical_resource`]): a stored record is used only if it was issued
    /// for it. `None` (no http(s) URL): no record is used, none can be written.
    resource: Option<String>,
    records: Arc<dyn ServerRecords>,
    sealer: secrets::Sealer,
    cache: tokio::sync::Mutex<Option<Option<OAuthRecord>>>,
    refresh: Arc<tokio::sync::Mutex<()>>,
    /// Set when the server's URL moved to another resource and new credentials took this
    /// one's place: a connection to the old URL still holding it writes nothing any more (its
    /// refresh would replace the record of the new URL).
    superseded: std::sync::atomic::AtomicBool,
}

impl ServerCredentials {
    pub fn new(
        server: &str,
        server_id: &str,
        principal: Option<&str>,
        records: Arc<dyn ServerRecords>,
        sealer: secrets::Sealer,
        resource: Option<String>,
    ) -> Self {
        Self {
            server: server.to_owned(),
            server_id: server_id.to_owned(),
            principal: principal.map(str::to_owned),
            binding: match principal {
                None => server_id.to_owned(),
                Some(principal) => format!("{server_id}\u{0}bot\u{0}{principal}"),
            },
            resource,
            records,
            sealer,
            cache: tokio::sync::Mutex::new(None),
            refresh: Arc::new(tokio::sync::Mutex::new(())),
            superseded: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// New credentials for another resource took this one's place ([`Self::superseded`]).
    pub fn supersede(&self) {
        self.superseded
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The resource these credentials are for.
    pub fn resource(&self) -> Option<&str> {
        self.resource.as_deref()
    }

    fn store_error(&self, what: &str, error: impl std::fmt::Display) -> AuthError {
        AuthError::CredentialStoreError(format!(
            "OAuth record of MCP server {:?}: {what}: {error}",
            self.server
        ))
    }

    /// The record, from the cache or the store; none when the stored one was issued for
    /// another resource (or names none).
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
                    // Sealed before records were bound to a resource: adopted for the URL it
                    // is first read at (what was trusted before the binding), and sealed
                    // again bound to it, so nobody authorizes again after the upgrade.
                    Ok(mut record) if record.resource.is_none() && self.resource.is_some() => {
                        record.resource = self.resource.clone();
                        let clear = serde_json::to_vec(&record)
                            .map_err(|error| self.store_error("cannot encode it", error))?;
                        self.records
                            .put_oauth_record(
                                &self.server_id,
                                self.principal.as_deref(),
                                &self.sealer.seal(&clear, &self.binding),
                            )
                            .await
                            .map_err(|error| self.store_error("cannot write it", error))?;
                        let principal = self.principal.as_deref().unwrap_or_default();
                        tracing::info!(server = %self.server, principal, "a stored OAuth record sealed before records were bound to the server's URL is now bound to its URL");
                        Some(record)
                    }
                    Ok(record) => self.for_this_resource(record),
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

    /// `record` if it was issued for this resource; else none (the server's URL changed, or
    /// the record predates the binding and the server has no http(s) URL to bind it to), said
    /// in the log without anything of the record.
    fn for_this_resource(&self, record: OAuthRecord) -> Option<OAuthRecord> {
        if record.resource.is_some() && record.resource == self.resource {
            return Some(record);
        }
        let principal = self.principal.as_deref().unwrap_or_default();
        if record.resource.is_none() {
            tracing::warn!(server = %self.server, principal, "the stored OAuth record was sealed before records were bound to the server's URL; it is not used, and the server needs authorization again");
        } else {
            tracing::warn!(server = %self.server, principal, "the stored OAuth record was issued for another URL than the server's (its origin or path changed); it is not used, nothing of it is sent, and the server needs authorization again");
        }
        None
    }

    /// Keep `record` (sealed in the records, clear in the cache), bound to this resource.
    pub async fn put(&self, mut record: OAuthRecord) -> Result<(), AuthError> {
        if self.superseded.load(std::sync::atomic::Ordering::SeqCst) {
            let principal = self.principal.as_deref().unwrap_or_default();
            tracing::warn!(server = %self.server, principal, "a connection to the server's former URL got new OAuth tokens; they are not kept (the server's URL changed)");
            return Ok(());
        }
        let Some(resource) = &self.resource else {
            return Err(self.store_error(
                "cannot bind it",
                "the server's URL is not an absolute http(s) URL",
            ));
        };
        record.resource = Some(resource.clone());
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

    /// Drop the record kept in memory: the next use reads the store again (another replica
    /// wrote or deleted it: a sign-out there is a sign-out here).
    pub async fn forget_cached(&self) {
        *self.cache.lock().await = None;
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
            .put(OAuthRecord::new(self.client.clone(), Some(credentials)))
            .await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.shared.drop_tokens().await
    }

    /// A refused refresh token is dropped, so the next request does not try it again: the
    /// server is then `needs-auth` until someone signs in (no refresh loop). Only while the
    /// stored record still holds that token: another replica that refreshed at the same
    /// moment (a provider that rotates refresh tokens refuses the older one) stored new
    /// tokens, which are kept, and used from now on here too.
    async fn on_refresh_token_rejected(
        &self,
        rejected: &StoredCredentials,
    ) -> Result<(), AuthError> {
        use oauth2::TokenResponse as _;
        let refresh_token = |credentials: &StoredCredentials| {
            credentials
                .token_response
                .as_ref()
                .and_then(|response| response.refresh_token())
                .map(|token| token.secret().clone())
        };
        self.shared.forget_cached().await;
        let stored = self
            .shared
            .record()
            .await?
            .and_then(|record| record.credentials);
        if let Some(stored) = stored
            && refresh_token(&stored) != refresh_token(rejected)
        {
            tracing::info!(server = %self.shared.server, "a refresh token was refused, but the record holds newer tokens (refreshed elsewhere meanwhile); they are used");
            return Ok(());
        }
        tracing::warn!(server = %self.shared.server, "the authorization server refused the refresh token; the server needs authorization again");
        self.shared.drop_tokens().await
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let guard = Arc::clone(&self.shared.refresh).lock_owned().await;
        Ok(Some(CredentialRefreshGuard::new(guard)))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use serde_json::{Value, json};

    use super::*;
    use crate::config::ServerConfig;
    use crate::oauth::canonical_resource;
    use crate::records::{CachedToolList, RecordOwner, RecordsError};

    /// Records that hold sealed OAuth records only, by (server id, principal).
    #[derive(Default)]
    struct SealedRecords(Mutex<HashMap<(String, Option<String>), String>>);

    impl SealedRecords {
        fn all(&self) -> std::sync::MutexGuard<'_, HashMap<(String, Option<String>), String>> {
            self.0.lock().unwrap_or_else(|e| e.into_inner())
        }
    }

    fn key(server_id: &str, principal: RecordOwner<'_>) -> (String, Option<String>) {
        (server_id.to_owned(), principal.map(str::to_owned))
    }

    #[async_trait::async_trait]
    impl ServerRecords for SealedRecords {
        async fn servers(&self) -> Result<Vec<ServerConfig>, RecordsError> {
            Ok(Vec::new())
        }

        async fn tool_cache(
            &self,
            _server_id: &str,
        ) -> Result<Option<CachedToolList>, RecordsError> {
            Ok(None)
        }

        async fn put_tool_cache(
            &self,
            _server_id: &str,
            _tools: &[Value],
        ) -> Result<(), RecordsError> {
            Ok(())
        }

        async fn oauth_record(
            &self,
            server_id: &str,
            principal: RecordOwner<'_>,
        ) -> Result<Option<String>, RecordsError> {
            Ok(self.all().get(&key(server_id, principal)).cloned())
        }

        async fn put_oauth_record(
            &self,
            server_id: &str,
            principal: RecordOwner<'_>,
            sealed: &str,
        ) -> Result<(), RecordsError> {
            self.all()
                .insert(key(server_id, principal), sealed.to_owned());
            Ok(())
        }

        async fn delete_oauth_record(
            &self,
            server_id: &str,
            principal: RecordOwner<'_>,
        ) -> Result<(), RecordsError> {
            self.all().remove(&key(server_id, principal));
            Ok(())
        }

        async fn oauth_principals(&self, server_id: &str) -> Result<Vec<String>, RecordsError> {
            Ok(self
                .all()
                .keys()
                .filter(|(id, _)| id == server_id)
                .filter_map(|(_, principal)| principal.clone())
                .collect())
        }
    }

    const AUTHORIZED_AT: &str = "https://mcp.example.com/mcp";

    fn sealer() -> secrets::Sealer {
        secrets::SecretKey::from_value(
            "a key of enough length for the tests",
            "test",
            secrets::KeySource::Variable,
        )
        .expect("a long enough key")
        .sealer()
    }

    /// A record as an authorization leaves it: a client with its secret, and tokens.
    fn authorized() -> OAuthRecord {
        let credentials: StoredCredentials = serde_json::from_value(json!({
            "client_id": "c1",
            "token_response": {
                "access_token": "at-the-access-token",
                "token_type": "bearer",
                "refresh_token": "rt-the-refresh-token",
                "expires_in": 3600,
            },
            "granted_scopes": ["mcp:tools"],
        }))
        .expect("rmcp's stored credentials");
        OAuthRecord::new(
            ClientRecord {
                client_id: "c1".to_owned(),
                client_secret: Some("the client secret".to_owned()),
                redirect_uri: "https://bots.example.com/oauth/callback".to_owned(),
                scopes: vec!["mcp:tools".to_owned()],
                preregistered: false,
                token_endpoint: None,
            },
            Some(credentials),
        )
    }

    /// Fresh credentials (nothing cached) of server `s1` (or `principal`'s own) at `url`.
    fn at(
        records: &Arc<dyn ServerRecords>,
        url: &str,
        principal: Option<&str>,
    ) -> ServerCredentials {
        ServerCredentials::new(
            "hosted",
            "s1",
            principal,
            Arc::clone(records),
            sealer(),
            canonical_resource(url),
        )
    }

    /// A refused refresh token drops the tokens only while the store still holds it: when
    /// another replica refreshed meanwhile (a rotating provider refused the older token),
    /// its new tokens are kept.
    #[tokio::test]
    async fn a_refused_refresh_token_drops_only_itself() {
        let with_refresh = |token: &str| {
            let mut record = authorized();
            let mut credentials = record.credentials.take().expect("tokens");
            credentials.token_response = serde_json::from_value(json!({
                "access_token": "at",
                "token_type": "bearer",
                "refresh_token": token,
            }))
            .expect("a token response");
            record.credentials = Some(credentials);
            record
        };
        for (stored, dropped) in [("rt-new", false), ("rt-old", true)] {
            let records: Arc<dyn ServerRecords> = Arc::new(SealedRecords::default());
            let here = Arc::new(at(&records, AUTHORIZED_AT, None));
            here.put(with_refresh("rt-old")).await.expect("sealed");
            let rejected = here
                .record()
                .await
                .expect("read")
                .and_then(|record| record.credentials)
                .expect("tokens");
            // What the store holds when the refusal comes.
            at(&records, AUTHORIZED_AT, None)
                .put(with_refresh(stored))
                .await
                .expect("written");
            let handle = CredentialHandle {
                shared: Arc::clone(&here),
                client: authorized().client,
            };
            handle
                .on_refresh_token_rejected(&rejected)
                .await
                .expect("answered");
            let left = at(&records, AUTHORIZED_AT, None)
                .record()
                .await
                .expect("read")
                .expect("the client stays");
            assert_eq!(left.has_token(), !dropped, "stored {stored}");
        }
    }

    /// Another replica signs out (the stored record goes): the record kept here is used until
    /// the store's change is heard, then read again, and gone.
    #[tokio::test]
    async fn a_record_kept_in_memory_is_read_again_once_forgotten() {
        let records: Arc<dyn ServerRecords> = Arc::new(SealedRecords::default());
        let here = at(&records, AUTHORIZED_AT, None);
        here.put(authorized()).await.expect("sealed");
        assert!(here.record().await.expect("read").is_some());
        records
            .delete_oauth_record("s1", None)
            .await
            .expect("signed out elsewhere");
        assert!(
            here.record().await.expect("read").is_some(),
            "kept in memory"
        );
        here.forget_cached().await;
        assert!(here.record().await.expect("read").is_none());
        // And a record written elsewhere is read once forgotten.
        at(&records, AUTHORIZED_AT, None)
            .put(authorized())
            .await
            .expect("authorized elsewhere");
        assert!(here.record().await.expect("read").is_none(), "kept: none");
        here.forget_cached().await;
        assert!(here.record().await.expect("read").is_some());
    }

    #[tokio::test]
    async fn a_record_is_used_only_at_the_resource_it_was_issued_for() {
        let cases = [
            (AUTHORIZED_AT, true),
            ("HTTPS://MCP.EXAMPLE.COM/mcp", true),
            ("https://mcp.example.com:443/mcp", true),
            ("https://mcp.example.com/mcp?team=core", true),
            ("https://evil.example/mcp", false),
            ("https://mcp.example.com.evil.example/mcp", false),
            ("http://mcp.example.com/mcp", false),
            ("https://mcp.example.com:8443/mcp", false),
            ("https://mcp.example.com/other/mcp", false),
            ("https://mcp.example.com/", false),
            ("https://mcp.example.com/MCP", false),
            ("not a url", false),
        ];
        for principal in [None, Some("p1")] {
            let records: Arc<dyn ServerRecords> = Arc::new(SealedRecords::default());
            at(&records, AUTHORIZED_AT, principal)
                .put(authorized())
                .await
                .expect("sealed");
            for (url, used) in cases {
                let found = at(&records, url, principal)
                    .record()
                    .await
                    .expect("the records answer");
                assert_eq!(
                    found.as_ref().map(OAuthRecord::has_token),
                    used.then_some(true),
                    "{url} for {principal:?}"
                );
                if let Some(found) = found {
                    assert_eq!(found.resource.as_deref(), Some(AUTHORIZED_AT));
                    assert_eq!(
                        found.client.client_secret.as_deref(),
                        Some("the client secret")
                    );
                }
            }
            // Elsewhere, dropping tokens writes nothing over the record: it is still there
            // for the URL it was issued for.
            at(&records, "https://evil.example/mcp", principal)
                .drop_tokens()
                .await
                .expect("nothing to drop");
            let back = at(&records, AUTHORIZED_AT, principal)
                .record()
                .await
                .expect("the records answer");
            assert!(back.is_some_and(|record| record.has_token()));
        }
    }

    #[tokio::test]
    async fn a_record_sealed_before_the_binding_is_adopted_where_it_is_first_read() {
        let records: Arc<dyn ServerRecords> = Arc::new(SealedRecords::default());
        let sealer = sealer();
        let mut old = serde_json::to_value(authorized()).expect("encodes");
        if let Value::Object(fields) = &mut old {
            fields.remove("resource");
        }
        let clear = serde_json::to_vec(&old).expect("encodes");
        records
            .put_oauth_record("s1", None, &sealer.seal(&clear, "s1"))
            .await
            .expect("stored");
        records
            .put_oauth_record("s1", Some("p1"), &sealer.seal(&clear, "s1\u{0}bot\u{0}p1"))
            .await
            .expect("stored");
        for principal in [None, Some("p1")] {
            // Read first at the server's URL: adopted, and stored bound to it.
            let found = at(&records, AUTHORIZED_AT, principal)
                .record()
                .await
                .expect("the records answer");
            assert_eq!(
                found.and_then(|record| record.resource),
                canonical_resource(AUTHORIZED_AT),
                "{principal:?}"
            );
            // From then on it is bound: another URL gets nothing of it.
            let elsewhere = at(&records, "https://evil.example/mcp", principal)
                .record()
                .await
                .expect("the records answer");
            assert!(elsewhere.is_none(), "{principal:?}");
        }
    }

    #[tokio::test]
    async fn credentials_whose_url_moved_on_write_nothing() {
        let records: Arc<dyn ServerRecords> = Arc::new(SealedRecords::default());
        let new_url = at(&records, "https://new.example/mcp", None);
        new_url.put(authorized()).await.expect("written");
        let stored = records.oauth_record("s1", None).await.ok().flatten();
        // A connection to the former URL refreshes its tokens after the move.
        let former = at(&records, AUTHORIZED_AT, None);
        former.supersede();
        former.put(authorized()).await.expect("refused quietly");
        former.drop_tokens().await.expect("refused quietly");
        assert_eq!(
            records.oauth_record("s1", None).await.ok().flatten(),
            stored
        );
        assert!(new_url.record().await.expect("read").is_some());
    }

    #[tokio::test]
    async fn a_server_without_an_http_url_gets_no_record_written() {
        let records: Arc<dyn ServerRecords> = Arc::new(SealedRecords::default());
        let written = at(&records, "not a url", None).put(authorized()).await;
        assert!(
            matches!(written, Err(AuthError::CredentialStoreError(_))),
            "{written:?}"
        );
        assert_eq!(records.oauth_record("s1", None).await.ok().flatten(), None);
    }
}
