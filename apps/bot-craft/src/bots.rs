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
        /// When a call of a native tool waits for approval: never, always, writes, or
        /// comma-separated tool-name globs (tool_search never asks).
        #[arg(long, default_value = "never", value_name = "POLICY")]
        native_approval: String,
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
        /// When a call waits for a person's approval in chat: never, always, writes (unless
        /// the tool is readOnlyHint), or comma-separated tool-name globs (`run,empty_*`).
        #[arg(long, default_value = "never", value_name = "POLICY")]
        approval: String,
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
            native_approval,
        } => {
            let body = json!({
                "name": name, "model": model, "systemPrompt": system_prompt, "stepLimit": step_limit,
                "vision": vision, "maxToolResultChars": max_tool_result_chars,
                "nativeToolApproval": approval_policy(&native_approval),
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
            approval,
        } => {
            let body = json!({
                "enabled": !disabled, "toolFilter": tools, "approval": approval_policy(&approval),
            });
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

/// `--approval` as the API takes it: a word, or comma-separated globs as a list (the API
/// refuses what is neither).
fn approval_policy(text: &str) -> serde_json::Value {
    match text.trim() {
        word @ ("never" | "always" | "writes") => json!(word),
        globs => json!(globs.split(',').map(str::trim).collect::<Vec<_>>()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn approval_flags_become_the_api_s_policies() {
        let cases = [
            ("never", json!("never")),
            ("writes", json!("writes")),
            ("run", json!(["run"])),
            ("run, empty_*", json!(["run", "empty_*"])),
        ];
        for (flag, expected) in cases {
            assert_eq!(approval_policy(flag), expected, "{flag}");
        }
    }
}
