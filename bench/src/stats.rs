//! Summaries of trials: count, median, p90, p99, minimum and maximum.
//!
//! Percentiles are nearest-rank (the smallest value with at least p% of the trials at or below it),
//! so every figure reported is a value some trial produced; with 20 trials p99 is the maximum, and
//! the report says so by printing n beside it.

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
        Some(Summary { n: v.len(), median: median_sorted(&v), p90: nearest_rank(&v, 90.0), p99: nearest_rank(&v, 99.0), min: v[0], max: v[v.len() - 1] })
    }
}

fn median_sorted(v: &[f64]) -> f64 {
    let mid = v.len() / 2;
    if v.len().is_multiple_of(2) {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    }
}

fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// The median of some values, `NaN` when there are none.
pub fn median(values: &[f64]) -> f64 {
    Summary::of(values).map_or(f64::NAN, |s| s.median)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles_and_median() {
        let values: Vec<f64> = (1..=20).rev().map(f64::from).collect();
        let s = Summary::of(&values).unwrap();
        assert_eq!((s.n, s.median, s.p90, s.p99, s.min, s.max), (20, 10.5, 18.0, 20.0, 1.0, 20.0));
        let s = Summary::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.p90), (2.0, 3.0));
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(Summary::of(&hundred).unwrap().p99, 99.0);
    }

    #[test]
    fn no_values_no_summary() {
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[f64::NAN]).is_none());
        assert!(median(&[]).is_nan());
    }
}
