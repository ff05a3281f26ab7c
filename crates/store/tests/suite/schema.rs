//! The tables and columns carry the Prisma names, so a Prisma schema over the same database
//! agrees.

use pretty_assertions::assert_eq;
use sqlx::Row;
use store::Backend;

use super::harness::TestDb;

async fn columns(db: &TestDb, table: &str) -> anyhow::Result<Vec<String>> {
    let pool = sqlx::AnyPool::connect(&db.url).await?;
    let sql = match db.store.backend() {
        Backend::Sqlite => "SELECT name AS c FROM pragma_table_info($1) ORDER BY cid",
        Backend::Postgres => {
            "SELECT column_name::text AS c FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position"
        }
    };
    let rows = sqlx::query(sql).bind(table).fetch_all(&pool).await?;
    pool.close().await;
    Ok(rows
        .iter()
        .map(|row| row.try_get::<String, _>("c"))
        .collect::<Result<_, _>>()?)
}

fn list(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

async fn tables_and_columns_have_the_prisma_names(db: &TestDb) -> anyhow::Result<()> {
    assert_eq!(
        columns(db, "McpServer").await?,
        list(&[
            "id",
            "name",
            "command",
            "args",
            "env",
            "timeout",
            "initTimeout",
            "alwaysOn",
            "idleTimeoutMs",
            "instructions",
            "createdAt",
            "updatedAt",
            "transport",
            "url",
            "headers",
            "sandbox"
        ])
    );
    assert_eq!(
        columns(db, "BotMcpServer").await?,
        list(&[
            "id",
            "botId",
            "mcpServerId",
            "enabled",
            "toolFilter",
            "pinnedTools",
            // Added by migration 0007 (tools that ask first).
            "approval"
        ])
    );
    assert_eq!(
        columns(db, "Bot").await?,
        list(&[
            "id",
            "name",
            "model",
            "systemPrompt",
            "stepLimit",
            "toolLoadingMode",
            "createdAt",
            "updatedAt",
            // Added by migration 0004 (how the model reads tool results).
            "vision",
            "maxToolResultChars",
            // Added by migration 0007.
            "nativeToolApproval"
        ])
    );
    assert_eq!(
        columns(db, "McpToolCache").await?,
        list(&["mcpServerId", "tools", "hash", "capturedAt"])
    );
    assert_eq!(
        columns(db, "McpOAuthToken").await?,
        list(&["mcpServerId", "sealed", "updatedAt"])
    );
    assert_eq!(
        columns(db, "McpOAuthBotToken").await?,
        list(&["mcpServerId", "botId", "sealed", "updatedAt"])
    );
    assert_eq!(
        columns(db, "ApprovalUse").await?,
        list(&["approvalId", "botId", "usedAt", "expiresAt"])
    );
    assert_eq!(
        columns(db, "KeyShare").await?,
        list(&["id", "share", "createdAt"])
    );
    assert_eq!(
        columns(db, "ApiKey").await?,
        list(&[
            "id",
            "name",
            "role",
            "botId",
            "digest",
            "createdAt",
            "lastUsedAt",
            "revokedAt"
        ])
    );
    Ok(())
}

backend_tests!(tables_and_columns_have_the_prisma_names);
