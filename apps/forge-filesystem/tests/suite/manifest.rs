//! The committed tools.manifest.json matches what tools/list answers.

#[tokio::test]
async fn committed_manifest_matches_tools_list() {
    test_support::manifest_drift::check_committed_manifest(
        super::BIN,
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
        "forge-filesystem",
    )
    .await
    .unwrap_or_else(|error| panic!("{error:#}"));
}

#[test]
fn manifest_flag_prints_the_same_tools() {
    test_support::manifest_drift::check_manifest_flag(
        super::BIN,
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
    )
    .unwrap_or_else(|error| panic!("{error:#}"));
}
