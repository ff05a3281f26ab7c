//! Starting with nothing: the manifest, an empty environment, the seed's
//! initialize line, and settings that fail calls rather than the start.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use test_support::StdioServer;

use super::{BIN, Harness, RawServer};

#[tokio::test]
async fn committed_manifest_matches_tools_list() {
    test_support::manifest_drift::check_committed_manifest(
        BIN,
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
        "forge-bash",
    )
    .await
    .unwrap_or_else(|error| panic!("{error:#}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_initialize_and_tools_list_with_only_path() {
    let server = StdioServer::spawn(BIN, &[], &StdioServer::base_env())
        .await
        .expect("initialize with PATH only");
    let info = server.client.peer_info().expect("server info");
    let name = info.server_info.as_ref().map(|i| i.name.as_str());
    assert_eq!(name, Some("forge-bash"));
    let tools = server.tools().await.expect("tools/list");
    let summary: Vec<(String, Value)> = tools
        .iter()
        .map(|tool| {
            (
                tool.name.to_string(),
                Value::Object((*tool.input_schema).clone()),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![(
            "run".to_owned(),
            json!({
                "type": "object",
                "properties": {"command": {
                    "type": "string",
                    "description": "Full command string, including pipes and chain operators."
                }},
                "required": ["command"]
            })
        )]
    );
}

#[test]
fn the_seed_initialize_line_is_answered() {
    let mut env = std::collections::BTreeMap::new();
    env.insert("PATH".to_owned(), "/usr/bin:/bin".to_owned());
    let mut server = RawServer::spawn(&env);
    let line: Value = serde_json::from_str(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"test","version":"1.0.0"}}}"#,
    )
    .expect("seed line");
    server.send(&line);
    let answer = server.receive();
    assert_eq!(
        (
            &answer["id"],
            &answer["result"]["protocolVersion"],
            &answer["result"]["serverInfo"]["name"],
            answer["result"]["capabilities"]["tools"].is_object()
        ),
        (&json!(1), &json!("2024-11-05"), &json!("forge-bash"), true)
    );
    server.close_stdin();
    assert!(server.wait_exit().success(), "exits 0 when stdin closes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_setting_fails_calls_not_the_start() {
    let harness = Harness::start_with(&[("FORGE_BASH_TIMEOUT_SECS", "soon")]).await;
    assert_eq!(harness.server.tools().await.expect("tools/list").len(), 1);
    let outcome = harness.run("echo hi").await;
    let message = "FORGE_BASH_TIMEOUT_SECS=\"soon\" is not a whole number greater than zero; unset it for the default (300)";
    assert_eq!((outcome.is_error, outcome.text.as_str()), (true, message));
    harness.wait_for_stderr(&format!(
        "forge-bash: reason=stdio.not_configured tool=run {message}"
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_working_directory_is_not_configured() {
    let harness = Harness::start_with(&[("FORGE_BASH_CWD", "/nonexistent/forge-bash-cwd")]).await;
    let outcome = harness.run("echo hi").await;
    assert_eq!(
        (outcome.is_error, outcome.text.as_str()),
        (
            true,
            "The working directory /nonexistent/forge-bash-cwd does not exist or is not a directory; set FORGE_BASH_CWD to one that does."
        )
    );
    harness.wait_for_stderr("reason=stdio.not_configured tool=run The working directory");
    let outcomes: Vec<String> = harness
        .audit_records()
        .iter()
        .map(|record| record[1].clone())
        .collect();
    assert_eq!(outcomes, ["failed"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_log_dir_does_not_stop_the_command() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let blocker = tmp.path().join("not-a-dir");
    std::fs::write(&blocker, "").expect("write");
    let logs = blocker.join("logs").display().to_string();
    let harness = Harness::start_with(&[("FORGE_BASH_LOG_DIR", logs.as_str())]).await;
    let outcome = harness.run("echo still runs").await;
    assert_eq!(
        (outcome.is_error, harness.redact(&outcome.text)),
        (false, "still runs\n[exit:0 | [ms]]".to_owned())
    );
    harness.wait_for_stderr("(FORGE_BASH_LOG_DIR) cannot be prepared");
    harness.wait_for_stderr("cannot append to the audit log");
}

/// A log folder planted in a shared /tmp: a symlink to someone's folder is never written
/// through (the call fails with `not_configured`, the command does not run); a folder of
/// ours left open is narrowed to 0700 and its files are 0600.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlinked_log_folder_is_refused_and_an_open_one_made_private() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().expect("tempdir");
    let theirs = tmp.path().join("theirs");
    std::fs::create_dir(&theirs).expect("mkdir");
    let link = tmp.path().join("forge-bash");
    std::os::unix::fs::symlink(&theirs, &link).expect("ln");
    let marker = tmp.path().join("ran");
    let harness =
        Harness::start_with(&[("FORGE_BASH_LOG_DIR", link.display().to_string().as_str())]).await;
    let outcome = harness.run(&format!("touch {}", marker.display())).await;
    assert!(outcome.is_error, "{}", outcome.text);
    assert!(
        outcome.text.contains("is a symlink; refusing"),
        "{}",
        outcome.text
    );
    assert!(!marker.exists(), "the command did not run");
    assert_eq!(std::fs::read_dir(&theirs).expect("readdir").count(), 0);
    harness.wait_for_stderr("reason=stdio.not_configured tool=run");

    let open = tmp.path().join("open");
    std::fs::create_dir(&open).expect("mkdir");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let harness =
        Harness::start_with(&[("FORGE_BASH_LOG_DIR", open.display().to_string().as_str())]).await;
    let outcome = harness.run("echo private").await;
    assert!(!outcome.is_error, "{}", outcome.text);
    let mode = |path: &std::path::Path| {
        std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
    };
    assert_eq!(mode(&open), 0o700);
    for entry in std::fs::read_dir(&open).expect("readdir") {
        let path = entry.expect("entry").path();
        assert_eq!(mode(&path), 0o600, "{}", path.display());
    }
}
