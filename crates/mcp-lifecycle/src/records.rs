//! What the manager keeps outside itself: the servers' configs, their tool lists as last
//! listed (the tool cache) and their sealed OAuth records. [`ServerRecords`] is the whole of
//! it; the app implements it over its store (`server-records`, the store's side of this
//! edge), so this crate knows no store and no database.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::config::ServerConfig;

/// A failure of the records behind the manager (a database error, say): kept as the
/// implementation's error, shown by its message.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct RecordsError(pub Arc<dyn std::error::Error + Send + Sync>);

impl RecordsError {
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(Arc::new(error))
    }
}

/// A server's tool list as last listed.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedToolList {
    /// The `tools` of `tools/list`, each as the server sent it.
    pub tools: Vec<Value>,
    /// When it was listed (ms since the epoch): compared with a config's `version`.
    pub captured_at: i64,
}

/// Whose OAuth record: a server's (`None`), or one principal's own for that server
/// ([`crate::principals`]; the app's principals are its bots, by id).
pub type RecordOwner<'a> = Option<&'a str>;

/// Where the manager reads server configs and keeps tool lists and OAuth records. Server
/// ids are [`ServerConfig::id`]; a config with an empty id has no records (a server given
/// to the manager directly, not kept anywhere).
#[async_trait]
pub trait ServerRecords: Send + Sync + 'static {
    /// Every configured server.
    async fn servers(&self) -> Result<Vec<ServerConfig>, RecordsError>;

    /// Server `server_id`'s cached tool list, if it was ever listed.
    async fn tool_cache(&self, server_id: &str) -> Result<Option<CachedToolList>, RecordsError>;

    /// Keep `tools` as server `server_id`'s tool list, replacing the last one.
    async fn put_tool_cache(&self, server_id: &str, tools: &[Value]) -> Result<(), RecordsError>;

    /// The sealed OAuth record of server `server_id` (`principal`: that principal's own
    /// record for it).
    /// Opaque here: sealed and opened by the manager.
    async fn oauth_record(
        &self,
        server_id: &str,
        principal: RecordOwner<'_>,
    ) -> Result<Option<String>, RecordsError>;

    /// Keep `sealed` as that record, replacing it.
    async fn put_oauth_record(
        &self,
        server_id: &str,
        principal: RecordOwner<'_>,
        sealed: &str,
    ) -> Result<(), RecordsError>;

    /// Forget that record (nothing to forget is no error).
    async fn delete_oauth_record(
        &self,
        server_id: &str,
        principal: RecordOwner<'_>,
    ) -> Result<(), RecordsError>;

    /// The principals with a record of their own for server `server_id`.
    async fn oauth_principals(&self, server_id: &str) -> Result<Vec<String>, RecordsError>;
}
