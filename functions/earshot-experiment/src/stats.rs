//! Percentiles and the bootstrap: the interval of a difference between two arms, by resampling each
//! arm's answers with replacement and taking the middle 95 % of the resampled differences (the
//! percentile bootstrap). It assumes nothing of the distributions' shape (time to first audio has a
//! long right tail), and it is seeded, so that the same log gives the same report.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

pub use earshot_core::stats::{percentile, percentile_sorted};

/// The mean; None for no values.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// What a bootstrap computes on each resample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Statistic {
    /// The mean.
    Mean,
    /// A percentile, 0 to 100.
    Percentile(f64),
}

impl Statistic {
    /// The statistic of `values`; `None` for no values.
    pub fn of(self, values: &[f64]) -> Option<f64> {
        match self {
            Statistic::Mean => mean(values),
            Statistic::Percentile(p) => percentile(values, p),
        }
    }
}

/// A difference `b − a` with its 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Difference {
    /// The difference seen in the data.
    pub estimate: f64,
    /// The interval's lower end (the 2.5th percentile of the resampled differences).
    pub low: f64,
    /// The interval's upper end (the 97.5th percentile of the resampled differences).
    pub high: f64,
}

impl Difference {
    /// Whether the interval leaves out zero: the data tells the arms apart.
    pub fn excludes_zero(&self) -> bool {
        self.low > 0.0 || self.high < 0.0
    }

    /// Half the interval's width.
    pub fn half_width(&self) -> f64 {
        (self.high - self.low) / 2.0
    }
}

/// The bootstrap of `statistic(b) − statistic(a)`: `resamples` draws, seeded by `seed`. None when an
/// arm has no values.
pub fn bootstrap(a: &[f64], b: &[f64], statistic: Statistic, resamples: usize, seed: u64) -> Option<Difference> {
    let estimate = statistic.of(b)? - statistic.of(a)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut draws = Vec::with_capacity(resamples);
    let (mut ra, mut rb) = (vec![0.0; a.len()], vec![0.0; b.len()]);
    for _ in 0..resamples.max(1) {
        resample(a, &mut ra, &mut rng);
        resample(b, &mut rb, &mut rng);
        draws.push(statistic.of(&rb)? - statistic.of(&ra)?);
    }
    draws.sort_by(f64::total_cmp);
    Some(Difference { estimate, low: percentile_sorted(&draws, 2.5), high: percentile_sorted(&draws, 97.5) })
}

fn resample(from: &[f64], into: &mut [f64], rng: &mut ChaCha8Rng) {
    for slot in into.iter_mut() {
        *slot = from[rng.random_range(0..from.len())];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bootstrap_is_reproducible_and_its_interval_holds_the_estimate() {
        let a: Vec<f64> = (0..200).map(|i| 300.0 + (i % 40) as f64).collect();
        let b: Vec<f64> = (0..200).map(|i| 350.0 + (i % 40) as f64).collect();
        let d = bootstrap(&a, &b, Statistic::Mean, 1000, 7).unwrap();
        assert_eq!(Some(d), bootstrap(&a, &b, Statistic::Mean, 1000, 7), "the same seed, the same interval");
        assert!((d.estimate - 50.0).abs() < 1e-9);
        assert!(d.low < 50.0 && 50.0 < d.high && d.excludes_zero(), "{d:?}");
        // Two samples from one distribution: the interval spans zero.
        let same = bootstrap(&a, &a, Statistic::Percentile(50.0), 1000, 7).unwrap();
        assert!(!same.excludes_zero() && same.estimate == 0.0, "{same:?}");
        assert_eq!(bootstrap(&[], &b, Statistic::Mean, 10, 1), None);
    }
}
