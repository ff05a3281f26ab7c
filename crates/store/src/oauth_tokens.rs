//! `"McpOAuthToken"`: the OAuth credentials of a remote server (its client registration and
//! tokens), one record per server, **sealed by the caller**: the store keeps an opaque text
//! it cannot read, so a database dump holds no usable token. Deleted with the server.
//! `"McpOAuthBotToken"`: a bot's own record for a server (the per-bot override), sealed the
//! same way, deleted with the server or the bot.
//!
//! Every write and delete is announced to the other replicas
//! ([`crate::StoreChange::OAuthRecord`]), and raises the store's generation (PostgreSQL's
//! migration 17), so a replica that keeps a record in memory reads it again: a sign-out
//! through one replica reaches them all.

use sqlx::Row;

use crate::database::Store;
use crate::error::{StoreError, is_foreign_key_violation, server_reference_error};

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
        self.oauth_record_changed(mcp_server_id).await;
        Ok(())
    }

    /// Tell the other replicas that a record of server `mcp_server_id` changed.
    async fn oauth_record_changed(&self, mcp_server_id: &str) {
        self.announce(crate::StoreChange::OAuthRecord {
            mcp_server_id: mcp_server_id.to_owned(),
        })
        .await;
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
        self.oauth_record_changed(mcp_server_id).await;
        Ok(())
    }
}

/// `"McpOAuthBotToken"`: a bot's own OAuth record for a server (the per-bot override), sealed
/// by the caller like the server's. Deleted with the server or the bot.
impl Store {
    /// Keep `sealed` as bot `bot_id`'s own OAuth record for server `mcp_server_id`.
    pub async fn put_bot_oauth_record(
        &self,
        mcp_server_id: &str,
        bot_id: &str,
        sealed: &str,
    ) -> Result<(), StoreError> {
        let written = sqlx::query(
            r#"INSERT INTO "McpOAuthBotToken" ("mcpServerId", "botId", "sealed", "updatedAt") VALUES ($1, $2, $3, $4)
               ON CONFLICT ("mcpServerId", "botId") DO UPDATE SET "sealed" = excluded."sealed", "updatedAt" = excluded."updatedAt""#,
        )
        .bind(mcp_server_id)
        .bind(bot_id)
        .bind(sealed)
        .bind(self.now_ms())
        .execute(self.pool())
        .await;
        match written {
            Ok(_) => {
                self.oauth_record_changed(mcp_server_id).await;
                Ok(())
            }
            Err(error) if is_foreign_key_violation(&error) => {
                let server = sqlx::query(r#"SELECT 1 AS "found" FROM "McpServer" WHERE "id" = $1"#)
                    .bind(mcp_server_id)
                    .fetch_optional(self.pool())
                    .await?;
                Err(match server {
                    None => StoreError::UnknownServer(mcp_server_id.to_owned()),
                    Some(_) => StoreError::UnknownBot(bot_id.to_owned()),
                })
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Bot `bot_id`'s own sealed OAuth record for server `mcp_server_id`, if it has one.
    pub async fn bot_oauth_record(
        &self,
        mcp_server_id: &str,
        bot_id: &str,
    ) -> Result<Option<String>, StoreError> {
        let row = sqlx::query(
            r#"SELECT "sealed" FROM "McpOAuthBotToken" WHERE "mcpServerId" = $1 AND "botId" = $2"#,
        )
        .bind(mcp_server_id)
        .bind(bot_id)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(|row| row.try_get("sealed")).transpose()?)
    }

    /// The ids of the bots with an OAuth record of their own for server `mcp_server_id`.
    pub async fn bot_oauth_overrides(
        &self,
        mcp_server_id: &str,
    ) -> Result<Vec<String>, StoreError> {
        let rows = sqlx::query(
            r#"SELECT "botId" FROM "McpOAuthBotToken" WHERE "mcpServerId" = $1 ORDER BY "botId""#,
        )
        .bind(mcp_server_id)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|row| row.try_get("botId").map_err(StoreError::from))
            .collect()
    }

    /// Forget bot `bot_id`'s own OAuth record for server `mcp_server_id` (a no-op when it has
    /// none): the bot uses the server's connection again.
    pub async fn delete_bot_oauth_record(
        &self,
        mcp_server_id: &str,
        bot_id: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(r#"DELETE FROM "McpOAuthBotToken" WHERE "mcpServerId" = $1 AND "botId" = $2"#)
            .bind(mcp_server_id)
            .bind(bot_id)
            .execute(self.pool())
            .await?;
        self.oauth_record_changed(mcp_server_id).await;
        Ok(())
    }
}
