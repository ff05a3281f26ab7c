//! Starting with nothing (seed 001): no roots, no files, PATH only.

use pretty_assertions::assert_eq;
use serde_json::json;
use test_support::StdioServer;

use super::{spawn, stderr_line};

const TOOLS: [&str; 11] = [
    "read_text_file",
    "write_file",
    "edit_file",
    "list_directory",
    "search_files",
    "trash_file",
    "trash_directory",
    "untrash_file",
    "untrash_directory",
    "list_trash",
    "empty_trash",
];

#[tokio::test]
async fn answers_initialize_and_tools_list_with_only_path_set() {
    let server = spawn(&StdioServer::base_env()).await;
    let info = server.client.peer_info().expect("initialize result");
    let server_name = info
        .server_info
        .as_ref()
        .map(|implementation| implementation.name.as_str());
    assert_eq!(server_name, Some("forge-filesystem"));
    assert!(info.capabilities.tools.is_some());
    let names: Vec<String> = server
        .tools()
        .await
        .expect("tools/list")
        .iter()
        .map(|tool| tool.name.to_string())
        .collect();
    assert_eq!(names, TOOLS);
    server.close().await.expect("close");
}

#[tokio::test]
async fn a_call_needing_a_missing_root_fails_not_configured() {
    let missing = tempfile::tempdir().expect("tempdir");
    let workspace = missing.path().join("no-workspace");
    let repo = missing.path().join("no-repo");
    let mut env = StdioServer::base_env();
    env.insert("WORKSPACE_ROOT".into(), workspace.display().to_string());
    env.insert("REPO_ROOT".into(), repo.display().to_string());
    let server = spawn(&env).await;

    let cases = [
        (
            "read_text_file",
            json!({"path": "a.txt"}),
            "WORKSPACE_ROOT",
            &workspace,
        ),
        (
            "write_file",
            json!({"path": "a.txt", "content": "x"}),
            "WORKSPACE_ROOT",
            &workspace,
        ),
        (
            "list_directory",
            json!({"path": "."}),
            "WORKSPACE_ROOT",
            &workspace,
        ),
        (
            "search_files",
            json!({"path": ".", "pattern": "*"}),
            "WORKSPACE_ROOT",
            &workspace,
        ),
        ("trash_file", json!({"path": "a.txt"}), "REPO_ROOT", &repo),
        ("list_trash", json!({}), "REPO_ROOT", &repo),
        ("empty_trash", json!({}), "REPO_ROOT", &repo),
    ];
    for (tool, arguments, var, path) in cases {
        let outcome = server.call(tool, arguments).await.expect("call");
        let expected = format!(
            "{var} is not configured: {} (as set) does not exist. Set {var} to an existing directory.",
            path.display()
        );
        assert_eq!(
            (outcome.is_error, outcome.text.as_str()),
            (true, expected.as_str()),
            "{tool}"
        );
        let line = stderr_line(&server, &format!("tool={tool} "))
            .await
            .unwrap_or_else(|| panic!("no stderr line for {tool}"));
        assert_eq!(
            line,
            format!("forge-filesystem: reason=stdio.not_configured tool={tool} {expected}")
        );
    }
    assert!(!workspace.exists() && !repo.exists(), "nothing was created");
    server.close().await.expect("close");
}
