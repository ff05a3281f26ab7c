//! Traces over OTLP (OpenTelemetry), with the GenAI and MCP semantic conventions. Off unless
//! an endpoint is configured, and then at no cost: BotCraft's spans are `tracing` spans at
//! TRACE level under the target [`TRACE_TARGET`], which no log filter enables, so with no
//! exporter they are disabled where they are written.
//!
//! The edge reads the standard variables into [`TelemetrySettings`] (`OTEL_EXPORTER_OTLP_ENDPOINT`
//! or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`,
//! `OTEL_TRACES_SAMPLER` and `_ARG`, and BotCraft's `BOTCRAFT_TRACE_CONTENT`); [`Telemetry::start`]
//! builds the OTLP/HTTP (protobuf) exporter and the layer [`crate::init_tracing`] adds.
//!
//! Context is W3C trace context: [`continue_trace`] makes an incoming `traceparent` (an HTTP
//! header, an MCP request's `params._meta`) the parent of a span, and [`current_traceparent`]
//! gives the one to send on (an MCP request's `params._meta`).

use std::collections::HashMap;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::error::TelemetryError;
use crate::span_metrics::SpanMetrics;

/// The target of BotCraft's trace spans (`tracing::span!(target: TRACE_TARGET, Level::TRACE, …)`).
pub const TRACE_TARGET: &str = "botcraft::trace";

/// The W3C trace-context key, in HTTP headers and in an MCP request's `params._meta`.
pub const TRACEPARENT: &str = "traceparent";

/// What traces are exported, and where.
#[derive(Clone, PartialEq)]
pub struct TelemetrySettings {
    /// The OTLP/HTTP traces URL (`…/v1/traces`); `None`: tracing is off.
    pub traces_endpoint: Option<String>,
    /// The OTLP/HTTP metrics URL (`…/v1/metrics`), used while tracing is on: the metrics are
    /// read from the trace spans ([`crate::span_metrics`]). `None` with
    /// `OTEL_METRICS_EXPORTER=none`.
    pub metrics_endpoint: Option<String>,
    /// Sent with every export (`OTEL_EXPORTER_OTLP_HEADERS`: `key=value,…`, e.g. a
    /// collector's or Langfuse's `Authorization`). Never logged.
    pub headers: HashMap<String, String>,
    pub service_name: String,
    pub sampler: SamplerSetting,
    /// Record tool arguments and results, message text and search queries (with BotCraft's
    /// secret redaction applied by the caller). Off by default.
    pub record_content: bool,
}

impl std::fmt::Debug for TelemetrySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelemetrySettings")
            .field("traces_endpoint", &self.traces_endpoint)
            .field("metrics_endpoint", &self.metrics_endpoint)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("service_name", &self.service_name)
            .field("sampler", &self.sampler)
            .field("record_content", &self.record_content)
            .finish()
    }
}

/// `OTEL_TRACES_SAMPLER` (and its `_ARG`), as the OpenTelemetry specification names them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SamplerSetting {
    AlwaysOn,
    AlwaysOff,
    TraceIdRatio(f64),
    ParentBasedAlwaysOn,
    ParentBasedAlwaysOff,
    ParentBasedTraceIdRatio(f64),
}

impl TelemetrySettings {
    /// The settings from variables looked up by `var` (the process's environment, at the
    /// edge). An unknown sampler is an error naming it.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, TelemetryError> {
        let set = |name: &str| {
            var(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let signal = |specific: &str, path: &str| {
            set(specific).or_else(|| {
                set("OTEL_EXPORTER_OTLP_ENDPOINT")
                    .map(|base| format!("{}/{path}", base.trim_end_matches('/')))
            })
        };
        let traces_endpoint = signal("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "v1/traces");
        let metrics_endpoint = match set("OTEL_METRICS_EXPORTER").as_deref() {
            None | Some("otlp") => signal("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "v1/metrics"),
            Some("none") => None,
            Some(other) => return Err(TelemetryError::UnknownMetricsExporter(other.to_owned())),
        };
        let headers = set("OTEL_EXPORTER_OTLP_HEADERS")
            .map(|text| {
                text.split(',')
                    .filter_map(|pair| {
                        let (key, value) = pair.split_once('=')?;
                        Some((key.trim().to_owned(), percent_decoded(value.trim())))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let ratio = || match set("OTEL_TRACES_SAMPLER_ARG") {
            None => Ok(1.0),
            Some(arg) => arg
                .parse::<f64>()
                .ok()
                .filter(|r| (0.0..=1.0).contains(r))
                .ok_or(TelemetryError::BadSamplerRatio(arg)),
        };
        let sampler = match set("OTEL_TRACES_SAMPLER").as_deref() {
            None | Some("parentbased_always_on") => SamplerSetting::ParentBasedAlwaysOn,
            Some("always_on") => SamplerSetting::AlwaysOn,
            Some("always_off") => SamplerSetting::AlwaysOff,
            Some("traceidratio") => SamplerSetting::TraceIdRatio(ratio()?),
            Some("parentbased_always_off") => SamplerSetting::ParentBasedAlwaysOff,
            Some("parentbased_traceidratio") => SamplerSetting::ParentBasedTraceIdRatio(ratio()?),
            Some(other) => return Err(TelemetryError::UnknownSampler(other.to_owned())),
        };
        Ok(Self {
            traces_endpoint,
            metrics_endpoint,
            headers,
            service_name: set("OTEL_SERVICE_NAME").unwrap_or_else(|| "botcraft".to_owned()),
            sampler,
            record_content: set("BOTCRAFT_TRACE_CONTENT").as_deref() == Some("on"),
        })
    }

    fn sampler(&self) -> Sampler {
        match self.sampler {
            SamplerSetting::AlwaysOn => Sampler::AlwaysOn,
            SamplerSetting::AlwaysOff => Sampler::AlwaysOff,
            SamplerSetting::TraceIdRatio(r) => Sampler::TraceIdRatioBased(r),
            SamplerSetting::ParentBasedAlwaysOn => {
                Sampler::ParentBased(Box::new(Sampler::AlwaysOn))
            }
            SamplerSetting::ParentBasedAlwaysOff => {
                Sampler::ParentBased(Box::new(Sampler::AlwaysOff))
            }
            SamplerSetting::ParentBasedTraceIdRatio(r) => {
                Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(r)))
            }
        }
    }
}

/// `%XX` escapes decoded, as `OTEL_EXPORTER_OTLP_HEADERS` values may carry them.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(byte) = u8::from_str_radix(&text[i + 1..(i + 3).min(text.len())], 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The running exporter. Dropping it without [`Telemetry::shutdown`] loses what is buffered.
pub struct Telemetry {
    provider: SdkTracerProvider,
    meters: Option<SdkMeterProvider>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Telemetry")
    }
}

/// The `tracing` layer that turns BotCraft's trace spans into OpenTelemetry spans.
pub type TraceLayer =
    Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;

impl Telemetry {
    /// Start exporting when `settings` names an endpoint: the exporter (batched, on the tokio
    /// runtime) and the layer for [`crate::init_tracing`]. W3C trace context becomes the
    /// process's propagator.
    pub fn start(
        settings: &TelemetrySettings,
    ) -> Result<Option<(Self, TraceLayer)>, TelemetryError> {
        let Some(endpoint) = &settings.traces_endpoint else {
            return Ok(None);
        };
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(endpoint.clone())
            .with_headers(settings.headers.clone())
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .build()
            .map_err(|error| TelemetryError::Exporter(error.to_string()))?;
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(settings.service_name.clone())
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_sampler(settings.sampler())
            .with_resource(resource.clone())
            .build();
        let meters = match &settings.metrics_endpoint {
            None => None,
            Some(endpoint) => {
                let exporter = opentelemetry_otlp::MetricExporter::builder()
                    .with_http()
                    .with_endpoint(endpoint.clone())
                    .with_headers(settings.headers.clone())
                    .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                    .build()
                    .map_err(|error| TelemetryError::Exporter(error.to_string()))?;
                // Every OTEL_METRIC_EXPORT_INTERVAL (60 s unless set), on its own thread.
                let reader = PeriodicReader::builder(exporter).build();
                Some(
                    SdkMeterProvider::builder()
                        .with_reader(reader)
                        .with_resource(resource)
                        .build(),
                )
            }
        };
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        Ok(Some(Self::over_with(provider, meters)))
    }

    /// The layer feeding `provider` with BotCraft's trace spans (and only them).
    pub fn over(provider: SdkTracerProvider) -> (Self, TraceLayer) {
        Self::over_with(provider, None)
    }

    /// [`Self::over`], and with `meters`, the metrics read from the same spans
    /// ([`SpanMetrics`]).
    pub fn over_with(
        provider: SdkTracerProvider,
        meters: Option<SdkMeterProvider>,
    ) -> (Self, TraceLayer) {
        let metrics = meters
            .as_ref()
            .map(|meters| SpanMetrics::new(&meters.meter("botcraft")));
        let tracer = provider.tracer("botcraft");
        let layer = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_tracked_inactivity(false)
            // Spans say what happened in their attributes; where in the code, and on which
            // thread, is noise to an operator (and bytes on every export).
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_level(false)
            .and_then(metrics)
            .with_filter(
                tracing_subscriber::filter::Targets::new()
                    .with_target(TRACE_TARGET, tracing::Level::TRACE),
            );
        (Self { provider, meters }, Box::new(layer))
    }

    /// Export what is buffered and stop (at BotCraft's shutdown).
    pub fn shutdown(&self) {
        if let Err(error) = self.provider.shutdown() {
            tracing::warn!(%error, "exporting the last traces failed");
        }
        if let Some(meters) = &self.meters
            && let Err(error) = meters.shutdown()
        {
            tracing::warn!(%error, "exporting the last metrics failed");
        }
    }
}

use tracing_subscriber::Layer as _;

struct Carrier<'a>(&'a mut HashMap<String, String>);

impl Injector for Carrier<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), value);
    }
}

struct One<'a>(&'a str);

impl Extractor for One<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        (key == TRACEPARENT).then_some(self.0)
    }
    fn keys(&self) -> Vec<&str> {
        vec![TRACEPARENT]
    }
}

/// The W3C `traceparent` of the current span, when tracing is on and the span is recorded.
pub fn current_traceparent() -> Option<String> {
    traceparent_of(&tracing::Span::current())
}

/// The W3C `traceparent` that makes a receiver's spans children of `span`; `None` when
/// tracing is off (the span is disabled) or the span is not sampled.
pub fn traceparent_of(span: &tracing::Span) -> Option<String> {
    if span.is_disabled() {
        return None;
    }
    let context = span.context();
    let mut fields = HashMap::new();
    TraceContextPropagator::new().inject_context(&context, &mut Carrier(&mut fields));
    fields.remove(TRACEPARENT)
}

/// The trace and span ids (hex) of the OpenTelemetry span entered on this thread, for logs.
pub(crate) fn current_ids() -> Option<(String, String)> {
    use opentelemetry::trace::TraceContextExt as _;
    let context = opentelemetry::Context::current();
    let span = context.span();
    let ids = span.span_context();
    ids.is_valid()
        .then(|| (ids.trace_id().to_string(), ids.span_id().to_string()))
}

/// The longest content (tool arguments and results, a search query) a span records.
pub const MAX_CONTENT_BYTES: usize = 8 * 1024;

type Redaction = Box<dyn Fn(&str) -> String + Send + Sync>;

static CONTENT: std::sync::OnceLock<Redaction> = std::sync::OnceLock::new();

/// Record content in spans from now on (`BOTCRAFT_TRACE_CONTENT=on`), each text passed
/// through `redact` first (BotCraft's secret redaction). Set once, at the edge.
pub fn record_content_with(redact: impl Fn(&str) -> String + Send + Sync + 'static) {
    let _ = CONTENT.set(Box::new(redact));
}

/// `text` as a span records it: `None` unless content recording is on; redacted (whole,
/// so that no secret is cut in two), then cut at [`MAX_CONTENT_BYTES`] on a character
/// boundary.
pub fn traced_content(text: &str) -> Option<String> {
    let redact = CONTENT.get()?;
    let mut kept = redact(text);
    if kept.len() > MAX_CONTENT_BYTES {
        let mut end = MAX_CONTENT_BYTES;
        while !kept.is_char_boundary(end) {
            end -= 1;
        }
        kept.truncate(end);
        kept.push_str(" [cut]");
    }
    Some(kept)
}

/// Make `traceparent` (an incoming request's) the parent of `span`; a malformed one is
/// ignored (the span starts a trace of its own).
pub fn continue_trace(span: &tracing::Span, traceparent: &str) {
    let context = TraceContextPropagator::new().extract(&One(traceparent.trim()));
    use opentelemetry::trace::TraceContextExt as _;
    if context.span().span_context().is_valid() {
        let _ = span.set_parent(context);
    }
}

/// BotCraft's trace layer exporting to memory (each span as it ends), with the handle that
/// keeps it, and a subscriber with that layer alone (for `tracing::subscriber::with_default`):
/// what this crate's span tests share.
#[cfg(test)]
pub(crate) fn in_memory() -> (
    opentelemetry_sdk::trace::InMemorySpanExporter,
    Telemetry,
    impl tracing::Subscriber + Send + Sync,
) {
    use tracing_subscriber::layer::SubscriberExt as _;
    let exported = opentelemetry_sdk::trace::InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exported.clone())
        .build();
    let (telemetry, layer) = Telemetry::over(provider);
    (
        exported,
        telemetry,
        tracing_subscriber::registry().with(layer),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn settings(vars: &[(&str, &str)]) -> Result<TelemetrySettings, TelemetryError> {
        TelemetrySettings::from_vars(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn a_trace_continues_from_an_incoming_traceparent_and_goes_on_to_the_next_hop() {
        let (exported, _telemetry, subscriber) = super::in_memory();
        let incoming = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let (outgoing, off) = tracing::subscriber::with_default(subscriber, || {
            let span = tracing::span!(target: TRACE_TARGET, tracing::Level::TRACE, "tools/call");
            continue_trace(&span, incoming);
            let outgoing = traceparent_of(&span);
            let malformed = tracing::span!(target: TRACE_TARGET, tracing::Level::TRACE, "other");
            continue_trace(&malformed, "00-zz-yy-01");
            (outgoing, traceparent_of(&tracing::Span::none()))
        });
        let spans = exported.get_finished_spans().expect("spans");
        let continued = spans.iter().find(|s| s.name == "tools/call").expect("span");
        assert_eq!(
            continued.span_context.trace_id().to_string(),
            "0af7651916cd43dd8448eb211c80319c"
        );
        assert_eq!(continued.parent_span_id.to_string(), "b7ad6b7169203331");
        let own = continued.span_context.span_id().to_string();
        assert_eq!(
            outgoing,
            Some(format!("00-0af7651916cd43dd8448eb211c80319c-{own}-01"))
        );
        let other = spans.iter().find(|s| s.name == "other").expect("span");
        assert_ne!(
            other.span_context.trace_id().to_string(),
            "0af7651916cd43dd8448eb211c80319c",
            "a malformed traceparent starts a trace of its own"
        );
        assert_eq!(off, None, "a disabled span sends nothing on");
    }

    #[test]
    fn settings_follow_the_standard_variables() {
        let off = settings(&[]).expect("settings");
        assert_eq!(off.traces_endpoint, None);
        assert_eq!(off.sampler, SamplerSetting::ParentBasedAlwaysOn);
        let on = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Basic%20abc,x-tenant=t1",
            ),
            ("OTEL_SERVICE_NAME", "bots"),
            ("OTEL_TRACES_SAMPLER", "traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "0.25"),
        ])
        .expect("settings");
        assert_eq!(
            on.traces_endpoint.as_deref(),
            Some("http://collector:4318/v1/traces")
        );
        assert_eq!(
            on.headers.get("authorization").map(String::as_str),
            Some("Basic abc")
        );
        assert_eq!(
            on.metrics_endpoint.as_deref(),
            Some("http://collector:4318/v1/metrics")
        );
        assert_eq!(on.service_name, "bots");
        assert_eq!(on.sampler, SamplerSetting::TraceIdRatio(0.25));
        assert!(
            !format!("{on:?}").contains("Basic"),
            "headers are not shown"
        );
        let traces = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:4318/traces"),
        ])
        .expect("settings");
        assert_eq!(
            traces.traces_endpoint.as_deref(),
            Some("http://b:4318/traces")
        );
        assert!(matches!(
            settings(&[("OTEL_TRACES_SAMPLER", "sometimes")]),
            Err(TelemetryError::UnknownSampler(s)) if s == "sometimes"
        ));
        let no_metrics = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
            ("OTEL_METRICS_EXPORTER", "none"),
        ])
        .expect("settings");
        assert_eq!(no_metrics.metrics_endpoint, None);
        assert!(matches!(
            settings(&[("OTEL_METRICS_EXPORTER", "prometheus")]),
            Err(TelemetryError::UnknownMetricsExporter(s)) if s == "prometheus"
        ));
        for bad in ["1.5", "half", "-0.1"] {
            assert!(matches!(
                settings(&[("OTEL_TRACES_SAMPLER", "traceidratio"), ("OTEL_TRACES_SAMPLER_ARG", bad)]),
                Err(TelemetryError::BadSamplerRatio(s)) if s == bad
            ));
        }
    }
}
