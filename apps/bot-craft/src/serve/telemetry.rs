//! `serve`'s logs and traces: tracing set up, with an OTLP exporter when an endpoint is set
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`…), said on stderr; and the last traces flushed at exit.

use anyhow::Context;

/// `RUST_LOG` when unset.
pub(super) const DEFAULT_FILTER: &str = "info,rmcp=warn";

/// Start tracing (and OTLP export when configured): the exporter to flush at exit, and the
/// settings read (`record_content`, the exporter's headers, which are secrets).
pub(super) fn start(
    log_format: observability::LogFormat,
) -> anyhow::Result<(
    Option<observability::Telemetry>,
    observability::TelemetrySettings,
)> {
    // rmcp logs every notification a server sends, whole, at `info`: a server's data, and a
    // flood of it, kept out of the logs unless asked for.
    let filter = std::env::var("RUST_LOG").unwrap_or_else(|_| DEFAULT_FILTER.into());
    // Traces over OTLP when an endpoint is set (`OTEL_EXPORTER_OTLP_ENDPOINT`…); else none,
    // at no cost.
    let trace_settings =
        observability::TelemetrySettings::from_vars(|name| std::env::var(name).ok())
            .context("OpenTelemetry settings")?;
    let (telemetry, trace_layer) =
        match observability::Telemetry::start(&trace_settings).context("OTLP trace exporter")? {
            Some((telemetry, layer)) => (Some(telemetry), Some(layer)),
            None => (None, None),
        };
    observability::init_tracing_with(log_format, &filter, trace_layer)?;
    if let Some(endpoint) = &trace_settings.traces_endpoint {
        eprintln!(
            "botcraft: traces exported over OTLP/HTTP to {} as service {:?}{}",
            observability::shown_url(endpoint),
            trace_settings.service_name,
            if trace_settings.record_content {
                " (content recorded, redacted: BOTCRAFT_TRACE_CONTENT=on)"
            } else {
                ""
            }
        );
        if let Some(metrics) = &trace_settings.metrics_endpoint {
            eprintln!(
                "botcraft: MCP and GenAI duration metrics exported over OTLP/HTTP to {}",
                observability::shown_url(metrics)
            );
        }
    }
    Ok((telemetry, trace_settings))
}

/// Export the traces still buffered (the exporter blocks: off the runtime's threads).
pub(crate) async fn flush_traces(telemetry: Option<observability::Telemetry>) {
    if let Some(telemetry) = telemetry {
        let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
    }
}
