//! What recording one MCP tool call costs: `BotCraftMetrics::tool_call` (a counter with four
//! labels and a histogram with two) on series that already exist, as on every call after a
//! tool's first. `cargo bench -p observability --bench record`; figures in
//! docs/benchmarks.md.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use observability::{BotCraftMetrics, CallPath, ToolCallOutcome};

fn record(c: &mut Criterion) {
    let metrics = BotCraftMetrics::new().expect("the metric set registers");
    // 50 tools over 5 servers, each recorded once: the series exist.
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
    let mut next = 0;
    c.bench_function("tool_call, existing series", |b| {
        b.iter(|| {
            let (server, tool) = &names[next % names.len()];
            next += 1;
            metrics.tool_call(
                black_box(CallPath::Mcp),
                black_box(server),
                black_box(tool),
                ToolCallOutcome::Ok,
                Duration::from_micros(250),
            );
        });
    });
}

criterion_group!(benches, record);
criterion_main!(benches);
