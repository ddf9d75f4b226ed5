//! Statistics of timing samples.

/// The median of `samples`: the middle value, or the mean of the two middle values for an
/// even count; NaN for no samples.
///
/// Why this definition: it is the textbook median (numpy's, R's), symmetric in the two
/// middle runs, so that two repetitions report their mean rather than the slower one (the
/// upper middle) or the faster one. Why NaN for no samples rather than a panic: a run that
/// timed nothing (zero timed generations, say) has no median and its JSON record says so
/// (`null`); callers for which samples are guaranteed (`--reps` ≥ 1) never see it. NaN
/// samples sort after every number ([`f64::total_cmp`]).
///
/// ```
/// use dps_harness::median;
/// assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
/// assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
/// assert!(median(&[]).is_nan());
/// ```
pub fn median(samples: &[f64]) -> f64 {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn odd_even_single_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[7.0]), 7.0);
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[1.0, f64::NAN, 2.0]), 2.0, "a NaN sorts last");
    }
}
