//! The `mcpServers` importer: the shapes of Claude Desktop, Cursor and VS Code.

use pretty_assertions::assert_eq;
use store::{
    ImportPlan, ImportReport, McpServerSpec, SkipReason, Skipped, Transport, ValidationError,
    parse_mcp_servers,
};

use super::harness::TestDb;

const CLAUDE_DESKTOP: &str = r#"{
  "mcpServers": {
    "memory": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"] },
    "github": {
      "command": "docker",
      "args": ["run", "-i", "ghcr.io/github/github-mcp-server"],
      "env": { "GITHUB_TOKEN": "${GITHUB_TOKEN}" }
    },
    "remote": { "url": "https://example.com/mcp", "headers": { "Authorization": "Bearer ${EXAMPLE_TOKEN}" } },
    "legacy": { "url": "http://127.0.0.1:9000/sse" },
    "leaky": { "url": "https://user:pw@example.com/mcp" },
    "ws": { "type": "websocket", "url": "wss://example.com" },
    "off": { "command": "x", "disabled": true },
    "evil": { "command": "node", "env": { "NODE_OPTIONS": "--require /tmp/x.js" } },
    "nocmd": { "args": ["a"] },
    "weird": "not an object"
  }
}"#;

fn skipped(name: &str, reason: SkipReason) -> Skipped {
    Skipped {
        name: name.to_owned(),
        reason,
    }
}

#[test]
fn claude_desktop_file_is_read_with_reasons_for_what_is_left_out() -> anyhow::Result<()> {
    let plan = parse_mcp_servers(CLAUDE_DESKTOP)?;
    assert_eq!(
        plan,
        ImportPlan {
            servers: vec![
                McpServerSpec::new("github", "docker")
                    .args(["run", "-i", "ghcr.io/github/github-mcp-server"])
                    .env("GITHUB_TOKEN", "${GITHUB_TOKEN}"),
                McpServerSpec::remote("legacy", Transport::Sse, "http://127.0.0.1:9000/sse"),
                McpServerSpec::new("memory", "npx")
                    .args(["-y", "@modelcontextprotocol/server-memory"]),
                McpServerSpec::remote(
                    "remote",
                    Transport::StreamableHttp,
                    "https://example.com/mcp"
                )
                .header("Authorization", "Bearer ${EXAMPLE_TOKEN}"),
            ],
            skipped: vec![
                skipped(
                    "evil",
                    SkipReason::Invalid(ValidationError::ForbiddenEnvKey {
                        server: "evil".into(),
                        key: "NODE_OPTIONS".into()
                    })
                ),
                skipped(
                    "leaky",
                    SkipReason::Invalid(ValidationError::BadUrl {
                        server: "leaky".into(),
                        reason: "it carries a user or password".into()
                    })
                ),
                skipped("nocmd", SkipReason::NoCommand),
                skipped("off", SkipReason::Disabled),
                skipped("weird", SkipReason::NotAnObject),
                skipped(
                    "ws",
                    SkipReason::UnknownTransport {
                        transport: "websocket".into()
                    }
                ),
            ],
        }
    );
    Ok(())
}

#[test]
fn vscode_files_are_read() -> anyhow::Result<()> {
    let mcp_json = r#"{
      "inputs": [{ "type": "promptString", "id": "token" }],
      "servers": {
        "fs": { "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"] },
        "api": { "type": "http", "url": "http://localhost:3000/mcp" },
        "events": { "type": "sse", "url": "http://localhost:3001/events", "headers": { "X-Team": "core" } },
        "secret": { "type": "stdio", "command": "s", "env": { "TOKEN": "${input:token}" } },
        "here": { "command": "h", "cwd": "/somewhere" }
      }
    }"#;
    let plan = parse_mcp_servers(mcp_json)?;
    assert_eq!(
        plan,
        ImportPlan {
            servers: vec![
                McpServerSpec::remote(
                    "api",
                    Transport::StreamableHttp,
                    "http://localhost:3000/mcp"
                ),
                McpServerSpec::remote("events", Transport::Sse, "http://localhost:3001/events")
                    .header("X-Team", "core"),
                McpServerSpec::new("fs", "npx").args([
                    "-y",
                    "@modelcontextprotocol/server-filesystem",
                    "/tmp"
                ]),
            ],
            skipped: vec![
                skipped("here", SkipReason::Unsupported { field: "cwd" }),
                skipped(
                    "secret",
                    SkipReason::Invalid(ValidationError::BadEnvReference {
                        server: "secret".into(),
                        key: "TOKEN".into()
                    })
                ),
            ],
        }
    );
    let settings =
        r#"{ "editor.fontSize": 12, "mcp": { "servers": { "t": { "command": "t" } } } }"#;
    assert_eq!(
        parse_mcp_servers(settings)?.servers,
        vec![McpServerSpec::new("t", "t")]
    );
    Ok(())
}

#[test]
fn files_without_servers_are_refused() {
    for text in ["[]", r#"{"other": {}}"#, r#"{"mcpServers": []}"#] {
        assert!(
            matches!(parse_mcp_servers(text), Err(store::ImportError::NoServers)),
            "{text}"
        );
    }
    assert!(matches!(
        parse_mcp_servers("{"),
        Err(store::ImportError::Json(_))
    ));
}

async fn import_creates_new_and_updates_existing_keeping_their_settings(
    db: &TestDb,
) -> anyhow::Result<()> {
    let existing = db
        .store
        .create_server(
            &McpServerSpec::new("memory", "old")
                .timeout(1_234)
                .always_on(true)
                .instructions("keep me"),
        )
        .await?;
    let plan = parse_mcp_servers(CLAUDE_DESKTOP)?;
    let report = db.store.import_servers(&plan).await?;
    assert_eq!(
        report,
        ImportReport {
            created: vec!["github".into(), "legacy".into(), "remote".into()],
            updated: vec!["memory".into()],
            skipped: plan.skipped.clone(),
        }
    );
    let memory = db
        .store
        .server_by_name("memory")
        .await?
        .ok_or_else(|| anyhow::anyhow!("memory"))?;
    assert_eq!(
        memory.spec(),
        McpServerSpec::new("memory", "npx")
            .args(["-y", "@modelcontextprotocol/server-memory"])
            .timeout(1_234)
            .always_on(true)
            .instructions("keep me")
    );
    assert_eq!(memory.id, existing.id);
    let remote = db
        .store
        .server_by_name("remote")
        .await?
        .ok_or_else(|| anyhow::anyhow!("remote"))?;
    assert_eq!(
        (
            remote.transport,
            remote.url.as_deref(),
            remote.command.as_str()
        ),
        (
            Transport::StreamableHttp,
            Some("https://example.com/mcp"),
            ""
        )
    );
    assert_eq!(
        remote.headers.get("Authorization").map(String::as_str),
        Some("Bearer ${EXAMPLE_TOKEN}")
    );
    let again = db.store.import_servers(&plan).await?;
    assert_eq!(
        (again.created, again.updated),
        (
            vec![],
            vec![
                "github".to_owned(),
                "legacy".to_owned(),
                "memory".to_owned(),
                "remote".to_owned()
            ]
        )
    );
    assert_eq!(db.store.servers().await?.len(), 4);
    Ok(())
}

async fn a_name_that_clashes_is_skipped_and_the_rest_imported(db: &TestDb) -> anyhow::Result<()> {
    db.store
        .create_server(&McpServerSpec::new("my.fs", "a"))
        .await?;
    let plan = parse_mcp_servers(
        r#"{"mcpServers": {"my_fs": {"command": "b"}, "other": {"command": "c"}, "other.x": {"command": "d"}, "other_x": {"command": "e"}}}"#,
    )?;
    let report = db.store.import_servers(&plan).await?;
    let clash = |other: &str, prefix: &str| SkipReason::NameClash {
        other: other.into(),
        prefix: prefix.into(),
    };
    assert_eq!(
        report,
        ImportReport {
            created: vec!["other".into(), "other.x".into()],
            updated: vec![],
            skipped: vec![
                skipped("my_fs", clash("my.fs", "my_fs")),
                skipped("other_x", clash("other.x", "other_x")),
            ],
        }
    );
    let names: Vec<String> = db
        .store
        .servers()
        .await?
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, vec!["my.fs", "other", "other.x"]);
    Ok(())
}

backend_tests!(
    import_creates_new_and_updates_existing_keeping_their_settings,
    a_name_that_clashes_is_skipped_and_the_rest_imported
);
