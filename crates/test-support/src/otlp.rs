//! An OTLP/HTTP receiver for tests: `POST /v1/traces` with a protobuf
//! `ExportTraceServiceRequest` and `POST /v1/metrics` with an `ExportMetricsServiceRequest`,
//! decoded with the official `opentelemetry-proto` definitions: every span kept
//! ([`ReceivedSpan`]), and every histogram data point ([`ReceivedPoint`]). Tests wait on
//! [`OtlpReceiver::wait_for`] and [`OtlpReceiver::wait_for_points`], never sleep.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::metrics::v1::metric::Data as MetricData;
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;
use tokio::sync::Notify;

/// One span as exported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedSpan {
    pub service: String,
    /// Hex.
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub name: String,
    /// `internal`, `server`, `client`, `producer`, `consumer`.
    pub kind: &'static str,
    /// Every attribute, its value as text.
    pub attributes: BTreeMap<String, String>,
    /// The names of its events.
    pub events: Vec<String>,
    /// `ok`, `error` or `unset`.
    pub status: &'static str,
    /// When it started (Unix nanoseconds): siblings in the order they ran.
    pub start: u64,
}

/// One histogram data point as exported (cumulative: a later export repeats it, counted on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedPoint {
    pub service: String,
    pub metric: String,
    pub unit: String,
    /// Every attribute, its value as text.
    pub attributes: BTreeMap<String, String>,
    pub count: u64,
}

#[derive(Default)]
struct Shared {
    spans: Mutex<Vec<ReceivedSpan>>,
    points: Mutex<Vec<ReceivedPoint>>,
    changed: Notify,
    raw: Mutex<Vec<Vec<u8>>>,
}

/// The running receiver; stops when dropped.
pub struct OtlpReceiver {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

fn text(value: Option<&AnyValue>) -> String {
    match value {
        Some(AnyValue::StringValue(s)) => s.clone(),
        Some(AnyValue::BoolValue(b)) => b.to_string(),
        Some(AnyValue::IntValue(i)) => i.to_string(),
        Some(AnyValue::DoubleValue(d)) => d.to_string(),
        Some(AnyValue::ArrayValue(a)) => {
            let items: Vec<String> = a.values.iter().map(|v| text(v.value.as_ref())).collect();
            format!("[{}]", items.join(","))
        }
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter()
        .map(|kv| {
            (
                kv.key.clone(),
                text(kv.value.as_ref().and_then(|v| v.value.as_ref())),
            )
        })
        .collect()
}

/// The `service.name` of an export's resource (empty when it has none).
fn service_name(resource: Option<&Resource>) -> String {
    resource
        .map(|r| attributes(&r.attributes))
        .and_then(|mut a| a.remove("service.name"))
        .unwrap_or_default()
}

/// Keeps an export's body (to look for secrets) and what it decoded to, and wakes waiters.
fn keep<T>(shared: &Shared, body: &Bytes, list: &Mutex<Vec<T>>, received: Vec<T>) -> StatusCode {
    lock(&shared.raw).push(body.to_vec());
    lock(list).extend(received);
    shared.changed.notify_waiters();
    StatusCode::OK
}

async fn traces(State(shared): State<Arc<Shared>>, body: Bytes) -> StatusCode {
    let Ok(request) = ExportTraceServiceRequest::decode(body.as_ref()) else {
        return StatusCode::BAD_REQUEST;
    };
    let mut received = Vec::new();
    for resource in &request.resource_spans {
        let service = service_name(resource.resource.as_ref());
        for scope in &resource.scope_spans {
            for span in &scope.spans {
                received.push(ReceivedSpan {
                    service: service.clone(),
                    trace_id: hex::encode(&span.trace_id),
                    span_id: hex::encode(&span.span_id),
                    parent_span_id: hex::encode(&span.parent_span_id),
                    name: span.name.clone(),
                    kind: match span.kind {
                        2 => "server",
                        3 => "client",
                        4 => "producer",
                        5 => "consumer",
                        _ => "internal",
                    },
                    attributes: attributes(&span.attributes),
                    events: span.events.iter().map(|e| e.name.clone()).collect(),
                    status: match span.status.as_ref().map(|s| s.code) {
                        Some(1) => "ok",
                        Some(2) => "error",
                        _ => "unset",
                    },
                    start: span.start_time_unix_nano,
                });
            }
        }
    }
    keep(&shared, &body, &shared.spans, received)
}

async fn metrics(State(shared): State<Arc<Shared>>, body: Bytes) -> StatusCode {
    let Ok(request) = ExportMetricsServiceRequest::decode(body.as_ref()) else {
        return StatusCode::BAD_REQUEST;
    };
    let mut received = Vec::new();
    for resource in &request.resource_metrics {
        let service = service_name(resource.resource.as_ref());
        for scope in &resource.scope_metrics {
            for metric in &scope.metrics {
                if let Some(MetricData::Histogram(histogram)) = &metric.data {
                    for point in &histogram.data_points {
                        received.push(ReceivedPoint {
                            service: service.clone(),
                            metric: metric.name.clone(),
                            unit: metric.unit.clone(),
                            attributes: attributes(&point.attributes),
                            count: point.count,
                        });
                    }
                }
            }
        }
    }
    keep(&shared, &body, &shared.points, received)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl OtlpReceiver {
    pub async fn start() -> anyhow::Result<Self> {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/v1/traces", post(traces))
            .route("/v1/metrics", post(metrics))
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            addr,
            shared,
            server,
        })
    }

    /// What `OTEL_EXPORTER_OTLP_ENDPOINT` takes.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        lock(&self.shared.spans).clone()
    }

    /// Every histogram data point received so far, in the order of the exports.
    pub fn points(&self) -> Vec<ReceivedPoint> {
        lock(&self.shared.points).clone()
    }

    /// Waits until `done` holds of the data points received; after a minute, panics naming
    /// the metrics that did arrive.
    pub async fn wait_for_points(&self, done: impl Fn(&[ReceivedPoint]) -> bool) {
        self.wait_on(&self.shared.points, done, "data points", |point| {
            format!("{} {:?}", point.metric, point.attributes)
        })
        .await;
    }

    /// Every export body received so far, as sent (to look for what must not be there).
    pub fn raw(&self) -> Vec<Vec<u8>> {
        lock(&self.shared.raw).clone()
    }

    /// The spans of `trace_id` as an indented tree, children under their parent in the order
    /// they started: `name [kind] status` and the attributes not in `volatile`, one a line.
    /// A span whose parent was not received is a root.
    pub fn tree(&self, trace_id: &str, volatile: &[&str]) -> String {
        let spans: Vec<ReceivedSpan> = self
            .spans()
            .into_iter()
            .filter(|span| span.trace_id == trace_id)
            .collect();
        let mut out = String::new();
        let ids: Vec<&str> = spans.iter().map(|span| span.span_id.as_str()).collect();
        let mut roots: Vec<&ReceivedSpan> = spans
            .iter()
            .filter(|span| !ids.contains(&span.parent_span_id.as_str()))
            .collect();
        roots.sort_by_key(|span| span.start);
        for root in roots {
            render(&spans, root, 0, volatile, &mut out);
        }
        out
    }

    /// Waits until `done` holds of the spans received; after a minute without it, panics
    /// with the names of the spans that did arrive (an exporter that never sends must fail
    /// the test, not hang it).
    pub async fn wait_for(&self, done: impl Fn(&[ReceivedSpan]) -> bool) {
        self.wait_on(&self.shared.spans, done, "spans", |span| {
            format!("{} ({})", span.name, span.trace_id)
        })
        .await;
    }

    async fn wait_on<T>(
        &self,
        received: &Mutex<Vec<T>>,
        done: impl Fn(&[T]) -> bool,
        what: &str,
        name: impl Fn(&T) -> String,
    ) {
        let waited = tokio::time::timeout(std::time::Duration::from_secs(60), async {
            loop {
                let changed = self.shared.changed.notified();
                if done(&lock(received)) {
                    return;
                }
                changed.await;
            }
        })
        .await;
        if waited.is_err() {
            let names: Vec<String> = lock(received).iter().map(name).collect();
            panic!("the {what} awaited never arrived; received: {names:#?}");
        }
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn render(
    spans: &[ReceivedSpan],
    span: &ReceivedSpan,
    depth: usize,
    volatile: &[&str],
    out: &mut String,
) {
    use std::fmt::Write as _;
    let indent = "  ".repeat(depth);
    let _ = writeln!(out, "{indent}{} [{}] {}", span.name, span.kind, span.status);
    for (key, value) in &span.attributes {
        if !volatile.contains(&key.as_str()) {
            let _ = writeln!(out, "{indent}    {key}={value}");
        }
    }
    for event in &span.events {
        let _ = writeln!(out, "{indent}    event: {event}");
    }
    let mut children: Vec<&ReceivedSpan> = spans
        .iter()
        .filter(|child| child.parent_span_id == span.span_id)
        .collect();
    children.sort_by_key(|child| child.start);
    for child in children {
        render(spans, child, depth + 1, volatile, out);
    }
}
