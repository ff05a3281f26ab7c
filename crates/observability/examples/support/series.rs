//! What the `record` bench and the `record_calls` example share: a metric set whose tool-call
//! series already exist (50 tools over 5 servers, each recorded once), and one recording.

use std::time::Duration;

use observability::{BotCraftMetrics, CallPath, ToolCallOutcome};

/// The metric set and the (server, tool) names of its 50 existing series.
pub fn recorded() -> (BotCraftMetrics, Vec<(String, String)>) {
    let metrics = BotCraftMetrics::new().expect("the metric set registers");
    let names: Vec<(String, String)> = (0..50)
        .map(|i| (format!("server-{}", i % 5), format!("tool_{i}")))
        .collect();
    for (server, tool) in &names {
        metrics.tool_call(
            CallPath::Mcp,
            server,
            tool,
            ToolCallOutcome::Ok,
            Duration::from_millis(3),
        );
    }
    (metrics, names)
}

/// Record call number `call` (a successful `/mcp` call of 250 µs) on its existing series.
pub fn record(metrics: &BotCraftMetrics, names: &[(String, String)], call: usize) {
    let (server, tool) = &names[call % names.len()];
    metrics.tool_call(
        std::hint::black_box(CallPath::Mcp),
        std::hint::black_box(server),
        std::hint::black_box(tool),
        ToolCallOutcome::Ok,
        Duration::from_micros(250),
    );
}
