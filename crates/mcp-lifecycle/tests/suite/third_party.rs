//! Servers nobody here wrote, and our own forge servers, started through the manager with a
//! cleared environment: the reference `server-everything` (npm, pinned in e2e/) and the four
//! forge binaries.

use anyhow::Context;
use pretty_assertions::assert_eq;
use serde_json::json;

use mcp_lifecycle::ServerState;
use store::McpServerSpec;

use super::harness::{Fixture, args, text};
use super::programs::{node, npm_file, tree, workspace_binary};

#[tokio::test]
async fn server_everything_lists_tools_answers_echo_and_get_sum_and_stops_clean()
-> anyhow::Result<()> {
    test_skip::need!(test_skip::needs::npm_packages());
    let fx = Fixture::new().await?;
    let script = npm_file("@modelcontextprotocol/server-everything/dist/index.js")?;
    fx.add_spec(
        McpServerSpec::new("everything", node()?.display().to_string())
            .args([script.display().to_string(), "stdio".to_owned()]),
    )
    .await?;
    let names: Vec<String> = fx
        .manager
        .get_tools("everything")
        .await?
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    for expected in ["echo", "get-sum", "get-env"] {
        assert!(
            names.iter().any(|n| n == expected),
            "no {expected} in {names:?}"
        );
    }
    let echo = fx
        .manager
        .call_tool(
            "everything",
            "echo",
            args(json!({"message": "hi from botcraft"})),
        )
        .await?;
    assert_eq!(
        (text(&echo), echo.is_error.unwrap_or(false)),
        ("Echo: hi from botcraft".to_owned(), false)
    );
    let sum = fx
        .manager
        .call_tool("everything", "get-sum", args(json!({"a": 2, "b": 40})))
        .await?;
    assert_eq!(
        (text(&sum), sum.is_error.unwrap_or(false)),
        ("The sum of 2 and 40 is 42.".to_owned(), false)
    );
    let pid = fx
        .pid("everything")
        .ok_or_else(|| anyhow::anyhow!("no pid"))?;
    let processes = tree(pid);
    fx.manager.stop_server("everything").await?;
    assert_eq!(fx.state("everything"), Some(ServerState::Stopped));
    assert_eq!(super::programs::survivors(&processes), Vec::new());
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn the_four_forge_servers_start_with_a_cleared_env_and_list_their_tools() -> anyhow::Result<()>
{
    let fx = Fixture::new().await?;
    // (server, tools it must offer)
    let cases: [(&str, &[&str]); 4] = [
        ("forge-bash", &["run"]),
        (
            "forge-filesystem",
            &["read_text_file", "write_file", "edit_file"],
        ),
        ("forge-discovery", &["list_departments", "find"]),
        ("forge-typesense", &["search_knowledge", "get_file_summary"]),
    ];
    for (name, _) in cases {
        let binary = workspace_binary(name)?;
        fx.add_spec(McpServerSpec::new(name, binary.display().to_string()))
            .await?;
    }
    let lists =
        futures::future::join_all(cases.iter().map(|(name, _)| fx.manager.get_tools(name))).await;
    for ((name, expected), list) in cases.iter().zip(lists) {
        let names: Vec<String> = list?.iter().map(|t| t.name.to_string()).collect();
        for tool in *expected {
            assert!(
                names.iter().any(|n| n == tool),
                "{name}: no {tool} in {names:?}"
            );
        }
    }
    let ran = fx
        .manager
        .call_tool("forge-bash", "run", args(json!({"command": "echo hi"})))
        .await?;
    assert_eq!(ran.is_error, Some(false));
    assert!(text(&ran).starts_with("hi\n"), "{}", text(&ran));
    let statuses: Vec<(String, ServerState)> = fx
        .manager
        .get_all_statuses()
        .into_iter()
        .map(|s| (s.name, s.state))
        .collect();
    assert!(
        statuses.iter().all(|(_, s)| *s == ServerState::Running),
        "{statuses:?}"
    );
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_forge_bash_call_past_its_timeout_kills_the_commands_group() -> anyhow::Result<()> {
    let fx = Fixture::new().await?;
    let binary = workspace_binary("forge-bash")?;
    fx.add_spec(McpServerSpec::new("forge-bash", binary.display().to_string()).timeout(5000))
        .await?;
    let (leader, background) = (
        fx.dir.path().join("leader"),
        fx.dir.path().join("background"),
    );
    let command = format!(
        "sleep 301 & echo $! > {}; echo $$ > {}; exec sleep 300",
        background.display(),
        leader.display()
    );
    let error = fx
        .manager
        .call_tool("forge-bash", "run", args(json!({"command": command})))
        .await
        .err()
        .context("a command of 300 s answered within 5 s")?;
    let timed_out = std::time::Instant::now();
    assert_eq!(
        error.to_string(),
        "tool \"run\" on MCP server \"forge-bash\" timed out after 5s"
    );
    let pids: std::collections::BTreeSet<mcp_lifecycle::hygiene::ProcessId> = [leader, background]
        .iter()
        .map(|file| -> anyhow::Result<_> {
            let pid: u32 = std::fs::read_to_string(file)
                .with_context(|| format!("{} was not written within 5 s", file.display()))?
                .trim()
                .parse()?;
            Ok(mcp_lifecycle::hygiene::identify(pid))
        })
        .collect::<anyhow::Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    // The cancel reached forge-bash, which killed the command's group: both sleeps end.
    let gone = mcp_lifecycle::hygiene::wait_gone(&pids, std::time::Duration::from_secs(10)).await;
    println!(
        "cancellation to the command's death: {:?} ({} processes)",
        timed_out.elapsed(),
        pids.len()
    );
    assert!(gone, "the command outlived its cancelled call: {pids:?}");
    // forge-bash itself is still there and answers.
    let ran = fx
        .manager
        .call_tool("forge-bash", "run", args(json!({"command": "echo still"})))
        .await?;
    assert!(text(&ran).starts_with("still\n"), "{}", text(&ran));
    fx.finish().await;
    Ok(())
}
