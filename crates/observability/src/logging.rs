//! Logs: `tracing` events to stderr, as human-readable text or one JSON object per line
//! (`BOTCRAFT_LOG_FORMAT=json|text`, parsed at the edge with [`LogFormat::from_str`]).
//!
//! Whatever the filter says, rmcp's OAuth client (`rmcp::transport::auth`) is never logged
//! below `info`: at `debug` it writes the authorization code and the token response.

use std::io::IsTerminal;
use std::str::FromStr;

use tracing::Subscriber;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::registry::LookupSpan;

use crate::error::LoggingError;

/// How log lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// One human-readable line per event (the default).
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

impl FromStr for LogFormat {
    type Err = LoggingError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            _ => Err(LoggingError::UnknownFormat(value.to_owned())),
        }
    }
}

/// A subscriber writing to `writer` in `format`, keeping events that `filter` (an
/// `EnvFilter` directive such as `info,botcraft=debug`) lets through; text has ANSI colours
/// only when `ansi` is set.
pub fn subscriber<W>(
    format: LogFormat,
    filter: &str,
    ansi: bool,
    writer: W,
) -> Result<Box<dyn Subscriber + Send + Sync>, LoggingError>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    use tracing_subscriber::layer::SubscriberExt as _;
    let filter = EnvFilter::try_new(filter)?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi && format == LogFormat::Text)
        .with_writer(writer);
    Ok(match format {
        LogFormat::Text => Box::new(builder.finish().with(no_credentials())),
        LogFormat::Json => Box::new(
            builder
                .json()
                .flatten_event(true)
                .finish()
                .with(no_credentials()),
        ),
    })
}

/// Events that may carry OAuth credentials: rmcp's OAuth client below `info` (the
/// authorization code, the token response). Left out of every log, whatever the filter.
fn no_credentials()
-> tracing_subscriber::filter::FilterFn<impl Fn(&tracing::Metadata<'_>) -> bool + Send + Sync> {
    tracing_subscriber::filter::filter_fn(|metadata| {
        !(metadata.target().starts_with("rmcp::transport::auth")
            && *metadata.level() > tracing::Level::INFO)
    })
}

/// Sets the process-wide subscriber: stderr, `format`, `filter`; colours only when stderr
/// is a terminal.
pub fn init_tracing(format: LogFormat, filter: &str) -> Result<(), LoggingError> {
    init_tracing_with(format, filter, None)
}

/// [`init_tracing`], and BotCraft's trace spans to `traces` when given
/// ([`crate::telemetry::Telemetry::start`]): each log line then carries the trace and span
/// ids of the span it was written in.
pub fn init_tracing_with(
    format: LogFormat,
    filter: &str,
    traces: Option<crate::telemetry::TraceLayer>,
) -> Result<(), LoggingError> {
    let ansi = std::io::stderr().is_terminal();
    let subscriber = match traces {
        None => subscriber(format, filter, ansi, std::io::stderr)?,
        Some(traces) => traced_subscriber(format, filter, std::io::stderr, traces)?,
    };
    tracing::subscriber::set_global_default(subscriber)?;
    Ok(())
}

/// Logs as [`subscriber`] writes them, with trace ids, beside the trace layer. Each layer
/// has its own filter: the log filter never sees the trace spans' level (TRACE, under their
/// own target, unless asked for), the trace layer sees only them.
pub fn traced_subscriber<W>(
    format: LogFormat,
    filter: &str,
    writer: W,
    traces: crate::telemetry::TraceLayer,
) -> Result<Box<dyn Subscriber + Send + Sync>, LoggingError>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::filter::{FilterExt as _, LevelFilter};
    use tracing_subscriber::layer::SubscriberExt as _;
    // The credentials' filter goes with the log filter, in the logs' own filter: a global
    // filter beside per-layer filters leaves no call site "never" interesting, so every
    // disabled event would be filtered again at each call. `and` keeps the log filter's
    // interest and, the credentials' filter having a hint of its own, its level hint.
    let filter =
        EnvFilter::try_new(filter)?.and(no_credentials().with_max_level_hint(LevelFilter::TRACE));
    let logs = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(writer)
            .event_format(TraceIds {
                inner: tracing_subscriber::fmt::format(),
                json: false,
            })
            .with_filter(filter)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .fmt_fields(tracing_subscriber::fmt::format::JsonFields::new())
            .with_writer(writer)
            .event_format(TraceIds {
                inner: tracing_subscriber::fmt::format().json().flatten_event(true),
                json: true,
            })
            .with_filter(filter)
            .boxed(),
    };
    Ok(Box::new(
        tracing_subscriber::registry().with(traces).with(logs),
    ))
}

/// A log line with the ids of the OpenTelemetry span it was written in: `trace_id` and
/// `span_id` first in a JSON object, `trace_id=… span_id=…` at the end of a text line.
struct TraceIds<F> {
    inner: F,
    json: bool,
}

impl<S, N, F> FormatEvent<S, N> for TraceIds<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let Some((trace_id, span_id)) = crate::telemetry::current_ids() else {
            return self.inner.format_event(ctx, writer, event);
        };
        let mut line = String::new();
        self.inner
            .format_event(ctx, Writer::new(&mut line), event)?;
        if self.json
            && let Some(rest) = line.strip_prefix('{')
        {
            let comma = if rest.starts_with('}') { "" } else { "," };
            return write!(
                writer,
                "{{\"trace_id\":\"{trace_id}\",\"span_id\":\"{span_id}\"{comma}{rest}"
            );
        }
        if !self.json
            && let Some(body) = line.strip_suffix('\n')
        {
            return writeln!(writer, "{body} trace_id={trace_id} span_id={span_id}");
        }
        writer.write_str(&line)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;
    use pretty_assertions::assert_eq;

    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl Write for Capture {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| std::io::Error::other("poisoned"))?
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'w> MakeWriter<'w> for Capture {
        type Writer = Capture;
        fn make_writer(&'w self) -> Self::Writer {
            self.clone()
        }
    }

    #[test]
    fn rmcp_oauth_debug_events_are_never_logged() {
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        for traced in [false, true] {
            let capture = Capture::default();
            let subscriber = if traced {
                traced_subscriber(
                    LogFormat::Text,
                    "trace",
                    capture.clone(),
                    layer_again(&provider),
                )
            } else {
                subscriber(LogFormat::Text, "trace", false, capture.clone())
            }
            .expect("valid filter");
            tracing::subscriber::with_default(subscriber, || {
                tracing::debug!(target: "rmcp::transport::auth", "code CODE-1");
                tracing::trace!(target: "rmcp::transport::auth::inner", "token TOKEN-1");
                tracing::info!(target: "rmcp::transport::auth", "discovery done");
                tracing::debug!(target: "rmcp::transport::streamable_http_client", "other debug");
            });
            let logs = String::from_utf8(capture.0.lock().expect("not poisoned").clone())
                .expect("utf-8 logs");
            assert!(
                !logs.contains("CODE-1") && !logs.contains("TOKEN-1"),
                "{traced}: {logs}"
            );
            assert!(logs.contains("discovery done"), "{traced}: {logs}");
            assert!(logs.contains("other debug"), "{traced}: {logs}");
        }
    }

    fn log_with(format: LogFormat) -> String {
        let capture = Capture::default();
        let subscriber = subscriber(format, "info", false, capture.clone()).expect("valid filter");
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(server = "bash", "server started");
            tracing::debug!("filtered out");
        });
        let bytes = capture.0.lock().expect("not poisoned").clone();
        String::from_utf8(bytes).expect("utf-8 logs")
    }

    #[test]
    fn formats_parse_from_the_variable() {
        let cases = [
            ("json", Some(LogFormat::Json)),
            ("JSON", Some(LogFormat::Json)),
            ("text", Some(LogFormat::Text)),
            ("", Some(LogFormat::Text)),
            ("yaml", None),
        ];
        for (value, expected) in cases {
            assert_eq!(value.parse::<LogFormat>().ok(), expected, "{value}");
        }
    }

    #[test]
    fn json_format_writes_one_object_per_event() {
        let out = log_with(LogFormat::Json);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 1, "{out}");
        let event: serde_json::Value = serde_json::from_str(lines[0]).expect("json");
        assert_eq!(event["message"], "server started");
        assert_eq!(event["server"], "bash");
        assert_eq!(event["level"], "INFO");
    }

    #[test]
    fn text_format_writes_readable_lines() {
        let out = log_with(LogFormat::Text);
        assert_eq!(out.lines().count(), 1, "{out}");
        assert!(out.contains("server started"), "{out}");
        assert!(out.contains("server=\"bash\""), "{out}");
    }

    #[test]
    fn log_lines_carry_the_ids_of_the_trace_span_they_are_written_in() {
        use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
        let exported = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exported.clone())
            .build();
        let (_telemetry, layer) = crate::telemetry::Telemetry::over(provider.clone());
        for format in [LogFormat::Json, LogFormat::Text] {
            exported.reset();
            let capture = Capture::default();
            let subscriber =
                traced_subscriber(format, "info", capture.clone(), layer_again(&provider))
                    .expect("valid filter");
            tracing::subscriber::with_default(subscriber, || {
                tracing::info!("before");
                let span = tracing::span!(
                    target: crate::TRACE_TARGET,
                    tracing::Level::TRACE,
                    "work"
                );
                span.in_scope(|| tracing::info!(server = "bash", "inside"));
            });
            let spans = exported.get_finished_spans().expect("spans");
            assert_eq!(spans.len(), 1, "{format:?}");
            let ids = &spans[0].span_context;
            let (trace_id, span_id) = (ids.trace_id().to_string(), ids.span_id().to_string());
            let out =
                String::from_utf8(capture.0.lock().expect("not poisoned").clone()).expect("utf-8");
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines.len(), 2, "{out}");
            match format {
                LogFormat::Json => {
                    let before: serde_json::Value = serde_json::from_str(lines[0]).expect("json");
                    let inside: serde_json::Value = serde_json::from_str(lines[1]).expect("json");
                    assert_eq!(before.get("trace_id"), None);
                    assert_eq!(inside["trace_id"], trace_id.as_str());
                    assert_eq!(inside["span_id"], span_id.as_str());
                    assert_eq!(inside["server"], "bash");
                }
                LogFormat::Text => {
                    assert!(!lines[0].contains("trace_id"), "{out}");
                    assert!(
                        lines[1].ends_with(&format!(" trace_id={trace_id} span_id={span_id}")),
                        "{out}"
                    );
                }
            }
        }
        drop(layer);
    }

    fn layer_again(
        provider: &opentelemetry_sdk::trace::SdkTracerProvider,
    ) -> crate::telemetry::TraceLayer {
        crate::telemetry::Telemetry::over(provider.clone()).1
    }

    #[test]
    fn a_bad_filter_is_an_error() {
        assert!(matches!(
            subscriber(LogFormat::Text, "info,[", false, std::io::sink),
            Err(LoggingError::Filter(_))
        ));
    }
}
