//! Deferred tool loading through the chat route: `tool_search` over the cached catalog,
//! found tools offered from the next step, no server started by a search; eager vs deferred
//! tool-definition tokens; `GET /api/tools/search`; `GET /metrics` after a turn.

use anyhow::Context as _;
use axum::http::StatusCode;
use mcp_lifecycle::ServerState;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use store::{BindingSpec, BotSpec, ToolLoadingMode};
use test_support::{FakeReply, FakeToolCall, RecordedRequest, Wire};
use tower::ServiceExt;

use super::harness::{Fixture, bounded, chat_body, model, request};

/// The tool names a provider request offered (OpenAI wire).
fn offered(request: &RecordedRequest) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

fn state_of(fx: &Fixture, server: &str) -> Option<ServerState> {
    fx.manager
        .get_all_statuses()
        .into_iter()
        .find(|status| status.name == server)
        .map(|status| status.state)
}

/// A bot bound to `server` with `mode`, pinning `pinned`.
async fn bot_with(
    fx: &Fixture,
    name: &str,
    mode: ToolLoadingMode,
    server: &store::McpServer,
    pinned: &[&str],
) -> anyhow::Result<store::Bot> {
    let mut spec = BotSpec::new(name, model(Wire::OpenAi));
    spec.tool_loading_mode = mode;
    let bot = fx.store.create_bot(&spec).await?;
    let binding = BindingSpec {
        pinned_tools: pinned.iter().map(|t| (*t).to_owned()).collect(),
        ..BindingSpec::default()
    };
    fx.store.bind(&bot.id, &server.id, &binding).await?;
    Ok(bot)
}

/// The fake server with its tool list cached (started once, listed, stopped).
async fn warm_fake_server(fx: &Fixture) -> anyhow::Result<store::McpServer> {
    let fake = fx
        .add_fake_server("fake", |s| s.env("FAKE_MCP_TOOLS", "add,subtract,multiply"))
        .await?;
    bounded("the warm-up listing", fx.manager.get_tools("fake")).await??;
    bounded("the warm-up stop", fx.manager.stop_server("fake")).await??;
    assert_eq!(state_of(fx, "fake"), Some(ServerState::Stopped));
    Ok(fake)
}

fn json_chat(bot: &str, text: &str) -> anyhow::Result<axum::http::Request<axum::body::Body>> {
    let mut chat = request("POST", "/api/ai/chat", Some(&chat_body(bot, text)));
    chat.headers_mut()
        .insert("accept", "application/json".parse()?);
    Ok(chat)
}

/// With the embedding model, a query that shares no word with the tool (a paraphrase) still
/// finds it, and the model calls it in the next step.
#[tokio::test]
async fn with_the_model_a_paraphrased_search_finds_the_tool_and_the_next_step_calls_it()
-> anyhow::Result<()> {
    test_skip::need!(test_skip::needs::embedding_model());
    let query = "print what the notes document says";
    let fx = Fixture::with_options(
        [
            FakeReply::tool_calls([FakeToolCall::new(
                "s1",
                "tool_search",
                [&*json!({"query": query, "max_results": 3}).to_string()],
            )]),
            FakeReply::tool_calls([FakeToolCall::new(
                "c1",
                "fake__read_text_file",
                [r#"{"path":"notes.md"}"#],
            )]),
            FakeReply::text(["done"]),
        ],
        super::harness::Options {
            embedding: true,
            ..Default::default()
        },
    )
    .await?;
    // The fake server answers with the real filesystem server's captured tools.
    let capture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tool-search/eval/servers/filesystem.json"
    );
    let fake = fx
        .add_fake_server("fake", |s| s.env("FAKE_MCP_TOOLS_FILE", capture))
        .await?;
    bounded("the warm-up listing", fx.manager.get_tools("fake")).await??;
    bounded("the warm-up stop", fx.manager.stop_server("fake")).await??;
    let tools: Vec<Value> =
        serde_json::from_str::<Value>(&std::fs::read_to_string(capture)?)?["tools"]
            .as_array()
            .context("tools")?
            .clone();
    let read = tools
        .iter()
        .find(|t| t["name"] == "read_text_file")
        .context("read_text_file")?;
    let read = tool_search::ToolDoc::from_mcp("fake", read, "");
    assert!(
        tool_search::eval::shares_no_word(query, &[&read]),
        "not a paraphrase"
    );
    // Only the captured tools (not the fake's own echo, env, …).
    let mut spec = BotSpec::new("reader", model(Wire::OpenAi));
    spec.tool_loading_mode = ToolLoadingMode::Deferred;
    let bot = fx.store.create_bot(&spec).await?;
    let binding = BindingSpec {
        tool_filter: tools
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect(),
        ..BindingSpec::default()
    };
    fx.store.bind(&bot.id, &fake.id, &binding).await?;
    let reply = fx
        .send(request(
            "POST",
            "/api/ai/chat",
            Some(&chat_body(&bot.name, query)),
        ))
        .await?;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let chunks = reply.chunks()?;
    let requests = fx.llm.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        offered(&requests[1]).contains(&"fake__read_text_file".to_owned()),
        "{:?}",
        offered(&requests[1])
    );
    let outputs: Vec<&Value> = chunks
        .iter()
        .filter(|c| c["type"] == "tool-output-available")
        .map(|c| &c["output"])
        .collect();
    assert_eq!(outputs.len(), 2, "{chunks:?}");
    let found: Value = serde_json::from_str(outputs[0].as_str().context("a text output")?)?;
    let names: Vec<&str> = found["tools"]
        .as_array()
        .context("tools")?
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"fake__read_text_file"), "{names:?}");
    assert_eq!(outputs[1], &json!(r#"{"path":"notes.md"}"#));
    assert_eq!(state_of(&fx, "fake"), Some(ServerState::Running));
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn deferred_bot_finds_a_tool_by_search_and_calls_it_in_the_next_step() -> anyhow::Result<()> {
    let fx = Fixture::new([
        FakeReply::tool_calls([FakeToolCall::new(
            "s1",
            "tool_search",
            [r#"{"query": "echo", "max_results": 1}"#],
        )]),
        FakeReply::tool_calls([FakeToolCall::new("c1", "fake__echo", [r#"{"text":"hi"}"#])]),
        FakeReply::text(["done"]),
    ])
    .await?;
    let fake = warm_fake_server(&fx).await?;
    let bot = bot_with(&fx, "finder", ToolLoadingMode::Deferred, &fake, &[]).await?;
    let reply = fx
        .send(request(
            "POST",
            "/api/ai/chat",
            Some(&chat_body(&bot.name, "echo hi")),
        ))
        .await?;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let chunks = reply.chunks()?;

    let requests = fx.llm.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(offered(&requests[0]), ["current_time", "tool_search"]);
    assert_eq!(
        offered(&requests[1]),
        ["current_time", "tool_search", "fake__echo"]
    );
    let outputs: Vec<(&str, &Value)> = chunks
        .iter()
        .filter(|c| c["type"] == "tool-output-available")
        .map(|c| (c["toolCallId"].as_str().unwrap_or(""), &c["output"]))
        .collect();
    assert_eq!(outputs.len(), 2, "{chunks:?}");
    let found: Value = serde_json::from_str(outputs[0].1.as_str().context("a text output")?)?;
    assert_eq!(found["tools"][0]["name"], "fake__echo");
    assert_eq!(outputs[1], ("c1", &json!("hi")));

    let finish = chunks.last().context("a finish chunk")?;
    let metadata = &finish["messageMetadata"];
    assert_eq!(metadata["toolLoading"], "deferred");
    let per_step: Vec<u64> = serde_json::from_value(metadata["toolDefinitionTokens"].clone())?;
    assert_eq!(per_step.len(), 3, "{metadata}");
    assert!(per_step[0] > 0 && per_step[1] > per_step[0], "{per_step:?}");
    // The echo call started the server (lazy start on call).
    assert_eq!(state_of(&fx, "fake"), Some(ServerState::Running));
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_search_never_starts_a_stopped_server() -> anyhow::Result<()> {
    // Step 2 hangs: while it does, the search of step 1 is complete.
    let fx = Fixture::new([
        FakeReply::tool_calls([FakeToolCall::new(
            "s1",
            "tool_search",
            [r#"{"query": "echo", "mcp_server": "fake"}"#],
        )]),
        FakeReply::hang(),
    ])
    .await?;
    let fake = warm_fake_server(&fx).await?;
    let bot = bot_with(&fx, "finder", ToolLoadingMode::Deferred, &fake, &[]).await?;
    let app = fx.app.clone();
    let chat = request(
        "POST",
        "/api/ai/chat",
        Some(&chat_body(&bot.name, "echo hi")),
    );
    let turn = tokio::spawn(async move {
        let response = app.oneshot(chat).await?;
        axum::body::to_bytes(response.into_body(), usize::MAX).await?;
        anyhow::Ok(())
    });
    bounded("the second provider request", fx.llm.wait_for_requests(2)).await?;
    let requests = fx.llm.requests();
    assert!(offered(&requests[1]).contains(&"fake__echo".to_owned()));
    assert_eq!(state_of(&fx, "fake"), Some(ServerState::Stopped));
    turn.abort();
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn eager_offers_every_tool_and_deferred_only_search_and_pinned() -> anyhow::Result<()> {
    let fx = Fixture::new([
        FakeReply::text(["eager"]),
        FakeReply::text(["deferred"]),
        FakeReply::text(["pinned"]),
    ])
    .await?;
    let fake = warm_fake_server(&fx).await?;
    let cases = [
        (ToolLoadingMode::Eager, &[][..], "eager"),
        (ToolLoadingMode::Deferred, &[][..], "deferred"),
        (ToolLoadingMode::Deferred, &["echo"][..], "deferred"),
    ];
    let mut answers = Vec::new();
    for (index, (mode, pinned, expected_mode)) in cases.into_iter().enumerate() {
        let bot = bot_with(&fx, &format!("bot-{index}"), mode, &fake, pinned).await?;
        let reply = fx.send(json_chat(&bot.name, "hi")?).await?;
        assert_eq!(reply.status, 200, "{}", reply.body);
        let answer = reply.json()?;
        assert_eq!(answer["toolLoading"], expected_mode, "{answer}");
        answers.push(answer);
    }
    let requests = fx.llm.requests();
    let mut eager = offered(&requests[0]);
    eager.sort();
    assert_eq!(
        eager,
        [
            "current_time",
            "fake__add",
            "fake__change_tools",
            "fake__echo",
            "fake__env",
            "fake__multiply",
            "fake__sleep",
            "fake__subtract",
        ]
    );
    assert_eq!(offered(&requests[1]), ["current_time", "tool_search"]);
    assert_eq!(
        offered(&requests[2]),
        ["current_time", "tool_search", "fake__echo"]
    );
    let first_step = |answer: &Value| answer["toolDefinitionTokens"][0].as_u64().unwrap_or(0);
    let all_tools = answers[0]["eagerToolDefinitionTokens"]
        .as_u64()
        .unwrap_or(0);
    assert_eq!(first_step(&answers[0]), all_tools);
    assert_eq!(answers[1]["eagerToolDefinitionTokens"], all_tools);
    assert!(
        0 < first_step(&answers[1]) && first_step(&answers[1]) < first_step(&answers[2]),
        "{answers:?}"
    );
    assert_ne!(first_step(&answers[1]), all_tools);
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn auto_defers_past_the_configured_threshold() -> anyhow::Result<()> {
    let fx = Fixture::new([FakeReply::text(["a"]), FakeReply::text(["b"])]).await?;
    let fake = warm_fake_server(&fx).await?;
    let bot = bot_with(&fx, "auto", ToolLoadingMode::Auto, &fake, &[]).await?;
    let reply = fx.send(json_chat(&bot.name, "hi")?).await?;
    assert_eq!(reply.json()?["toolLoading"], "eager", "{}", reply.body);

    let config = http_api::ApiConfig {
        auto_threshold_tokens: 10,
        ..(*fx.state.config).clone()
    };
    let app = http_api::app(http_api::AppState {
        config: std::sync::Arc::new(config),
        ..fx.state.clone()
    });
    let response = bounded("the answer", app.oneshot(json_chat(&bot.name, "hi")?)).await??;
    let body = axum::body::to_bytes(response.into_body(), usize::MAX).await?;
    let answer: Value = serde_json::from_slice(&body)?;
    assert_eq!(answer["toolLoading"], "deferred", "{answer}");
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn tool_search_route_ranks_the_cached_catalog_without_starting_servers() -> anyhow::Result<()>
{
    let fx = Fixture::new([]).await?;
    let fake = warm_fake_server(&fx).await?;
    let bot = bot_with(&fx, "limited", ToolLoadingMode::Deferred, &fake, &[]).await?;
    fx.store
        .bind(
            &bot.id,
            &fake.id,
            &BindingSpec {
                tool_filter: vec!["add".into()],
                ..BindingSpec::default()
            },
        )
        .await?;

    let reply = fx
        .send(request("GET", "/api/tools/search?q=echo&limit=2", None))
        .await?;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let answer = reply.json()?;
    assert_eq!(answer["query"], "echo");
    assert_eq!(answer["truncated"], false);
    let first = &answer["results"][0];
    assert_eq!(
        (
            &first["server"],
            &first["tool"],
            &first["qualifiedName"],
            &first["tier"]
        ),
        (
            &json!("fake"),
            &json!("echo"),
            &json!("fake__echo"),
            // A plain word names no tool (only an identifier does): first by its ranking.
            &json!("ranked")
        )
    );
    assert!(first["score"].as_f64().unwrap_or(0.0) > 0.0);
    assert!(answer["results"].as_array().map_or(0, Vec::len) <= 2);

    let other_server = fx
        .send(request(
            "GET",
            "/api/tools/search?q=echo&server=other",
            None,
        ))
        .await?
        .json()?;
    assert_eq!(other_server["results"], json!([]));
    let for_bot = fx
        .send(request("GET", "/api/tools/search?q=echo&bot=limited", None))
        .await?
        .json()?;
    let names: Vec<&str> = for_bot["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|hit| hit["tool"].as_str())
        .collect();
    assert!(
        !names.contains(&"echo"),
        "the filter allows add only: {for_bot}"
    );

    let refused = [
        ("/api/tools/search?q=", StatusCode::BAD_REQUEST, "bad_query"),
        ("/api/tools/search", StatusCode::BAD_REQUEST, "bad_query"),
        (
            "/api/tools/search?q=x&limit=0",
            StatusCode::BAD_REQUEST,
            "bad_limit",
        ),
        (
            "/api/tools/search?q=x&limit=51",
            StatusCode::BAD_REQUEST,
            "bad_limit",
        ),
        (
            "/api/tools/search?q=x&bot=nobody",
            StatusCode::NOT_FOUND,
            "unknown_bot",
        ),
    ];
    for (path, status, code) in refused {
        let reply = fx.send(request("GET", path, None)).await?;
        assert_eq!(
            (reply.status, reply.error_code()),
            (status, code.to_owned()),
            "{path}"
        );
    }
    let anonymous =
        axum::http::Request::get("/api/tools/search?q=echo").body(axum::body::Body::empty())?;
    assert_eq!(fx.send(anonymous).await?.status, StatusCode::UNAUTHORIZED);
    assert_eq!(state_of(&fx, "fake"), Some(ServerState::Stopped));
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn metrics_count_the_tool_call_of_a_turn() -> anyhow::Result<()> {
    let fx = Fixture::new([
        FakeReply::tool_calls([FakeToolCall::new("c1", "fake__echo", [r#"{"text":"hi"}"#])])
            .with_usage(10, 5),
        FakeReply::text(["done"]).with_usage(20, 2),
    ])
    .await?;
    let fake = fx.add_fake_server("fake", |s| s).await?;
    let bot = fx.add_bot("counted", model(Wire::OpenAi), &[&fake]).await?;
    let reply = fx.send(json_chat(&bot.name, "echo hi")?).await?;
    assert_eq!(reply.status, 200, "{}", reply.body);

    let scrape = axum::http::Request::get("/metrics").body(axum::body::Body::empty())?;
    let metrics = fx.send(scrape).await?;
    assert_eq!(metrics.status, 200);
    assert!(!metrics.body.contains(super::harness::ADMIN_KEY));
    let lines = metrics.body.lines().map(|line| Ok(line.to_owned()));
    let scraped = prometheus_parse::Scrape::parse(lines)?;
    let value = |name: &str, labels: &[(&str, &str)]| -> f64 {
        scraped
            .samples
            .iter()
            .filter(|s| s.metric == name)
            .find(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Gauge(v) => v,
                _ => f64::NAN,
            })
            .unwrap_or(0.0)
    };
    assert_eq!(
        value(
            "botcraft_tool_calls_total",
            &[("server", "fake"), ("tool", "echo"), ("outcome", "ok")]
        ),
        1.0
    );
    assert_eq!(
        value(
            "botcraft_provider_requests_total",
            &[("provider", "openai"), ("outcome", "ok")]
        ),
        2.0
    );
    assert_eq!(
        value(
            "botcraft_provider_tokens_total",
            &[("provider", "openai"), ("kind", "input")]
        ),
        30.0
    );
    fx.finish().await;
    Ok(())
}
