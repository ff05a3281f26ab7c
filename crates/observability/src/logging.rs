//! Logs: `tracing` events to stderr, as human-readable text or one JSON object per line
//! (`BOTCRAFT_LOG_FORMAT=json|text`, parsed at the edge with [`LogFormat::from_str`]).

use std::io::IsTerminal;
use std::str::FromStr;

use tracing::Subscriber;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

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
    let filter = EnvFilter::try_new(filter)?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi && format == LogFormat::Text)
        .with_writer(writer);
    Ok(match format {
        LogFormat::Text => Box::new(builder.finish()),
        LogFormat::Json => Box::new(builder.json().flatten_event(true).finish()),
    })
}

/// Sets the process-wide subscriber: stderr, `format`, `filter`; colours only when stderr
/// is a terminal.
pub fn init_tracing(format: LogFormat, filter: &str) -> Result<(), LoggingError> {
    let ansi = std::io::stderr().is_terminal();
    tracing::subscriber::set_global_default(subscriber(format, filter, ansi, std::io::stderr)?)?;
    Ok(())
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
    fn a_bad_filter_is_an_error() {
        assert!(matches!(
            subscriber(LogFormat::Text, "info,[", false, std::io::sink),
            Err(LoggingError::Filter(_))
        ));
    }
}
