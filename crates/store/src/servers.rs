//! `"McpServer"`: create, read, update, delete.

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::changes::StoreChange;
use crate::database::{Store, flag, from_json_text, new_id, to_json_text};
use crate::error::{StoreError, is_unique_violation};
use crate::model::{McpServer, McpServerSpec, Transport};
use crate::validate;

const COLUMNS: &str = r#""id", "name", "command", "args", "env", "timeout", "initTimeout", "alwaysOn", "idleTimeoutMs", "instructions", "createdAt", "updatedAt", "transport", "url", "headers", "sandbox""#;

fn decode(row: &AnyRow) -> Result<McpServer, StoreError> {
    let id: String = row.try_get("id")?;
    let args: String = row.try_get("args")?;
    let env: Option<String> = row.try_get("env")?;
    let env = match env {
        Some(text) => from_json_text(&text, "McpServer", "env", &id)?,
        None => Default::default(),
    };
    let headers: Option<String> = row.try_get("headers")?;
    let headers = match headers {
        Some(text) => from_json_text(&text, "McpServer", "headers", &id)?,
        None => Default::default(),
    };
    let sandbox: Option<String> = row.try_get("sandbox")?;
    let sandbox = match sandbox {
        Some(text) => from_json_text(&text, "McpServer", "sandbox", &id)?,
        None => Default::default(),
    };
    let transport: String = row.try_get("transport")?;
    let transport = Transport::parse(&transport).ok_or_else(|| StoreError::Corrupt {
        table: "McpServer",
        column: "transport",
        id: id.clone(),
        reason: format!("unknown transport {transport:?}"),
    })?;
    Ok(McpServer {
        transport,
        url: row.try_get("url")?,
        headers,
        sandbox,
        args: from_json_text(&args, "McpServer", "args", &id)?,
        env,
        name: row.try_get("name")?,
        command: row.try_get("command")?,
        timeout: row.try_get("timeout")?,
        init_timeout: row.try_get("initTimeout")?,
        always_on: row.try_get::<i64, _>("alwaysOn")? != 0,
        idle_timeout_ms: row.try_get("idleTimeoutMs")?,
        instructions: row.try_get("instructions")?,
        created_at: row.try_get("createdAt")?,
        updated_at: row.try_get("updatedAt")?,
        id,
    })
}

fn env_text(spec: &McpServerSpec) -> Option<String> {
    (!spec.env.is_empty()).then(|| to_json_text(&spec.env))
}

fn headers_text(spec: &McpServerSpec) -> Option<String> {
    (!spec.headers.is_empty()).then(|| to_json_text(&spec.headers))
}

/// NULL for the default policy, so a default stays the default when it changes.
fn sandbox_text(spec: &McpServerSpec) -> Option<String> {
    (spec.sandbox != sandbox::SandboxPolicy::default()).then(|| to_json_text(&spec.sandbox))
}

impl Store {
    /// Create a server; refused when the spec is invalid or the name is taken.
    pub async fn create_server(&self, spec: &McpServerSpec) -> Result<McpServer, StoreError> {
        validate::server(spec)?;
        self.refuse_name_clash(&spec.name, None).await?;
        let now = self.now_ms();
        let id = new_id(now);
        let sql = format!(
            "INSERT INTO \"McpServer\" ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&id)
            .bind(&spec.name)
            .bind(&spec.command)
            .bind(to_json_text(&spec.args))
            .bind(env_text(spec))
            .bind(spec.timeout)
            .bind(spec.init_timeout)
            .bind(flag(spec.always_on))
            .bind(spec.idle_timeout_ms)
            .bind(spec.instructions.clone())
            .bind(now)
            .bind(now)
            .bind(spec.transport.as_str())
            .bind(spec.url.clone())
            .bind(headers_text(spec))
            .bind(sandbox_text(spec))
            .execute(self.pool())
            .await
            .map_err(|error| duplicate_name(error, &spec.name))?;
        self.changed(StoreChange::Server { id: id.clone() }).await;
        self.server(&id)
            .await?
            .ok_or_else(|| StoreError::UnknownServer(id.clone()))
    }

    /// Replace every writable field of server `id`.
    pub async fn update_server(
        &self,
        id: &str,
        spec: &McpServerSpec,
    ) -> Result<McpServer, StoreError> {
        validate::server(spec)?;
        self.refuse_name_clash(&spec.name, Some(id)).await?;
        let result = sqlx::query(
            r#"UPDATE "McpServer" SET "name" = $1, "command" = $2, "args" = $3, "env" = $4, "timeout" = $5, "initTimeout" = $6, "alwaysOn" = $7, "idleTimeoutMs" = $8, "instructions" = $9, "updatedAt" = $10, "transport" = $11, "url" = $12, "headers" = $13, "sandbox" = $14 WHERE "id" = $15"#,
        )
        .bind(&spec.name)
        .bind(&spec.command)
        .bind(to_json_text(&spec.args))
        .bind(env_text(spec))
        .bind(spec.timeout)
        .bind(spec.init_timeout)
        .bind(flag(spec.always_on))
        .bind(spec.idle_timeout_ms)
        .bind(spec.instructions.clone())
        .bind(self.now_ms())
        .bind(spec.transport.as_str())
        .bind(spec.url.clone())
        .bind(headers_text(spec))
        .bind(sandbox_text(spec))
        .bind(id)
        .execute(self.pool())
        .await
        .map_err(|error| duplicate_name(error, &spec.name))?;
        if result.rows_affected() == 0 {
            return Err(StoreError::UnknownServer(id.to_owned()));
        }
        self.changed(StoreChange::Server { id: id.to_owned() })
            .await;
        self.server(id)
            .await?
            .ok_or_else(|| StoreError::UnknownServer(id.to_owned()))
    }

    /// [`StoreError::ServerNameClash`] when a server other than `except` has a different name
    /// written as `name` is in tool names (`my.fs` and `my_fs`). The same name is the unique
    /// index's to refuse.
    async fn refuse_name_clash(&self, name: &str, except: Option<&str>) -> Result<(), StoreError> {
        let prefix = validate::tool_name_prefix(name);
        let rows: Vec<(String, String)> = sqlx::query_as(r#"SELECT "id", "name" FROM "McpServer""#)
            .fetch_all(self.pool())
            .await?;
        match rows.into_iter().find(|(id, other)| {
            Some(id.as_str()) != except
                && other != name
                && validate::tool_name_prefix(other) == prefix
        }) {
            Some((_, other)) => Err(StoreError::ServerNameClash {
                name: name.to_owned(),
                other,
                prefix,
            }),
            None => Ok(()),
        }
    }

    /// The server with this id.
    pub async fn server(&self, id: &str) -> Result<Option<McpServer>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM \"McpServer\" WHERE \"id\" = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(decode).transpose()
    }

    /// The server with this name.
    pub async fn server_by_name(&self, name: &str) -> Result<Option<McpServer>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM \"McpServer\" WHERE \"name\" = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(name)
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(decode).transpose()
    }

    /// Every server, by name.
    pub async fn servers(&self) -> Result<Vec<McpServer>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM \"McpServer\" ORDER BY \"name\"");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(decode).collect()
    }

    /// Delete server `id` with its bindings and tool cache; false when there was none.
    pub async fn delete_server(&self, id: &str) -> Result<bool, StoreError> {
        let result = sqlx::query(r#"DELETE FROM "McpServer" WHERE "id" = $1"#)
            .bind(id)
            .execute(self.pool())
            .await?;
        if result.rows_affected() > 0 {
            self.changed(StoreChange::Server { id: id.to_owned() })
                .await;
        }
        Ok(result.rows_affected() > 0)
    }
}

fn duplicate_name(error: sqlx::Error, name: &str) -> StoreError {
    if is_unique_violation(&error) {
        StoreError::DuplicateServerName {
            name: name.to_owned(),
        }
    } else {
        StoreError::Database(error)
    }
}
