//! The metric registry: families registered once by name, each a [`Counter`], [`Gauge`] or
//! [`Histogram`] over a fixed number of labels (`N`, checked by the compiler at every
//! recording point), and collect hooks that refresh values just before a scrape.
//!
//! Label values often come from outside (a server's tool names): a family keeps at most
//! [`MAX_SERIES`] series, each label value at most [`MAX_LABEL_BYTES`] bytes; a new label set
//! past the limit is counted under [`OVERFLOW_LABEL`] in every label, so neither memory nor a
//! scrape grows without bound.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::encode;
use crate::error::MetricsError;

/// Locks `mutex`, ignoring poisoning: a metric value is plain data that a panic elsewhere
/// cannot leave half-written.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a family is, as the exposition format's `# TYPE` line names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    Counter,
    Gauge,
    Histogram,
}

impl MetricKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Counter => "counter",
            Self::Gauge => "gauge",
            Self::Histogram => "histogram",
        }
    }
}

/// A family's name, help text and label names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Descriptor {
    pub name: String,
    pub help: String,
    pub kind: MetricKind,
    pub label_names: Vec<String>,
}

/// One histogram series: per-bucket counts (not cumulative), sum and count.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    /// Upper bounds, strictly increasing, without `+Inf`.
    pub bounds: Arc<[f64]>,
    /// `counts[i]` observations fell in bucket `i` (`bounds.len() + 1` buckets, the last is
    /// `+Inf`).
    pub counts: Vec<u64>,
    pub sum: f64,
    pub count: u64,
}

/// The value of one series at scrape time.
#[derive(Debug, Clone, PartialEq)]
pub enum SampleValue {
    Scalar(f64),
    Histogram(HistogramSnapshot),
}

/// A family with its series, label values in label-name order, sorted by label values.
#[derive(Debug, Clone, PartialEq)]
pub struct FamilySnapshot {
    pub descriptor: Descriptor,
    pub series: Vec<(Vec<String>, SampleValue)>,
}

trait Family: Send + Sync {
    fn snapshot(&self) -> FamilySnapshot;
}

type CollectHook = Box<dyn Fn() + Send + Sync>;

#[derive(Default)]
struct RegistryInner {
    families: Mutex<Vec<(String, Arc<dyn Family>)>>,
    hooks: Mutex<Vec<CollectHook>>,
}

/// A set of metric families. Cheap to clone (shared).
#[derive(Clone, Default)]
pub struct Registry {
    inner: Arc<RegistryInner>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = lock(&self.inner.families)
            .iter()
            .map(|(name, _)| name.clone())
            .collect();
        f.debug_struct("Registry")
            .field("families", &names)
            .finish()
    }
}

fn valid_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn valid_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    !name.starts_with("__")
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    fn descriptor<const N: usize>(
        &self,
        name: &str,
        help: &str,
        kind: MetricKind,
        label_names: [&str; N],
    ) -> Result<Descriptor, MetricsError> {
        if !valid_metric_name(name) {
            return Err(MetricsError::InvalidMetricName(name.to_owned()));
        }
        for (i, label) in label_names.iter().enumerate() {
            let reserved = kind == MetricKind::Histogram && *label == "le";
            if !valid_label_name(label) || reserved {
                return Err(MetricsError::InvalidLabelName {
                    metric: name.to_owned(),
                    label: (*label).to_owned(),
                });
            }
            if label_names[..i].contains(label) {
                return Err(MetricsError::DuplicateLabel {
                    metric: name.to_owned(),
                    label: (*label).to_owned(),
                });
            }
        }
        Ok(Descriptor {
            name: name.to_owned(),
            help: help.to_owned(),
            kind,
            label_names: label_names.iter().map(|l| (*l).to_owned()).collect(),
        })
    }

    fn register(&self, name: &str, family: Arc<dyn Family>) -> Result<(), MetricsError> {
        let mut families = lock(&self.inner.families);
        if families.iter().any(|(known, _)| known == name) {
            return Err(MetricsError::AlreadyRegistered(name.to_owned()));
        }
        families.push((name.to_owned(), family));
        Ok(())
    }

    /// A counter family with these label names.
    pub fn counter<const N: usize>(
        &self,
        name: &str,
        help: &str,
        label_names: [&str; N],
    ) -> Result<Counter<N>, MetricsError> {
        let descriptor = self.descriptor(name, help, MetricKind::Counter, label_names)?;
        let counter = Counter {
            inner: Arc::new(Scalars::new(descriptor)),
        };
        self.register(name, counter.inner.clone())?;
        Ok(counter)
    }

    /// A gauge family with these label names.
    pub fn gauge<const N: usize>(
        &self,
        name: &str,
        help: &str,
        label_names: [&str; N],
    ) -> Result<Gauge<N>, MetricsError> {
        let descriptor = self.descriptor(name, help, MetricKind::Gauge, label_names)?;
        let gauge = Gauge {
            inner: Arc::new(Scalars::new(descriptor)),
        };
        self.register(name, gauge.inner.clone())?;
        Ok(gauge)
    }

    /// A histogram family with these label names and bucket upper bounds (finite, strictly
    /// increasing; `+Inf` is implied).
    pub fn histogram<const N: usize>(
        &self,
        name: &str,
        help: &str,
        label_names: [&str; N],
        bounds: &[f64],
    ) -> Result<Histogram<N>, MetricsError> {
        let descriptor = self.descriptor(name, help, MetricKind::Histogram, label_names)?;
        let increasing = bounds.windows(2).all(|pair| pair[0] < pair[1]);
        if bounds.is_empty() || !increasing || bounds.iter().any(|b| !b.is_finite()) {
            return Err(MetricsError::InvalidBuckets(name.to_owned()));
        }
        let histogram = Histogram {
            inner: Arc::new(Histograms {
                descriptor,
                bounds: bounds.into(),
                series: Mutex::new(BTreeMap::new()),
            }),
        };
        if N == 0 {
            histogram.inner.with_series([], |_| ());
        }
        self.register(name, histogram.inner.clone())?;
        Ok(histogram)
    }

    /// Runs `hook` before every [`Registry::gather`] (e.g. to copy live states into gauges).
    pub fn on_collect(&self, hook: impl Fn() + Send + Sync + 'static) {
        lock(&self.inner.hooks).push(Box::new(hook));
    }

    /// Every family, in registration order, after running the collect hooks.
    pub fn gather(&self) -> Vec<FamilySnapshot> {
        for hook in lock(&self.inner.hooks).iter() {
            hook();
        }
        let families: Vec<Arc<dyn Family>> = lock(&self.inner.families)
            .iter()
            .map(|(_, family)| family.clone())
            .collect();
        families.iter().map(|family| family.snapshot()).collect()
    }

    /// The Prometheus text exposition format (0.0.4) of [`Registry::gather`].
    pub fn encode(&self) -> String {
        encode::text(&self.gather())
    }
}

/// Most series one family keeps.
pub const MAX_SERIES: usize = 10_000;

/// Longest label value kept, in bytes (a longer one is cut on a character boundary).
pub const MAX_LABEL_BYTES: usize = 128;

/// Every label of the series that counts label sets past [`MAX_SERIES`].
pub const OVERFLOW_LABEL: &str = "_overflow";

/// `label` as a series keeps it: at most [`MAX_LABEL_BYTES`], cut on a character boundary.
/// Every recording and lookup cuts first, so a long label finds its series.
fn cut(label: &str) -> &str {
    let mut end = label.len().min(MAX_LABEL_BYTES);
    while !label.is_char_boundary(end) {
        end -= 1;
    }
    &label[..end]
}

/// The key of a new series of `labels` (already [`cut`]) in a family that holds `held`.
fn key<const N: usize>(labels: [&str; N], held: usize) -> Vec<String> {
    if held >= MAX_SERIES {
        return vec![OVERFLOW_LABEL.to_owned(); N];
    }
    labels.iter().map(|label| (*label).to_owned()).collect()
}

/// A series' label values, as the map keeps them (owned) or as a recording passes them
/// (borrowed). Both order as the sequence of their strings, as `Vec<String>` does, so a
/// recording finds its series without allocating: only a new series is copied in.
trait LabelValues {
    fn count(&self) -> usize;
    fn value(&self, index: usize) -> &str;
}

impl LabelValues for Vec<String> {
    fn count(&self) -> usize {
        self.len()
    }
    fn value(&self, index: usize) -> &str {
        &self[index]
    }
}

impl<const N: usize> LabelValues for [&str; N] {
    fn count(&self) -> usize {
        N
    }
    fn value(&self, index: usize) -> &str {
        self[index]
    }
}

impl Ord for dyn LabelValues + '_ {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (0..self.count().min(other.count()))
            .map(|index| self.value(index).cmp(other.value(index)))
            .find(|order| order.is_ne())
            .unwrap_or_else(|| self.count().cmp(&other.count()))
    }
}

impl PartialOrd for dyn LabelValues + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for dyn LabelValues + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for dyn LabelValues + '_ {}

impl<'a> std::borrow::Borrow<dyn LabelValues + 'a> for Vec<String> {
    fn borrow(&self) -> &(dyn LabelValues + 'a) {
        self
    }
}

/// Counter and gauge series.
struct Scalars {
    descriptor: Descriptor,
    series: Mutex<BTreeMap<Vec<String>, f64>>,
}

impl Scalars {
    fn new(descriptor: Descriptor) -> Self {
        let mut series = BTreeMap::new();
        if descriptor.label_names.is_empty() {
            series.insert(Vec::new(), 0.0);
        }
        Self {
            descriptor,
            series: Mutex::new(series),
        }
    }

    /// Apply `f` to the series of `labels`, made (at 0) when new.
    fn update<const N: usize>(&self, labels: [&str; N], f: impl FnOnce(&mut f64)) {
        let labels = labels.map(cut);
        let mut series = lock(&self.series);
        match series.get_mut(&labels as &dyn LabelValues) {
            Some(value) => f(value),
            None => {
                let held = series.len();
                f(series.entry(key(labels, held)).or_insert(0.0))
            }
        }
    }

    fn get<const N: usize>(&self, labels: [&str; N]) -> f64 {
        let labels = labels.map(cut);
        lock(&self.series)
            .get(&labels as &dyn LabelValues)
            .copied()
            .unwrap_or(0.0)
    }
}

impl Family for Scalars {
    fn snapshot(&self) -> FamilySnapshot {
        FamilySnapshot {
            descriptor: self.descriptor.clone(),
            series: lock(&self.series)
                .iter()
                .map(|(labels, value)| (labels.clone(), SampleValue::Scalar(*value)))
                .collect(),
        }
    }
}

/// A value that only goes up, per label set.
#[derive(Clone)]
pub struct Counter<const N: usize> {
    inner: Arc<Scalars>,
}

impl<const N: usize> std::fmt::Debug for Counter<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Counter")
            .field(&self.inner.descriptor.name)
            .finish()
    }
}

impl<const N: usize> Counter<N> {
    pub fn inc(&self, labels: [&str; N]) {
        self.inc_by(labels, 1.0);
    }

    /// Adds `amount`; a negative or non-finite amount is ignored (a counter never goes down).
    pub fn inc_by(&self, labels: [&str; N], amount: f64) {
        if amount.is_finite() && amount >= 0.0 {
            self.inner.update(labels, |value| *value += amount);
        }
    }

    /// Raises the value to `total` when it is higher: for totals kept elsewhere (e.g. the
    /// manager's restart count), copied in at scrape time.
    pub fn raise_to(&self, labels: [&str; N], total: f64) {
        if total.is_finite() {
            self.inner.update(labels, |value| *value = value.max(total));
        }
    }

    pub fn get(&self, labels: [&str; N]) -> f64 {
        self.inner.get(labels)
    }
}

/// A value that goes up and down, per label set.
#[derive(Clone)]
pub struct Gauge<const N: usize> {
    inner: Arc<Scalars>,
}

impl<const N: usize> std::fmt::Debug for Gauge<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Gauge")
            .field(&self.inner.descriptor.name)
            .finish()
    }
}

impl<const N: usize> Gauge<N> {
    pub fn set(&self, labels: [&str; N], value: f64) {
        self.inner.update(labels, |current| *current = value);
    }

    pub fn add(&self, labels: [&str; N], delta: f64) {
        self.inner.update(labels, |current| *current += delta);
    }

    pub fn get(&self, labels: [&str; N]) -> f64 {
        self.inner.get(labels)
    }
}

struct Histograms {
    descriptor: Descriptor,
    bounds: Arc<[f64]>,
    series: Mutex<BTreeMap<Vec<String>, HistogramSnapshot>>,
}

impl Histograms {
    fn with_series<const N: usize, R>(
        &self,
        labels: [&str; N],
        f: impl FnOnce(&mut HistogramSnapshot) -> R,
    ) -> R {
        let labels = labels.map(cut);
        let mut series = lock(&self.series);
        if let Some(entry) = series.get_mut(&labels as &dyn LabelValues) {
            return f(entry);
        }
        let held = series.len();
        let entry = series
            .entry(key(labels, held))
            .or_insert_with(|| HistogramSnapshot {
                bounds: self.bounds.clone(),
                counts: vec![0; self.bounds.len() + 1],
                sum: 0.0,
                count: 0,
            });
        f(entry)
    }
}

impl Family for Histograms {
    fn snapshot(&self) -> FamilySnapshot {
        FamilySnapshot {
            descriptor: self.descriptor.clone(),
            series: lock(&self.series)
                .iter()
                .map(|(labels, h)| (labels.clone(), SampleValue::Histogram(h.clone())))
                .collect(),
        }
    }
}

/// Observations counted into fixed buckets, per label set.
#[derive(Clone)]
pub struct Histogram<const N: usize> {
    inner: Arc<Histograms>,
}

impl<const N: usize> std::fmt::Debug for Histogram<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Histogram")
            .field(&self.inner.descriptor.name)
            .finish()
    }
}

impl<const N: usize> Histogram<N> {
    /// Counts `value` in the first bucket whose bound is `>= value` (`+Inf` otherwise); a NaN
    /// is ignored.
    pub fn observe(&self, labels: [&str; N], value: f64) {
        if value.is_nan() {
            return;
        }
        let bucket = self.inner.bounds.partition_point(|bound| *bound < value);
        self.inner.with_series(labels, |series| {
            series.counts[bucket] += 1;
            series.sum += value;
            series.count += 1;
        });
    }

    /// The series of these labels (all zero when nothing was observed).
    pub fn get(&self, labels: [&str; N]) -> HistogramSnapshot {
        self.inner.with_series(labels, |series| series.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn outside_label_values_cannot_grow_a_family_without_bound() {
        let registry = Registry::new();
        let counter = registry
            .counter::<1>("c_total", "c", ["tool"])
            .expect("counter");
        let histogram = registry
            .histogram::<1>("h_seconds", "h", ["tool"], &[1.0])
            .expect("histogram");
        let long = format!("a{}", "é".repeat(MAX_LABEL_BYTES));
        counter.inc([&long]);
        histogram.observe([&long], 0.5);
        let kept = &long[..MAX_LABEL_BYTES - 1];
        assert_eq!(counter.get([kept]), 1.0);
        assert_eq!(counter.get([&long]), 1.0, "a long label finds its series");
        assert_eq!(histogram.get([kept]).count, 1);
        for i in 0..MAX_SERIES + 5 {
            counter.inc([&format!("t{i}")]);
            histogram.observe([&format!("t{i}")], 0.5);
        }
        let series = |name: &str| {
            registry
                .gather()
                .into_iter()
                .find(|family| family.descriptor.name == name)
                .map(|family| family.series.len())
        };
        assert_eq!(series("c_total"), Some(MAX_SERIES + 1));
        assert_eq!(series("h_seconds"), Some(MAX_SERIES + 1));
        // The long label's series and t0 … t9998 fill the family; the other six overflow.
        assert_eq!(counter.get([OVERFLOW_LABEL]), 6.0);
        assert_eq!(histogram.get([OVERFLOW_LABEL]).count, 6);
        assert_eq!(counter.get(["t9998"]), 1.0);
        // A series kept goes on counting once the family is full, a long label's too.
        counter.inc([&long]);
        histogram.observe([&long], 0.5);
        assert_eq!(counter.get([kept]), 2.0);
        assert_eq!(histogram.get([kept]).count, 2);
        assert_eq!(counter.get([OVERFLOW_LABEL]), 6.0);
    }

    #[test]
    fn borrowed_labels_order_as_owned_ones_so_recordings_find_their_series() {
        let cases: [[&str; 2]; 6] = [
            ["a", "b"],
            ["a", "bc"],
            ["ab", ""],
            ["", "z"],
            ["a", "b\u{e9}"],
            ["b", "a"],
        ];
        for left in cases {
            for right in cases {
                let owned = (key(left, 0), key(right, 0));
                let borrowed: (&dyn LabelValues, &dyn LabelValues) = (&left, &right);
                assert_eq!(
                    borrowed.0.cmp(borrowed.1),
                    owned.0.cmp(&owned.1),
                    "{left:?} {right:?}"
                );
            }
        }
        let (shorter, longer): (Vec<String>, [&str; 2]) = (key(["a"], 0), ["a", ""]);
        assert!((&shorter as &dyn LabelValues) < (&longer as &dyn LabelValues));

        // A series recorded once is found again by borrowed labels (one series, summed).
        let registry = Registry::new();
        let calls = registry
            .counter::<2>("calls_total", "Calls.", ["server", "tool"])
            .expect("registers");
        for _ in 0..3 {
            calls.inc(["fs", "read"]);
        }
        calls.inc(["fs", "write"]);
        assert_eq!(
            (
                calls.get(["fs", "read"]),
                calls.get(["fs", "write"]),
                calls.get(["x", "y"])
            ),
            (3.0, 1.0, 0.0)
        );
        let histogram = registry
            .histogram::<1>("took_seconds", "Took.", ["server"], &[0.1, 1.0])
            .expect("registers");
        histogram.observe(["fs"], 0.05);
        histogram.observe(["fs"], 0.5);
        assert_eq!(histogram.get(["fs"]).count, 2);
    }

    #[test]
    fn names_are_checked_at_registration() {
        let registry = Registry::new();
        let cases: Vec<(Result<(), MetricsError>, MetricsError)> = vec![
            (
                registry.counter("1bad", "h", []).map(drop),
                MetricsError::InvalidMetricName("1bad".into()),
            ),
            (
                registry.counter("bad-name", "h", []).map(drop),
                MetricsError::InvalidMetricName("bad-name".into()),
            ),
            (
                registry.counter("x", "h", ["__reserved"]).map(drop),
                MetricsError::InvalidLabelName {
                    metric: "x".into(),
                    label: "__reserved".into(),
                },
            ),
            (
                registry.gauge("y", "h", ["a", "a"]).map(drop),
                MetricsError::DuplicateLabel {
                    metric: "y".into(),
                    label: "a".into(),
                },
            ),
            (
                registry.histogram("z", "h", ["le"], &[1.0]).map(drop),
                MetricsError::InvalidLabelName {
                    metric: "z".into(),
                    label: "le".into(),
                },
            ),
            (
                registry.histogram("z", "h", [], &[2.0, 1.0]).map(drop),
                MetricsError::InvalidBuckets("z".into()),
            ),
            (
                registry
                    .histogram("z", "h", [], &[1.0, f64::INFINITY])
                    .map(drop),
                MetricsError::InvalidBuckets("z".into()),
            ),
            (
                registry.histogram("z", "h", [], &[]).map(drop),
                MetricsError::InvalidBuckets("z".into()),
            ),
        ];
        for (result, expected) in cases {
            assert_eq!(result, Err(expected));
        }
    }

    #[test]
    fn a_name_registers_once() {
        let registry = Registry::new();
        assert!(registry.counter("calls_total", "h", []).is_ok());
        assert_eq!(
            registry.gauge("calls_total", "h", []).map(drop),
            Err(MetricsError::AlreadyRegistered("calls_total".into()))
        );
    }

    #[test]
    fn counters_only_go_up() {
        let registry = Registry::new();
        let counter = registry
            .counter("c_total", "h", ["server"])
            .expect("registers");
        counter.inc(["a"]);
        counter.inc_by(["a"], 2.5);
        counter.inc_by(["a"], -1.0);
        counter.inc_by(["a"], f64::NAN);
        counter.raise_to(["a"], 1.0);
        assert_eq!(counter.get(["a"]), 3.5);
        counter.raise_to(["a"], 7.0);
        assert_eq!(counter.get(["a"]), 7.0);
        assert_eq!(counter.get(["b"]), 0.0);
    }

    #[test]
    fn gauges_set_and_add() {
        let registry = Registry::new();
        let gauge = registry.gauge("g", "h", ["s"]).expect("registers");
        gauge.set(["a"], 3.0);
        gauge.add(["a"], -4.0);
        assert_eq!(gauge.get(["a"]), -1.0);
    }

    #[test]
    fn histogram_buckets_include_their_upper_bound() {
        let registry = Registry::new();
        let histogram = registry
            .histogram("d_seconds", "h", ["tool"], &[0.1, 1.0])
            .expect("registers");
        for value in [0.05, 0.1, 0.5, 1.0, 3.0, f64::NAN] {
            histogram.observe(["t"], value);
        }
        let series = histogram.get(["t"]);
        assert_eq!(series.counts, vec![2, 2, 1]);
        assert_eq!(series.count, 5);
        assert_eq!(series.sum, 0.05 + 0.1 + 0.5 + 1.0 + 3.0);
    }

    #[test]
    fn unlabelled_families_show_zero_before_any_recording() {
        let registry = Registry::new();
        registry.counter("c_total", "h", []).expect("registers");
        registry
            .histogram("h_seconds", "h", [], &[1.0])
            .expect("registers");
        registry.gauge("labelled", "h", ["x"]).expect("registers");
        let series: Vec<usize> = registry.gather().iter().map(|f| f.series.len()).collect();
        assert_eq!(series, vec![1, 1, 0]);
    }

    #[test]
    fn collect_hooks_run_before_each_gather() {
        let registry = Registry::new();
        let gauge = registry.gauge("live", "h", []).expect("registers");
        let hook_gauge = gauge.clone();
        registry.on_collect(move || hook_gauge.add([], 1.0));
        registry.gather();
        registry.gather();
        assert_eq!(gauge.get([]), 2.0);
    }
}
