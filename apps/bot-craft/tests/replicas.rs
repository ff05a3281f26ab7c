//! Past one machine: two `botcraft serve` replicas on one PostgreSQL store (a fresh database
//! on the server `BOTCRAFT_TEST_DATABASE_URL` names; without it the test says "skipped"), each
//! hearing the other's writes, and a second `serve` on one SQLite file refused.

mod common;

use std::process::Stdio;

use anyhow::Context;
use common::{Api, Served, serve_command, spawn_served};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::json;
use sqlx::migrate::MigrateDatabase;

const KEY: &str = "replicas-admin-key";
const POSTGRES_URL_VAR: &str = "BOTCRAFT_TEST_DATABASE_URL";

/// A database of its own on the test server, dropped by [`Dropped`].
async fn fresh_database() -> anyhow::Result<Option<String>> {
    let Ok(base) = std::env::var(POSTGRES_URL_VAR) else {
        eprintln!("{POSTGRES_URL_VAR} is not set: the two-replica test is skipped");
        return Ok(None);
    };
    sqlx::any::install_default_drivers();
    let name = format!("botcraft_replicas_{:08x}", rand::random::<u32>());
    let (head, query) = base.split_once('?').unwrap_or((&base, ""));
    let server = head.rsplit_once('/').map_or(head, |(server, _)| server);
    let url = if query.is_empty() {
        format!("{server}/{name}")
    } else {
        format!("{server}/{name}?{query}")
    };
    sqlx::Any::create_database(&url)
        .await
        .with_context(|| format!("create {name} ({POSTGRES_URL_VAR} is set)"))?;
    Ok(Some(url))
}

fn replica(data: &std::path::Path, database: &str) -> anyhow::Result<Served> {
    let mut command = serve_command(data, KEY)?;
    command.arg("--no-seed").env("DATABASE_URL", database);
    spawn_served(command)
}

#[tokio::test(flavor = "multi_thread")]
async fn two_replicas_on_one_postgres_hear_each_others_writes() -> anyhow::Result<()> {
    let Some(database) = fresh_database().await? else {
        return Ok(());
    };
    let result = run_two_replicas(&database).await;
    sqlx::Any::drop_database(&database).await?;
    result
}

async fn run_two_replicas(database: &str) -> anyhow::Result<()> {
    let (a_dir, b_dir) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let mut a = tokio::task::block_in_place(|| replica(a_dir.path(), database))?;
    let mut b = tokio::task::block_in_place(|| replica(b_dir.path(), database))?;
    let (api_a, api_b) = (Api::new(&a.url, KEY), Api::new(&b.url, KEY));

    // A server added on A is listed and callable on B, once B has applied A's write.
    let fake = test_support::fake_mcp_server_binary()?;
    let (status, body) = api_a
        .send(
            Method::POST,
            "/api/servers",
            Some(json!({"name": "echo", "command": fake.to_string_lossy()})),
        )
        .await?;
    assert_eq!(status, 201, "{body}");
    tokio::task::block_in_place(|| b.wait_for_line("server configs reloaded"))?;
    let (status, listed) = api_b.send(Method::GET, "/api/servers", None).await?;
    assert_eq!(status, 200);
    let names: Vec<&str> = listed
        .as_array()
        .context("a list")?
        .iter()
        .filter_map(|server| server["name"].as_str())
        .collect();
    assert_eq!(names, vec!["echo"]);
    let (status, called) = api_b
        .send(
            Method::POST,
            "/api/servers/echo/tools/echo/call",
            Some(json!({"arguments": {"text": "from B"}})),
        )
        .await?;
    assert_eq!(status, 200, "{called}");
    assert!(called.to_string().contains("from B"), "{called}");
    // B started its own child: A knows the server and runs nothing.
    assert_eq!(state(&api_a, "echo").await?, Some("stopped".to_owned()));
    assert_eq!(state(&api_b, "echo").await?, Some("running".to_owned()));

    // A key revoked on A fails on B at its next request.
    let (status, created) = api_a
        .send(
            Method::POST,
            "/api/keys",
            Some(json!({"name": "front", "role": "chat"})),
        )
        .await?;
    assert_eq!(status, 201, "{created}");
    let chat_key = created["secret"]
        .as_str()
        .context("the new key")?
        .to_owned();
    let (status, _) = api_b
        .send_as(&chat_key, Method::GET, "/api/whoami", None)
        .await?;
    assert_eq!(status, 200);
    let (status, _) = api_a.send(Method::DELETE, "/api/keys/front", None).await?;
    assert_eq!(status, 200);
    let (status, _) = api_b
        .send_as(&chat_key, Method::GET, "/api/whoami", None)
        .await?;
    assert_eq!(status, 401);

    // Deleted on B: B stops its child, and A forgets the server too once it has applied the
    // write (each reload line on A is a chance; none within the bound fails the test).
    let (status, _) = api_b
        .send(Method::DELETE, "/api/servers/echo", None)
        .await?;
    assert_eq!(status, 204);
    assert_eq!(state(&api_b, "echo").await?, None);
    while state(&api_a, "echo").await?.is_some() {
        tokio::task::block_in_place(|| a.wait_for_line("server configs reloaded"))?;
    }
    Ok(())
}

/// The state of `server` in this replica's `/api/health`, `None` when it does not know it.
async fn state(api: &Api, server: &str) -> anyhow::Result<Option<String>> {
    let (_, health) = api.send(Method::GET, "/api/health", None).await?;
    Ok(health["mcpServers"][server]["state"]
        .as_str()
        .map(str::to_owned))
}

#[test]
fn a_second_serve_on_one_sqlite_file_is_refused() -> anyhow::Result<()> {
    let data = tempfile::tempdir()?;
    let _first = spawn_served(serve_command(data.path(), KEY)?)?;
    let second = serve_command(data.path(), KEY)?
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()?;
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "the second serve ran: {stderr}");
    assert!(
        stderr.contains("SQLite has one replica"),
        "no reason given: {stderr}"
    );
    Ok(())
}
