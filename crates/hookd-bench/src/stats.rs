//! Latency samples and their summaries.

use std::time::Duration;

use serde_json::{Value, json};

/// Latencies of one measured variant, in nanoseconds, plus the wall time they took.
#[derive(Debug, Default, Clone)]
pub struct Samples {
    nanos: Vec<u64>,
    /// Wall time of the batches the samples were taken in, loop overhead included; the
    /// throughput of a sequential variant is `len / wall`.
    wall: Duration,
}

impl Samples {
    /// Records one latency.
    pub fn push(&mut self, latency: Duration) {
        self.nanos
            .push(u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Adds the wall time of a batch.
    pub fn add_wall(&mut self, wall: Duration) {
        self.wall += wall;
    }

    /// Summarizes the samples.
    pub fn summary(&self) -> Summary {
        let mut sorted = self.nanos.clone();
        sorted.sort_unstable();
        let count = sorted.len();
        let total: u128 = sorted.iter().map(|&n| u128::from(n)).sum();
        let mean = if count == 0 { 0 } else { total / count as u128 };
        let wall_secs = self.wall.as_secs_f64();
        Summary {
            count,
            p50: Duration::from_nanos(percentile(&sorted, 50.0)),
            p99: Duration::from_nanos(percentile(&sorted, 99.0)),
            mean: Duration::from_nanos(u64::try_from(mean).unwrap_or(u64::MAX)),
            max: Duration::from_nanos(sorted.last().copied().unwrap_or(0)),
            per_second: (wall_secs > 0.0).then(|| count as f64 / wall_secs),
        }
    }
}

/// The summary of one variant's samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// How many samples.
    pub count: usize,
    /// The median.
    pub p50: Duration,
    /// The 99th percentile.
    pub p99: Duration,
    /// The mean.
    pub mean: Duration,
    /// The slowest sample.
    pub max: Duration,
    /// Operations per second over the batches' wall time, when it was recorded.
    pub per_second: Option<f64>,
}

impl Summary {
    /// The summary as JSON, durations in microseconds.
    pub fn to_json(self) -> Value {
        json!({
            "count": self.count,
            "p50_us": micros(self.p50),
            "p99_us": micros(self.p99),
            "mean_us": micros(self.mean),
            "max_us": micros(self.max),
            "per_second": self.per_second,
        })
    }
}

/// A duration in microseconds, as a float.
pub fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// The nearest-rank percentile `q` (0–100] of sorted samples; 0 when there are none.
fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(samples: &[u64], q: f64, expected: u64) {
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        assert_eq!(percentile(&sorted, q), expected, "p{q} of {samples:?}");
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let hundred: Vec<u64> = (1..=100).collect();
        let cases: Vec<(&[u64], f64, u64)> = vec![
            (&[], 50.0, 0),
            (&[7], 50.0, 7),
            (&[7], 99.0, 7),
            (&[3, 1, 2], 50.0, 2),
            (&[1, 2, 3, 4], 50.0, 2),
            (&hundred, 50.0, 50),
            (&hundred, 99.0, 99),
            (&hundred, 100.0, 100),
            (&[5, 1, 9, 1000], 99.0, 1000),
        ];
        for (samples, q, expected) in cases {
            check(samples, q, expected);
        }
    }

    #[test]
    fn summaries_count_throughput_over_wall_time() {
        let mut samples = Samples::default();
        for micros in [10, 20, 30, 40] {
            samples.push(Duration::from_micros(micros));
        }
        samples.add_wall(Duration::from_millis(1));
        let summary = samples.summary();
        assert_eq!(summary.count, 4);
        assert_eq!(summary.p50, Duration::from_micros(20));
        assert_eq!(summary.mean, Duration::from_micros(25));
        assert_eq!(summary.max, Duration::from_micros(40));
        assert_eq!(summary.per_second, Some(4000.0));
    }
}
