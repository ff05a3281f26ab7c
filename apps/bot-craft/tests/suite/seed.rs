//! `botcraft seed` end to end: a fresh SQLite file, idempotent, with an import.

use std::process::Command;

use pretty_assertions::assert_eq;

fn botcraft(args: &[&str], dir: &std::path::Path) -> anyhow::Result<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_botcraft"))
        .args(args)
        .current_dir(dir)
        .env_remove("DATABASE_URL")
        .env_remove("BOTCRAFT_DATA_DIR")
        .env_remove("BOTCRAFT_DEFAULT_MODEL")
        .output()?;
    anyhow::ensure!(
        output.status.success(),
        "botcraft {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8(output.stdout)?)
}

#[test]
fn seed_creates_then_keeps_and_imports() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("db.sqlite").display()
    );
    let first = botcraft(
        &["seed", "--database-url", &url, "--bin-dir", "/opt/forge"],
        dir.path(),
    )?;
    assert_eq!(
        first,
        "servers created: forge-bash, forge-discovery, forge-typesense, forge-filesystem, playwright; \
         kept: none; bot forge created; bindings created: forge-bash, forge-discovery, \
         forge-typesense, forge-filesystem, playwright\n"
    );
    let file = dir.path().join("mcp.json");
    std::fs::write(
        &file,
        r#"{"mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}, "web": {"url": "https://x"}, "ws": {"type": "websocket", "url": "wss://x"}}}"#,
    )?;
    let file_arg = file.display().to_string();
    let second = botcraft(
        &["seed", "--database-url", &url, "--import", &file_arg],
        dir.path(),
    )?;
    assert_eq!(
        second,
        "servers created: none; kept: forge-bash, forge-discovery, forge-typesense, \
         forge-filesystem, playwright; bot forge kept; bindings created: none\n\
         imported: created memory, web; updated none\n\
         skipped ws: transport type \"websocket\" is not one BotCraft speaks (stdio, http, sse)\n"
    );
    Ok(())
}

#[test]
fn default_database_is_a_file_in_the_data_folder() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    botcraft(&["seed"], dir.path())?;
    assert!(dir.path().join(".botcraft/botcraft.db").exists());
    Ok(())
}
