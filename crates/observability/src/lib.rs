//! BotCraft's observability: metrics, logs and traces.
//!
//! - [`Registry`] ([`registry`]): counters, gauges and fixed-bucket histograms over label
//!   sets whose size the compiler checks, plus collect hooks run before each scrape;
//! - [`encode`]: the Prometheus text exposition format 0.0.4;
//! - [`BotCraftMetrics`] ([`metric_set`]): every metric BotCraft records — MCP server
//!   starts, crashes, restarts and state; tool calls with latency; tool searches and whether
//!   a found tool was then called; provider requests, durations and tokens;
//! - [`metrics_router`] ([`route`]): `GET /metrics` for an axum app;
//! - [`shown_url`] ([`shown`]): a URL as logs, errors and health may show it (no user
//!   information, query or fragment);
//! - [`init_tracing`] ([`logging`]): the `tracing` subscriber, text or JSON;
//! - [`telemetry`]: traces over OTLP (off unless an endpoint is configured), W3C context in
//!   and out, content recorded only when asked (redacted); [`TraceHttpLayer`] ([`http_span`]):
//!   a server span per HTTP request; [`span_metrics`]: the MCP and GenAI conventions'
//!   duration and token histograms, read from the trace spans and exported over OTLP;
//!
//! Nothing here reads the environment: the edge parses `BOTCRAFT_LOG_FORMAT` and `RUST_LOG`
//! and passes the values in.

pub mod encode;
pub mod error;
pub mod http_span;
pub mod logging;
pub mod metric_set;
pub mod registry;
pub mod route;
pub mod shown;
pub mod span_metrics;
pub mod telemetry;

pub use encode::CONTENT_TYPE;
pub use error::{LoggingError, MetricsError, TelemetryError};
pub use http_span::TraceHttpLayer;
pub use logging::{LogFormat, init_tracing, init_tracing_with};
pub use metric_set::{
    BotCraftMetrics, CallPath, ProviderOutcome, SERVER_STATES, SearchFollowUps, TokenUsage,
    ToolCallOutcome,
};
pub use registry::{Counter, Gauge, Histogram, Registry};
pub use route::metrics_router;
pub use shown::{cut_urls, shown_url};
pub use telemetry::{
    MAX_CONTENT_BYTES, SamplerSetting, TRACE_TARGET, TRACEPARENT, Telemetry, TelemetrySettings,
    TraceLayer, continue_trace, current_traceparent, record_content_with, traced_content,
    traceparent_of,
};
