//! The Prometheus text exposition format, version 0.0.4: `# HELP` and `# TYPE` per family,
//! one line per sample, label values escaped (`\\`, `\"`, `\n`), histograms as cumulative
//! `_bucket{le="…"}` lines ending in `le="+Inf"`, then `_sum` and `_count`.

use std::fmt::Write;

use crate::registry::{FamilySnapshot, SampleValue};

/// The `Content-Type` of [`text`]'s output.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A float as Prometheus writes it: `+Inf`, `-Inf`, `NaN`, else the shortest decimal that
/// reads back as the same number.
pub fn format_value(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value == f64::INFINITY {
        "+Inf".to_owned()
    } else if value == f64::NEG_INFINITY {
        "-Inf".to_owned()
    } else {
        value.to_string()
    }
}

/// A `# HELP` text: backslash and newline escaped.
pub fn escape_help(help: &str) -> String {
    help.replace('\\', r"\\").replace('\n', r"\n")
}

/// A label value: backslash, double quote and newline escaped.
pub fn escape_label_value(value: &str) -> String {
    value
        .replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

fn labels(names: &[String], values: &[String], extra: Option<(&str, &str)>) -> String {
    let mut pairs: Vec<String> = names
        .iter()
        .zip(values)
        .map(|(name, value)| format!("{name}=\"{}\"", escape_label_value(value)))
        .collect();
    if let Some((name, value)) = extra {
        pairs.push(format!("{name}=\"{}\"", escape_label_value(value)));
    }
    if pairs.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", pairs.join(","))
    }
}

/// Every family in the text format; families without series keep their `HELP`/`TYPE` lines.
pub fn text(families: &[FamilySnapshot]) -> String {
    let mut out = String::new();
    for family in families {
        let descriptor = &family.descriptor;
        let name = &descriptor.name;
        let names = &descriptor.label_names;
        // Writing to a String cannot fail.
        let _ = writeln!(out, "# HELP {name} {}", escape_help(&descriptor.help));
        let _ = writeln!(out, "# TYPE {name} {}", descriptor.kind.as_str());
        for (values, sample) in &family.series {
            match sample {
                SampleValue::Scalar(value) => {
                    let _ = writeln!(
                        out,
                        "{name}{} {}",
                        labels(names, values, None),
                        format_value(*value)
                    );
                }
                SampleValue::Histogram(histogram) => {
                    let mut cumulative = 0;
                    let bounds = histogram
                        .bounds
                        .iter()
                        .map(|bound| format_value(*bound))
                        .chain(std::iter::once("+Inf".to_owned()));
                    for (bound, count) in bounds.zip(&histogram.counts) {
                        cumulative += count;
                        let _ = writeln!(
                            out,
                            "{name}_bucket{} {cumulative}",
                            labels(names, values, Some(("le", &bound)))
                        );
                    }
                    let plain = labels(names, values, None);
                    let _ = writeln!(out, "{name}_sum{plain} {}", format_value(histogram.sum));
                    let _ = writeln!(out, "{name}_count{plain} {}", histogram.count);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use pretty_assertions::assert_eq;

    #[test]
    fn values_are_written_as_prometheus_reads_them() {
        let cases = [
            (1.0, "1"),
            (0.005, "0.005"),
            (-2.5, "-2.5"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
        ];
        for (value, expected) in cases {
            assert_eq!(format_value(value), expected);
        }
    }

    #[test]
    fn label_values_and_help_are_escaped() {
        assert_eq!(escape_label_value("a\\b\"c\nd"), r#"a\\b\"c\nd"#);
        assert_eq!(escape_help("a\\b\"c\nd"), r#"a\\b"c\nd"#);
    }

    #[test]
    fn every_kind_encodes_in_the_text_format() {
        let registry = Registry::new();
        let calls = registry
            .counter("calls_total", "Calls made.\nBy tool.", ["server", "tool"])
            .expect("registers");
        let up = registry.gauge("up", "Up.", []).expect("registers");
        let latency = registry
            .histogram("latency_seconds", "Latency.", ["tool"], &[0.1, 1.0])
            .expect("registers");
        calls.inc(["a\"b", "x"]);
        calls.inc_by(["a", "y\\z"], 2.0);
        up.set([], 1.0);
        latency.observe(["t"], 0.05);
        latency.observe(["t"], 0.5);
        latency.observe(["t"], 5.0);
        let expected = r#"# HELP calls_total Calls made.\nBy tool.
# TYPE calls_total counter
calls_total{server="a",tool="y\\z"} 2
calls_total{server="a\"b",tool="x"} 1
# HELP up Up.
# TYPE up gauge
up 1
# HELP latency_seconds Latency.
# TYPE latency_seconds histogram
latency_seconds_bucket{tool="t",le="0.1"} 1
latency_seconds_bucket{tool="t",le="1"} 2
latency_seconds_bucket{tool="t",le="+Inf"} 3
latency_seconds_sum{tool="t"} 5.55
latency_seconds_count{tool="t"} 3
"#;
        assert_eq!(registry.encode(), expected);
    }
}
