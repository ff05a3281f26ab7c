//! The crate's errors: a metric that cannot be registered, a log setup that cannot be made,
//! traces that cannot be exported.

/// Why a metric family was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricsError {
    #[error("invalid metric name {0:?} (expected [a-zA-Z_:][a-zA-Z0-9_:]*)")]
    InvalidMetricName(String),
    #[error(
        "invalid label name {label:?} on {metric} (expected [a-zA-Z_][a-zA-Z0-9_]*, not __*, not le on a histogram)"
    )]
    InvalidLabelName { metric: String, label: String },
    #[error("label {label:?} appears twice on {metric}")]
    DuplicateLabel { metric: String, label: String },
    #[error("metric {0} is already registered")]
    AlreadyRegistered(String),
    #[error("histogram {0}: buckets must be finite, strictly increasing and not empty")]
    InvalidBuckets(String),
}

/// Why logging could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LoggingError {
    #[error("unknown log format {0:?} (expected json or text)")]
    UnknownFormat(String),
    #[error("invalid log filter: {0}")]
    Filter(#[from] tracing_subscriber::filter::ParseError),
    #[error("a global tracing subscriber is already set")]
    AlreadySet(#[from] tracing::subscriber::SetGlobalDefaultError),
}

/// Why traces could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TelemetryError {
    #[error(
        "unknown OTEL_TRACES_SAMPLER {0:?} (expected always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio)"
    )]
    UnknownSampler(String),
    #[error("OTEL_TRACES_SAMPLER_ARG {0:?} is not a ratio between 0 and 1")]
    BadSamplerRatio(String),
    #[error("unknown OTEL_METRICS_EXPORTER {0:?} (expected otlp or none)")]
    UnknownMetricsExporter(String),
    #[error("cannot build the OTLP exporter: {0}")]
    Exporter(String),
}
