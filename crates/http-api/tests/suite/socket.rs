//! Over a real socket: a multi-step turn with the real forge-filesystem server, and the
//! client hanging up mid-stream (the provider request and the tool call in flight end).

use std::net::SocketAddr;
use std::time::Duration;

use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use store::McpServerSpec;
use test_support::{FakeReply, FakeToolCall};

use super::harness::{
    ADMIN_KEY, Fixture, WIRES, bounded, chat_body, model, parse_sse, sibling_binary, types,
};

pub async fn serve(app: axum::Router) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let limits = http_api::listener::ConnectionLimits::default();
        let _ = http_api::listener::serve(
            listener,
            app,
            limits,
            tokio_util::sync::CancellationToken::new(),
        )
        .await;
    });
    Ok(addr)
}

async fn post_chat(addr: SocketAddr, body: &Value) -> anyhow::Result<reqwest::Response> {
    Ok(reqwest::Client::new()
        .post(format!("http://{addr}/api/ai/chat"))
        .bearer_auth(ADMIN_KEY)
        .json(body)
        .send()
        .await?)
}

/// Reads the stream until a chunk of type `until` arrives; returns the chunks so far.
async fn read_until(
    response: &mut (impl futures::Stream<Item = reqwest::Result<axum::body::Bytes>> + Unpin),
    until: &str,
) -> anyhow::Result<Vec<Value>> {
    let mut buffer = String::new();
    let mut chunks = Vec::new();
    while let Some(bytes) = response.next().await {
        buffer.push_str(std::str::from_utf8(&bytes?)?);
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            let data = frame.trim().trim_start_matches("data: ");
            let chunk: Value = serde_json::from_str(data)?;
            let done = chunk["type"] == until;
            chunks.push(chunk);
            if done {
                return Ok(chunks);
            }
        }
    }
    anyhow::bail!("the stream ended before a {until} chunk: {chunks:?}")
}

#[tokio::test]
async fn real_forge_filesystem_server_writes_then_reads_across_steps() -> anyhow::Result<()> {
    let binary = sibling_binary("forge-filesystem")?;
    for wire in WIRES {
        let fx = Fixture::new([
            FakeReply::tool_calls([FakeToolCall::new(
                "w1",
                "fs__write_file",
                [r#"{"path": "notes/a.txt", "#, r#""content": "forty-two"}"#],
            )]),
            FakeReply::tool_calls([FakeToolCall::new(
                "r1",
                "fs__read_text_file",
                [r#"{"path": "notes/a.txt"}"#],
            )]),
            FakeReply::text(["The file says forty-two."]),
        ])
        .await?;
        let workspace = fx.dir.path().join("workspace");
        std::fs::create_dir_all(workspace.join("notes"))?;
        let root = workspace.display().to_string();
        let server = fx
            .store
            .create_server(
                &McpServerSpec::new("fs", binary.display().to_string())
                    .env("WORKSPACE_ROOT", &root)
                    .env("REPO_ROOT", &root),
            )
            .await?;
        fx.manager.load_configs().await?;
        fx.add_bot("filer", model(wire), &[&server]).await?;
        let addr = serve(fx.app.clone()).await?;
        let response = post_chat(addr, &chat_body("filer", "store and read")).await?;
        assert_eq!(response.status(), 200);
        let body = bounded("the whole stream", response.text()).await??;
        let chunks = parse_sse(&body)?;
        let outputs: Vec<(&str, &str)> = chunks
            .iter()
            .filter(|c| c["type"] == "tool-output-available")
            .map(|c| {
                (
                    c["toolCallId"].as_str().unwrap_or(""),
                    c["output"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(outputs.len(), 2, "{wire:?}: {chunks:?}");
        assert_eq!(outputs[1], ("r1", "forty-two"), "{wire:?}");
        assert_eq!(
            std::fs::read_to_string(workspace.join("notes/a.txt"))?,
            "forty-two"
        );
        assert_eq!(types(&chunks).last().map(String::as_str), Some("finish"));
        fx.finish().await;
    }
    Ok(())
}

#[tokio::test]
async fn client_hanging_up_mid_text_drops_the_provider_request() -> anyhow::Result<()> {
    let fx = Fixture::new([FakeReply::text(["partial "]).then_hang()]).await?;
    fx.add_bot("tester", model(test_support::Wire::OpenAi), &[])
        .await?;
    let addr = serve(fx.app.clone()).await?;
    let response = post_chat(addr, &chat_body("tester", "talk")).await?;
    let mut stream = response.bytes_stream();
    let seen = bounded(
        "the first text delta",
        read_until(&mut stream, "text-delta"),
    )
    .await??;
    assert_eq!(
        seen.last().map(|c| c["delta"].clone()),
        Some(json!("partial "))
    );
    drop(stream);
    bounded(
        "the provider request dropped",
        fx.llm.wait_for_disconnects(1),
    )
    .await?;
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn client_hanging_up_during_a_tool_call_cancels_it_and_releases_the_lease()
-> anyhow::Result<()> {
    let fx = Fixture::new([FakeReply::tool_calls([FakeToolCall::new(
        "s1",
        "fake__sleep",
        [r#"{"ms": 60000}"#],
    )])])
    .await?;
    let fake = fx.add_fake_server("fake", |s| s.timeout(120_000)).await?;
    fx.add_bot("tester", model(test_support::Wire::Anthropic), &[&fake])
        .await?;
    let addr = serve(fx.app.clone()).await?;
    let response = post_chat(addr, &chat_body("tester", "sleep")).await?;
    let mut stream = response.bytes_stream();
    bounded(
        "the tool call",
        read_until(&mut stream, "tool-input-available"),
    )
    .await??;
    // The call is in flight (the server logged it) when the client goes away.
    let log = fx.dir.path().join("fake.log");
    bounded("the call reaching the server", async {
        while !std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("tools/call")
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await?;
    drop(stream);
    // An idle sweep far in the future stops the server only once no call is in flight and
    // no lease is held: the cancelled turn released both.
    let far = tokio::time::Instant::now() + Duration::from_secs(3600);
    let stopped = bounded("the call cancelled and the lease released", async {
        loop {
            let stopped = fx.manager.stop_idle_servers_at(far).await;
            if !stopped.is_empty() {
                return stopped;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await?;
    assert_eq!(stopped, ["fake"]);
    fx.finish().await;
    Ok(())
}

/// The forge binaries must exist for the end-to-end test; the helper says how to get them.
#[test]
fn sibling_binary_names_the_missing_file() {
    match sibling_binary("no-such-forge-binary") {
        Ok(path) => panic!("found {}", path.display()),
        Err(error) => assert!(
            error
                .to_string()
                .contains("no-such-forge-binary is missing"),
            "{error}"
        ),
    }
}
