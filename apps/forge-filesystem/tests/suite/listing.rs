//! list_directory: order, kinds, symlinks, empty folders, errors.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::{Fixture, put};

#[tokio::test]
async fn lists_in_byte_order_with_kinds() {
    let fx = Fixture::start().await;
    for file in ["zeta.md", "Alpha.md", ".env", "b c.txt", "docs/readme.md"] {
        put(&fx.ws, file, "");
    }
    std::fs::create_dir(fx.ws_path("empty")).expect("mkdir");
    std::os::unix::fs::symlink(fx.ws_path("docs"), fx.ws_path("docs-link")).expect("symlink");
    let text = fx.ok("list_directory", json!({"path": "."})).await;
    insta::assert_snapshot!("list_directory_root", text);
    assert_eq!(fx.ok("list_directory", json!({"path": "empty"})).await, "");
}

#[tokio::test]
async fn listing_a_file_or_missing_folder_fails() {
    let fx = Fixture::start().await;
    put(&fx.ws, "a.txt", "");
    let cases = [
        ("a.txt", "ENOTDIR: not a directory, scandir '[WS]/a.txt'"),
        (
            "nope",
            "ENOENT: no such file or directory, scandir '[WS]/nope'",
        ),
    ];
    for (path, expected) in cases {
        let text = fx.err("list_directory", json!({"path": path})).await;
        assert_eq!(fx.redact(&text), expected);
    }
}
