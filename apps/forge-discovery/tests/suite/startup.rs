//! Starting with nothing: `initialize` and `tools/list` under `env -i`, the
//! tool inputs of the seed, and the committed manifest.

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use serde_json::Value;
use test_support::StdioServer;

use super::BIN;

const SEED_TOOLS: [(&str, &[&str], &[&str]); 7] = [
    ("list_departments", &[], &[]),
    ("list_projects", &["department"], &[]),
    ("get_project_phase", &["project", "department"], &[]),
    ("get_project_files", &["project", "department"], &[]),
    ("list_skills", &[], &["department"]),
    ("get_skill_details", &["skill"], &["department"]),
    ("find", &["query"], &[]),
];

fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn answers_initialize_and_tools_list_under_env_i() {
    // `env -i BIN`: not even PATH, and no REPO_PATH.
    let server = StdioServer::spawn("env", &["-i", BIN], &BTreeMap::new())
        .await
        .expect("initialize with an empty environment");
    let info = server.client.peer_info().expect("initialize result");
    let name = info.server_info.as_ref().map(|i| i.name.as_str());
    assert_eq!(name, Some("forge-discovery"));
    let names: Vec<String> = server
        .tools()
        .await
        .expect("tools/list")
        .iter()
        .map(|tool| tool.name.to_string())
        .collect();
    let expected: Vec<String> = SEED_TOOLS
        .iter()
        .map(|(name, ..)| name.to_string())
        .collect();
    assert_eq!(names, expected);
    server.close().await.expect("close");
}

#[tokio::test]
async fn tool_inputs_are_the_seeds() {
    let server = StdioServer::spawn(BIN, &[], &StdioServer::base_env())
        .await
        .expect("spawn");
    let tools = server.tools().await.expect("tools/list");
    let actual: Vec<(String, Vec<String>, Vec<String>)> = tools
        .iter()
        .map(|tool| {
            let schema = Value::Object((*tool.input_schema).clone());
            let mut required = string_list(schema.get("required"));
            required.sort();
            let mut optional: Vec<String> = schema["properties"]
                .as_object()
                .map(|props| {
                    props
                        .keys()
                        .filter(|k| !required.contains(k))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            optional.sort();
            for (name, property) in schema["properties"].as_object().into_iter().flatten() {
                let keys: Vec<&String> = property
                    .as_object()
                    .map(|p| p.keys().collect())
                    .unwrap_or_default();
                assert_eq!(keys, ["description", "type"], "{}.{name}", tool.name);
                assert_eq!(property["type"], "string", "{}.{name}", tool.name);
            }
            (tool.name.to_string(), required, optional)
        })
        .collect();
    let expected: Vec<(String, Vec<String>, Vec<String>)> = SEED_TOOLS
        .iter()
        .map(|(name, required, optional)| {
            let mut required: Vec<String> = required.iter().map(|s| s.to_string()).collect();
            required.sort();
            (
                name.to_string(),
                required,
                optional.iter().map(|s| s.to_string()).collect(),
            )
        })
        .collect();
    assert_eq!(actual, expected);
    assert!(
        tools
            .iter()
            .all(|tool| tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true)),
        "every tool is read-only"
    );
    server.close().await.expect("close");
}

#[tokio::test]
async fn committed_manifest_matches_tools_list() {
    test_support::manifest_drift::check_committed_manifest(
        BIN,
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
        "forge-discovery",
    )
    .await
    .unwrap_or_else(|error| panic!("{error:#}"));
}

#[test]
fn manifest_flag_prints_the_committed_manifest() {
    test_support::manifest_drift::check_manifest_flag(
        BIN,
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
    )
    .unwrap_or_else(|error| panic!("{error:#}"));
}
