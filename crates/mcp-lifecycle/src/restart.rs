//! When to restart an always-on server that died: exponential backoff with jitter and a cap,
//! and a give-up after too many failures in a row (a crash loop). The manager's restart loop
//! applies it (`manager/restart.rs`).

use std::time::Duration;

/// The restart policy of always-on servers.
#[derive(Debug, Clone, PartialEq)]
pub struct RestartPolicy {
    /// Delay before the first restart.
    pub base: Duration,
    /// No delay is longer than this.
    pub max: Duration,
    /// Each delay is scaled by a random factor in `1 - jitter ..= 1 + jitter`.
    pub jitter: f64,
    /// After this many failures in a row the server is left in `error`.
    pub max_consecutive_failures: u32,
    /// A process that ran this long resets the failure count.
    pub stable_after: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        Self {
            base: Duration::from_millis(500),
            max: Duration::from_secs(60),
            jitter: 0.2,
            max_consecutive_failures: 5,
            stable_after: Duration::from_secs(60),
        }
    }
}

/// What to do after the `failures`-th failure in a row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RestartDecision {
    RestartAfter(Duration),
    GiveUp,
}

impl RestartPolicy {
    /// The delay before restart number `failures` (1-based), with `unit` in `0.0..=1.0`
    /// standing for the random draw (0.5 = no jitter).
    pub fn decide_with(&self, failures: u32, unit: f64) -> RestartDecision {
        if failures > self.max_consecutive_failures {
            return RestartDecision::GiveUp;
        }
        let exponent = failures.saturating_sub(1).min(30);
        let raw = self.base.saturating_mul(1u32 << exponent).min(self.max);
        let factor = 1.0 + self.jitter * (unit.clamp(0.0, 1.0) * 2.0 - 1.0);
        RestartDecision::RestartAfter(raw.mul_f64(factor.max(0.0)).min(self.max))
    }

    /// How long listings and calls leave a server alone after its `failures`-th failed start
    /// in a row: the restart delay without jitter, never giving up (an explicit start, or the
    /// next demand after the wait, tries again).
    pub fn start_backoff(&self, failures: u32) -> Duration {
        let exponent = failures.saturating_sub(1).min(30);
        self.base.saturating_mul(1u32 << exponent).min(self.max)
    }

    /// [`Self::decide_with`] with a random draw.
    pub fn decide(&self, failures: u32) -> RestartDecision {
        self.decide_with(failures, rand::random::<f64>())
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_then_gives_up() {
        let policy = RestartPolicy {
            base: Duration::from_millis(100),
            max: Duration::from_millis(500),
            jitter: 0.5,
            max_consecutive_failures: 4,
            stable_after: Duration::from_secs(1),
        };
        let ms = |n| RestartDecision::RestartAfter(Duration::from_millis(n));
        let cases = [
            (1, 0.5, ms(100)),
            (2, 0.5, ms(200)),
            (3, 0.5, ms(400)),
            (4, 0.5, ms(500)),
            (2, 0.0, ms(100)),
            (2, 1.0, ms(300)),
            (4, 1.0, ms(500)),
            (5, 0.5, RestartDecision::GiveUp),
        ];
        for (failures, unit, expected) in cases {
            assert_eq!(
                policy.decide_with(failures, unit),
                expected,
                "failures {failures}, unit {unit}"
            );
        }
    }
}
