//! A process running a manager, for the hygiene tests: it starts one server, optionally makes
//! one call, prints `ready SERVER_PID`, then waits to be killed.
//!
//! usage: `manager_child DIR TOOL ARGS_JSON -- COMMAND [ARG…]` (TOOL `-` for no call). The
//! server gets this process's `PATH`, `HOME` and `TMPDIR`; the store and the pid registry live in
//! DIR.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context;
use mcp_lifecycle::{ManagerSettings, McpServerManager, PASSED_THROUGH_ENV};
use store::{McpServerSpec, Store};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, tool, call_args, dash, command, rest @ ..] = args.as_slice() else {
        anyhow::bail!("usage: manager_child DIR TOOL ARGS_JSON -- COMMAND [ARG…]");
    };
    anyhow::ensure!(dash == "--", "expected -- before the command");
    let dir = std::path::Path::new(dir);
    let store = Store::connect(&store::sqlite_url(&dir.join("child.db"))).await?;
    store
        .create_server(
            &McpServerSpec::new("server", command)
                .args(rest.iter().cloned())
                .timeout(60_000)
                .init_timeout(60_000),
        )
        .await?;
    let env: BTreeMap<String, String> = PASSED_THROUGH_ENV
        .iter()
        .filter_map(|key| Some(((*key).to_owned(), std::env::var(key).ok()?)))
        .collect();
    let settings = ManagerSettings {
        env,
        stop_grace: Duration::from_secs(3),
        pid_registry: Some(dir.join("child.pids")),
        ..ManagerSettings::default()
    };
    let manager = McpServerManager::new(server_records::records(store), settings);
    manager.load_configs().await?;
    manager.start_server("server").await?;
    if tool != "-" {
        let arguments: serde_json::Value = serde_json::from_str(call_args)?;
        let result = manager
            .call_tool("server", tool, arguments.as_object().cloned())
            .await?;
        anyhow::ensure!(result.is_error != Some(true), "{tool} failed: {result:?}");
    }
    let pid = manager
        .get_all_statuses()
        .into_iter()
        .find_map(|s| s.pid)
        .context("the server has no pid")?;
    println!("ready {pid}");
    std::future::pending::<()>().await;
    Ok(())
}
