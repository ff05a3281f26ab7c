//! OTLP metrics read from BotCraft's trace spans as they close, so that one place times each
//! operation: the MCP semantic conventions' `mcp.client.operation.duration` (the
//! `mcp.client` spans: every request BotCraft sends to a server, `initialize` included) and
//! `mcp.server.operation.duration` (the `mcp.server` spans: every request the gateway and the
//! stdio bridges receive), and the GenAI conventions' `gen_ai.client.operation.duration` and
//! `gen_ai.client.token.usage` (the `chat` spans: each model call). Each data point carries the
//! span's low-cardinality attributes (method, tool, server, protocol version, transport,
//! error type; model, provider, token type), never ids, content or session ids; a received
//! request that was refused keeps no tool name (the client chose it). The SDK caps each
//! histogram at 2,000 attribute sets besides.
//!
//! The layer sits behind the same filter as the trace layer (BotCraft's `TRACE` spans only),
//! so with no exporter it is not installed at all.

use std::time::Instant;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Histogram, Meter};
use tracing::Subscriber;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The conventions' advised buckets for an operation's duration, in seconds.
const SECONDS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];
/// The GenAI conventions' advised buckets for a token count.
const TOKENS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// The span attributes a data point keeps (all of bounded cardinality).
const KEPT: &[&str] = &[
    "mcp.method.name",
    "gen_ai.tool.name",
    "gen_ai.operation.name",
    "mcp.protocol.version",
    "network.transport",
    "botcraft.server.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "error.type",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    McpClient,
    McpServer,
    ModelCall,
}

impl Kind {
    fn of(span_name: &str) -> Option<Self> {
        match span_name {
            "mcp.client" => Some(Self::McpClient),
            "mcp.server" => Some(Self::McpServer),
            "chat" => Some(Self::ModelCall),
            _ => None,
        }
    }
}

/// What an open span will be measured with, kept in the span's extensions.
struct Timed {
    kind: Kind,
    started: Instant,
    attributes: Vec<KeyValue>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

impl Timed {
    fn keep(&mut self, name: &'static str, value: String) {
        if let Some(kept) = self
            .attributes
            .iter_mut()
            .find(|kv| kv.key.as_str() == name)
        {
            *kept = KeyValue::new(name, value);
        } else {
            self.attributes.push(KeyValue::new(name, value));
        }
    }
}

impl Visit for Timed {
    fn record_str(&mut self, field: &Field, value: &str) {
        if KEPT.contains(&field.name()) {
            self.keep(field.name(), value.to_owned());
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "gen_ai.usage.input_tokens" => self.input_tokens = Some(value),
            "gen_ai.usage.output_tokens" => self.output_tokens = Some(value),
            _ => {}
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if let Ok(value) = u64::try_from(value) {
            self.record_u64(field, value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        // `%value` fields arrive here, their Debug being the value's Display.
        if KEPT.contains(&field.name()) {
            self.keep(field.name(), format!("{value:?}"));
        }
    }
}

/// The layer: see the module's header.
pub struct SpanMetrics {
    client: Histogram<f64>,
    server: Histogram<f64>,
    model_calls: Histogram<f64>,
    tokens: Histogram<u64>,
}

impl SpanMetrics {
    pub fn new(meter: &Meter) -> Self {
        let seconds = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(SECONDS.to_vec())
                .build()
        };
        Self {
            client: seconds(
                "mcp.client.operation.duration",
                "The duration of an MCP request BotCraft sent, until its answer.",
            ),
            server: seconds(
                "mcp.server.operation.duration",
                "The duration of an MCP request BotCraft received, until its answer.",
            ),
            model_calls: seconds(
                "gen_ai.client.operation.duration",
                "The duration of a model call, until its last event.",
            ),
            tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Tokens of a model call, by gen_ai.token.type.")
                .with_boundaries(TOKENS.to_vec())
                .build(),
        }
    }
}

impl<S> Layer<S> for SpanMetrics
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(kind) = Kind::of(attrs.metadata().name()) else {
            return;
        };
        let mut timed = Timed {
            kind,
            started: Instant::now(),
            attributes: Vec::new(),
            input_tokens: None,
            output_tokens: None,
        };
        attrs.record(&mut timed);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(timed);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(timed) = span.extensions_mut().get_mut::<Timed>()
        {
            values.record(timed);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(timed) = span.extensions_mut().remove::<Timed>() else {
            return;
        };
        let seconds = timed.started.elapsed().as_secs_f64();
        match timed.kind {
            Kind::McpClient => self.client.record(seconds, &timed.attributes),
            Kind::McpServer => {
                // A request BotCraft refused names what the client chose (an unknown tool):
                // kept, it would let a client fill the histogram's series with made-up names.
                let mut attributes = timed.attributes;
                if attributes.iter().any(|kv| {
                    kv.key.as_str() == "error.type" && kv.value.as_str() == "jsonrpc_error"
                }) {
                    attributes.retain(|kv| kv.key.as_str() != "gen_ai.tool.name");
                }
                self.server.record(seconds, &attributes);
            }
            Kind::ModelCall => {
                self.model_calls.record(seconds, &timed.attributes);
                for (kind, count) in [
                    ("input", timed.input_tokens),
                    ("output", timed.output_tokens),
                ] {
                    if let Some(count) = count {
                        let mut attributes = timed.attributes.clone();
                        attributes.push(KeyValue::new("gen_ai.token.type", kind));
                        self.tokens.record(count, &attributes);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::metrics::MeterProvider as _;
    use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
    use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
    use tracing_subscriber::layer::SubscriberExt as _;

    fn sorted<'a>(kvs: impl Iterator<Item = &'a KeyValue>) -> Vec<String> {
        let mut attrs: Vec<String> = kvs.map(|kv| format!("{}={}", kv.key, kv.value)).collect();
        attrs.sort();
        attrs
    }

    /// Each histogram's data points as `(name, sorted attributes, count)`.
    fn points(exporter: &InMemoryMetricExporter) -> Vec<(String, Vec<String>, u64)> {
        let mut out = Vec::new();
        let exported = exporter.get_finished_metrics().expect("metrics");
        let Some(last) = exported.last() else {
            return out;
        };
        for scope in last.scope_metrics() {
            for metric in scope.metrics() {
                match metric.data() {
                    AggregatedMetrics::F64(MetricData::Histogram(h)) => {
                        for p in h.data_points() {
                            out.push((metric.name().to_owned(), sorted(p.attributes()), p.count()));
                        }
                    }
                    AggregatedMetrics::U64(MetricData::Histogram(h)) => {
                        for p in h.data_points() {
                            out.push((metric.name().to_owned(), sorted(p.attributes()), p.count()));
                        }
                    }
                    _ => {}
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn closed_spans_become_the_conventions_histograms_with_their_attributes() {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        let subscriber =
            tracing_subscriber::registry().with(SpanMetrics::new(&provider.meter("test")));
        tracing::subscriber::with_default(subscriber, || {
            let call = tracing::trace_span!(
                "mcp.client",
                mcp.method.name = "tools/call",
                gen_ai.tool.name = "echo",
                botcraft.server.name = "fake",
                jsonrpc.request.id = 7,
                error.type = tracing::field::Empty,
            );
            call.record("error.type", "timeout");
            drop(call);
            drop(tracing::trace_span!(
                "mcp.server",
                mcp.method.name = "tools/list",
                network.transport = "tcp",
                mcp.session.id = "secret-session",
            ));
            drop(tracing::trace_span!(
                "mcp.server",
                mcp.method.name = "tools/call",
                gen_ai.tool.name = "made-up-by-the-client",
                error.type = "jsonrpc_error",
            ));
            let chat = tracing::trace_span!(
                "chat",
                gen_ai.operation.name = "chat",
                gen_ai.request.model = %"gpt-test",
                gen_ai.usage.input_tokens = tracing::field::Empty,
                gen_ai.usage.output_tokens = tracing::field::Empty,
            );
            chat.record("gen_ai.usage.input_tokens", 10u64);
            chat.record("gen_ai.usage.output_tokens", 5u64);
            drop(chat);
            drop(tracing::trace_span!("execute_tool", gen_ai.tool.name = "x"));
        });
        provider.force_flush().expect("flush");
        let s = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            points(&exporter),
            vec![
                (
                    "gen_ai.client.operation.duration".to_owned(),
                    s(&[
                        "gen_ai.operation.name=chat",
                        "gen_ai.request.model=gpt-test"
                    ]),
                    1
                ),
                (
                    "gen_ai.client.token.usage".to_owned(),
                    s(&[
                        "gen_ai.operation.name=chat",
                        "gen_ai.request.model=gpt-test",
                        "gen_ai.token.type=input"
                    ]),
                    1
                ),
                (
                    "gen_ai.client.token.usage".to_owned(),
                    s(&[
                        "gen_ai.operation.name=chat",
                        "gen_ai.request.model=gpt-test",
                        "gen_ai.token.type=output"
                    ]),
                    1
                ),
                (
                    "mcp.client.operation.duration".to_owned(),
                    s(&[
                        "botcraft.server.name=fake",
                        "error.type=timeout",
                        "gen_ai.tool.name=echo",
                        "mcp.method.name=tools/call"
                    ]),
                    1
                ),
                (
                    "mcp.server.operation.duration".to_owned(),
                    s(&["error.type=jsonrpc_error", "mcp.method.name=tools/call"]),
                    1
                ),
                (
                    "mcp.server.operation.duration".to_owned(),
                    s(&["mcp.method.name=tools/list", "network.transport=tcp"]),
                    1
                ),
            ]
        );
    }
}
