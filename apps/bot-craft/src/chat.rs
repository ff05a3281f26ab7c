//! `botcraft chat --bot NAME "message"`: one turn against a running BotCraft, the answer
//! streamed to the terminal as it arrives, each tool call shown as it runs and ends.
//!
//! A call of a tool that asks first (`tool-approval-request`) is put to the person at the
//! terminal (`[y/N]` on stderr, with the call's whole input); with `--approve` every such
//! call is approved without asking, and with no terminal and no `--approve` it is denied,
//! which the model is told. At most 20 rounds of approvals per chat. Everything the model
//! or a tool wrote is printed with control characters and bidi overrides escaped, so it
//! cannot rewrite the terminal or fake the question. The answer goes
//! back as an AI SDK client sends it: the conversation with the assistant message so far,
//! its asked parts `approval-responded`; the turn continues in the same message.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::Context;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::Method;
use serde_json::{Value, json};

use crate::remote::{Remote, check};
use crate::terminal::printable;

#[derive(Debug, clap::Args)]
pub struct ChatArgs {
    /// The bot's name or id.
    #[arg(long, default_value = store::DEFAULT_BOT_NAME)]
    bot: String,
    /// Approve every tool call that asks first, without asking (by default the person at the
    /// terminal is asked; with no terminal such calls are denied).
    #[arg(long)]
    approve: bool,
    /// What to say.
    message: String,
}

/// Tool output longer than this is cut on the terminal.
const SHOWN_OUTPUT: usize = 400;

/// Why a call was denied when nobody could be asked.
const NO_TERMINAL: &str = "nobody at a terminal could approve it (botcraft chat without --approve)";

/// Rounds of approvals one `botcraft chat` answers before it stops: each round is a new
/// request with its own step limit, so a model that keeps calling tools that ask would
/// otherwise go on for ever.
const MAX_APPROVAL_ROUNDS: usize = 20;

fn shorten(text: &str) -> String {
    let one_line = printable(text, true);
    match one_line.char_indices().nth(SHOWN_OUTPUT) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

/// The assistant message as the stream builds it, in the AI SDK's `UIMessage` shape.
#[derive(Debug, Default)]
struct Assistant {
    id: String,
    parts: Vec<Value>,
}

impl Assistant {
    fn tool(&mut self, call_id: &Value) -> Option<&mut Value> {
        self.parts
            .iter_mut()
            .find(|part| part["type"] == "dynamic-tool" && &part["toolCallId"] == call_id)
    }

    /// Folds one chunk in, as the SDK's stream reader does (text parts whole, by id order).
    fn fold(&mut self, chunk: &Value) {
        let call_id = &chunk["toolCallId"];
        match chunk["type"].as_str().unwrap_or_default() {
            "start" => {
                if let Some(id) = chunk["messageId"].as_str() {
                    id.clone_into(&mut self.id);
                }
            }
            "start-step" => self.parts.push(json!({"type": "step-start"})),
            "text-start" => self
                .parts
                .push(json!({"type": "text", "text": "", "state": "done", "id": chunk["id"]})),
            "text-delta" => {
                let delta = chunk["delta"].as_str().unwrap_or_default();
                if let Some(part) = self
                    .parts
                    .iter_mut()
                    .rev()
                    .find(|part| part["type"] == "text" && part["id"] == chunk["id"])
                {
                    let text = format!("{}{delta}", part["text"].as_str().unwrap_or_default());
                    part["text"] = json!(text);
                }
            }
            "tool-input-available" => self.parts.push(json!({
                "type": "dynamic-tool", "toolName": chunk["toolName"], "toolCallId": call_id,
                "state": "input-available", "input": chunk["input"],
            })),
            "tool-approval-request" => {
                if let Some(part) = self.tool(call_id) {
                    part["state"] = json!("approval-requested");
                    part["approval"] = json!({"id": chunk["approvalId"]});
                }
            }
            "tool-output-available" => {
                if let Some(part) = self.tool(call_id) {
                    part["state"] = json!("output-available");
                    part["output"] = chunk["output"].clone();
                }
            }
            "tool-output-error" => {
                if let Some(part) = self.tool(call_id) {
                    part["state"] = json!("output-error");
                    part["errorText"] = chunk["errorText"].clone();
                }
            }
            "tool-output-denied" => {
                if let Some(part) = self.tool(call_id) {
                    part["state"] = json!("output-denied");
                }
            }
            _ => {}
        }
    }

    /// The message as the next request carries it (text parts without their stream ids).
    fn to_message(&self) -> Value {
        let parts: Vec<Value> = self
            .parts
            .iter()
            .cloned()
            .map(|mut part| {
                if let Some(map) = part.as_object_mut() {
                    map.remove("id");
                }
                part
            })
            .collect();
        json!({"id": self.id, "role": "assistant", "parts": parts})
    }

    fn asked(&mut self) -> impl Iterator<Item = &mut Value> {
        self.parts
            .iter_mut()
            .filter(|part| part["state"] == "approval-requested")
    }
}

/// How the calls that ask are answered.
enum Answerer {
    Everything,
    Terminal,
    Nobody,
}

impl Answerer {
    /// Whether to run `tool` with `input`, and the reason given when not.
    async fn answer(&self, tool: &str, input: &Value) -> anyhow::Result<(bool, Option<String>)> {
        match self {
            Self::Everything => Ok((true, None)),
            Self::Nobody => Ok((false, Some(NO_TERMINAL.to_owned()))),
            Self::Terminal => {
                // The whole input, so nothing the call would do is cut from the question.
                let shown = serde_json::to_string_pretty(input).unwrap_or_default();
                let printed = printable(&shown, false);
                let note = if printed == shown {
                    ""
                } else {
                    "\n(the input holds characters a terminal would not show, or long runs of \
                     spaces: they are written \\u{…} and ␠×N above)"
                };
                let question = format!(
                    "? {} asks first, with ({} characters):\n{printed}{note}\nRun it? [y/N] ",
                    printable(tool, true),
                    shown.chars().count(),
                );
                let line = tokio::task::spawn_blocking(move || -> std::io::Result<String> {
                    let mut out = std::io::stderr();
                    write!(out, "{question}")?;
                    out.flush()?;
                    let mut line = String::new();
                    std::io::stdin().lock().read_line(&mut line)?;
                    Ok(line)
                })
                .await??;
                let yes = matches!(line.trim().to_lowercase().as_str(), "y" | "yes");
                Ok((
                    yes,
                    (!yes).then(|| "the person at the terminal said no".to_owned()),
                ))
            }
        }
    }
}

pub async fn run(remote: &Remote, args: ChatArgs) -> anyhow::Result<()> {
    let answerer = if args.approve {
        Answerer::Everything
    } else if std::io::stdin().is_terminal() {
        Answerer::Terminal
    } else {
        Answerer::Nobody
    };
    let user =
        json!({"id": "cli-1", "role": "user", "parts": [{"type": "text", "text": args.message}]});
    let mut assistant: Option<Assistant> = None;
    for _ in 0..=MAX_APPROVAL_ROUNDS {
        let mut messages = vec![user.clone()];
        messages.extend(assistant.as_ref().map(Assistant::to_message));
        let mut message = assistant.take().unwrap_or_default();
        turn(remote, &args.bot, messages, &mut message).await?;
        let mut answered = false;
        for part in message.asked() {
            let tool = part["toolName"].as_str().unwrap_or_default().to_owned();
            let (approved, reason) = answerer.answer(&tool, &part["input"]).await?;
            if !approved {
                println!(
                    "✗ {} denied: {}",
                    printable(&tool, true),
                    reason.as_deref().unwrap_or_default()
                );
            }
            let id = part["approval"]["id"].clone();
            part["state"] = json!("approval-responded");
            part["approval"] = match reason {
                Some(reason) => json!({"id": id, "approved": approved, "reason": reason}),
                None => json!({"id": id, "approved": approved}),
            };
            answered = true;
        }
        if !answered {
            return Ok(());
        }
        assistant = Some(message);
    }
    anyhow::bail!("stopped after {MAX_APPROVAL_ROUNDS} rounds of approvals in one chat")
}

/// One request: the answer streamed to the terminal and folded into `message`.
async fn turn(
    remote: &Remote,
    bot: &str,
    messages: Vec<Value>,
    message: &mut Assistant,
) -> anyhow::Result<()> {
    let body = json!({"botId": bot, "messages": messages});
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
        message.fold(&chunk);
        match chunk["type"].as_str().unwrap_or_default() {
            "text-delta" => {
                let delta = printable(chunk["delta"].as_str().unwrap_or_default(), false);
                write!(out, "{delta}")?;
                out.flush()?;
            }
            "text-end" => writeln!(out)?,
            "tool-input-available" => writeln!(
                out,
                "→ {} {}",
                printable(chunk["toolName"].as_str().unwrap_or_default(), true),
                shorten(&chunk["input"].to_string())
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
            "error" => {
                failed = Some(printable(
                    chunk["errorText"].as_str().unwrap_or_default(),
                    true,
                ))
            }
            "abort" => failed = Some("the turn was cancelled".to_owned()),
            _ => {}
        }
    }
    match failed {
        Some(error) => anyhow::bail!("{error}"),
        None => Ok(()),
    }
}
