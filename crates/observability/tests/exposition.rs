//! The encoder's output read back by an independent Prometheus text-format parser (the
//! `prometheus-parse` crate), and the `/metrics` route over a real socket.

use std::time::Duration;

use observability::{
    BotCraftMetrics, CONTENT_TYPE, CallPath, ProviderOutcome, SearchFollowUps, TokenUsage,
    ToolCallOutcome, metrics_router,
};
use pretty_assertions::assert_eq;
use prometheus_parse::{HistogramCount, Scrape, Value};

fn recorded() -> BotCraftMetrics {
    let metrics = BotCraftMetrics::new().expect("the metric set registers");
    metrics.server_state_changed("forge-bash", "starting");
    metrics.server_state_changed("forge-bash", "running");
    metrics.observe_server_restarts("forge-bash", 2);
    metrics.tool_call(
        CallPath::Chat,
        "forge-bash",
        "run",
        ToolCallOutcome::Ok,
        Duration::from_millis(30),
    );
    metrics.tool_call(
        CallPath::Mcp,
        "forge-bash",
        "run",
        ToolCallOutcome::ToolError,
        Duration::from_secs(3),
    );
    metrics.tool_search(Some(3));
    metrics.chat_stream_started();
    metrics.chat_stream_started();
    metrics.chat_stream_ended();
    metrics.chat_stream_refused("per_key");
    let mut turn = SearchFollowUps::new();
    turn.searched(["forge-bash__run"]);
    turn.called("forge-bash__run");
    metrics.tool_search_follow_ups(&turn);
    metrics.provider_request(
        "openai",
        "gpt-4o-mini",
        ProviderOutcome::Ok,
        Duration::from_millis(700),
        Some(TokenUsage {
            input: 1000,
            output: 50,
        }),
    );
    metrics
}

fn parse(text: &str) -> Scrape {
    Scrape::parse(text.lines().map(|line| Ok(line.to_owned()))).expect("parses")
}

fn sample<'a>(scrape: &'a Scrape, metric: &str, labels: &[(&str, &str)]) -> &'a Value {
    let found: Vec<&Value> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| &s.value)
        .collect();
    assert_eq!(found.len(), 1, "{metric} {labels:?}: {found:?}");
    found[0]
}

#[test]
fn a_parser_reads_back_every_kind_with_its_values() {
    let text = recorded().encode();
    let scrape = parse(&text);

    assert_eq!(
        sample(
            &scrape,
            "botcraft_mcp_server_starts_total",
            &[("server", "forge-bash")]
        ),
        &Value::Counter(1.0)
    );
    assert_eq!(
        sample(
            &scrape,
            "botcraft_mcp_server_restarts_total",
            &[("server", "forge-bash")]
        ),
        &Value::Counter(2.0)
    );
    for (state, value) in [("running", 1.0), ("starting", 0.0), ("error", 0.0)] {
        assert_eq!(
            sample(
                &scrape,
                "botcraft_mcp_server_state",
                &[("server", "forge-bash"), ("state", state)]
            ),
            &Value::Gauge(value),
            "{state}"
        );
    }
    assert_eq!(
        sample(
            &scrape,
            "botcraft_tool_calls_total",
            &[("tool", "run"), ("outcome", "tool_error"), ("path", "mcp")]
        ),
        &Value::Counter(1.0)
    );
    assert_eq!(
        sample(
            &scrape,
            "botcraft_provider_tokens_total",
            &[("kind", "input")]
        ),
        &Value::Counter(1000.0)
    );
    assert_eq!(
        sample(
            &scrape,
            "botcraft_tool_search_follow_ups_total",
            &[("called", "yes")]
        ),
        &Value::Counter(1.0)
    );

    let Value::Histogram(buckets) = sample(
        &scrape,
        "botcraft_tool_call_duration_seconds",
        &[("server", "forge-bash"), ("tool", "run")],
    ) else {
        panic!("not a histogram: {text}");
    };
    let at = |bound: f64| {
        buckets
            .iter()
            .find(|b| b.less_than == bound)
            .map(|b| b.count)
    };
    assert_eq!(at(0.025), Some(0.0));
    assert_eq!(at(0.05), Some(1.0));
    assert_eq!(at(2.5), Some(1.0));
    assert_eq!(at(10.0), Some(2.0));
    assert_eq!(
        buckets.last(),
        Some(&HistogramCount {
            less_than: f64::INFINITY,
            count: 2.0
        })
    );
    assert_eq!(
        sample(
            &scrape,
            "botcraft_tool_call_duration_seconds_count",
            &[("tool", "run")]
        ),
        &Value::Untyped(2.0)
    );
}

#[test]
fn chat_streams_are_counted_running_and_refused() {
    let scrape = parse(&recorded().encode());
    assert_eq!(
        sample(&scrape, "botcraft_chat_streams", &[]),
        &Value::Gauge(1.0)
    );
    assert_eq!(
        sample(
            &scrape,
            "botcraft_chat_streams_refused_total",
            &[("cap", "per_key")]
        ),
        &Value::Counter(1.0)
    );
}

#[test]
fn every_family_has_help_and_type() {
    let text = recorded().encode();
    let scrape = parse(&text);
    let families: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.split(' ').next())
        .collect();
    assert_eq!(families.len(), 13, "{text}");
    for family in families {
        assert!(scrape.docs.contains_key(family), "no HELP for {family}");
    }
}

#[tokio::test]
async fn the_route_serves_the_text_format() {
    let metrics = recorded();
    let app: axum::Router = metrics_router(metrics.registry().clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let addr = listener.local_addr().expect("has an address");
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let response = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .expect("answers");
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    assert_eq!(
        response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
        Some(CONTENT_TYPE)
    );
    let body = response.text().await.expect("body");
    assert_eq!(body, metrics.encode());
    server.abort();
}
