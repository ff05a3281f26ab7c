//! `"McpToolCache"`: the last tool list captured from each server, with a content hash,
//! so search, allow-lists and the dashboard work while a server is stopped.

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::database::{Store, from_json_text, to_json_text};
use crate::error::{StoreError, server_reference_error};
use crate::model::ToolCache;

fn decode(row: &AnyRow) -> Result<ToolCache, StoreError> {
    let id: String = row.try_get("mcpServerId")?;
    let tools: String = row.try_get("tools")?;
    Ok(ToolCache {
        tools: from_json_text(&tools, "McpToolCache", "tools", &id)?,
        hash: row.try_get("hash")?,
        captured_at: row.try_get("capturedAt")?,
        mcp_server_id: id,
    })
}

/// The fingerprint of `tools` (`canonical_json::fingerprint`: the hex SHA-256 of the
/// canonical JSON of the list), stored with the tool cache.
pub fn tools_hash(tools: &[serde_json::Value]) -> String {
    canonical_json::fingerprint(tools)
}

impl Store {
    /// Record `tools` as server `mcp_server_id`'s current tool list, replacing the last one.
    pub async fn put_tool_cache(
        &self,
        mcp_server_id: &str,
        tools: &[serde_json::Value],
    ) -> Result<ToolCache, StoreError> {
        let row = sqlx::query(
            r#"INSERT INTO "McpToolCache" ("mcpServerId", "tools", "hash", "capturedAt") VALUES ($1, $2, $3, $4)
               ON CONFLICT ("mcpServerId") DO UPDATE SET "tools" = excluded."tools", "hash" = excluded."hash", "capturedAt" = excluded."capturedAt"
               RETURNING "mcpServerId", "tools", "hash", "capturedAt""#,
        )
        .bind(mcp_server_id)
        .bind(to_json_text(&tools))
        .bind(tools_hash(tools))
        .bind(self.now_ms())
        .fetch_one(self.pool())
        .await
        .map_err(|error| server_reference_error(error, mcp_server_id))?;
        self.announce(crate::StoreChange::ToolCache {
            mcp_server_id: mcp_server_id.to_owned(),
        })
        .await;
        decode(&row)
    }

    /// The cached tool list of server `mcp_server_id`, if one was captured.
    pub async fn tool_cache(&self, mcp_server_id: &str) -> Result<Option<ToolCache>, StoreError> {
        let row = sqlx::query(
            r#"SELECT "mcpServerId", "tools", "hash", "capturedAt" FROM "McpToolCache" WHERE "mcpServerId" = $1"#,
        )
        .bind(mcp_server_id)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(decode).transpose()
    }
}
