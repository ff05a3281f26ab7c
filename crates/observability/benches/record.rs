//! What recording one MCP tool call costs: `BotCraftMetrics::tool_call` (a counter with four
//! labels and a histogram with two) on series that already exist, as on every call after a
//! tool's first. `cargo bench -p observability --bench record`; figures in
//! docs/benchmarks.md. The instruction count of the same recording: the `record_calls`
//! example under callgrind.

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "../examples/support/series.rs"]
mod series;

fn record(c: &mut Criterion) {
    let (metrics, names) = series::recorded();
    let mut next = 0;
    c.bench_function("tool_call, existing series", |b| {
        b.iter(|| {
            series::record(&metrics, &names, next);
            next += 1;
        });
    });
}

criterion_group!(benches, record);
criterion_main!(benches);
