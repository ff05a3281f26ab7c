//! `botcraft tools list --server S | --bot B`, `botcraft tools call SERVER TOOL [JSON]` and
//! `botcraft tools search "query" …` ([`search`]).

mod search;

use anyhow::Context;
use reqwest::Method;
use serde_json::{Value, json};

use crate::remote::{Remote, print_json, segment};
use crate::terminal::printable;

#[derive(Debug, clap::Subcommand)]
pub enum ToolsCommand {
    /// A server's tools (starts it if needed), or what a bot's turn offers.
    List {
        #[arg(long, conflicts_with = "bot", required_unless_present = "bot")]
        server: Option<String>,
        #[arg(long)]
        bot: Option<String>,
    },
    /// Call a tool on a server, for testing; prints the result.
    Call {
        server: String,
        tool: String,
        /// The arguments, a JSON object.
        #[arg(default_value = "{}")]
        arguments: String,
    },
    /// Search tools as `tool_search` ranks them: on a running BotCraft's cached catalog, or
    /// offline in a `--catalog` file; `--queries` answers a JSON-lines file.
    Search(search::SearchArgs),
}

pub async fn run(remote: &Remote, command: ToolsCommand) -> anyhow::Result<()> {
    match command {
        ToolsCommand::Search(args) => search::run(remote, args).await?,
        ToolsCommand::List {
            server: Some(server),
            ..
        } => {
            let tools = remote
                .get(&format!("/api/servers/{}/tools", segment(&server)))
                .await?;
            for tool in tools["tools"].as_array().into_iter().flatten() {
                // A server's own names and descriptions: untrusted text.
                println!(
                    "{:<32} {}",
                    printable(tool["name"].as_str().unwrap_or_default(), true),
                    printable(first_line(&tool["description"]), true)
                );
            }
        }
        ToolsCommand::List { bot, .. } => {
            let bot = bot.context("give --server or --bot")?;
            let tools = remote
                .get(&format!("/api/bots/{}/tools", segment(&bot)))
                .await?;
            for tool in tools["native"].as_array().into_iter().flatten() {
                println!(
                    "{:<40} native  {}",
                    tool["name"].as_str().unwrap_or_default(),
                    printable(first_line(&tool["description"]), true)
                );
            }
            for tool in tools["mcp"].as_array().into_iter().flatten() {
                println!(
                    "{:<40} {}  {}",
                    printable(tool["name"].as_str().unwrap_or_default(), true),
                    printable(tool["server"].as_str().unwrap_or_default(), true),
                    printable(first_line(&tool["description"]), true)
                );
            }
            for server in tools["unavailable"].as_array().into_iter().flatten() {
                eprintln!(
                    "unavailable: {}: {}",
                    printable(server["server"].as_str().unwrap_or_default(), true),
                    printable(server["reason"].as_str().unwrap_or_default(), true)
                );
            }
        }
        ToolsCommand::Call {
            server,
            tool,
            arguments,
        } => {
            let arguments: Value =
                serde_json::from_str(&arguments).context("arguments must be a JSON object")?;
            let path = format!(
                "/api/servers/{}/tools/{}/call",
                segment(&server),
                segment(&tool)
            );
            let result = remote
                .send(Method::POST, &path, Some(&json!({"arguments": arguments})))
                .await?;
            print_json(&result);
            if result["isError"] == true {
                anyhow::bail!("the tool reported an error");
            }
        }
    }
    Ok(())
}

fn first_line(value: &Value) -> &str {
    value
        .as_str()
        .unwrap_or_default()
        .lines()
        .next()
        .unwrap_or_default()
}
