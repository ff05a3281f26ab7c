//! `/mcp`'s direct path (`mcp_gateway::direct`): a session's plain `tools/call` is answered
//! from the HTTP layer as plain JSON, with the message rmcp's path answers; everything else,
//! and every refusal, is rmcp's.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use mcp_gateway::{BotKeys, GatewayConfig, KeyPolicy, mcp_router};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::gateway::forge;
use super::harness::{FakeBackend, FakeBot, Served};

const KEY: &str = "forge-key";
const BOTH: &str = "application/json, text/event-stream";
/// Accepted by rmcp too, but not the plain form the direct path takes.
const WEIGHTED: &str = "text/event-stream, application/json;q=0.9";

fn keys() -> KeyPolicy {
    KeyPolicy::Keys(BotKeys::default().with("forge", KEY))
}

/// An answer: status, whether it was plain JSON (else an event stream), its JSON-RPC
/// message (`Null` when the stream carried none) and its length.
#[derive(Debug, PartialEq)]
struct Answer {
    status: u16,
    plain: bool,
    message: Value,
    length: usize,
}

async fn answer(response: reqwest::Response) -> anyhow::Result<Answer> {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let text = response.text().await?;
    let length = text.len();
    let message = if content_type.starts_with("text/event-stream") {
        text.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .find(|message| message.get("id").is_some())
            .unwrap_or(Value::Null)
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    Ok(Answer {
        status,
        plain: content_type == "application/json",
        message,
        length,
    })
}

/// One session of the gateway at `url`, opened by a client that declared `capabilities`.
struct Session {
    client: reqwest::Client,
    url: String,
    id: String,
}

impl Session {
    async fn open(url: &str, capabilities: Value) -> anyhow::Result<Self> {
        let client = reqwest::Client::new();
        let opened = client
            .post(url)
            .header("accept", BOTH)
            .bearer_auth(KEY)
            .json(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": capabilities,
                "clientInfo": {"name": "direct-test", "version": "0"}}}),
            )
            .send()
            .await?;
        let id = opened
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .context("no session")?
            .to_owned();
        let session = Self {
            client,
            url: url.to_owned(),
            id,
        };
        let initialized = session
            .post(
                BOTH,
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            )
            .await?;
        anyhow::ensure!(initialized.status == 202, "{initialized:?}");
        Ok(session)
    }

    fn request(&self, method: reqwest::Method, accept: &str) -> reqwest::RequestBuilder {
        self.request_as(KEY, method, accept, "2025-11-25")
    }

    fn request_as(
        &self,
        key: &str,
        method: reqwest::Method,
        accept: &str,
        revision: &str,
    ) -> reqwest::RequestBuilder {
        self.client
            .request(method, &self.url)
            .header("accept", accept)
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", revision)
            .bearer_auth(key)
    }

    async fn post(&self, accept: &str, body: &Value) -> anyhow::Result<Answer> {
        answer(
            self.request(reqwest::Method::POST, accept)
                .json(body)
                .send()
                .await?,
        )
        .await
    }

    async fn delete(&self) -> anyhow::Result<u16> {
        let response = self.request(reqwest::Method::DELETE, BOTH).send().await?;
        Ok(response.status().as_u16())
    }
}

fn call(id: Value, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
}

#[tokio::test]
async fn a_plain_call_gets_the_message_rmcp_answers_as_plain_json() -> anyhow::Result<()> {
    let backend = FakeBackend::new([("forge", forge())]);
    let served = Served::start(backend, keys(), 0).await?;
    let session = Session::open(&served.url, json!({})).await?;
    let cases = [
        call(
            json!(7),
            "fs__read",
            json!({"text": "héllo \u{1F600} \"quoted\"\n"}),
        ),
        call(
            json!("a-string-id"),
            "fs__read",
            json!({"nested": {"list": [1, 2.5, null]}}),
        ),
        call(json!(9), "forge-bash__fail", json!({})),
        // Not the bot's tool, and not a tool at all: the same JSON-RPC error.
        call(json!(10), "fs__write", json!({})),
        call(json!(11), "nope__nothing", json!({})),
        // No arguments at all.
        json!({"jsonrpc": "2.0", "id": 12, "method": "tools/call",
               "params": {"name": "fs__read"}}),
    ];
    for body in cases {
        let direct = session.post(BOTH, &body).await?;
        let through_rmcp = session.post(WEIGHTED, &body).await?;
        assert_eq!(
            (direct.status, direct.plain),
            (200, true),
            "{body}: {direct:?}"
        );
        assert_eq!(
            (through_rmcp.status, through_rmcp.plain),
            (200, false),
            "{body}: {through_rmcp:?}"
        );
        assert_eq!(direct.message, through_rmcp.message, "{body}");
        assert_eq!(direct.message["id"], body["id"]);
    }
    served.stop().await;
    Ok(())
}

#[tokio::test]
async fn what_the_direct_path_does_not_take_is_answered_by_rmcp() -> anyhow::Result<()> {
    let backend = FakeBackend::new([("forge", forge())]);
    let served = Served::start(backend, keys(), 0).await?;
    let plain = Session::open(&served.url, json!({})).await?;
    let asking = Session::open(&served.url, json!({"elicitation": {}})).await?;
    let read = call(json!(1), "fs__read", json!({"text": "hi"}));
    let with_progress = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "fs__read", "arguments": {}, "_meta": {"progressToken": "p"}}});
    let unsized_body = read.to_string();
    let cases: Vec<(&str, reqwest::RequestBuilder)> = vec![
        (
            "a progress token",
            plain
                .request(reqwest::Method::POST, BOTH)
                .json(&with_progress),
        ),
        (
            "a client that takes elicitation",
            asking.request(reqwest::Method::POST, BOTH).json(&read),
        ),
        (
            "a body without a length",
            plain
                .request(reqwest::Method::POST, BOTH)
                .header("content-type", "application/json")
                .body(reqwest::Body::wrap_stream(futures::stream::once(
                    async move { Ok::<_, std::io::Error>(unsized_body) },
                ))),
        ),
    ];
    for (case, request) in cases {
        let answered = answer(request.send().await?).await?;
        assert_eq!(
            (answered.status, answered.plain),
            (200, false),
            "{case}: {answered:?}"
        );
        assert!(
            answered.message["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|text| text.contains("\"tool\":\"read\"")),
            "{case}: {answered:?}"
        );
    }
    // A charset on the JSON content type is still plain.
    let charset = plain
        .request(reqwest::Method::POST, BOTH)
        .header("content-type", "application/json; charset=utf-8")
        .body(read.to_string())
        .send()
        .await?;
    assert_eq!(answer(charset).await?.plain, true);
    served.stop().await;
    Ok(())
}

#[tokio::test]
async fn refusals_are_rmcps_and_the_layers() -> anyhow::Result<()> {
    let backend = FakeBackend::new([("forge", forge())]);
    let served = Served::start(
        backend.clone(),
        KeyPolicy::Keys(
            BotKeys::default()
                .with("forge", KEY)
                .with("other", "other-key"),
        ),
        0,
    )
    .await?;
    let session = Session::open(&served.url, json!({})).await?;
    let read = call(json!(1), "fs__read", json!({}));
    let status = |request: reqwest::RequestBuilder| async move {
        anyhow::Ok(request.send().await?.status().as_u16())
    };
    // DNS rebinding: a Host that is not loopback.
    let rebound = session
        .request(reqwest::Method::POST, BOTH)
        .header("host", "attacker.example")
        .json(&read);
    assert_eq!(status(rebound).await?, 403);
    // Another bot's key on this session.
    let foreign = session
        .request_as("other-key", reqwest::Method::POST, BOTH, "2025-11-25")
        .json(&read);
    assert_eq!(status(foreign).await?, 403);
    // A session nobody opened.
    let unknown = session
        .client
        .post(&session.url)
        .header("accept", BOTH)
        .header("mcp-session-id", "no-such-session")
        .bearer_auth(KEY)
        .json(&read);
    assert_eq!(status(unknown).await?, 404);
    // An unsupported revision header.
    let revision = session
        .request_as(KEY, reqwest::Method::POST, BOTH, "1999-01-01")
        .json(&read);
    assert_eq!(status(revision).await?, 400);
    assert_eq!(backend.calls.lock().map(|c| c.len()).unwrap_or(99), 0);
    // Closed: its calls are refused as rmcp refuses them.
    assert_eq!(session.post(BOTH, &read).await?.status, 200);
    assert_eq!(session.delete().await?, 202);
    assert_eq!(session.post(BOTH, &read).await?.status, 404);
    served.stop().await;
    Ok(())
}

/// Start a `fs__wait` call of id 5 and wait until the backend has it.
async fn waiting_call(
    backend: &FakeBackend,
    session: &Session,
) -> anyhow::Result<tokio::task::JoinHandle<anyhow::Result<Answer>>> {
    let request =
        session
            .request(reqwest::Method::POST, BOTH)
            .json(&call(json!(5), "fs__wait", json!({})));
    let answering = tokio::spawn(async move { answer(request.send().await?).await });
    tokio::time::timeout(Duration::from_secs(10), backend.waiting.notified())
        .await
        .context("the call never reached the backend")?;
    Ok(answering)
}

fn waiting() -> FakeBot {
    forge().tool("fs", "wait", true)
}

#[tokio::test]
async fn a_cancelled_call_is_cancelled_and_not_answered() -> anyhow::Result<()> {
    // The cancellation in the plain form the direct path reads, and in one it leaves to rmcp.
    for accept in [BOTH, WEIGHTED] {
        let backend = FakeBackend::new([("forge", waiting())]);
        let served = Served::start(backend.clone(), keys(), 0).await?;
        let session = Session::open(&served.url, json!({})).await?;
        let answering = waiting_call(&backend, &session).await?;
        let cancelled = session
            .post(
                accept,
                &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 5, "reason": "changed my mind"}}),
            )
            .await?;
        assert_eq!(cancelled.status, 202, "{accept}");
        let answered = tokio::time::timeout(Duration::from_secs(10), answering).await???;
        // An event stream with nothing in it: the direct path's (rmcp's would carry its
        // priming event).
        assert_eq!(
            answered,
            Answer {
                status: 200,
                plain: false,
                message: Value::Null,
                length: 0,
            },
            "{accept}"
        );
        assert_eq!(backend.cancelled.load(Ordering::SeqCst), 1, "{accept}");
        // The session goes on, and the id may be used again.
        let read = session
            .post(BOTH, &call(json!(5), "fs__read", json!({})))
            .await?;
        assert_eq!((read.status, read.plain), (200, true), "{accept}");
        served.stop().await;
    }
    Ok(())
}

#[tokio::test]
async fn closing_a_session_cancels_its_calls() -> anyhow::Result<()> {
    let backend = FakeBackend::new([("forge", waiting())]);
    let served = Served::start(backend.clone(), keys(), 0).await?;
    let session = Session::open(&served.url, json!({})).await?;
    let answering = waiting_call(&backend, &session).await?;
    assert_eq!(session.delete().await?, 202);
    let answered = tokio::time::timeout(Duration::from_secs(10), answering).await???;
    assert_eq!((answered.message, answered.length), (Value::Null, 0));
    assert_eq!(backend.cancelled.load(Ordering::SeqCst), 1);
    served.stop().await;
    Ok(())
}

#[tokio::test]
async fn calls_served_directly_keep_their_session_open() -> anyhow::Result<()> {
    // rmcp closes a session its worker heard nothing from for `session_timeout`; calls served
    // directly never reach the worker, so the direct path tells it.
    let backend = FakeBackend::new([("forge", forge())]);
    let config = GatewayConfig {
        session_timeout: Duration::from_secs(3),
        ..GatewayConfig::default()
    };
    let served = Served::serve(
        mcp_router(backend, keys(), &config),
        0,
        config.shutdown.clone(),
    )
    .await?;
    let session = Session::open(&served.url, json!({})).await?;
    let until = Instant::now() + Duration::from_millis(4500);
    let mut id = 100;
    while Instant::now() < until {
        id += 1;
        let read = session
            .post(BOTH, &call(json!(id), "fs__read", json!({})))
            .await?;
        assert_eq!((read.status, read.plain), (200, true), "call {id}");
    }
    // Past the timeout since the last message rmcp itself handled: still open.
    let listed = session
        .post(
            BOTH,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await?;
    assert_eq!(listed.status, 200, "{listed:?}");
    served.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_session_used_only_by_direct_calls_still_expires() -> anyhow::Result<()> {
    let backend = FakeBackend::new([("forge", forge())]);
    let config = GatewayConfig {
        // Long enough that a loaded machine does not expire it between the calls.
        session_timeout: Duration::from_millis(1000),
        ..GatewayConfig::default()
    };
    let served = Served::serve(
        mcp_router(backend.clone(), keys(), &config),
        0,
        config.shutdown.clone(),
    )
    .await?;
    let session = Session::open(&served.url, json!({})).await?;
    following(&backend).await?;
    for id in 1..=3 {
        let read = session
            .post(BOTH, &call(json!(id), "fs__read", json!({})))
            .await?;
        assert_eq!((read.status, read.plain), (200, true));
    }
    // Readiness: rmcp let the idle session go when its followers are gone.
    tokio::time::timeout(Duration::from_secs(10), backend.events.closed())
        .await
        .context("the session never expired")?;
    // Refused (404 once rmcp's manager forgot it, 500 just before), never served.
    let read = session
        .post(BOTH, &call(json!(4), "fs__read", json!({})))
        .await?;
    assert!(
        read.status >= 400 && read.message.get("result").is_none(),
        "{read:?}"
    );
    served.stop().await;
    Ok(())
}

/// Wait until the session's two followers (fs, forge-bash) have subscribed.
async fn following(backend: &FakeBackend) -> anyhow::Result<()> {
    let permits = tokio::time::timeout(Duration::from_secs(10), backend.subscribed.acquire_many(2))
        .await
        .context("the session never followed its servers")??;
    permits.forget();
    Ok(())
}

#[tokio::test]
async fn a_closed_session_lets_go_of_its_servers_notifications() -> anyhow::Result<()> {
    // The session's followers (one per server, for its notifications) end when rmcp lets the
    // session go: they hold copies of the session's server that do not keep it open.
    let backend = FakeBackend::new([("forge", forge())]);
    let served = Served::start(backend.clone(), keys(), 0).await?;
    let session = Session::open(&served.url, json!({})).await?;
    following(&backend).await?;
    assert_eq!(backend.events.receiver_count(), 2);
    assert_eq!(session.delete().await?, 202);
    tokio::time::timeout(Duration::from_secs(10), backend.events.closed())
        .await
        .context("a closed session still follows its servers")?;
    served.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_however_it_is_sent() -> anyhow::Result<()> {
    let backend = FakeBackend::new([("forge", forge())]);
    let config = GatewayConfig {
        max_body_bytes: 2048,
        ..GatewayConfig::default()
    };
    let served = Served::serve(
        mcp_router(backend, keys(), &config),
        0,
        config.shutdown.clone(),
    )
    .await?;
    let session = Session::open(&served.url, json!({})).await?;
    let long = "x".repeat(4096);
    // In chunks, no length declared: the direct path (a call) and rmcp (a list) both read up
    // to the limit and refuse the rest.
    let chunked = |body: Value| {
        let bytes = serde_json::to_vec(&body).expect("JSON");
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
            bytes.chunks(512).map(|c| Ok(c.to_vec())).collect();
        reqwest::Body::wrap_stream(futures::stream::iter(chunks))
    };
    let cases = [
        (call(json!(1), "fs__read", json!({"path": long})), 413),
        (
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": {"pad": long}}}),
            413,
        ),
        (call(json!(3), "fs__read", json!({})), 200),
    ];
    for (body, status) in cases {
        let sent = session
            .request(reqwest::Method::POST, BOTH)
            .header("content-type", "application/json")
            .body(chunked(body.clone()))
            .send()
            .await?;
        assert_eq!(sent.status().as_u16(), status, "request {}", body["id"]);
    }
    served.stop().await;
    Ok(())
}
