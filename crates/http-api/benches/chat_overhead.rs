//! The host's own overhead per chat turn and per model step, with a zero-latency fake
//! provider (`test_support::FakeLlm` on loopback, replies queued in advance) and no socket on
//! BotCraft's side (the router driven with `oneshot`).
//!
//! - time to first byte: request in → first SSE frame out (bot lookup, lease, tool listing
//!   from the running server, provider selection, turn spawn);
//! - a whole 1-step turn (text only), and a whole N-step turn where each step calls the
//!   native `current_time` tool; per-step overhead = (N-step − 1-step) / (N − 1), which
//!   includes one loopback HTTP round trip to the fake provider per step.
//!
//! usage: cargo bench -p http-api --bench chat_overhead [-- ITERATIONS]

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use futures::StreamExt;
use http_api::{ApiConfig, ApiKeys, AppState, default_native_tools};
use inference::providers::OpenAiSettings;
use inference::{ProviderSettings, Providers};
use mcp_lifecycle::{ManagerSettings, McpServerManager};
use store::{BotSpec, Store};
use test_support::{FakeLlm, FakeReply, FakeToolCall};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

const KEY: &str = "bench-key";
const STEPS: usize = 5;

fn percentile(samples: &mut [Duration], p: f64) -> f64 {
    samples.sort();
    let index = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[index].as_secs_f64() * 1000.0
}

async fn turn(app: &axum::Router) -> anyhow::Result<(Duration, Duration)> {
    let body = serde_json::json!({
        "botId": "bench",
        "messages": [{"id": "u", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
    });
    let request = Request::post("/api/ai/chat")
        .header("authorization", format!("Bearer {KEY}"))
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))?;
    let started = Instant::now();
    let response = app.clone().oneshot(request).await?;
    let mut stream = response.into_body().into_data_stream();
    let first = stream.next().await;
    let ttfb = started.elapsed();
    anyhow::ensure!(first.is_some(), "empty stream");
    let mut text = String::new();
    while let Some(frame) = stream.next().await {
        text.push_str(std::str::from_utf8(&frame?)?);
    }
    anyhow::ensure!(
        text.ends_with("data: [DONE]\n\n") && !text.contains("\"error\""),
        "{text}"
    );
    Ok((ttfb, started.elapsed()))
}

fn main() -> anyhow::Result<()> {
    let iterations: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(200);
    tokio::runtime::Runtime::new()?.block_on(async move {
        let dir = tempfile::tempdir()?;
        let store = Store::connect(&store::sqlite_url(&dir.path().join("db.sqlite"))).await?;
        store
            .create_bot(&BotSpec::new("bench", "openai:bench"))
            .await?;
        let manager = McpServerManager::new(
            server_records::records(store.clone()),
            ManagerSettings::default(),
        );
        let llm = FakeLlm::start([]).await?;
        let providers = Providers::new(ProviderSettings {
            openai: OpenAiSettings {
                api_key: Some("k".into()),
                base_url: Some(llm.openai_base_url()),
            },
            ..ProviderSettings::default()
        })?;
        let toolsets = http_api::new_toolsets(&store, &manager, &default_native_tools());
        let app = http_api::app(AppState {
            toolsets,
            store,
            manager,
            providers,
            native: default_native_tools(),
            config: Arc::new(ApiConfig {
                api_keys: ApiKeys::new([KEY]),
                ..ApiConfig::default()
            }),
            shutdown: CancellationToken::new(),
            metrics: observability::BotCraftMetrics::new()?,
        });
        // Warm up.
        for _ in 0..20 {
            llm.push(FakeReply::text(["w"]));
            turn(&app).await?;
        }
        let (mut ttfb, mut one_step, mut n_steps) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..iterations {
            llm.push(FakeReply::text(["hello ", "world"]));
            let (first, whole) = turn(&app).await?;
            ttfb.push(first);
            one_step.push(whole);
            for step in 0..STEPS - 1 {
                llm.push(FakeReply::tool_calls([FakeToolCall::new(
                    &format!("c{step}"),
                    "current_time",
                    ["{}"],
                )]));
            }
            llm.push(FakeReply::text(["done"]));
            n_steps.push(turn(&app).await?.1);
        }
        let per_step =
            (percentile(&mut n_steps, 0.5) - percentile(&mut one_step, 0.5)) / (STEPS - 1) as f64;
        println!("| measure | p50 ms | p90 ms |");
        println!("|---|---|---|");
        println!(
            "| time to first byte | {:.3} | {:.3} |",
            percentile(&mut ttfb, 0.5),
            percentile(&mut ttfb, 0.9)
        );
        println!(
            "| 1-step turn (text) | {:.3} | {:.3} |",
            percentile(&mut one_step, 0.5),
            percentile(&mut one_step, 0.9)
        );
        println!(
            "| {STEPS}-step turn (native tool each step) | {:.3} | {:.3} |",
            percentile(&mut n_steps, 0.5),
            percentile(&mut n_steps, 0.9)
        );
        println!(
            "| per-step overhead (p50 difference / {}) | {per_step:.3} | |",
            STEPS - 1
        );
        println!("\n{iterations} iterations of each");
        Ok(())
    })
}
