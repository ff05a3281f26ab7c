//! `fake-llm SCRIPT.json [RECORD.jsonl]`: test-support's [`FakeLlm`] as a program, for tests
//! that run BotCraft as a separate process (the browser tests). It prints
//! `fake LLM listening on http://ADDR/v1` once it accepts connections (the OpenAI base URL;
//! Anthropic clients take `http://ADDR`) and serves until killed.
//!
//! SCRIPT is a JSON list of replies, taken in order by each request whatever its wire format:
//! `{"text": "…"}` streams a text answer; `{"toolCalls": [{"id", "name", "arguments"}],
//! "text": "…"}` streams optional text then tool calls (`arguments` a JSON text);
//! `"repeat": N` streams the text N times over, made as it is sent (a long answer). With
//! RECORD, each request's body is appended to it as one line as it arrives.

use std::io::Write;

use anyhow::Context;
use serde::Deserialize;
use test_support::{FakeLlm, FakeReply, FakeToolCall};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Step {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool_calls: Vec<Call>,
    #[serde(default)]
    repeat: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Call {
    id: String,
    name: String,
    arguments: String,
}

fn reply(step: Step) -> FakeReply {
    let text: Vec<String> = step.text.into_iter().collect();
    if step.tool_calls.is_empty() {
        return FakeReply::text(text).repeated(step.repeat.unwrap_or(1));
    }
    let calls = step
        .tool_calls
        .into_iter()
        .map(|call| FakeToolCall::new(&call.id, &call.name, [call.arguments]));
    FakeReply::tool_calls(calls).with_text(text)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (script, record) = match args.as_slice() {
        [script] => (script, None),
        [script, record] => (script, Some(record.clone())),
        _ => anyhow::bail!("usage: fake-llm SCRIPT.json [RECORD.jsonl]"),
    };
    let text = std::fs::read_to_string(script).with_context(|| format!("read {script}"))?;
    let steps: Vec<Step> =
        serde_json::from_str(&text).with_context(|| format!("{script}: a list of replies"))?;
    let llm = FakeLlm::start(steps.into_iter().map(reply)).await?;
    println!("fake LLM listening on {}", llm.openai_base_url());
    std::io::stdout().flush()?;
    let Some(record) = record else {
        std::future::pending::<()>().await;
        return Ok(());
    };
    // Each request as it arrives (a readiness signal, not a poll).
    for seen in 1.. {
        llm.wait_for_requests(seen).await;
        let requests = llm.requests();
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&record)
            .with_context(|| format!("open {record}"))?;
        writeln!(file, "{}", requests[seen - 1].body)?;
    }
    Ok(())
}
