//! read_text_file: whole, head, tail, errors, result shape.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{Fixture, put};

#[tokio::test]
async fn head_and_tail_table() {
    let fx = Fixture::start().await;
    put(&fx.ws, "ab.txt", "a\nb\n");
    put(&fx.ws, "abc.txt", "a\nb\nc");
    put(&fx.ws, "crlf.txt", "x\r\ny\r\n");
    put(&fx.ws, "empty.txt", "");
    let cases: Vec<(&str, Value, Result<&str, &str>)> = vec![
        ("whole file", json!({"path": "ab.txt"}), Ok("a\nb\n")),
        ("head 1", json!({"path": "ab.txt", "head": 1}), Ok("a")),
        (
            "head beyond the end",
            json!({"path": "ab.txt", "head": 10}),
            Ok("a\nb"),
        ),
        (
            "head without final newline",
            json!({"path": "abc.txt", "head": 3}),
            Ok("a\nb\nc"),
        ),
        (
            "head keeps CR like the reference",
            json!({"path": "crlf.txt", "head": 2}),
            Ok("x\r\ny\r"),
        ),
        ("head 0", json!({"path": "ab.txt", "head": 0}), Ok("")),
        (
            "tail 1 ignores the final newline",
            json!({"path": "ab.txt", "tail": 1}),
            Ok("b"),
        ),
        ("tail 2", json!({"path": "ab.txt", "tail": 2}), Ok("a\nb")),
        (
            "tail without final newline",
            json!({"path": "abc.txt", "tail": 2}),
            Ok("b\nc"),
        ),
        (
            "tail beyond the start",
            json!({"path": "abc.txt", "tail": 10}),
            Ok("a\nb\nc"),
        ),
        (
            "tail normalises CRLF",
            json!({"path": "crlf.txt", "tail": 2}),
            Ok("x\ny"),
        ),
        (
            "tail of an empty file",
            json!({"path": "empty.txt", "tail": 3}),
            Ok(""),
        ),
        ("tail 0", json!({"path": "ab.txt", "tail": 0}), Ok("")),
        (
            "head and tail together",
            json!({"path": "ab.txt", "head": 1, "tail": 1}),
            Err("Cannot specify both head and tail parameters simultaneously"),
        ),
        (
            "fractional head",
            json!({"path": "ab.txt", "head": 1.5}),
            Err("head must be a whole number of lines, 0 or more; got 1.5"),
        ),
        (
            "negative tail",
            json!({"path": "ab.txt", "tail": -2}),
            Err("tail must be a whole number of lines, 0 or more; got -2"),
        ),
    ];
    for (name, arguments, expected) in cases {
        let outcome = fx.call("read_text_file", arguments).await;
        let got = if outcome.is_error {
            Err(outcome.text.as_str())
        } else {
            Ok(outcome.text.as_str())
        };
        assert_eq!(got, expected, "{name}");
    }
}

#[tokio::test]
async fn results_carry_structured_content() {
    let fx = Fixture::start().await;
    put(&fx.ws, "a.txt", "hello\n");
    let outcome = fx.call("read_text_file", json!({"path": "a.txt"})).await;
    assert_eq!(outcome.structured, Some(json!({"content": "hello\n"})));
}

#[tokio::test]
async fn os_errors_read_like_node() {
    let fx = Fixture::start().await;
    std::fs::create_dir(fx.ws_path("dir")).expect("mkdir");
    let ws = fx.ws.display().to_string();
    let cases = [
        (
            json!({"path": "missing.txt"}),
            format!("ENOENT: no such file or directory, open '{ws}/missing.txt'"),
        ),
        (
            json!({"path": "dir"}),
            format!("EISDIR: is a directory, read '{ws}/dir'"),
        ),
        (
            json!({"path": "dir", "tail": 2}),
            format!("EISDIR: is a directory, read '{ws}/dir'"),
        ),
    ];
    for (arguments, expected) in cases {
        assert_eq!(fx.err("read_text_file", arguments).await, expected);
    }
}

#[tokio::test]
async fn tail_of_a_large_file_reads_the_last_lines() {
    let fx = Fixture::start().await;
    let content: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
    put(&fx.ws, "big.log", &content);
    let text = fx
        .ok("read_text_file", json!({"path": "big.log", "tail": 3}))
        .await;
    assert_eq!(text, "line 99997\nline 99998\nline 99999");
    let text = fx
        .ok("read_text_file", json!({"path": "big.log", "head": 2}))
        .await;
    assert_eq!(text, "line 0\nline 1");
}

/// Issue 33's probes through the server, with small bounds: a FIFO refused with its reason
/// code, a 10 GB sparse file's `head: 5` a cap's worth, a listing and a search cut at their
/// entry bound, each saying so.
#[tokio::test]
async fn hostile_files_and_folders_meet_their_bounds() {
    let ws = tempfile::tempdir().expect("workspace");
    let real = std::fs::canonicalize(ws.path()).expect("realpath");
    let mut env = test_support::StdioServer::base_env();
    for (key, value) in [
        ("WORKSPACE_ROOT", real.display().to_string()),
        ("REPO_ROOT", real.display().to_string()),
        ("FORGE_FS_MAX_READ_BYTES", "1024".to_owned()),
        ("FORGE_FS_MAX_ENTRIES", "3".to_owned()),
    ] {
        env.insert(key.into(), value);
    }
    let server = super::spawn(&env).await;
    nix::unistd::mkfifo(
        &real.join("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .expect("mkfifo");
    std::fs::File::create(real.join("sparse"))
        .and_then(|file| file.set_len(10 << 30))
        .expect("a 10 GB sparse file");
    for index in 0..5 {
        put(&real, &format!("dir/f{index}.md"), "");
    }
    let call = |tool: &'static str, arguments: Value| {
        let server = &server;
        async move { server.call(tool, arguments).await.expect("a tool result") }
    };
    let fifo = call("read_text_file", json!({"path": "pipe"})).await;
    assert_eq!(
        (fifo.is_error, fifo.text),
        (
            true,
            format!(
                "Access denied - {}/pipe is a FIFO, not a regular file: forge-filesystem reads regular files only (a FIFO can block or never end)",
                real.display()
            )
        )
    );
    let logged = super::stderr_line(&server, "reason=stdio.tool_error").await;
    assert!(logged.is_some(), "{:?}", server.stderr_lines());
    let head = call("read_text_file", json!({"path": "sparse", "head": 5})).await;
    assert_eq!(
        (head.is_error, head.text),
        (
            false,
            format!(
                "{}\n\n[forge-filesystem cut this file: it has 10737418240 bytes and one read returns at most 1024 (FORGE_FS_MAX_READ_BYTES); these are the first 170. Read other parts with head or tail, or find what you need with search_files]",
                // Zeros escape to six bytes each in the JSON answer: 170 fill 1024.
                "\0".repeat(170)
            )
        )
    );
    let listing = call("list_directory", json!({"path": "dir"})).await;
    assert_eq!(
        listing.text,
        "[FILE] f0.md\n[FILE] f1.md\n[FILE] f2.md\n\n[forge-filesystem cut this listing: the folder has 5 entries and one answer shows at most 3 (FORGE_FS_MAX_ENTRIES); these are the first 3 by name. Find others with search_files and a pattern]"
    );
    let search = call("search_files", json!({"path": "dir", "pattern": "*.md"})).await;
    let found: Vec<String> = (0..3)
        .map(|index| format!("{}/dir/f{index}.md", real.display()))
        .collect();
    assert_eq!(
        search.text,
        format!(
            "{}\n\n[forge-filesystem stopped this search before its end: one answer shows at most 3 (FORGE_FS_MAX_ENTRIES); the 3 matches above are those found until then. Narrow the path or the pattern, or add excludePatterns]",
            found.join("\n")
        )
    );
}
