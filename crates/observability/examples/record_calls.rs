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

use std::hint::black_box;
use std::time::Duration;

use observability::{BotCraftMetrics, CallPath, ToolCallOutcome};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let calls: usize = std::env::args()
        .nth(1)
        .ok_or("usage: record_calls N")?
        .parse()?;
    let metrics = BotCraftMetrics::new()?;
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
    for call in 0..calls {
        let (server, tool) = &names[call % names.len()];
        metrics.tool_call(
            black_box(CallPath::Mcp),
            black_box(server),
            black_box(tool),
            ToolCallOutcome::Ok,
            Duration::from_micros(250),
        );
    }
    Ok(())
}
