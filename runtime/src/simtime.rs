//! The simulator's arithmetic on time: whole nanoseconds in a `u64`, saturating at
//! [`BEYOND`] (about 584 years) instead of wrapping.
//!
//! A wrapped sum is a time earlier than the truth: a latency of 10³⁰ µs once made a run
//! predict 5 µs where 4.7 ms was right (issue 27). Every conversion and sum here can only
//! round up to the end of the range, so a larger cost never gives a smaller time; a time at
//! [`BEYOND`] is no prediction, and the simulator reports that it got there
//! (`SimReport::clock_saturated`).

use std::time::Duration;

/// The end of the clock's range, ns (`u64::MAX`, 584 years): a time that reached it is
/// beyond what the simulator can tell.
pub(crate) const BEYOND: u64 = u64::MAX;

/// `seconds` as ns, rounded: 0 for a negative time; [`BEYOND`] for one past the range, an
/// infinite one, or NaN (an unknown cost must not count as free).
pub(crate) fn from_seconds(seconds: f64) -> u64 {
    scale(1_000_000_000, seconds)
}

/// `d` as ns, [`BEYOND`] if it is past the range.
pub(crate) fn from_duration(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(BEYOND)
}

/// `a + b`, [`BEYOND`] if past the range.
pub(crate) fn add(a: u64, b: u64) -> u64 {
    a.saturating_add(b)
}

/// `ns · factor`, rounded: 0 for a negative factor, [`BEYOND`] past the range or for a NaN
/// factor; never below `ns` for a factor of 1 or more. A time already at [`BEYOND`] stays
/// there (unless the factor is 0 or less).
pub(crate) fn scale(ns: u64, factor: f64) -> u64 {
    if factor.is_nan() || (ns == BEYOND && factor > 0.0) {
        return BEYOND;
    }
    // `as` saturates at both ends; the product of two finite numbers may be infinite, which
    // saturates too. Above 2^53 ns (104 days) `ns as f64` rounds, by up to 1 µs near the top:
    // the clamps keep a factor above 1 from giving less than `ns`, and one below 1 more.
    let product = (ns as f64 * factor).max(0.0).round() as u64;
    match factor.partial_cmp(&1.0) {
        Some(std::cmp::Ordering::Greater) => product.max(ns),
        Some(std::cmp::Ordering::Less) => product.min(ns),
        _ => ns,
    }
}

/// ns as seconds, for reports.
pub(crate) fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Costs from nothing to far past the range, ascending: at, around and beyond the ends.
    fn ascending_seconds() -> Vec<f64> {
        let mut xs = vec![f64::NEG_INFINITY, -1e30, -1.0, 0.0, 1e-12, 0.5e-9, 1e-9, 1.0, 3600.0, 1.8e10];
        xs.extend([1.8446744073709551e10, 1.8446744073709552e10, 1e11, 1e15, 1e17, 1e24, 1e30, f64::MAX]);
        xs.push(f64::INFINITY);
        xs
    }

    #[test]
    fn a_larger_cost_never_gives_a_smaller_time() {
        let xs = ascending_seconds();
        let ns: Vec<u64> = xs.iter().map(|&s| from_seconds(s)).collect();
        assert!(ns.windows(2).all(|w| w[0] <= w[1]), "{xs:?} gave {ns:?}");
        assert_eq!((from_seconds(-1.0), from_seconds(1.0), from_seconds(1e30)), (0, 1_000_000_000, BEYOND));
        assert_eq!(from_seconds(f64::NAN), BEYOND, "an unknown cost counted as free");
        // Sums of any two of them, and times scaled by growing factors, grow too.
        for &start in &[0, 1, 1 << 40, BEYOND - 1, BEYOND] {
            let sums: Vec<u64> = ns.iter().map(|&d| add(start, d)).collect();
            assert!(sums.windows(2).all(|w| w[0] <= w[1]) && sums.iter().all(|&t| t >= start), "{start}: {sums:?}");
            let factors =
                [-1.0, 0.0, 0.5, 0.9999999999999999, 1.0, 1.0000000000000002, 1.5, 10.0, 1e300, f64::INFINITY];
            let scaled: Vec<u64> = factors.iter().map(|&f| scale(start, f)).collect();
            assert!(scaled.windows(2).all(|w| w[0] <= w[1]), "{start}: {scaled:?}");
            assert!(scale(start, 1.0) == start && scale(start, f64::NAN) == BEYOND, "{start}");
        }
        assert_eq!(add(BEYOND - 5, 10), BEYOND, "a sum wrapped around");
        assert_eq!(from_duration(Duration::MAX), BEYOND);
        assert_eq!(from_duration(Duration::from_secs(2)), 2_000_000_000);
    }
}
