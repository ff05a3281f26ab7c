//! Traces end to end: a real `botcraft serve` exporting over OTLP/HTTP to a receiver that
//! decodes the protobuf with the official `opentelemetry-proto` definitions
//! ([`test_support::otlp`]). A chat that searches and then reads a file with forge-filesystem
//! is one trace; a `/mcp` call with an incoming `traceparent` continues that trace, and the
//! upstream server receives the context in `_meta`; a server's start is a trace of its own;
//! no secret is in any export.

use anyhow::Context;
use pretty_assertions::assert_eq;
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use test_support::otlp::{OtlpReceiver, ReceivedSpan};
use test_support::{FakeLlm, FakeReply, FakeToolCall};

use crate::common;
use common::{Api, serve_command, spawn_served};

const KEY: &str = "traces-admin-key";
const BOT_KEY: &str = "traces-bot-key-0123";
const OPENAI_KEY: &str = "sk-traces-test-openai-key";
const EXPORT_TOKEN: &str = "otlp-export-token-4567";
/// What a client sends as its trace context (the W3C example).
const INCOMING_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const INCOMING_PARENT: &str = "b7ad6b7169203331";

/// Attributes that differ from run to run (ids, a pid, the fake's token counts are fixed and
/// kept), and content that is checked on its own.
const VOLATILE: &[&str] = &[
    "jsonrpc.request.id",
    "mcp.session.id",
    "process.pid",
    "gen_ai.tool.call.result",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "url.path",
];

fn root_named<'a>(spans: &'a [ReceivedSpan], name: &str) -> Option<&'a ReceivedSpan> {
    spans
        .iter()
        .find(|span| span.name == name && span.parent_span_id.is_empty())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_a_relayed_call_and_a_start_are_traced_with_no_secret_exported() -> anyhow::Result<()>
{
    let receiver = OtlpReceiver::start().await?;
    let llm = FakeLlm::start([
        FakeReply::tool_calls([FakeToolCall::new(
            "s1",
            "tool_search",
            [r#"{"query": "read a text file", "mcp_server": "forge-filesystem"}"#],
        )]),
        FakeReply::tool_calls([FakeToolCall::new(
            "r1",
            "forge-filesystem__read_text_file",
            [r#"{"path": "notes.txt"}"#],
        )]),
        FakeReply::text(["The notes say where the key is."]),
    ])
    .await?;
    let data = tempfile::tempdir()?;
    let workspace = data.path().join("workspace");
    std::fs::create_dir_all(&workspace)?;
    // A file holding a secret BotCraft knows (the provider key): read, and recorded as content,
    // it must reach the exporter redacted.
    std::fs::write(
        workspace.join("notes.txt"),
        format!("the provider key is {OPENAI_KEY}\n"),
    )?;
    let calls_log = data.path().join("echo.log");
    let mut command = serve_command(data.path(), KEY)?;
    command
        .env("BOTCRAFT_DEFAULT_MODEL", "openai:gpt-test")
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("OPENAI_BASE_URL", llm.openai_base_url())
        .env("BOTCRAFT_BOT_KEYS", format!("forge={BOT_KEY}"))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            format!("authorization=Bearer%20{EXPORT_TOKEN}"),
        )
        .env("OTEL_SERVICE_NAME", "botcraft-traces-test")
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "100")
        .env("BOTCRAFT_TRACE_CONTENT", "on")
        .env("RUST_LOG", "warn");
    let mut served = tokio::task::block_in_place(|| spawn_served(command))?;
    tokio::task::block_in_place(|| {
        served.wait_for(|line| line.contains("traces exported over OTLP/HTTP to http://127.0.0.1:"))
    })?;
    let api = Api::new(&served.url, KEY);
    let echo = json!({
        "name": "echo",
        "command": test_support::fake_mcp_server_binary()?.display().to_string(),
        "env": {"FAKE_MCP_LOG": calls_log.display().to_string()},
        "sandbox": {"enabled": false},
    });
    let (status, body) = api
        .send(reqwest::Method::POST, "/api/servers", Some(echo))
        .await?;
    anyhow::ensure!(status == 201, "create echo: {status} {body}");
    // The chat's bot has forge-filesystem (always-on) alone, so that the chat starts
    // nothing (concurrent starts would make the tree's order vary), and finds its tools
    // with tool_search.
    let (status, body) = api
        .send(
            reqwest::Method::POST,
            "/api/bots",
            Some(json!({"name": "traced", "model": "openai:gpt-test", "toolLoadingMode": "deferred"})),
        )
        .await?;
    anyhow::ensure!(status == 201, "create the bot: {status} {body}");
    let (status, body) = api
        .send(
            reqwest::Method::PUT,
            "/api/bots/traced/servers/forge-filesystem",
            Some(json!({})),
        )
        .await?;
    anyhow::ensure!(status == 200, "bind forge-filesystem: {status} {body}");

    // A server's start is a trace of its own (forge-filesystem is always-on).
    receiver
        .wait_for(|spans| root_named(spans, "start forge-filesystem").is_some())
        .await;
    let start = root_named(&receiver.spans(), "start forge-filesystem")
        .context("the start")?
        .clone();
    assert_eq!(
        receiver.tree(&start.trace_id, VOLATILE),
        "start forge-filesystem [internal] unset
    botcraft.server.name=forge-filesystem
    botcraft.server.tools=11
    botcraft.server.transport=stdio
    botcraft.start.reason=explicit
    mcp.protocol.version=2025-11-25
  initialize forge-filesystem [client] unset
      botcraft.server.name=forge-filesystem
      mcp.method.name=initialize
"
    );
    assert_eq!(start.service, "botcraft-traces-test");

    // The chat: one trace from the HTTP request down to forge-filesystem's tools/call.
    let reply = reqwest::Client::new()
        .post(format!("{}/api/ai/chat", served.url))
        .bearer_auth(KEY)
        .header("accept", "application/json")
        .json(&json!({"botId": "traced", "messages": [
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "What do my notes say?"}]}]}))
        .send()
        .await?;
    anyhow::ensure!(reply.status() == 200, "chat: {}", reply.status());
    receiver
        .wait_for(|spans| root_named(spans, "POST /api/ai/chat").is_some())
        .await;
    let chat = root_named(&receiver.spans(), "POST /api/ai/chat")
        .context("the chat's span")?
        .clone();
    let found = receiver
        .spans()
        .into_iter()
        .find(|span| span.name == "execute_tool tool_search")
        .context("tool_search's span")?
        .attributes
        .get("botcraft.tool_search.found")
        .cloned()
        .unwrap_or_default();
    assert!(
        found
            .split(',')
            .any(|name| name == "forge-filesystem__read_text_file"),
        "{found}"
    );
    let query_and_found = |tree: String| tree.replace(&format!("found={found}"), "found=…");
    assert_eq!(
        query_and_found(receiver.tree(&chat.trace_id, VOLATILE)),
        r#"POST /api/ai/chat [server] unset
    http.request.method=POST
    http.response.status_code=200
    http.route=/api/ai/chat
  chat gpt-test [client] unset
      gen_ai.operation.name=chat
      gen_ai.provider.name=openai
      gen_ai.request.model=gpt-test
      gen_ai.response.finish_reasons=["tool-calls"]
      gen_ai.usage.input_tokens=10
      gen_ai.usage.output_tokens=5
  execute_tool tool_search [internal] unset
      botcraft.tool_search.found=…
      botcraft.tool_search.hits=5
      botcraft.tool_search.mode=bm25f
      botcraft.tool_search.query=read a text file
      gen_ai.operation.name=execute_tool
      gen_ai.tool.call.arguments={"mcp_server":"forge-filesystem","query":"read a text file"}
      gen_ai.tool.call.id=s1
      gen_ai.tool.name=tool_search
      gen_ai.tool.type=function
  chat gpt-test [client] unset
      gen_ai.operation.name=chat
      gen_ai.provider.name=openai
      gen_ai.request.model=gpt-test
      gen_ai.response.finish_reasons=["tool-calls"]
      gen_ai.usage.input_tokens=10
      gen_ai.usage.output_tokens=5
  execute_tool forge-filesystem__read_text_file [internal] unset
      gen_ai.operation.name=execute_tool
      gen_ai.tool.call.arguments={"path":"notes.txt"}
      gen_ai.tool.call.id=r1
      gen_ai.tool.name=forge-filesystem__read_text_file
      gen_ai.tool.type=extension
    tools/call read_text_file [client] unset
        botcraft.server.name=forge-filesystem
        gen_ai.operation.name=execute_tool
        gen_ai.tool.name=read_text_file
        mcp.method.name=tools/call
        mcp.protocol.version=2025-11-25
  chat gpt-test [client] unset
      gen_ai.operation.name=chat
      gen_ai.provider.name=openai
      gen_ai.request.model=gpt-test
      gen_ai.response.finish_reasons=["stop"]
      gen_ai.usage.input_tokens=10
      gen_ai.usage.output_tokens=5
"#
    );
    // Content, recorded because BOTCRAFT_TRACE_CONTENT=on: the file's text, its secret
    // redacted; the user's message and the model's answer.
    let spans = receiver.spans();
    let read = spans
        .iter()
        .find(|span| span.name == "execute_tool forge-filesystem__read_text_file")
        .context("the read")?;
    assert_eq!(
        read.attributes
            .get("gen_ai.tool.call.result")
            .map(String::as_str),
        Some("the provider key is [redacted]\n")
    );
    let first_chat = spans
        .iter()
        .find(|span| span.name == "chat gpt-test" && span.trace_id == chat.trace_id)
        .context("a model call")?;
    assert_eq!(
        first_chat
            .attributes
            .get("gen_ai.input.messages")
            .map(String::as_str),
        Some(r#"[{"parts":[{"content":"What do my notes say?","type":"text"}],"role":"user"}]"#)
    );

    // echo is bound now, and listed (BOTCRAFT_LIST_TOOLS is off in these tests); the listing
    // stops it, and the relayed call starts it again, in the call's trace.
    let (status, body) = api
        .send(
            reqwest::Method::PUT,
            "/api/bots/forge/servers/echo",
            Some(json!({})),
        )
        .await?;
    anyhow::ensure!(status == 200, "bind echo: {status} {body}");
    let (status, body) = api
        .send(
            reqwest::Method::POST,
            "/api/servers/echo/tools/refresh",
            None,
        )
        .await?;
    anyhow::ensure!(status == 200, "list echo: {status} {body}");

    // /mcp with an incoming trace context in `_meta`: the gateway's server span continues it,
    // and the upstream server is sent BotCraft's client span as its parent.
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", served.url))
            .auth_header(BOT_KEY),
    );
    let client = ().serve(transport).await?;
    let mut call = rmcp::model::CallToolRequestParams::new("echo__echo");
    call.arguments = json!({"text": "hello"}).as_object().cloned();
    let mut meta = rmcp::model::RequestMetaObject::new();
    meta.0.insert(
        "traceparent".to_owned(),
        json!(format!("00-{INCOMING_TRACE}-{INCOMING_PARENT}-01")),
    );
    call.meta = Some(meta);
    let answer = client.call_tool(call).await?;
    assert_ne!(answer.is_error, Some(true), "{answer:?}");
    client.cancel().await?;
    receiver
        .wait_for(|spans| {
            spans
                .iter()
                .any(|span| span.trace_id == INCOMING_TRACE && span.name == "tools/call echo__echo")
        })
        .await;
    let relayed = receiver.tree(INCOMING_TRACE, VOLATILE);
    assert_eq!(
        relayed,
        "tools/call echo__echo [server] unset
    gen_ai.operation.name=execute_tool
    gen_ai.tool.name=echo__echo
    mcp.method.name=tools/call
    network.transport=tcp
  start echo [internal] unset
      botcraft.server.name=echo
      botcraft.server.tools=4
      botcraft.server.transport=stdio
      botcraft.start.reason=on_demand
      mcp.protocol.version=2025-11-25
    initialize echo [client] unset
        botcraft.server.name=echo
        mcp.method.name=initialize
  tools/call echo [client] unset
      botcraft.server.name=echo
      gen_ai.operation.name=execute_tool
      gen_ai.tool.name=echo
      mcp.method.name=tools/call
      mcp.protocol.version=2025-11-25
"
    );
    let spans = receiver.spans();
    let server_span = spans
        .iter()
        .find(|span| span.trace_id == INCOMING_TRACE && span.name == "tools/call echo__echo")
        .context("the gateway's span")?;
    assert_eq!(server_span.parent_span_id, INCOMING_PARENT);
    let client_span = spans
        .iter()
        .find(|span| span.trace_id == INCOMING_TRACE && span.name == "tools/call echo")
        .context("the forwarded call's span")?;
    let log = std::fs::read_to_string(&calls_log)?;
    // The relay's own `progressToken` rides beside the trace context.
    let sent: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|line| line.strip_prefix("meta "))
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let traceparents: Vec<&serde_json::Value> =
        sent.iter().map(|meta| &meta["traceparent"]).collect();
    assert_eq!(
        traceparents,
        [&json!(format!(
            "00-{INCOMING_TRACE}-{}-01",
            client_span.span_id
        ))],
        "{log}"
    );

    // Metrics over OTLP, read from the same spans: the MCP conventions' durations on both
    // sides of the relayed call, the GenAI conventions' for the chat's three model calls.
    let point_of = |metric: &'static str, key: &'static str, value: &'static str| {
        move |points: &[test_support::otlp::ReceivedPoint]| {
            points
                .iter()
                .rev()
                .find(|point| {
                    point.metric == metric
                        && point.attributes.get(key).map(String::as_str) == Some(value)
                })
                .cloned()
        }
    };
    let server_call = point_of(
        "mcp.server.operation.duration",
        "gen_ai.tool.name",
        "echo__echo",
    );
    let client_call = point_of("mcp.client.operation.duration", "gen_ai.tool.name", "echo");
    let model_calls = point_of(
        "gen_ai.client.operation.duration",
        "gen_ai.request.model",
        "gpt-test",
    );
    let input_tokens = point_of("gen_ai.client.token.usage", "gen_ai.token.type", "input");
    receiver
        .wait_for_points(|points| {
            server_call(points).is_some()
                && client_call(points).is_some()
                && model_calls(points).is_some_and(|point| point.count == 3)
                && input_tokens(points).is_some_and(|point| point.count == 3)
        })
        .await;
    let points = receiver.points();
    let attributes = |pairs: &[(&str, &str)]| -> std::collections::BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    let server_call = server_call(&points).context("server")?;
    assert_eq!(
        (
            server_call.unit.as_str(),
            server_call.service.as_str(),
            &server_call.attributes
        ),
        (
            "s",
            "botcraft-traces-test",
            &attributes(&[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "echo__echo"),
                ("mcp.method.name", "tools/call"),
                ("network.transport", "tcp"),
            ])
        )
    );
    assert_eq!(
        client_call(&points).context("client")?.attributes,
        attributes(&[
            ("botcraft.server.name", "echo"),
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "echo"),
            ("mcp.method.name", "tools/call"),
            ("mcp.protocol.version", "2025-11-25"),
        ])
    );
    assert_eq!(
        model_calls(&points).context("model calls")?.attributes,
        attributes(&[
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.provider.name", "openai"),
            ("gen_ai.request.model", "gpt-test"),
        ])
    );

    // No key, token or secret in anything exported.
    let raw = receiver.raw();
    anyhow::ensure!(!raw.is_empty(), "nothing exported");
    for secret in [KEY, BOT_KEY, OPENAI_KEY, EXPORT_TOKEN] {
        for body in &raw {
            assert!(
                !body.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "{secret} was exported"
            );
        }
    }
    // BotCraft's stderr says where traces go, without the export's credentials.
    let stderr = served.lines.join("\n");
    assert!(!stderr.contains(EXPORT_TOKEN), "{stderr}");
    Ok(())
}
