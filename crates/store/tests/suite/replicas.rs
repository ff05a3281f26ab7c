//! Several replicas on one store: on PostgreSQL each write is announced and the other
//! replicas apply it as their own (version moved, event sent); a replica ignores its own
//! announcements. SQLite has one replica and announces nothing.

use std::time::Duration;

use pretty_assertions::assert_eq;
use store::{Backend, BindingSpec, BotSpec, McpServerSpec, Store, StoreChange};
use tokio::sync::broadcast;

use super::harness::TestDb;

/// The next change `receiver` hears, within a bound (a missing announcement fails the test).
async fn next(receiver: &mut broadcast::Receiver<StoreChange>) -> anyhow::Result<StoreChange> {
    Ok(tokio::time::timeout(Duration::from_secs(5), receiver.recv()).await??)
}

async fn a_write_on_one_replica_reaches_the_others(db: &TestDb) -> anyhow::Result<()> {
    let other = Store::connect(&db.url).await?;
    // The generation's poll (tested on its own below) kept out of this sequence.
    let listener = other
        .listen_to_peers_polling(Duration::from_secs(3600))
        .await?;
    if db.store.backend() == Backend::Sqlite {
        assert!(listener.is_none(), "SQLite has no peers to hear");
        other.close().await;
        return Ok(());
    }
    let _own = db
        .store
        .listen_to_peers_polling(Duration::from_secs(3600))
        .await?;
    let mut heard = other.changes();
    let mut own = db.store.changes();
    let before = other.version();

    let written = std::time::Instant::now();
    let server = db
        .store
        .create_server(&McpServerSpec::new("s", "cmd"))
        .await?;
    let wrote = written.elapsed();
    let change = next(&mut heard).await?;
    eprintln!(
        "replicas: the write itself took {:.1} ms",
        wrote.as_secs_f64() * 1000.0
    );
    // Reported, not asserted (timings belong in benchmarks): docs/benchmarks.md quotes it.
    eprintln!(
        "replicas: a write reached the other replica {:.1} ms after it began",
        written.elapsed().as_secs_f64() * 1000.0
    );
    assert_eq!(
        change,
        StoreChange::Server {
            id: server.id.clone()
        }
    );
    assert_eq!(other.version(), before + 1);

    let bot = db.store.create_bot(&BotSpec::new("b", "openai:m")).await?;
    db.store
        .bind(&bot.id, &server.id, &BindingSpec::default())
        .await?;
    db.store.put_tool_cache(&server.id, &[]).await?;
    let mut rest = Vec::new();
    for _ in 0..3 {
        rest.push(next(&mut heard).await?);
    }
    assert_eq!(
        rest,
        vec![
            StoreChange::Bot { id: bot.id.clone() },
            StoreChange::Binding {
                bot_id: bot.id.clone()
            },
            StoreChange::ToolCache {
                mcp_server_id: server.id.clone()
            },
        ]
    );

    // The writer heard its own announcements and applied none of them twice: its events are
    // exactly its three writes of servers, bots and bindings.
    let mut mine = Vec::new();
    for _ in 0..3 {
        mine.push(next(&mut own).await?);
    }
    db.store.delete_server(&server.id).await?;
    mine.push(next(&mut own).await?);
    assert_eq!(
        mine,
        vec![
            StoreChange::Server {
                id: server.id.clone()
            },
            StoreChange::Bot { id: bot.id.clone() },
            StoreChange::Binding { bot_id: bot.id },
            StoreChange::Server { id: server.id },
        ]
    );
    other.close().await;
    Ok(())
}

/// PostgreSQL only: SQLite has no channel to lose (the harness says "skipped" without one).
#[tokio::test]
async fn a_replica_that_loses_its_channel_listens_again_and_drops_every_cache() -> anyhow::Result<()>
{
    let Some(db) = super::harness::postgres().await? else {
        return Ok(());
    };
    let result = lose_the_channel(&db).await;
    db.finish().await?;
    result
}

async fn lose_the_channel(db: &TestDb) -> anyhow::Result<()> {
    let other = Store::connect(&db.url).await?;
    let _listener = other
        .listen_to_peers_polling(Duration::from_secs(3600))
        .await?;
    let mut heard = other.changes();
    // The server ends the listening connection, as a restart or a network cut would.
    let admin = sqlx::AnyPool::connect(&db.url).await?;
    let ended = sqlx::query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND query ILIKE 'LISTEN%'",
    )
    .execute(&admin)
    .await?;
    assert_eq!(ended.rows_affected(), 1, "one listening connection");
    admin.close().await;
    assert_eq!(next(&mut heard).await?, StoreChange::Everything);
    // Listening again: the next write is heard.
    let server = db
        .store
        .create_server(&McpServerSpec::new("after", "cmd"))
        .await?;
    assert_eq!(
        next(&mut heard).await?,
        StoreChange::Server { id: server.id }
    );
    other.close().await;
    Ok(())
}

/// A write whose announcement never went (made here straight in the database, as a replica
/// that died between its write and its NOTIFY leaves it) still reaches another replica: it
/// reads the store's generation, raised in the write's own transaction, and drops every cache.
/// PostgreSQL only (the harness says "skipped" without one).
#[tokio::test]
async fn a_write_never_announced_still_reaches_the_other_replicas() -> anyhow::Result<()> {
    let Some(db) = super::harness::postgres().await? else {
        return Ok(());
    };
    let result = never_announced(&db).await;
    db.finish().await?;
    result
}

async fn never_announced(db: &TestDb) -> anyhow::Result<()> {
    let bot = db.store.create_bot(&BotSpec::new("b", "openai:m")).await?;
    let server = db
        .store
        .create_server(&store::McpServerSpec::new("s", "cmd"))
        .await?;
    db.store.put_tool_cache(&server.id, &[]).await?;
    db.store.put_oauth_record(&server.id, "sealed-1").await?;
    db.store
        .put_bot_oauth_record(&server.id, &bot.id, "sealed-2")
        .await?;
    let other = Store::connect(&db.url).await?;
    let _listener = other
        .listen_to_peers_polling(Duration::from_millis(50))
        .await?;
    let mut heard = other.changes();
    let admin = sqlx::AnyPool::connect(&db.url).await?;
    // A bot's write, and a captured tool list (migration 16), each made straight in the
    // database: no announcement.
    let writes = [
        (
            r#"UPDATE "Bot" SET "systemPrompt" = 'changed' WHERE "id" = $1"#,
            &bot.id,
        ),
        (
            r#"UPDATE "McpToolCache" SET "tools" = '[{"name":"t"}]' WHERE "mcpServerId" = $1"#,
            &server.id,
        ),
        // A sign-out, of the server and of a bot's own record (migration 17).
        (
            r#"DELETE FROM "McpOAuthToken" WHERE "mcpServerId" = $1"#,
            &server.id,
        ),
        (
            r#"DELETE FROM "McpOAuthBotToken" WHERE "mcpServerId" = $1"#,
            &server.id,
        ),
    ];
    for (write, id) in writes {
        let before = other.version();
        let changed = sqlx::query(write).bind(id).execute(&admin).await?;
        assert_eq!(changed.rows_affected(), 1, "{write}");
        assert_eq!(next(&mut heard).await?, StoreChange::Everything, "{write}");
        assert_eq!(other.version(), before + 1, "{write}");
    }
    admin.close().await;
    other.close().await;
    Ok(())
}

/// An OAuth record written or deleted (an authorization, a refresh, a sign-out) is announced
/// to the other replicas, which read their records again. PostgreSQL only (the harness says
/// "skipped" without one).
#[tokio::test]
async fn oauth_record_writes_are_announced() -> anyhow::Result<()> {
    let Some(db) = super::harness::postgres().await? else {
        return Ok(());
    };
    let result = oauth_announced(&db).await;
    db.finish().await?;
    result
}

async fn oauth_announced(db: &TestDb) -> anyhow::Result<()> {
    let bot = db.store.create_bot(&BotSpec::new("b", "openai:m")).await?;
    let server = db
        .store
        .create_server(&McpServerSpec::new("s", "cmd"))
        .await?;
    let other = Store::connect(&db.url).await?;
    let _listener = other
        .listen_to_peers_polling(Duration::from_secs(3600))
        .await?;
    let mut heard = other.changes();
    db.store.put_oauth_record(&server.id, "sealed").await?;
    db.store
        .put_bot_oauth_record(&server.id, &bot.id, "sealed")
        .await?;
    db.store
        .delete_bot_oauth_record(&server.id, &bot.id)
        .await?;
    db.store.delete_oauth_record(&server.id).await?;
    let changed = StoreChange::OAuthRecord {
        mcp_server_id: server.id.clone(),
    };
    for _ in 0..4 {
        assert_eq!(next(&mut heard).await?, changed);
    }
    other.close().await;
    Ok(())
}

backend_tests!(a_write_on_one_replica_reaches_the_others);
