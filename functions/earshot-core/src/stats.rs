//! Percentiles, computed one way wherever earshot reports them: the benchmarks' summaries, the A/B
//! report and its bootstrap, the tests' own measurements.
//!
//! The `p`-th percentile interpolates linearly between the two nearest ranks, as numpy's default
//! ("linear", Hyndman and Fan's definition 7) does, so that a figure here matches the one a reader
//! computes from the same numbers with numpy or pandas. Written by hand: a dozen lines, where a
//! statistics crate would bring far more than this.

/// The `p`-th percentile (0 to 100) of `values`; `None` for no values. Values that are not finite are
/// left out.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    Some(percentile_sorted(&sorted, p))
}

/// As [`percentile`], of values already sorted in increasing order (at least one).
pub fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    assert!(!sorted.is_empty(), "a percentile of no values");
    let rank = (p / 100.0).clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (low, high) = (rank.floor() as usize, rank.ceil() as usize);
    sorted[low] + (sorted[high] - sorted[low]) * (rank - low as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_between_ranks_as_numpy_does() {
        let v = [15.0, 20.0, 35.0, 40.0, 50.0];
        assert_eq!(percentile(&v, 50.0), Some(35.0));
        assert_eq!(percentile(&v, 40.0), Some(29.0)); // numpy.percentile([15,20,35,40,50], 40) == 29.0
        assert_eq!(percentile(&v, 100.0), Some(50.0));
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[f64::NAN, 3.0, 1.0], 50.0), Some(2.0), "what is not a number is left out");
        // numpy.percentile(range(1, 21), [50, 90, 99]) == [10.5, 18.1, 19.81]
        let twenty: Vec<f64> = (1..=20).rev().map(f64::from).collect();
        let got: Vec<f64> = [50.0, 90.0, 99.0].iter().map(|p| percentile(&twenty, *p).unwrap()).collect();
        for (got, want) in got.iter().zip([10.5, 18.1, 19.81]) {
            assert!((got - want).abs() < 1e-9, "{got} != {want}");
        }
    }
}
