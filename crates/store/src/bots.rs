//! `"Bot"`: create, read, update, delete.

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::changes::StoreChange;
use crate::database::{Store, from_json_text, new_id, to_json_text};
use crate::error::{StoreError, is_unique_violation};
use crate::model::{Bot, BotSpec, ToolLoadingMode};
use crate::validate;

const COLUMNS: &str = r#""id", "name", "model", "systemPrompt", "stepLimit", "toolLoadingMode", "vision", "maxToolResultChars", "nativeToolApproval", "createdAt", "updatedAt""#;

fn decode(row: &AnyRow) -> Result<Bot, StoreError> {
    let id: String = row.try_get("id")?;
    let mode: String = row.try_get("toolLoadingMode")?;
    let tool_loading_mode = ToolLoadingMode::parse(&mode).ok_or_else(|| StoreError::Corrupt {
        table: "Bot",
        column: "toolLoadingMode",
        id: id.clone(),
        reason: format!("unknown mode {mode:?}"),
    })?;
    Ok(Bot {
        name: row.try_get("name")?,
        model: row.try_get("model")?,
        system_prompt: row.try_get("systemPrompt")?,
        step_limit: row.try_get("stepLimit")?,
        tool_loading_mode,
        vision: row.try_get::<i64, _>("vision")? != 0,
        max_tool_result_chars: row.try_get("maxToolResultChars")?,
        native_tool_approval: from_json_text(
            &row.try_get::<String, _>("nativeToolApproval")?,
            "Bot",
            "nativeToolApproval",
            &id,
        )?,
        created_at: row.try_get("createdAt")?,
        updated_at: row.try_get("updatedAt")?,
        id,
    })
}

impl Store {
    /// Create a bot; refused when the spec is invalid or the name is taken.
    pub async fn create_bot(&self, spec: &BotSpec) -> Result<Bot, StoreError> {
        validate::bot(spec)?;
        let now = self.now_ms();
        let id = new_id(now);
        let sql = format!(
            "INSERT INTO \"Bot\" ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&id)
            .bind(&spec.name)
            .bind(&spec.model)
            .bind(&spec.system_prompt)
            .bind(spec.step_limit)
            .bind(spec.tool_loading_mode.as_str())
            .bind(i64::from(spec.vision))
            .bind(spec.max_tool_result_chars)
            .bind(to_json_text(&spec.native_tool_approval))
            .bind(now)
            .bind(now)
            .execute(self.pool())
            .await
            .map_err(|error| duplicate_name(error, &spec.name))?;
        self.changed(StoreChange::Bot { id: id.clone() }).await;
        self.bot(&id)
            .await?
            .ok_or_else(|| StoreError::UnknownBot(id.clone()))
    }

    /// Replace every writable field of bot `id`.
    pub async fn update_bot(&self, id: &str, spec: &BotSpec) -> Result<Bot, StoreError> {
        validate::bot(spec)?;
        let result = sqlx::query(
            r#"UPDATE "Bot" SET "name" = $1, "model" = $2, "systemPrompt" = $3, "stepLimit" = $4, "toolLoadingMode" = $5, "vision" = $6, "maxToolResultChars" = $7, "nativeToolApproval" = $8, "updatedAt" = $9 WHERE "id" = $10"#,
        )
        .bind(&spec.name)
        .bind(&spec.model)
        .bind(&spec.system_prompt)
        .bind(spec.step_limit)
        .bind(spec.tool_loading_mode.as_str())
        .bind(i64::from(spec.vision))
        .bind(spec.max_tool_result_chars)
        .bind(to_json_text(&spec.native_tool_approval))
        .bind(self.now_ms())
        .bind(id)
        .execute(self.pool())
        .await
        .map_err(|error| duplicate_name(error, &spec.name))?;
        if result.rows_affected() == 0 {
            return Err(StoreError::UnknownBot(id.to_owned()));
        }
        self.changed(StoreChange::Bot { id: id.to_owned() }).await;
        self.bot(id)
            .await?
            .ok_or_else(|| StoreError::UnknownBot(id.to_owned()))
    }

    /// The bot with this id.
    pub async fn bot(&self, id: &str) -> Result<Option<Bot>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM \"Bot\" WHERE \"id\" = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(decode).transpose()
    }

    /// The bot with this name.
    pub async fn bot_by_name(&self, name: &str) -> Result<Option<Bot>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM \"Bot\" WHERE \"name\" = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(name)
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(decode).transpose()
    }

    /// Every bot, by name.
    pub async fn bots(&self) -> Result<Vec<Bot>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM \"Bot\" ORDER BY \"name\"");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(decode).collect()
    }

    /// Delete bot `id` with its bindings; false when there was none.
    pub async fn delete_bot(&self, id: &str) -> Result<bool, StoreError> {
        let result = sqlx::query(r#"DELETE FROM "Bot" WHERE "id" = $1"#)
            .bind(id)
            .execute(self.pool())
            .await?;
        if result.rows_affected() > 0 {
            self.changed(StoreChange::Bot { id: id.to_owned() }).await;
        }
        Ok(result.rows_affected() > 0)
    }
}

fn duplicate_name(error: sqlx::Error, name: &str) -> StoreError {
    if is_unique_violation(&error) {
        StoreError::DuplicateBotName {
            name: name.to_owned(),
        }
    } else {
        StoreError::Database(error)
    }
}
