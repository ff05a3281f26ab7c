//! `botcraft servers list | add | import | start | stop | restart | status | logs | remove`.

use std::path::PathBuf;

use anyhow::Context;
use reqwest::Method;
use serde_json::{Map, Value, json};

use crate::remote::{Remote, print_json, segment};

#[derive(Debug, clap::Subcommand)]
pub enum ServersCommand {
    /// Every MCP server with its state.
    List,
    /// Add a stdio MCP server.
    Add {
        name: String,
        /// The program to run.
        #[arg(long)]
        command: String,
        /// One argument (repeat for each).
        #[arg(long = "arg", value_name = "ARG", allow_hyphen_values = true)]
        args: Vec<String>,
        /// `KEY=VALUE` for the server's environment; `${VAR}` resolves at spawn (repeat).
        #[arg(long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// Tool-call timeout, ms.
        #[arg(long)]
        timeout: Option<i64>,
        /// Start with BotCraft and keep running.
        #[arg(long)]
        always_on: bool,
        #[arg(long)]
        instructions: Option<String>,
    },
    /// Import an `mcpServers` JSON file (Claude Desktop, Cursor, VS Code).
    Import { file: PathBuf },
    /// Start a server.
    Start { name: String },
    /// Stop a server and its process tree.
    Stop { name: String },
    /// Stop, then start a server.
    Restart { name: String },
    /// The health document: every server's state, pid, uptime, restarts, tools, last error.
    Status,
    /// The last lines a server wrote on stderr.
    Logs { name: String },
    /// Delete a server config (and stop it).
    Remove { name: String },
}

fn or_dash(value: &Value) -> String {
    match value {
        Value::Null => "-".to_owned(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

pub async fn run(remote: &Remote, command: ServersCommand) -> anyhow::Result<()> {
    match command {
        ServersCommand::List => {
            let servers = remote.get("/api/servers").await?;
            println!(
                "{:<20} {:<9} {:<9} {:<8} {:<6} command",
                "name", "state", "always-on", "pid", "tools"
            );
            for server in servers.as_array().into_iter().flatten() {
                let status = &server["status"];
                println!(
                    "{:<20} {:<9} {:<9} {:<8} {:<6} {}",
                    or_dash(&server["name"]),
                    or_dash(&status["state"]),
                    or_dash(&server["alwaysOn"]),
                    or_dash(&status["pid"]),
                    or_dash(&status["toolCount"]),
                    or_dash(&server["command"]),
                );
            }
        }
        ServersCommand::Add {
            name,
            command,
            args,
            env,
            timeout,
            always_on,
            instructions,
        } => {
            let mut env_map = Map::new();
            for pair in env {
                let (key, value) = pair
                    .split_once('=')
                    .with_context(|| format!("--env {pair:?} is not KEY=VALUE"))?;
                env_map.insert(key.to_owned(), Value::String(value.to_owned()));
            }
            let mut body = json!({
                "name": name, "command": command, "args": args, "env": env_map,
                "alwaysOn": always_on, "instructions": instructions,
            });
            if let Some(timeout) = timeout {
                body["timeout"] = json!(timeout);
            }
            print_json(
                &remote
                    .send(Method::POST, "/api/servers", Some(&body))
                    .await?,
            );
        }
        ServersCommand::Import { file } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("read {}", file.display()))?;
            let document: Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not JSON", file.display()))?;
            print_json(
                &remote
                    .send(Method::POST, "/api/servers/import", Some(&document))
                    .await?,
            );
        }
        ServersCommand::Start { name } => control(remote, &name, "start").await?,
        ServersCommand::Stop { name } => control(remote, &name, "stop").await?,
        ServersCommand::Restart { name } => control(remote, &name, "restart").await?,
        ServersCommand::Status => {
            let health = remote.get("/api/health").await?;
            println!("status: {}", or_dash(&health["status"]));
            for (name, server) in health["mcpServers"].as_object().into_iter().flatten() {
                println!(
                    "{name:<20} {:<9} always-on={:<5} pid={:<7} uptime={}s restarts={} tools={} {}",
                    or_dash(&server["state"]),
                    or_dash(&server["alwaysOn"]),
                    or_dash(&server["pid"]),
                    or_dash(&server["uptime"]),
                    or_dash(&server["restarts"]),
                    or_dash(&server["toolCount"]),
                    server["lastError"]
                        .as_str()
                        .map(|e| format!("last error: {e}"))
                        .unwrap_or_default(),
                );
            }
        }
        ServersCommand::Logs { name } => {
            let logs = remote
                .get(&format!("/api/servers/{}/logs", segment(&name)))
                .await?;
            for line in logs["lines"].as_array().into_iter().flatten() {
                println!("{}", line.as_str().unwrap_or_default());
            }
        }
        ServersCommand::Remove { name } => {
            remote
                .send(
                    Method::DELETE,
                    &format!("/api/servers/{}", segment(&name)),
                    None,
                )
                .await?;
            println!("removed {name}");
        }
    }
    Ok(())
}

async fn control(remote: &Remote, name: &str, action: &str) -> anyhow::Result<()> {
    let reply = remote
        .send(
            Method::POST,
            &format!("/api/servers/{}/{action}", segment(name)),
            None,
        )
        .await?;
    let status = &reply["status"];
    println!(
        "{name}: {} (pid {})",
        or_dash(&status["state"]),
        or_dash(&status["pid"])
    );
    Ok(())
}
