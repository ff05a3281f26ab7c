//! The committed tools.manifest.json matches what tools/list answers.

use std::path::Path;

use test_support::StdioServer;

use super::spawn;

#[tokio::test]
async fn committed_manifest_matches_tools_list() {
    let server = spawn(&StdioServer::base_env()).await;
    let tools = server.tools().await.expect("tools/list");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools.manifest.json");
    if std::env::var_os("BOTCRAFT_UPDATE_MANIFESTS").is_some_and(|value| value == "1") {
        server_kit::manifest::write(&path, &tools).expect("rewrite manifest");
    }
    if let Err(error) = server_kit::manifest::check(
        &path,
        &tools,
        "BOTCRAFT_UPDATE_MANIFESTS=1 cargo test -p forge-filesystem committed_manifest",
    ) {
        panic!("{error}");
    }
    server.close().await.expect("close");
}

#[tokio::test]
async fn manifest_flag_prints_the_same_tools() {
    let output = std::process::Command::new(super::BIN)
        .arg("--manifest")
        .env_clear()
        .output()
        .expect("run --manifest");
    assert!(output.status.success());
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).expect("manifest JSON");
    let committed: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tools.manifest.json"))
            .expect("read manifest"),
    )
    .expect("committed manifest JSON");
    pretty_assertions::assert_eq!(printed, committed);
}
