//! BotCraft's observability: metrics and logs.
//!
//! - [`Registry`] ([`registry`]): counters, gauges and fixed-bucket histograms over label
//!   sets whose size the compiler checks, plus collect hooks run before each scrape;
//! - [`encode`]: the Prometheus text exposition format 0.0.4;
//! - [`BotCraftMetrics`] ([`metric_set`]): every metric BotCraft records — MCP server
//!   starts, crashes, restarts and state; tool calls with latency; tool searches and whether
//!   a found tool was then called; provider requests, durations and tokens;
//! - [`metrics_router`] ([`route`]): `GET /metrics` for an axum app;
//! - [`init_tracing`] ([`logging`]): the `tracing` subscriber, text or JSON.
//!
//! Nothing here reads the environment: the edge parses `BOTCRAFT_LOG_FORMAT` and `RUST_LOG`
//! and passes the values in.

pub mod encode;
pub mod error;
pub mod logging;
pub mod metric_set;
pub mod registry;
pub mod route;

pub use encode::CONTENT_TYPE;
pub use error::{LoggingError, MetricsError};
pub use logging::{LogFormat, init_tracing};
pub use metric_set::{
    BotCraftMetrics, CallPath, ProviderOutcome, SERVER_STATES, SearchFollowUps, TokenUsage,
    ToolCallOutcome,
};
pub use registry::{Counter, Gauge, Histogram, Registry};
pub use route::metrics_router;
