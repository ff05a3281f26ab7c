//! search_files: glob semantics, walk order, excludes, symlinks (snapshot).

use std::fmt::Write;
use std::os::unix::fs::symlink;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::{Fixture, put};

/// Build the tree the reference was compared on.
fn build_tree(fx: &Fixture, outside: &std::path::Path) {
    for file in [
        "zeta.md",
        "Alpha.md",
        ".hidden.md",
        "ab.txt",
        "sub/b.md",
        "sub/.d.md",
        "sub/deep/c.md",
        "node_modules/pkg/index.md",
        "src/lib.rs",
        "src/main.rs",
    ] {
        put(&fx.ws, file, "");
    }
    put(outside, "secret.md", "");
    symlink(outside, fx.ws_path("outlink")).expect("symlink");
    symlink(outside.join("secret.md"), fx.ws_path("outfile.md")).expect("symlink");
    symlink(fx.ws_path("sub"), fx.ws_path("sublink")).expect("symlink");
    symlink(fx.ws_path("nowhere"), fx.ws_path("broken.md")).expect("symlink");
}

#[tokio::test]
async fn search_table() {
    let fx = Fixture::start().await;
    let outside = tempfile::tempdir().expect("outside");
    build_tree(&fx, outside.path());
    let cases: [(&str, &str, &[&str]); 14] = [
        (".", "*.md", &[]),
        (".", "**/*.md", &[]),
        (".", "**", &[]),
        (".", "sub", &[]),
        (".", "sub/**", &[]),
        (".", "**/*.md", &["node_modules"]),
        (".", "**/*.md", &["**/deep"]),
        (".", "**/*.md", &["deep"]),
        (".", "**/*.MD", &[]),
        (".", "{src,sub}/*.{rs,md}", &[]),
        (".", "!**/*.md", &["node_modules", "src"]),
        ("sub", "**", &[]),
        (".", "s*link", &[]),
        (".", "nothing-*", &[]),
    ];
    let mut report = String::new();
    for (path, pattern, excludes) in cases {
        let outcome = fx
            .call(
                "search_files",
                json!({"path": path, "pattern": pattern, "excludePatterns": excludes}),
            )
            .await;
        assert!(!outcome.is_error, "{pattern}: {}", outcome.text);
        assert_eq!(outcome.structured, Some(json!({"content": outcome.text})));
        let _ = write!(
            report,
            "## path={path} pattern={pattern} excludes={excludes:?}\n{}\n\n",
            fx.redact(&outcome.text)
        );
    }
    insta::assert_snapshot!("search_table", report);
}

#[tokio::test]
async fn search_errors() {
    let fx = Fixture::start().await;
    put(&fx.ws, "a.txt", "");
    let cases = [
        (
            json!({"path": "a.txt", "pattern": "*"}),
            "ENOTDIR: not a directory, scandir '[WS]/a.txt'",
        ),
        (
            json!({"path": ".", "pattern": "[z-a]"}),
            "Invalid glob pattern \"[z-a]\": error parsing glob '[z-a]': invalid range; 'z' > 'a'",
        ),
        (
            json!({"path": ".", "pattern": "*", "excludePatterns": vec!["x"; 1001]}),
            "excludePatterns holds 1001 patterns; a search takes at most 1000",
        ),
        (
            json!({"path": ".", "pattern": "*", "excludePatterns": ["a".repeat(4097)]}),
            "A glob pattern of 4097 bytes is too long; a search takes patterns of at most 4096",
        ),
        (
            json!({"path": ".", "pattern": "b".repeat(4097)}),
            "A glob pattern of 4097 bytes is too long; a search takes patterns of at most 4096",
        ),
    ];
    for (arguments, expected) in cases {
        let text = fx.err("search_files", arguments).await;
        assert_eq!(fx.redact(&text), expected);
    }
}

#[tokio::test]
async fn search_streams_a_large_tree_in_walk_order() {
    let fx = Fixture::start().await;
    for dir in 0..20 {
        for file in 0..100 {
            put(&fx.ws, &format!("d{dir:02}/f{file:03}.txt"), "");
        }
    }
    let text = fx
        .ok(
            "search_files",
            json!({"path": ".", "pattern": "**/f099.txt"}),
        )
        .await;
    let expected: Vec<String> = (0..20)
        .map(|dir| {
            fx.ws_path(&format!("d{dir:02}/f099.txt"))
                .display()
                .to_string()
        })
        .collect();
    assert_eq!(text, expected.join("\n"));
}
