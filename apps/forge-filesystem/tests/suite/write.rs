//! write_file: creation, replacement, mode kept, message, errors.

use std::os::unix::fs::PermissionsExt;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::{Fixture, put, tree};

#[tokio::test]
async fn writes_and_reports_the_path_as_given() {
    let fx = Fixture::start().await;
    std::fs::create_dir(fx.ws_path("docs")).expect("mkdir");
    let absolute = fx.ws_path("docs/abs.md").display().to_string();
    let cases = [
        ("docs/new.md", "docs/new.md"),
        ("./docs/../docs/dots.md", "docs/dots.md"),
        (absolute.as_str(), "docs/abs.md"),
    ];
    for (given, lands_at) in cases {
        let outcome = fx
            .call("write_file", json!({"path": given, "content": "hi\n"}))
            .await;
        let expected = format!("Successfully wrote to {given}");
        assert_eq!(
            (outcome.is_error, outcome.text.as_str(), outcome.structured),
            (false, expected.as_str(), Some(json!({"content": expected})))
        );
        assert_eq!(
            std::fs::read_to_string(fx.ws_path(lands_at)).expect("read"),
            "hi\n"
        );
    }
    assert_eq!(
        tree(&fx.ws),
        ["docs/", "docs/abs.md", "docs/dots.md", "docs/new.md"]
    );
}

#[tokio::test]
async fn replacing_keeps_the_mode_and_leaves_no_temp_file() {
    let fx = Fixture::start().await;
    put(&fx.ws, "run.sh", "old");
    let path = fx.ws_path("run.sh");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o754)).expect("chmod");
    fx.ok(
        "write_file",
        json!({"path": "run.sh", "content": "#!/bin/sh\n"}),
    )
    .await;
    assert_eq!(std::fs::read_to_string(&path).expect("read"), "#!/bin/sh\n");
    let mode = std::fs::metadata(&path).expect("stat").permissions().mode() & 0o7777;
    assert_eq!(mode, 0o754);
    assert_eq!(tree(&fx.ws), ["run.sh"]);
}

#[tokio::test]
async fn writing_through_an_inside_symlink_replaces_its_target() {
    let fx = Fixture::start().await;
    put(&fx.ws, "real.txt", "old");
    std::os::unix::fs::symlink(fx.ws_path("real.txt"), fx.ws_path("alias.txt")).expect("symlink");
    fx.ok("write_file", json!({"path": "alias.txt", "content": "new"}))
        .await;
    assert_eq!(
        std::fs::read_to_string(fx.ws_path("real.txt")).expect("read"),
        "new"
    );
    assert!(
        std::fs::symlink_metadata(fx.ws_path("alias.txt"))
            .expect("lstat")
            .is_symlink()
    );
}

#[tokio::test]
async fn write_errors() {
    let fx = Fixture::start().await;
    std::fs::create_dir(fx.ws_path("dir")).expect("mkdir");
    let ws = fx.ws.display().to_string();
    let cases = [
        (
            json!({"path": "dir", "content": "x"}),
            format!("EISDIR: is a directory, open '{ws}/dir'"),
        ),
        (
            json!({"path": "no/such/dir/x.txt", "content": "x"}),
            format!("ENOENT: no such file or directory, open '{ws}/no/such/dir/x.txt'"),
        ),
    ];
    for (arguments, expected) in cases {
        assert_eq!(fx.err("write_file", arguments).await, expected);
    }
    assert_eq!(tree(&fx.ws), ["dir/"]);
}
