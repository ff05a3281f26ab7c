//! The crate's errors: a metric that cannot be registered, a log setup that cannot be made.

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
