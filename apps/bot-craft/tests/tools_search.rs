//! `botcraft tools search` offline: `--catalog` with `--queries` and with one query, over the
//! tool-search eval catalog (crates/tool-search/eval/catalog.json).

use std::path::PathBuf;
use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::Value;

fn catalog() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../crates/tool-search/eval/catalog.json")
}

/// Runs `botcraft tools search …` with no server to talk to; stdout on success.
fn search(args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_botcraft"))
        .args(["tools", "search"])
        .args(args)
        .env("BOTCRAFT_URL", "http://127.0.0.1:9")
        .env_remove("BOTCRAFT_API_KEY")
        .output()?;
    anyhow::ensure!(
        output.status.success(),
        "botcraft tools search {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8(output.stdout)?)
}

fn first_ranked(line: &Value) -> (String, String) {
    let first = &line["ranked"][0];
    (
        first["server"].as_str().unwrap_or("<none>").to_owned(),
        first["tool"].as_str().unwrap_or("<none>").to_owned(),
    )
}

#[test]
fn queries_file_answers_one_json_line_per_query() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let queries = dir.path().join("queries.jsonl");
    std::fs::write(
        &queries,
        concat!(
            r#"{"q": "bash", "mcp_server": "forge-bash"}"#,
            "\n\n",
            r#"{"q": "navigate to a url"}"#,
            "\n",
            r#"{"q": "read a file", "mcp_server": ["nowhere"]}"#,
            "\n",
        ),
    )?;
    let catalog = catalog().display().to_string();
    let queries = queries.display().to_string();
    let out = search(&["--catalog", &catalog, "--queries", &queries, "--max", "3"])?;
    let lines: Vec<Value> = out
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    assert_eq!(lines.len(), 3, "{out}");
    assert_eq!(lines[0]["q"], "bash");
    assert_eq!(first_ranked(&lines[0]), ("forge-bash".into(), "run".into()));
    assert_eq!(lines[0]["ranked"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        first_ranked(&lines[1]),
        ("playwright".into(), "browser_navigate".into())
    );
    assert!(lines[1]["ranked"].as_array().is_some_and(|r| r.len() <= 3));
    assert_eq!(lines[2]["ranked"], serde_json::json!([]));
    Ok(())
}

#[test]
fn one_query_prints_a_ranking_or_json() -> anyhow::Result<()> {
    let catalog = catalog().display().to_string();
    let text = search(&[
        "bash",
        "--server",
        "forge-bash",
        "--catalog",
        &catalog,
        "--explain",
    ])?;
    let first = text.lines().next().unwrap_or_default();
    assert!(first.starts_with(" 1. forge-bash/run  score "), "{text}");
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("bash ")),
        "{text}"
    );

    let json = search(&[
        "bash",
        "--server",
        "forge-bash",
        "--catalog",
        &catalog,
        "--json",
    ])?;
    let answer: Value = serde_json::from_str(&json)?;
    assert_eq!(first_ranked(&answer), ("forge-bash".into(), "run".into()));
    Ok(())
}

#[test]
fn bad_input_fails_with_a_reason() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"not": "a list"}"#)?;
    let bad = bad.display().to_string();
    let cases: [&[&str]; 3] = [
        &["x", "--catalog", &bad],
        &["x", "--explain"],
        &["x", "--max", "51", "--catalog", &bad],
    ];
    for args in cases {
        let output = Command::new(env!("CARGO_BIN_EXE_botcraft"))
            .args(["tools", "search"])
            .args(args)
            .output()?;
        assert!(!output.status.success(), "{args:?} should fail");
        assert!(!output.stderr.is_empty(), "{args:?} says why");
    }
    Ok(())
}
