//! Remote servers through the manager: streamable HTTP (test-support's conformance fixture in
//! its HTTP mode, behind a bearer token) and HTTP+SSE (the fixture behind the real npm
//! `supergateway`). Listed, called, lost and reconnected; headers resolved from `${VAR}` and
//! never shown. A server with no sessions at all (2026-07-28 only) works the same, and a
//! request that names 2026-07-28 goes on a 2026-07-28 link of its own.

use std::process::Command;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;

use mcp_lifecycle::{Health, LifecycleError, ServerState};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientRequest, GetMeta as _,
    ProtocolVersion, ServerResult,
};
use store::{McpServerSpec, Transport};
use test_support::{Served, conformance_fixture_binary, loopback_listener};

use super::harness::{Fixture, args, text};
use super::programs::{node, npm_file};

const TOKEN: &str = "t0k-remote-s3cret";
const SIMPLE_TEXT: &str = "This is a simple text response for testing.";

/// The conformance fixture over streamable HTTP on `port`, answering 401 without the token.
/// The fixture behind a bearer token on loopback port `port` (0: any), bound here and
/// handed to it.
fn http_fixture(port: u16) -> anyhow::Result<(Served, String)> {
    test_support::conformance_fixture_over_http(
        loopback_listener(port)?,
        &["--require-header", &format!("Authorization=Bearer {TOKEN}")],
    )
}

/// supergateway serving the fixture (stdio) as an HTTP+SSE server on `port`.
/// supergateway serving the conformance fixture as HTTP+SSE on `listener` (bound here: see
/// [`Served::start_node_on`]).
fn sse_gateway(listener: std::net::TcpListener) -> anyhow::Result<Served> {
    let port = listener.local_addr()?.port();
    let mut command = Command::new(node()?);
    command.arg(npm_file("supergateway/dist/index.js")?).args([
        "--stdio".to_owned(),
        conformance_fixture_binary()?.display().to_string(),
        "--port".to_owned(),
        port.to_string(),
    ]);
    Ok(Served::start_node_on(command, "Listening on port", listener)?.0)
}

async fn remote_fixture() -> anyhow::Result<Fixture> {
    Fixture::with(|settings| {
        settings
            .env
            .insert("HOSTED_TOKEN".to_owned(), TOKEN.to_owned());
        settings.env_policy = mcp_lifecycle::EnvPolicy::with_extra("HOSTED_TOKEN, MISSING_KEY");
        // Lenient enough to outlast a remote being restarted by the test.
        settings.restart.base = Duration::from_millis(50);
        settings.restart.max = Duration::from_millis(200);
        settings.restart.max_consecutive_failures = 10_000;
    })
    .await
}

fn hosted(url: &str) -> McpServerSpec {
    McpServerSpec::remote("hosted", Transport::StreamableHttp, url)
        .header("Authorization", "Bearer ${HOSTED_TOKEN}")
        .init_timeout(10_000)
        .timeout(10_000)
}

/// `tools/call` forwarded to `server` as the gateway sends a 2026-07-28 client's: the
/// revision and the client's capabilities in the request's `_meta`.
async fn call_as_2026(
    fx: &Fixture,
    server: &str,
    params: CallToolRequestParams,
) -> anyhow::Result<ServerResult> {
    let mut request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let meta = request.get_meta_mut();
    meta.set_protocol_version(ProtocolVersion::V_2026_07_28);
    meta.set_client_capabilities(ClientCapabilities::default());
    Ok(fx
        .manager
        .forward(
            server,
            request,
            mcp_lifecycle::ForwardFor::default(),
            tokio_util::sync::CancellationToken::new(),
        )
        .await?)
}

async fn wait_for_state(fx: &Fixture, server: &str, wanted: ServerState) -> anyhow::Result<()> {
    let mut state = fx.manager.watch_state(server)?;
    tokio::time::timeout(Duration::from_secs(30), state.wait_for(|s| *s == wanted))
        .await
        .map_err(|_| anyhow::anyhow!("{server} never reached {wanted}"))??;
    Ok(())
}

#[tokio::test]
async fn a_streamable_http_server_is_listed_called_and_reached_again_after_a_restart()
-> anyhow::Result<()> {
    let fx = remote_fixture().await?;
    let (mut served, url) = http_fixture(0)?;
    let port = test_support::loopback_port(&url)?;
    fx.add_spec(hosted(&url)).await?;
    let tools = fx.manager.get_tools("hosted").await?;
    assert!(
        tools.iter().any(|t| t.name == "test_simple_text"),
        "{tools:?}"
    );
    let status = fx
        .manager
        .get_all_statuses()
        .into_iter()
        .find(|s| s.name == "hosted")
        .ok_or_else(|| anyhow::anyhow!("no status"))?;
    assert_eq!(
        (status.state, status.pid, status.tool_count),
        (ServerState::Running, None, Some(tools.len()))
    );
    let result = fx
        .manager
        .call_tool("hosted", "test_simple_text", args(json!({})))
        .await?;
    assert_eq!(text(&result), SIMPLE_TEXT);

    served.kill();
    let lost = fx
        .manager
        .call_tool("hosted", "test_simple_text", args(json!({})))
        .await;
    let error = lost
        .err()
        .ok_or_else(|| anyhow::anyhow!("a call to a dead server passed"))?;
    assert!(!format!("{error} {error:?}").contains(TOKEN), "{error:?}");
    // The call could not be delivered, so it was sent again on a new connection, which
    // could not be made: the error says so, naming the server and its URL.
    assert!(
        matches!(&error, LifecycleError::Connect { server, url: shown, .. } if server == "hosted" && *shown == url),
        "{error:?}"
    );

    let (_served, again) = http_fixture(port)?;
    assert_eq!(again, url);
    // That failed connect backs off lazy use, as any failed start does (`BackingOff`); an
    // explicit start does not wait, and the call then goes through.
    fx.manager.start_server("hosted").await?;
    let result = fx
        .manager
        .call_tool("hosted", "test_simple_text", args(json!({})))
        .await?;
    assert_eq!(text(&result), SIMPLE_TEXT);
    Ok(())
}

#[tokio::test]
async fn an_always_on_remote_found_dead_by_health_is_reconnected_and_counted() -> anyhow::Result<()>
{
    let fx = remote_fixture().await?;
    let (mut served, url) = http_fixture(0)?;
    let port = test_support::loopback_port(&url)?;
    fx.add_spec(hosted(&url).always_on(true)).await?;
    fx.manager.start_server("hosted").await?;
    assert_eq!(fx.manager.check_health("hosted").await?, Health::Healthy);
    served.kill();
    assert_eq!(fx.manager.check_health("hosted").await?, Health::Dead);
    let (_served, _) = http_fixture(port)?;
    wait_for_state(&fx, "hosted", ServerState::Running).await?;
    let status = fx
        .manager
        .get_all_statuses()
        .into_iter()
        .find(|s| s.name == "hosted")
        .ok_or_else(|| anyhow::anyhow!("no status"))?;
    assert!(status.restarts >= 1, "{status:?}");
    let result = fx
        .manager
        .call_tool("hosted", "test_simple_text", args(json!({})))
        .await?;
    assert_eq!(text(&result), SIMPLE_TEXT);
    Ok(())
}

#[tokio::test]
async fn a_refused_token_fails_the_connect_naming_server_and_url_but_not_the_token()
-> anyhow::Result<()> {
    let fx = remote_fixture().await?;
    let (_served, url) = http_fixture(0)?;
    let wrong = "wr0ng-t0ken-value";
    fx.add_spec(
        McpServerSpec::remote(
            "hosted",
            Transport::StreamableHttp,
            format!("{url}?key=q5ecret"),
        )
        .header("Authorization", format!("Bearer {wrong}"))
        .init_timeout(10_000),
    )
    .await?;
    let error = fx
        .manager
        .get_tools("hosted")
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("a refused token connected"))?;
    let shown = format!("{error} {error:?}");
    assert!(
        matches!(&error, LifecycleError::Connect { server, url: shown_url, transport: "streamable-http", .. }
            if server == "hosted" && *shown_url == format!("{url}?…")),
        "{error:?}"
    );
    assert!(shown.contains("401"), "the refusal is said: {error}");
    for secret in [wrong, "q5ecret"] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
    Ok(())
}

#[tokio::test]
async fn an_unset_header_variable_is_not_configured() -> anyhow::Result<()> {
    let fx = remote_fixture().await?;
    fx.add_spec(
        McpServerSpec::remote("hosted", Transport::Sse, "http://127.0.0.1:9/sse")
            .header("Authorization", "Bearer ${MISSING_KEY}"),
    )
    .await?;
    let error = fx.manager.get_tools("hosted").await.err();
    assert!(
        matches!(&error, Some(LifecycleError::NotConfigured { variable, .. }) if variable == "MISSING_KEY"),
        "{error:?}"
    );
    Ok(())
}

#[tokio::test]
async fn an_sse_server_through_supergateway_is_called_lost_and_reconnected() -> anyhow::Result<()> {
    test_skip::need!(test_skip::needs::npm_packages());
    let fx = remote_fixture().await?;
    let listener = loopback_listener(0)?;
    let port = listener.local_addr()?.port();
    let mut gateway = sse_gateway(listener)?;
    let url = format!("http://127.0.0.1:{port}/sse");
    fx.add_spec(
        McpServerSpec::remote("legacy", Transport::Sse, &url)
            .init_timeout(10_000)
            .timeout(10_000),
    )
    .await?;
    let tools = fx.manager.get_tools("legacy").await?;
    assert!(
        tools.iter().any(|t| t.name == "test_simple_text"),
        "{tools:?}"
    );
    let result = fx
        .manager
        .call_tool("legacy", "test_simple_text", args(json!({})))
        .await?;
    assert_eq!(text(&result), SIMPLE_TEXT);

    // The event stream ends with the gateway: the connection is lost, as a child's exit.
    gateway.kill();
    wait_for_state(&fx, "legacy", ServerState::Error).await?;
    let last = fx.manager.last_error("legacy")?;
    assert!(
        matches!(&last, Some(LifecycleError::Disconnected { url: shown, .. }) if *shown == url),
        "{last:?}"
    );

    let _gateway = sse_gateway(loopback_listener(port)?)?;
    let result = fx
        .manager
        .call_tool("legacy", "test_simple_text", args(json!({})))
        .await?;
    assert_eq!(text(&result), SIMPLE_TEXT);
    Ok(())
}

/// server-everything (npm) in its streamable-HTTP mode: restarted, it does not know the old
/// session and answers 400 rather than the spec's 404, so the call cannot be delivered; the
/// manager connects again and sends it once more.
#[tokio::test]
async fn a_call_to_a_restarted_server_everything_is_sent_again_on_a_new_connection()
-> anyhow::Result<()> {
    test_skip::need!(test_skip::needs::npm_packages());
    let everything = |listener: std::net::TcpListener| -> anyhow::Result<Served> {
        let port = listener.local_addr()?.port();
        let mut command = Command::new(node()?);
        command
            .arg(npm_file(
                "@modelcontextprotocol/server-everything/dist/index.js",
            )?)
            .arg("streamableHttp")
            .env("PORT", port.to_string());
        Ok(Served::start_node_on(command, "listening on port", listener)?.0)
    };
    let fx = remote_fixture().await?;
    let listener = loopback_listener(0)?;
    let port = listener.local_addr()?.port();
    let mut served = everything(listener)?;
    fx.add_spec(
        McpServerSpec::remote(
            "everything",
            Transport::StreamableHttp,
            format!("http://127.0.0.1:{port}/mcp"),
        )
        .timeout(10_000),
    )
    .await?;
    let echo = |message: &str| args(json!({"message": message}));
    let result = fx
        .manager
        .call_tool("everything", "echo", echo("one"))
        .await?;
    assert_eq!(text(&result), "Echo: one");
    served.kill();
    let _served = everything(loopback_listener(port)?)?;
    let result = fx
        .manager
        .call_tool("everything", "echo", echo("two"))
        .await?;
    assert_eq!(text(&result), "Echo: two");
    // A request that names 2026-07-28, to a server that does not speak it (the TypeScript
    // SDK's): no link opens, and it goes in the connection's revision, answered as usual.
    let params =
        CallToolRequestParams::new("echo").with_arguments(echo("three").unwrap_or_default());
    let answer = call_as_2026(&fx, "everything", params).await?;
    let ServerResult::CallToolResult(result) = answer else {
        anyhow::bail!("not a tool result: {answer:?}");
    };
    assert_eq!(text(&result), "Echo: three");
    Ok(())
}

#[tokio::test]
async fn a_remote_server_s_2026_requests_go_on_a_link_of_their_own_with_or_without_sessions()
-> anyhow::Result<()> {
    let fx = remote_fixture().await?;
    let (_served, url) =
        test_support::conformance_fixture_over_http(loopback_listener(0)?, &["--stateless-only"])?;
    fx.add_spec(
        McpServerSpec::remote("stateless", Transport::StreamableHttp, &url)
            .init_timeout(10_000)
            .timeout(10_000),
    )
    .await?;
    // The 2025-11-25 handshake works without a session: lists and calls as usual.
    let tools = fx.manager.get_tools("stateless").await?;
    assert!(
        tools.iter().any(|t| t.name == "test_simple_text"),
        "{tools:?}"
    );
    let result = fx
        .manager
        .call_tool("stateless", "test_simple_text", args(json!({})))
        .await?;
    assert_eq!(text(&result), SIMPLE_TEXT);
    // A request that names 2026-07-28 in its `_meta` (as the gateway sends a 2026-07-28
    // client's) goes on the server's 2026-07-28 link (opened with `server/discover` when
    // first needed), so the server may answer it with an InputRequiredResult, which comes
    // back as it is. The shared connection stays as it was: rmcp's HTTP client would have
    // taken the named revision as its own, and the next plain call still works. With
    // sessions and without.
    let (_with_sessions, session_url) = http_fixture(0)?;
    fx.add_spec(hosted(&session_url)).await?;
    for server in ["stateless", "hosted"] {
        for round in 0..2 {
            let params = CallToolRequestParams::new("test_input_required_result_elicitation");
            let answer = call_as_2026(&fx, server, params).await?;
            let ServerResult::InputRequiredResult(asked) = answer else {
                anyhow::bail!("{server} ({round}): not an InputRequiredResult: {answer:?}");
            };
            let asked = serde_json::to_value(&asked)?;
            assert_eq!(
                asked["inputRequests"]["user_name"]["method"], "elicitation/create",
                "{server}: {asked}"
            );
            let after = fx
                .manager
                .call_tool(server, "test_simple_text", args(json!({})))
                .await?;
            assert_eq!(text(&after), SIMPLE_TEXT, "{server}: the next plain call");
        }
    }
    Ok(())
}
