//! Confinement to WORKSPACE_ROOT: the path-escape table.

use std::os::unix::fs::symlink;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{Fixture, put, stderr_line, tree};

/// What a case expects: the text of a success, or of an error.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expect {
    Ok(String),
    Err(String),
}

#[tokio::test]
async fn path_escape_table() {
    let fx = Fixture::start().await;
    let outside_dir = tempfile::tempdir().expect("outside tempdir");
    let out = std::fs::canonicalize(outside_dir.path()).expect("realpath outside");
    put(&out, "secret.txt", "secret");
    put(&fx.ws, "file.txt", "inside");
    put(&fx.ws, "sub/inner.txt", "inner");
    symlink(&out, fx.ws_path("link_out_dir")).expect("symlink");
    symlink(out.join("secret.txt"), fx.ws_path("link_out_file")).expect("symlink");
    symlink(&out, fx.ws_path("sub/mid_link")).expect("symlink");
    symlink(fx.ws_path("sub"), fx.ws_path("link_in")).expect("symlink");
    symlink(fx.ws_path("link_out_dir"), fx.ws_path("chain")).expect("symlink");
    symlink(out.join("not-there.txt"), fx.ws_path("dangling")).expect("symlink");
    let outside_before = tree(&out);

    let ws = fx.ws.display().to_string();
    let o = out.display().to_string();
    let parent = fx.ws.parent().expect("parent").display().to_string();
    let outside = |absolute: &str| {
        Expect::Err(format!(
            "Access denied - path outside allowed directories: {absolute} not in {ws}"
        ))
    };
    let symlink_out = |real: &str| {
        Expect::Err(format!(
            "Access denied - symlink target outside allowed directories: {real} not in {ws}"
        ))
    };
    let read = |path: &str| ("read_text_file", json!({"path": path}));
    let ok = |text: &str| Expect::Ok(text.to_owned());

    let cases: Vec<(&str, (&str, Value), Expect)> = vec![
        ("plain relative", read("file.txt"), ok("inside")),
        (
            "dots that stay inside",
            read("./sub/../file.txt"),
            ok("inside"),
        ),
        ("nested", read("sub/inner.txt"), ok("inner")),
        (
            "absolute inside",
            read(&format!("{ws}/file.txt")),
            ok("inside"),
        ),
        (
            "symlink that stays inside",
            read("link_in/inner.txt"),
            ok("inner"),
        ),
        ("parent", read(".."), outside(&parent)),
        ("../x", read("../x"), outside(&format!("{parent}/x"))),
        (
            "a/../../x",
            read("a/../../x"),
            outside(&format!("{parent}/x")),
        ),
        (
            "sub/../../x",
            read("sub/../../x"),
            outside(&format!("{parent}/x")),
        ),
        (
            "absolute outside",
            read("/etc/passwd"),
            outside("/etc/passwd"),
        ),
        (
            "absolute into the outside dir",
            read(&format!("{o}/secret.txt")),
            outside(&format!("{o}/secret.txt")),
        ),
        (
            "sibling sharing the root's prefix",
            read(&format!("{ws}-evil/x")),
            outside(&format!("{ws}-evil/x")),
        ),
        (
            "symlinked dir to outside",
            read("link_out_dir/secret.txt"),
            symlink_out(&format!("{o}/secret.txt")),
        ),
        (
            "symlinked file to outside",
            read("link_out_file"),
            symlink_out(&format!("{o}/secret.txt")),
        ),
        (
            "symlink in the middle of the path",
            read("sub/mid_link/secret.txt"),
            symlink_out(&format!("{o}/secret.txt")),
        ),
        (
            "symlink to a symlink to outside",
            read("chain/secret.txt"),
            symlink_out(&format!("{o}/secret.txt")),
        ),
        (
            "new file under a symlinked dir outside",
            read("link_out_dir/new.txt"),
            symlink_out(&o),
        ),
        (
            "write under a symlinked dir outside",
            (
                "write_file",
                json!({"path": "link_out_dir/new.txt", "content": "x"}),
            ),
            symlink_out(&o),
        ),
        (
            "write through a symlink in the middle",
            (
                "write_file",
                json!({"path": "sub/mid_link/deeper/new.txt", "content": "x"}),
            ),
            symlink_out(&o),
        ),
        (
            "write through a dangling symlink",
            ("write_file", json!({"path": "dangling", "content": "x"})),
            Expect::Err(format!(
                "Access denied - symlink target does not exist, so it cannot be checked: {ws}/dangling"
            )),
        ),
        (
            "write outside with ..",
            (
                "write_file",
                json!({"path": "../escape.txt", "content": "x"}),
            ),
            outside(&format!("{parent}/escape.txt")),
        ),
        (
            "edit a symlinked file outside",
            (
                "edit_file",
                json!({"path": "link_out_file", "edits": [{"oldText": "secret", "newText": "pwned"}]}),
            ),
            symlink_out(&format!("{o}/secret.txt")),
        ),
        (
            "list a symlinked dir outside",
            ("list_directory", json!({"path": "link_out_dir"})),
            symlink_out(&o),
        ),
        (
            "search a symlinked dir outside",
            (
                "search_files",
                json!({"path": "link_out_dir", "pattern": "**"}),
            ),
            symlink_out(&o),
        ),
        (
            "NUL byte",
            read("file.txt\u{0}.png"),
            Expect::Err("Access denied - path contains a NUL byte: file.txt\\0.png".into()),
        ),
        (
            "home-relative",
            read("~/.ssh/id_rsa"),
            Expect::Err(format!(
                "Access denied - `~` is not expanded; give a path relative to {ws} or absolute inside it: ~/.ssh/id_rsa"
            )),
        ),
        (
            "Windows drive path",
            read("C:\\Windows\\win.ini"),
            Expect::Err(
                "Access denied - Windows-style path received on a POSIX host: C:\\Windows\\win.ini"
                    .into(),
            ),
        ),
        (
            "the root itself is allowed",
            ("list_directory", json!({"path": ws.as_str()})),
            ok(
                "[FILE] chain\n[FILE] dangling\n[FILE] file.txt\n[FILE] link_in\n[FILE] link_out_dir\n[FILE] link_out_file\n[DIR] sub",
            ),
        ),
    ];
    assert!(cases.len() >= 20);
    for (name, (tool, arguments), expected) in cases {
        let outcome = fx.call(tool, arguments).await;
        let got = if outcome.is_error {
            Expect::Err(outcome.text)
        } else {
            Expect::Ok(outcome.text)
        };
        assert_eq!(got, expected, "{name}");
    }
    assert_eq!(tree(&out), outside_before, "nothing outside changed");
    assert_eq!(
        std::fs::read_to_string(out.join("secret.txt")).expect("read"),
        "secret"
    );
    assert!(!fx.ws.parent().expect("parent").join("escape.txt").exists());
}

#[tokio::test]
async fn a_refused_path_is_a_tool_error_on_stderr() {
    let fx = Fixture::start().await;
    let text = fx
        .err("read_text_file", json!({"path": "/etc/passwd"}))
        .await;
    let line = stderr_line(&fx.server, "tool=read_text_file")
        .await
        .expect("stderr line");
    assert_eq!(
        line,
        format!("forge-filesystem: reason=stdio.tool_error tool=read_text_file {text}")
    );
}
