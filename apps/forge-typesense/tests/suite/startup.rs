//! Starting with nothing: `initialize` and `tools/list` under `env -i`, the
//! seed's tool inputs, the committed manifest, and accurate help.

use std::collections::BTreeMap;
use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use test_support::StdioServer;

use super::BIN;

#[tokio::test]
async fn answers_initialize_and_tools_list_under_env_i() {
    let server = StdioServer::spawn("env", &["-i", BIN], &BTreeMap::new())
        .await
        .expect("initialize with an empty environment");
    let info = server.client.peer_info().expect("initialize result");
    let name = info.server_info.as_ref().map(|i| i.name.as_str());
    assert_eq!(name, Some("forge-typesense"));
    let names: Vec<String> = server
        .tools()
        .await
        .expect("tools/list")
        .iter()
        .map(|tool| tool.name.to_string())
        .collect();
    assert_eq!(names, ["search_knowledge", "get_file_summary"]);
    let line = super::stderr_line_with(&server, "unconfigured").await;
    assert_eq!(
        line,
        "forge-typesense: tools/call is unconfigured (Typesense is not configured: set TYPESENSE_URL and TYPESENSE_SEARCH_KEY. TYPESENSE_URL is the server's base URL (e.g. http://localhost:8108).); initialize and tools/list work regardless"
    );
    server.close().await.expect("close");
}

#[tokio::test]
async fn tool_inputs_are_the_seeds() {
    let server = StdioServer::spawn(BIN, &[], &StdioServer::base_env())
        .await
        .expect("spawn");
    let tools = server.tools().await.expect("tools/list");
    let schemas: Vec<Value> = tools
        .iter()
        .map(|tool| Value::Object((*tool.input_schema).clone()))
        .collect();
    let text = |description: &str| json!({"type": "string", "description": description});
    assert_eq!(
        schemas,
        [
            json!({
                "type": "object",
                "properties": {
                    "query": text("Search query — keywords or natural language"),
                    "department": text("Filter by department"),
                    "project": text("Filter by project name"),
                    "type": text("Filter by document type"),
                    "source": text("Filter by source: repo or website"),
                    "status": text("Filter by status"),
                    "visibility": text("Filter by visibility"),
                    "owner": text("Filter by owner"),
                    "limit": {
                        "type": "number",
                        "description": "Max results",
                        "minimum": 1,
                        "maximum": 50,
                        "default": 5
                    }
                },
                "required": ["query"]
            }),
            json!({
                "type": "object",
                "properties": {"path": text("Relative file path, e.g. Forge/README.md")},
                "required": ["path"]
            }),
        ]
    );
    server.close().await.expect("close");
}

#[tokio::test]
async fn committed_manifest_matches_tools_list() {
    test_support::manifest_drift::check_committed_manifest(
        BIN,
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
        "forge-typesense",
    )
    .await
    .unwrap_or_else(|error| panic!("{error:#}"));
}

#[test]
fn help_describes_the_server_and_the_index_command() {
    let run = |args: &[&str]| {
        let output = Command::new(BIN)
            .args(args)
            .env_clear()
            .output()
            .expect("run");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    let (code, help) = run(&["--help"]);
    assert_eq!(code, Some(0));
    for needle in [
        "forge-typesense index [--repo PATH] [--full]",
        "TYPESENSE_API_KEY",
        "TYPESENSE_URL",
        "TYPESENSE_SEARCH_KEY",
        "TYPESENSE_COLLECTION  the collection (default: uvilo)",
        "TYPESENSE_TIMEOUT_MS",
    ] {
        assert!(help.contains(needle), "{needle:?} not in:\n{help}");
    }
    let (code, index_help) = run(&["index", "--help"]);
    assert_eq!(code, Some(0));
    for needle in [
        "--repo <PATH>",
        "--full",
        "TYPESENSE_API_KEY",
        "REPO_PATH",
        "Exit status",
    ] {
        assert!(
            index_help.contains(needle),
            "{needle:?} not in:\n{index_help}"
        );
    }
    let (code, _) = run(&["index", "--bogus"]);
    assert_eq!(code, Some(2));
}

#[test]
fn index_without_settings_names_them_and_exits_2() {
    let output = super::run_index(&[], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "forge-typesense index: Typesense is not configured: set TYPESENSE_URL and TYPESENSE_API_KEY. TYPESENSE_URL is the server's base URL (e.g. http://localhost:8108).\n"
    );
}
