//! `"McpOAuthToken"`: the OAuth credentials of a remote server (its client registration and
//! tokens), one record per server, **sealed by the caller**: the store keeps an opaque text
//! it cannot read, so a database dump holds no usable token. Deleted with the server.

use sqlx::Row;

use crate::database::Store;
use crate::error::{StoreError, server_reference_error};

impl Store {
    /// Keep `sealed` as server `mcp_server_id`'s OAuth record, replacing the last one.
    pub async fn put_oauth_record(
        &self,
        mcp_server_id: &str,
        sealed: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            r#"INSERT INTO "McpOAuthToken" ("mcpServerId", "sealed", "updatedAt") VALUES ($1, $2, $3)
               ON CONFLICT ("mcpServerId") DO UPDATE SET "sealed" = excluded."sealed", "updatedAt" = excluded."updatedAt""#,
        )
        .bind(mcp_server_id)
        .bind(sealed)
        .bind(self.now_ms())
        .execute(self.pool())
        .await
        .map_err(|error| server_reference_error(error, mcp_server_id))?;
        Ok(())
    }

    /// Server `mcp_server_id`'s sealed OAuth record, if it has one.
    pub async fn oauth_record(&self, mcp_server_id: &str) -> Result<Option<String>, StoreError> {
        let row = sqlx::query(r#"SELECT "sealed" FROM "McpOAuthToken" WHERE "mcpServerId" = $1"#)
            .bind(mcp_server_id)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.map(|row| row.try_get("sealed")).transpose()?)
    }

    /// Forget server `mcp_server_id`'s OAuth record (a no-op when it has none).
    pub async fn delete_oauth_record(&self, mcp_server_id: &str) -> Result<(), StoreError> {
        sqlx::query(r#"DELETE FROM "McpOAuthToken" WHERE "mcpServerId" = $1"#)
            .bind(mcp_server_id)
            .execute(self.pool())
            .await?;
        Ok(())
    }
}
