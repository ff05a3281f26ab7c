//! `botcraft bots list | add | show | remove | bind | unbind`.

use reqwest::Method;
use serde_json::json;

use crate::remote::{Remote, print_json, segment};

#[derive(Debug, clap::Subcommand)]
pub enum BotsCommand {
    /// Every bot.
    List,
    /// Add a bot.
    Add {
        name: String,
        /// `openai:MODEL` or `anthropic:MODEL`.
        #[arg(long)]
        model: String,
        #[arg(long, default_value = "")]
        system_prompt: String,
        /// Model steps per turn at most.
        #[arg(long, default_value = "10")]
        step_limit: i64,
        /// The model takes images: tool results' images reach it as images.
        #[arg(long)]
        vision: bool,
        /// The longest text of one tool result the model reads (the rest is cut, and said).
        #[arg(long, default_value = "100000", value_name = "CHARS")]
        max_tool_result_chars: i64,
    },
    /// A bot and its bindings.
    Show { name: String },
    /// Delete a bot and its bindings.
    Remove { name: String },
    /// Let a bot use a server's tools (all, or those named with --tool).
    Bind {
        bot: String,
        server: String,
        /// A raw tool name the bot may use (repeat); none means all.
        #[arg(long = "tool", value_name = "TOOL")]
        tools: Vec<String>,
        /// Keep the binding but switch it off.
        #[arg(long)]
        disabled: bool,
    },
    /// Remove a bot's binding to a server.
    Unbind { bot: String, server: String },
}

pub async fn run(remote: &Remote, command: BotsCommand) -> anyhow::Result<()> {
    match command {
        BotsCommand::List => {
            let bots = remote.get("/api/bots").await?;
            for bot in bots.as_array().into_iter().flatten() {
                println!(
                    "{:<20} {:<32} steps={}",
                    bot["name"].as_str().unwrap_or_default(),
                    bot["model"].as_str().unwrap_or_default(),
                    bot["stepLimit"]
                );
            }
        }
        BotsCommand::Add {
            name,
            model,
            system_prompt,
            step_limit,
            vision,
            max_tool_result_chars,
        } => {
            let body = json!({
                "name": name, "model": model, "systemPrompt": system_prompt, "stepLimit": step_limit,
                "vision": vision, "maxToolResultChars": max_tool_result_chars,
            });
            print_json(&remote.send(Method::POST, "/api/bots", Some(&body)).await?);
        }
        BotsCommand::Show { name } => {
            let mut bot = remote.get(&format!("/api/bots/{}", segment(&name))).await?;
            bot["bindings"] = remote
                .get(&format!("/api/bots/{}/servers", segment(&name)))
                .await?;
            print_json(&bot);
        }
        BotsCommand::Remove { name } => {
            remote
                .send(
                    Method::DELETE,
                    &format!("/api/bots/{}", segment(&name)),
                    None,
                )
                .await?;
            println!("removed {name}");
        }
        BotsCommand::Bind {
            bot,
            server,
            tools,
            disabled,
        } => {
            let body = json!({"enabled": !disabled, "toolFilter": tools});
            let path = format!("/api/bots/{}/servers/{}", segment(&bot), segment(&server));
            print_json(&remote.send(Method::PUT, &path, Some(&body)).await?);
        }
        BotsCommand::Unbind { bot, server } => {
            let path = format!("/api/bots/{}/servers/{}", segment(&bot), segment(&server));
            remote.send(Method::DELETE, &path, None).await?;
            println!("unbound {bot} from {server}");
        }
    }
    Ok(())
}
