//! `"BotMcpServer"`: which servers a bot may use, with its tool filter, pinned tools and
//! approval policy.

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::changes::StoreChange;
use crate::database::{Store, flag, from_json_text, new_id, to_json_text};
use crate::error::{StoreError, server_reference_error};
use crate::model::{BindingSpec, BotMcpServer, BoundServer};
use crate::validate;

const COLUMNS: &str =
    r#""id", "botId", "mcpServerId", "enabled", "toolFilter", "pinnedTools", "approval""#;

fn decode(row: &AnyRow) -> Result<BotMcpServer, StoreError> {
    let id: String = row.try_get("id")?;
    let tool_filter: String = row.try_get("toolFilter")?;
    let pinned_tools: String = row.try_get("pinnedTools")?;
    let approval: String = row.try_get("approval")?;
    Ok(BotMcpServer {
        approval: from_json_text(&approval, "BotMcpServer", "approval", &id)?,
        bot_id: row.try_get("botId")?,
        mcp_server_id: row.try_get("mcpServerId")?,
        enabled: row.try_get::<i64, _>("enabled")? != 0,
        tool_filter: from_json_text(&tool_filter, "BotMcpServer", "toolFilter", &id)?,
        pinned_tools: from_json_text(&pinned_tools, "BotMcpServer", "pinnedTools", &id)?,
        id,
    })
}

impl Store {
    /// Bind bot `bot_id` to server `mcp_server_id`, or update the existing binding of that pair.
    pub async fn bind(
        &self,
        bot_id: &str,
        mcp_server_id: &str,
        spec: &BindingSpec,
    ) -> Result<BotMcpServer, StoreError> {
        validate::binding(spec)?;
        if self.bot(bot_id).await?.is_none() {
            return Err(StoreError::UnknownBot(bot_id.to_owned()));
        }
        if self.server(mcp_server_id).await?.is_none() {
            return Err(StoreError::UnknownServer(mcp_server_id.to_owned()));
        }
        let sql = format!(
            "INSERT INTO \"BotMcpServer\" ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (\"botId\", \"mcpServerId\") DO UPDATE SET \"enabled\" = excluded.\"enabled\", \
             \"toolFilter\" = excluded.\"toolFilter\", \"pinnedTools\" = excluded.\"pinnedTools\", \
             \"approval\" = excluded.\"approval\" \
             RETURNING {COLUMNS}"
        );
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(new_id(self.now_ms()))
            .bind(bot_id)
            .bind(mcp_server_id)
            .bind(flag(spec.enabled))
            .bind(to_json_text(&spec.tool_filter))
            .bind(to_json_text(&spec.pinned_tools))
            .bind(to_json_text(&spec.approval))
            .fetch_one(self.pool())
            .await
            .map_err(|error| {
                // The bot or the server was deleted between the checks and the insert.
                server_reference_error(error, mcp_server_id)
            })?;
        self.changed(StoreChange::Binding {
            bot_id: bot_id.to_owned(),
        })
        .await;
        decode(&row)
    }

    /// The binding of this pair, if any.
    pub async fn binding(
        &self,
        bot_id: &str,
        mcp_server_id: &str,
    ) -> Result<Option<BotMcpServer>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM \"BotMcpServer\" WHERE \"botId\" = $1 AND \"mcpServerId\" = $2"
        );
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(bot_id)
            .bind(mcp_server_id)
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(decode).transpose()
    }

    /// Remove the binding of this pair; false when there was none.
    pub async fn unbind(&self, bot_id: &str, mcp_server_id: &str) -> Result<bool, StoreError> {
        let result =
            sqlx::query(r#"DELETE FROM "BotMcpServer" WHERE "botId" = $1 AND "mcpServerId" = $2"#)
                .bind(bot_id)
                .bind(mcp_server_id)
                .execute(self.pool())
                .await?;
        if result.rows_affected() > 0 {
            self.changed(StoreChange::Binding {
                bot_id: bot_id.to_owned(),
            })
            .await;
        }
        Ok(result.rows_affected() > 0)
    }

    /// Every binding of bot `bot_id` (enabled or not) with its server, by server name.
    pub async fn bound_servers(&self, bot_id: &str) -> Result<Vec<BoundServer>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM \"BotMcpServer\" WHERE \"botId\" = $1");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(bot_id)
            .fetch_all(self.pool())
            .await?;
        let mut bound = Vec::with_capacity(rows.len());
        for row in &rows {
            let binding = decode(row)?;
            let server = self
                .server(&binding.mcp_server_id)
                .await?
                .ok_or_else(|| StoreError::UnknownServer(binding.mcp_server_id.clone()))?;
            bound.push(BoundServer { binding, server });
        }
        bound.sort_by(|a, b| a.server.name.cmp(&b.server.name));
        Ok(bound)
    }
}
