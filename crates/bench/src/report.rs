//! Latency samples and the markdown row they print as.

use std::time::Duration;

#[derive(Debug, Default)]
pub struct Samples(Vec<Duration>);

impl Samples {
    pub fn push(&mut self, sample: Duration) {
        self.0.push(sample);
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The `q` quantile (0.0..=1.0), nearest rank.
    pub fn quantile(&self, q: f64) -> Duration {
        let mut sorted = self.0.clone();
        sorted.sort();
        if sorted.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    /// `| label | what | n | p50 ms | p90 ms | min ms | peak RSS MiB |`
    pub fn row(&self, label: &str, what: &str, peak_rss_kib: u64) -> String {
        let ms = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1000.0);
        let min = self.0.iter().min().copied().unwrap_or_default();
        format!(
            "| {label} | {what} | {} | {} | {} | {} | {:.1} |",
            self.0.len(),
            ms(self.quantile(0.5)),
            ms(self.quantile(0.9)),
            ms(min),
            peak_rss_kib as f64 / 1024.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_use_nearest_rank() {
        let mut samples = Samples::default();
        for ms in [5, 1, 4, 2, 3] {
            samples.push(Duration::from_millis(ms));
        }
        assert_eq!(samples.quantile(0.5), Duration::from_millis(3));
        assert_eq!(samples.quantile(0.9), Duration::from_millis(5));
        assert_eq!(samples.quantile(0.0), Duration::from_millis(1));
    }
}
