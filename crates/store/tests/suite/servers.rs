//! `"McpServer"` writes and reads.

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use store::{McpServer, McpServerSpec, StoreError, Transport, ValidationError};

use super::harness::{START_MS, TestDb};

fn full_spec() -> McpServerSpec {
    McpServerSpec::new("search", "/opt/bin/search")
        .args(["--flag", "value with spaces"])
        .env("API_URL", "http://${HOST}:8108")
        .env("MODE", "fast")
        .timeout(12_000)
        .init_timeout(5_000)
        .always_on(true)
        .idle_timeout_ms(90_000)
        .instructions("Search things.")
        .sandbox(full_sandbox())
}

fn full_sandbox() -> sandbox::SandboxPolicy {
    sandbox::SandboxPolicy {
        unix_sockets: true,
        ..sandbox::SandboxPolicy::with_network(sandbox::NetworkPolicy::Connect(vec![
            sandbox::NetworkEntry::Port(8108),
            sandbox::NetworkEntry::Named("${API_URL}".into()),
        ]))
        .read_write("/srv/search")
    }
}

async fn created_server_reads_back_whole(db: &TestDb) -> anyhow::Result<()> {
    let created = db.store.create_server(&full_spec()).await?;
    let expected = McpServer {
        id: created.id.clone(),
        name: "search".into(),
        transport: Transport::Stdio,
        command: "/opt/bin/search".into(),
        args: vec!["--flag".into(), "value with spaces".into()],
        env: BTreeMap::from([
            ("API_URL".into(), "http://${HOST}:8108".into()),
            ("MODE".into(), "fast".into()),
        ]),
        url: None,
        headers: BTreeMap::new(),
        sandbox: full_sandbox(),
        timeout: 12_000,
        init_timeout: 5_000,
        always_on: true,
        idle_timeout_ms: 90_000,
        instructions: Some("Search things.".into()),
        created_at: START_MS,
        updated_at: START_MS,
    };
    assert_eq!(created, expected);
    assert_eq!(db.store.server(&created.id).await?, Some(expected.clone()));
    assert_eq!(db.store.server_by_name("search").await?, Some(expected));
    assert_eq!(db.store.server_by_name("other").await?, None);
    Ok(())
}

async fn new_server_takes_the_model_defaults(db: &TestDb) -> anyhow::Result<()> {
    let from_json: McpServerSpec =
        serde_json::from_str(r#"{"name": "plain", "command": "plain-server"}"#)?;
    assert_eq!(from_json, McpServerSpec::new("plain", "plain-server"));
    let created = db.store.create_server(&from_json).await?;
    let expected = McpServer {
        id: created.id.clone(),
        name: "plain".into(),
        transport: Transport::Stdio,
        command: "plain-server".into(),
        args: vec![],
        env: BTreeMap::new(),
        url: None,
        headers: BTreeMap::new(),
        sandbox: sandbox::SandboxPolicy::default(),
        timeout: 30_000,
        init_timeout: 30_000,
        always_on: false,
        idle_timeout_ms: 60_000,
        instructions: None,
        created_at: START_MS,
        updated_at: START_MS,
    };
    assert_eq!(created, expected);
    Ok(())
}

async fn duplicate_server_name_is_refused(db: &TestDb) -> anyhow::Result<()> {
    db.store.create_server(&full_spec()).await?;
    let error = db.store.create_server(&full_spec()).await;
    assert!(
        matches!(&error, Err(StoreError::DuplicateServerName { name }) if name == "search"),
        "{error:?}"
    );
    assert_eq!(db.store.servers().await?.len(), 1);
    Ok(())
}

async fn names_written_alike_in_tool_names_are_refused(db: &TestDb) -> anyhow::Result<()> {
    let first = db
        .store
        .create_server(&McpServerSpec::new("my.fs", "cmd"))
        .await?;
    let clash = |name: &str| StoreError::ServerNameClash {
        name: name.into(),
        other: "my.fs".into(),
        prefix: "my_fs".into(),
    };
    let created = db
        .store
        .create_server(&McpServerSpec::new("my_fs", "cmd"))
        .await;
    assert_eq!(
        created.map(|server| server.name).map_err(|e| e.to_string()),
        Err(clash("my_fs").to_string())
    );
    // Another server renamed into the clash is refused too; the server itself keeps its name.
    let other = db
        .store
        .create_server(&McpServerSpec::new("other", "cmd"))
        .await?;
    let renamed = db
        .store
        .update_server(&other.id, &McpServerSpec::new("my_fs", "cmd"))
        .await;
    assert_eq!(
        renamed.map(|server| server.name).map_err(|e| e.to_string()),
        Err(clash("my_fs").to_string())
    );
    let kept = db
        .store
        .update_server(&first.id, &McpServerSpec::new("my.fs", "cmd2"))
        .await?;
    assert_eq!(kept.command, "cmd2");
    let names: Vec<String> = db
        .store
        .servers()
        .await?
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, vec!["my.fs", "other"]);
    Ok(())
}

fn remote() -> McpServerSpec {
    McpServerSpec::remote("s", Transport::StreamableHttp, "https://example.com/mcp")
}

fn bad_url(reason: &str) -> ValidationError {
    ValidationError::BadUrl {
        server: "s".into(),
        reason: reason.into(),
    }
}

async fn remote_server_reads_back_whole(db: &TestDb) -> anyhow::Result<()> {
    let spec = McpServerSpec::remote("hosted", Transport::Sse, "https://mcp.example.com/sse")
        .header("Authorization", "Bearer ${HOSTED_TOKEN}")
        .header("X-Team", "core")
        .always_on(true);
    let from_json: McpServerSpec = serde_json::from_str(
        r#"{"name": "hosted", "transport": "sse", "url": "https://mcp.example.com/sse",
            "headers": {"Authorization": "Bearer ${HOSTED_TOKEN}", "X-Team": "core"},
            "alwaysOn": true}"#,
    )?;
    assert_eq!(from_json, spec);
    let created = db.store.create_server(&spec).await?;
    assert_eq!(created.spec(), spec);
    assert_eq!(db.store.server(&created.id).await?, Some(created.clone()));
    let http = McpServerSpec::remote(
        "hosted",
        Transport::StreamableHttp,
        "http://127.0.0.1:1/mcp",
    );
    let updated = db.store.update_server(&created.id, &http).await?;
    assert_eq!(updated.spec(), http);
    let stdio = McpServerSpec::new("hosted", "local-server");
    let back = db.store.update_server(&created.id, &stdio).await?;
    assert_eq!(
        (back.spec(), back.url, back.headers),
        (stdio, None, BTreeMap::new())
    );
    Ok(())
}

async fn invalid_server_specs_are_refused_before_writing(db: &TestDb) -> anyhow::Result<()> {
    let base = || McpServerSpec::new("s", "cmd");
    let cases: Vec<(McpServerSpec, ValidationError)> = vec![
        (
            McpServerSpec::new("", "cmd"),
            ValidationError::EmptyName {
                entity: "MCP server",
            },
        ),
        (
            McpServerSpec::new("has space", "cmd"),
            ValidationError::BadName {
                entity: "MCP server",
                name: "has space".into(),
            },
        ),
        (
            McpServerSpec::new("s", "  "),
            ValidationError::EmptyCommand { server: "s".into() },
        ),
    ];
    let ambiguous = ["corp__fs", "gh_", "my.", "a._b", "a_.b", "a..b"]
        .into_iter()
        .map(|name| {
            (
                McpServerSpec::new(name, "cmd"),
                ValidationError::AmbiguousServerName { name: name.into() },
            )
        });
    let cases: Vec<(McpServerSpec, ValidationError)> = cases
        .into_iter()
        .chain(ambiguous)
        .chain(vec![
            (
                base().timeout(0),
                ValidationError::TimeoutOutOfRange {
                    server: "s".into(),
                    field: "timeout",
                    value: 0,
                    max: 86_400_000,
                },
            ),
            (
                base().init_timeout(-5),
                ValidationError::TimeoutOutOfRange {
                    server: "s".into(),
                    field: "initTimeout",
                    value: -5,
                    max: 86_400_000,
                },
            ),
            (
                base().idle_timeout_ms(86_400_001),
                ValidationError::TimeoutOutOfRange {
                    server: "s".into(),
                    field: "idleTimeoutMs",
                    value: 86_400_001,
                    max: 86_400_000,
                },
            ),
            (
                base().env("LD_PRELOAD", "/tmp/evil.so"),
                ValidationError::ForbiddenEnvKey {
                    server: "s".into(),
                    key: "LD_PRELOAD".into(),
                },
            ),
            (
                base().env("LD_LIBRARY_PATH", "/tmp"),
                ValidationError::ForbiddenEnvKey {
                    server: "s".into(),
                    key: "LD_LIBRARY_PATH".into(),
                },
            ),
            (
                base().env("NODE_OPTIONS", "--require /tmp/x.js"),
                ValidationError::ForbiddenEnvKey {
                    server: "s".into(),
                    key: "NODE_OPTIONS".into(),
                },
            ),
            (
                base().env("DYLD_INSERT_LIBRARIES", "/tmp/x.dylib"),
                ValidationError::ForbiddenEnvKey {
                    server: "s".into(),
                    key: "DYLD_INSERT_LIBRARIES".into(),
                },
            ),
            (
                base().env("PYTHONPATH", "/tmp"),
                ValidationError::ForbiddenEnvKey {
                    server: "s".into(),
                    key: "PYTHONPATH".into(),
                },
            ),
            (
                base().env("PATH", "/tmp"),
                ValidationError::ForbiddenEnvKey {
                    server: "s".into(),
                    key: "PATH".into(),
                },
            ),
            (
                base().env("BAD-KEY", "x"),
                ValidationError::BadEnvKey {
                    server: "s".into(),
                    key: "BAD-KEY".into(),
                },
            ),
            (
                base().env("TOKEN", "${input:token}"),
                ValidationError::BadEnvReference {
                    server: "s".into(),
                    key: "TOKEN".into(),
                },
            ),
            (
                base().sandbox(sandbox::SandboxPolicy::default().read_write("logs")),
                ValidationError::BadSandbox {
                    server: "s".into(),
                    source: sandbox::PolicyError::Relative {
                        field: "readWrite",
                        entry: "logs".into(),
                    },
                },
            ),
            (
                base().sandbox(sandbox::SandboxPolicy::default().read_write("${input:dir}")),
                ValidationError::BadSandbox {
                    server: "s".into(),
                    source: sandbox::PolicyError::BadReference {
                        field: "readWrite",
                        entry: "${input:dir}".into(),
                    },
                },
            ),
            (
                McpServerSpec {
                    url: Some("https://example.com/mcp".into()),
                    ..base()
                },
                ValidationError::NotForTransport {
                    server: "s".into(),
                    transport: "stdio".into(),
                    field: "url",
                },
            ),
            (
                base().header("X-A", "b"),
                ValidationError::NotForTransport {
                    server: "s".into(),
                    transport: "stdio".into(),
                    field: "headers",
                },
            ),
            (
                McpServerSpec {
                    url: None,
                    ..remote()
                },
                ValidationError::MissingUrl {
                    server: "s".into(),
                    transport: "streamable-http".into(),
                },
            ),
            (
                McpServerSpec::remote("s", Transport::Sse, "ftp://example.com/sse"),
                bad_url("the scheme is not http or https"),
            ),
            (
                McpServerSpec::remote("s", Transport::Sse, "https://u:p@example.com/sse"),
                bad_url("it carries a user or password"),
            ),
            (
                McpServerSpec::remote("s", Transport::Sse, "https:///sse"),
                bad_url("it has no host"),
            ),
            (
                McpServerSpec::remote("s", Transport::Sse, "https://example.com/a b"),
                bad_url("it holds whitespace or a control character"),
            ),
            (
                McpServerSpec {
                    command: "npx".into(),
                    ..remote()
                },
                ValidationError::NotForTransport {
                    server: "s".into(),
                    transport: "streamable-http".into(),
                    field: "command",
                },
            ),
            (
                remote().env("A", "b"),
                ValidationError::NotForTransport {
                    server: "s".into(),
                    transport: "streamable-http".into(),
                    field: "env",
                },
            ),
            (
                remote().header("Bad Name", "x"),
                ValidationError::BadHeaderName {
                    server: "s".into(),
                    name: "Bad Name".into(),
                },
            ),
            (
                remote().header("Mcp-Session-Id", "x"),
                ValidationError::ReservedHeader {
                    server: "s".into(),
                    name: "Mcp-Session-Id".into(),
                },
            ),
            (
                remote().header("X-Token", "a\r\nX-Evil: 1"),
                ValidationError::ControlCharacter {
                    server: "s".into(),
                    field: "header X-Token".into(),
                },
            ),
            (
                remote().header("Authorization", "Bearer ${input:t}"),
                ValidationError::BadHeaderReference {
                    server: "s".into(),
                    name: "Authorization".into(),
                },
            ),
        ])
        .collect();
    for (spec, expected) in cases {
        match db.store.create_server(&spec).await {
            Err(StoreError::Invalid(error)) => assert_eq!(error, expected),
            other => panic!("{spec:?}: expected {expected:?}, got {other:?}"),
        }
    }
    assert_eq!(db.store.servers().await?, vec![]);
    Ok(())
}

async fn update_replaces_fields_and_moves_updated_at(db: &TestDb) -> anyhow::Result<()> {
    let created = db.store.create_server(&full_spec()).await?;
    db.clock.advance(1_000);
    let spec = McpServerSpec::new("search-2", "/opt/bin/search2").timeout(1);
    let updated = db.store.update_server(&created.id, &spec).await?;
    let expected = McpServer {
        id: created.id.clone(),
        name: "search-2".into(),
        transport: Transport::Stdio,
        command: "/opt/bin/search2".into(),
        args: vec![],
        env: BTreeMap::new(),
        url: None,
        headers: BTreeMap::new(),
        sandbox: sandbox::SandboxPolicy::default(),
        timeout: 1,
        init_timeout: 30_000,
        always_on: false,
        idle_timeout_ms: 60_000,
        instructions: None,
        created_at: START_MS,
        updated_at: START_MS + 1_000,
    };
    assert_eq!(updated, expected);
    assert_eq!(db.store.server(&created.id).await?, Some(expected));
    Ok(())
}

async fn update_of_unknown_or_into_a_taken_name_is_refused(db: &TestDb) -> anyhow::Result<()> {
    let first = db
        .store
        .create_server(&McpServerSpec::new("first", "a"))
        .await?;
    db.store
        .create_server(&McpServerSpec::new("second", "b"))
        .await?;
    let error = db
        .store
        .update_server("nope", &McpServerSpec::new("x", "y"))
        .await;
    assert!(
        matches!(&error, Err(StoreError::UnknownServer(id)) if id == "nope"),
        "{error:?}"
    );
    let error = db
        .store
        .update_server(&first.id, &McpServerSpec::new("second", "a"))
        .await;
    assert!(
        matches!(&error, Err(StoreError::DuplicateServerName { name }) if name == "second"),
        "{error:?}"
    );
    assert_eq!(db.store.server(&first.id).await?, Some(first));
    Ok(())
}

async fn servers_list_by_name_and_delete(db: &TestDb) -> anyhow::Result<()> {
    for name in ["zeta", "alpha", "mid"] {
        db.store
            .create_server(&McpServerSpec::new(name, "cmd"))
            .await?;
    }
    let names = |servers: Vec<McpServer>| servers.into_iter().map(|s| s.name).collect::<Vec<_>>();
    assert_eq!(
        names(db.store.servers().await?),
        vec!["alpha", "mid", "zeta"]
    );
    let mid = db
        .store
        .server_by_name("mid")
        .await?
        .ok_or_else(|| anyhow::anyhow!("mid"))?;
    assert!(db.store.delete_server(&mid.id).await?);
    assert!(!db.store.delete_server(&mid.id).await?);
    assert_eq!(names(db.store.servers().await?), vec!["alpha", "zeta"]);
    Ok(())
}

backend_tests!(
    created_server_reads_back_whole,
    remote_server_reads_back_whole,
    new_server_takes_the_model_defaults,
    duplicate_server_name_is_refused,
    names_written_alike_in_tool_names_are_refused,
    invalid_server_specs_are_refused_before_writing,
    update_replaces_fields_and_moves_updated_at,
    update_of_unknown_or_into_a_taken_name_is_refused,
    servers_list_by_name_and_delete,
);
