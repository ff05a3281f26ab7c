//! `botcraft tools search` offline: `--catalog` with `--queries` and with one query, over the
//! tool-search eval catalog (crates/tool-search/eval/servers/*.json as one catalog file),
//! BM25F only and with the embedding model.

use std::path::PathBuf;
use std::process::Command;

use pretty_assertions::{assert_eq, assert_ne};
use serde_json::Value;

/// Every captured server's tools as one `--catalog` file
/// (`[{server, name, description, inputSchema, instructions}]`).
fn catalog() -> PathBuf {
    static FILE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    FILE.get_or_init(|| catalog_file(None, "all")).clone()
}

/// A few servers' tools (the model embeds every tool of a catalog, which takes a while in a
/// debug build).
fn small_catalog() -> PathBuf {
    static FILE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    FILE.get_or_init(|| catalog_file(Some(&["filesystem", "forge-filesystem", "git"]), "small"))
        .clone()
}

fn catalog_file(only: Option<&[&str]>, label: &str) -> PathBuf {
    {
        let dir =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../crates/tool-search/eval/servers");
        let mut tools = Vec::new();
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("eval/servers")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        paths.sort();
        paths.retain(|p| {
            only.is_none_or(|only| {
                only.iter()
                    .any(|s| p.file_stem().is_some_and(|stem| stem == *s))
            })
        });
        for path in paths {
            let server: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("JSON");
            for tool in server["tools"].as_array().expect("tools") {
                let mut tool = tool.clone();
                tool["server"] = server["server"].clone();
                tool["instructions"] = server["instructions"].clone();
                tools.push(tool);
            }
        }
        let file = std::env::temp_dir().join(format!(
            "botcraft-catalog-{label}-{}.json",
            std::process::id()
        ));
        std::fs::write(&file, serde_json::to_string(&tools).expect("JSON")).expect("write");
        file
    }
}

/// Runs `botcraft tools search …` with no server to talk to; stdout on success.
fn search(args: &[&str]) -> anyhow::Result<String> {
    search_with(args, None)
}

/// The same, with the embedding model at `model` (or none).
fn search_with(args: &[&str], model: Option<&str>) -> anyhow::Result<String> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_botcraft"));
    command
        .args(["tools", "search"])
        .args(args)
        .env("BOTCRAFT_URL", "http://127.0.0.1:9")
        .env_remove("BOTCRAFT_API_KEY")
        .env_remove("BOTCRAFT_EMBEDDING_MODEL");
    if let Some(model) = model {
        command.env("BOTCRAFT_EMBEDDING_MODEL", model);
    }
    let output = command.output()?;
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
    let navigate = first_ranked(&lines[1]);
    assert!(
        [
            ("playwright".to_owned(), "browser_navigate".to_owned()),
            (
                "executeautomation-playwright".to_owned(),
                "playwright_navigate".to_owned()
            ),
        ]
        .contains(&navigate),
        "{navigate:?}"
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
fn with_the_model_the_ranking_is_hybrid_and_explains_both_signals() -> anyhow::Result<()> {
    let model = test_skip::need!(test_skip::needs::embedding_model())
        .display()
        .to_string();
    let catalog = small_catalog().display().to_string();
    // Shares no word with the tool: only the dense signal can find it.
    let query = "print what the notes document says";
    let text = search_with(
        &[
            query,
            "--catalog",
            &catalog,
            "--server",
            "filesystem",
            "--server",
            "forge-filesystem",
            "--explain",
            "--max",
            "5",
        ],
        Some(&model),
    )?;
    assert!(text.contains("fused rank 1: bm25 "), "{text}");
    assert!(text.contains(" dense 0."), "{text}");
    assert!(
        text.lines().any(|l| l.contains("/read_text_file  score")),
        "{text}"
    );
    let dir = tempfile::tempdir()?;
    let queries = dir.path().join("queries.jsonl");
    std::fs::write(&queries, format!("{}\n", serde_json::json!({"q": query})))?;
    let queries = queries.display().to_string();
    let lexical = search_with(&["--catalog", &catalog, "--queries", &queries], None)?;
    let hybrid = search_with(
        &["--catalog", &catalog, "--queries", &queries],
        Some(&model),
    )?;
    let lexical: Value = serde_json::from_str(lexical.trim())?;
    let hybrid: Value = serde_json::from_str(hybrid.trim())?;
    assert_eq!(hybrid["q"], query);
    assert_ne!(lexical["ranked"], hybrid["ranked"]);
    // A broken model folder is a clear error naming the file, not a silent fallback.
    let broken = tempfile::tempdir()?;
    let out = Command::new(env!("CARGO_BIN_EXE_botcraft"))
        .args(["tools", "search", "x", "--catalog", &catalog])
        .env("BOTCRAFT_EMBEDDING_MODEL", broken.path())
        .output()?;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("config.json"), "{stderr}");
    Ok(())
}

#[test]
fn embedding_a_catalog_shows_its_progress_on_stderr() -> anyhow::Result<()> {
    let model = test_skip::need!(test_skip::needs::embedding_model())
        .display()
        .to_string();
    let catalog = small_catalog().display().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_botcraft"))
        .args(["tools", "search", "read a file", "--catalog", &catalog])
        .env("BOTCRAFT_URL", "http://127.0.0.1:9")
        .env("BOTCRAFT_EMBEDDING_MODEL", &model)
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    anyhow::ensure!(out.status.success(), "{stderr}");
    // "botcraft: embedding tool texts: E of T (P%)", from 0 to T, in steps of 10 %.
    let steps: Vec<(u64, u64, u64)> = stderr
        .lines()
        .filter_map(|line| line.strip_prefix("botcraft: embedding tool texts: "))
        .map(|rest| {
            let numbers: Vec<u64> = rest
                .split(|c: char| !c.is_ascii_digit())
                .filter(|word| !word.is_empty())
                .map(|word| word.parse().unwrap_or(u64::MAX))
                .collect();
            (numbers[0], numbers[1], numbers[2])
        })
        .collect();
    let total = steps.first().map(|s| s.1).unwrap_or_default();
    assert!(total > 20, "a catalog of more than 20 tools: {stderr}");
    assert_eq!(steps.first(), Some(&(0, total, 0)), "{stderr}");
    assert_eq!(steps.last(), Some(&(total, total, 100)), "{stderr}");
    assert!(steps.len() >= 5, "a step every 10 %: {stderr}");
    for pair in steps.windows(2) {
        assert!(pair[0].0 < pair[1].0 && pair[0].2 < pair[1].2, "{stderr}");
        assert_eq!(pair[1].2, pair[1].0 * 100 / total, "{stderr}");
    }
    // The answer itself is on stdout, not mixed with the progress.
    assert!(!String::from_utf8_lossy(&out.stdout).contains("embedding"));
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
