//! Records N MCP tool calls (`BotCraftMetrics::tool_call`) over 50 existing series, for an
//! instruction count per call under callgrind:
//!
//! ```text
//! cargo build --release -p observability --example record_calls
//! valgrind --tool=callgrind target/release/examples/record_calls 0
//! valgrind --tool=callgrind target/release/examples/record_calls 100000
//! ```
//!
//! (the difference of the two totals, divided by N, is the cost of one call).

#[path = "support/series.rs"]
mod series;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let calls: usize = std::env::args()
        .nth(1)
        .ok_or("usage: record_calls N")?
        .parse()?;
    let (metrics, names) = series::recorded();
    for call in 0..calls {
        series::record(&metrics, &names, call);
    }
    Ok(())
}
