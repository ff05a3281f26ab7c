//! `botcraft chat --bot NAME "message"`: one turn against a running BotCraft, the answer
//! streamed to the terminal as it arrives, each tool call shown as it runs and ends.

use std::io::Write;

use anyhow::Context;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::Method;
use serde_json::{Value, json};

use crate::remote::{Remote, check};

#[derive(Debug, clap::Args)]
pub struct ChatArgs {
    /// The bot's name or id.
    #[arg(long, default_value = store::DEFAULT_BOT_NAME)]
    bot: String,
    /// What to say.
    message: String,
}

/// Tool output longer than this is cut on the terminal.
const SHOWN_OUTPUT: usize = 400;

fn shorten(text: &str) -> String {
    let one_line = text.replace('\n', " ⏎ ");
    match one_line.char_indices().nth(SHOWN_OUTPUT) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

pub async fn run(remote: &Remote, args: ChatArgs) -> anyhow::Result<()> {
    let body = json!({
        "botId": args.bot,
        "messages": [{"id": "cli-1", "role": "user", "parts": [{"type": "text", "text": args.message}]}],
    });
    let response = remote
        .request(Method::POST, "/api/ai/chat")
        .json(&body)
        .send()
        .await
        .context("cannot reach BotCraft (is `botcraft serve` running?)")?;
    if !response.status().is_success() {
        check(response).await?;
        anyhow::bail!("the chat request failed");
    }
    let mut events = response.bytes_stream().eventsource();
    let mut out = std::io::stdout();
    let mut failed = None;
    while let Some(event) = events.next().await {
        let event = event.context("the stream broke")?;
        if event.data == "[DONE]" {
            break;
        }
        let chunk: Value = serde_json::from_str(&event.data).context("a chunk is not JSON")?;
        match chunk["type"].as_str().unwrap_or_default() {
            "text-delta" => {
                write!(out, "{}", chunk["delta"].as_str().unwrap_or_default())?;
                out.flush()?;
            }
            "text-end" => writeln!(out)?,
            "tool-input-available" => writeln!(
                out,
                "→ {} {}",
                chunk["toolName"].as_str().unwrap_or_default(),
                chunk["input"]
            )?,
            "tool-output-available" => {
                let output = match &chunk["output"] {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                writeln!(out, "← {}", shorten(&output))?;
            }
            "tool-output-error" => writeln!(
                out,
                "✗ {}",
                shorten(chunk["errorText"].as_str().unwrap_or_default())
            )?,
            "error" => failed = Some(chunk["errorText"].as_str().unwrap_or_default().to_owned()),
            "abort" => failed = Some("the turn was cancelled".to_owned()),
            _ => {}
        }
    }
    match failed {
        Some(error) => anyhow::bail!("{error}"),
        None => Ok(()),
    }
}
