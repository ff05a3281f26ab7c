//! `botcraft bots list | add | set | show | remove | bind | unbind`.

use reqwest::Method;
use serde_json::{Value, json};

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
    /// Change a bot: the settings given; the others stay as they are.
    Set {
        name: String,
        /// `openai:MODEL` or `anthropic:MODEL`.
        #[arg(long)]
        model: Option<String>,
        #[arg(long)]
        system_prompt: Option<String>,
        /// Model steps per turn at most.
        #[arg(long)]
        step_limit: Option<i64>,
        /// `eager`, `deferred` or `auto`: how the bot's tools reach the model.
        #[arg(long, value_name = "MODE")]
        tool_loading: Option<String>,
        /// Whether the model takes images.
        #[arg(long, value_name = "BOOL")]
        vision: Option<bool>,
        /// The longest text of one tool result the model reads.
        #[arg(long, value_name = "CHARS")]
        max_tool_result_chars: Option<i64>,
        /// When a call of a native tool waits for approval (as for `add`).
        #[arg(long, value_name = "POLICY")]
        native_approval: Option<String>,
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
        BotsCommand::Set {
            name,
            model,
            system_prompt,
            step_limit,
            tool_loading,
            vision,
            max_tool_result_chars,
            native_approval,
        } => {
            let path = format!("/api/bots/{}", segment(&name));
            // The bot as it is (every field the API gives, so none is reset), with the
            // settings given.
            let mut body = remote.get(&path).await?;
            let given = [
                ("model", model.map(Value::from)),
                ("systemPrompt", system_prompt.map(Value::from)),
                ("stepLimit", step_limit.map(Value::from)),
                ("toolLoadingMode", tool_loading.map(Value::from)),
                ("vision", vision.map(Value::from)),
                ("maxToolResultChars", max_tool_result_chars.map(Value::from)),
                (
                    "nativeToolApproval",
                    native_approval.as_deref().map(approval_policy),
                ),
            ];
            anyhow::ensure!(
                given.iter().any(|(_, value)| value.is_some()),
                "give at least one setting to change (--model, --system-prompt, …)"
            );
            for (field, value) in given {
                if let Some(value) = value {
                    body[field] = value;
                }
            }
            print_json(&remote.send(Method::PUT, &path, Some(&body)).await?);
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
