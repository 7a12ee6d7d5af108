//! Summaries of trials: count, median, p90, p99, minimum and maximum.
//!
//! Percentiles interpolate between the nearest ranks, as `earshot ab` and numpy compute them
//! (`earshot_core::stats`: one definition wherever earshot reports a percentile); the report prints n
//! beside them, since with 20 trials p99 lies between the two slowest.

use earshot_core::stats::percentile_sorted;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub p90: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    /// `None` when there are no values.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let at = |p: f64| percentile_sorted(&v, p);
        Some(Summary { n: v.len(), median: at(50.0), p90: at(90.0), p99: at(99.0), min: v[0], max: v[v.len() - 1] })
    }
}

/// The median of some values, `NaN` when there are none.
pub fn median(values: &[f64]) -> f64 {
    Summary::of(values).map_or(f64::NAN, |s| s.median)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_the_ones_earshot_ab_computes() {
        let values: Vec<f64> = (1..=20).rev().map(f64::from).collect();
        let s = Summary::of(&values).unwrap();
        assert_eq!((s.n, s.median, s.min, s.max), (20, 10.5, 1.0, 20.0));
        assert_eq!((s.p90, s.p99), (earshot_core::stats::percentile(&values, 90.0).unwrap(), earshot_core::stats::percentile(&values, 99.0).unwrap()));
        assert!((s.p90 - 18.1).abs() < 1e-9 && (s.p99 - 19.81).abs() < 1e-9, "numpy's figures: {s:?}");
        let s = Summary::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!(s.median, 2.0);
    }

    #[test]
    fn no_values_no_summary() {
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[f64::NAN]).is_none());
        assert!(median(&[]).is_nan());
    }
}
