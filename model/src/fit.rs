//! The fit of a measured transfer time `t(s)` to `l + s/b`, and where MPI's protocol switch
//! (eager to rendezvous) makes it piecewise.
//!
//! Times span six orders of magnitude from 1 B to 64 MiB, so an ordinary least-squares fit
//! would be decided by the largest messages alone (and could give a negative latency). The
//! fit minimises the squared *relative* error, `Σ ((l + s/b − t)/t)²`, a weighted least
//! squares with weights `1/t²`, and constrains `l ≥ 0`. A piecewise fit splits the sizes at
//! one breakpoint into two such lines; it is kept when it at least halves the root-mean-square
//! relative error of the single line (not the worst: one size disturbed by a busy machine
//! must not decide the shape).

use serde::{Deserialize, Serialize};

/// One line `t(s) = l + s/b` over a range of sizes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Segment {
    /// The smallest size the line was fitted on, bytes.
    pub from_bytes: u64,
    /// The largest size the line was fitted on, bytes.
    pub to_bytes: u64,
    /// `l`: the latency, µs.
    pub latency_us: f64,
    /// `b`: the bandwidth, bytes per µs (= MB/s).
    pub bytes_per_us: f64,
}

impl Segment {
    /// The predicted one-way time of an `s`-byte message, µs.
    pub fn time_us(&self, s: f64) -> f64 {
        self.latency_us + s / self.bytes_per_us
    }
}

/// The weighted least-squares line through `(size, time_us)` points (at least two distinct
/// sizes, positive times), or `None` if there is no such line with a finite positive
/// bandwidth.
pub fn line(points: &[(u64, f64)]) -> Option<Segment> {
    if points.len() < 2 || points.iter().any(|&(_, t)| !(t.is_finite() && t > 0.0)) {
        return None;
    }
    // Minimise Σ w (l + g s − t)², w = 1/t²: the 2×2 normal equations.
    let (mut sw, mut sws, mut swss, mut swt, mut swst) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(s, t) in points {
        let (s, w) = (s as f64, 1.0 / (t * t));
        sw += w;
        sws += w * s;
        swss += w * s * s;
        swt += w * t;
        swst += w * s * t;
    }
    let det = sw * swss - sws * sws;
    let (mut l, mut g) = if det.abs() > 0.0 {
        ((swss * swt - sws * swst) / det, (sw * swst - sws * swt) / det)
    } else {
        (f64::NAN, f64::NAN)
    };
    if l.is_nan() || l < 0.0 {
        // The constrained optimum lies on l = 0.
        l = 0.0;
        g = swst / swss;
    }
    let from_bytes = points.iter().map(|p| p.0).min()?;
    let to_bytes = points.iter().map(|p| p.0).max()?;
    (g.is_finite() && g > 0.0 && from_bytes < to_bytes).then(|| Segment {
        from_bytes,
        to_bytes,
        latency_us: l,
        bytes_per_us: 1.0 / g,
    })
}

/// The largest relative error of `segments` (each applied to the sizes it covers) on
/// `points`.
pub fn worst_error(segments: &[Segment], points: &[(u64, f64)]) -> f64 {
    points.iter().map(|&(s, t)| (predict(segments, s) - t).abs() / t).fold(0.0, f64::max)
}

/// The root-mean-square relative error of `segments` on `points` (0 for no points).
pub fn rms_error(segments: &[Segment], points: &[(u64, f64)]) -> f64 {
    if points.is_empty() {
        return 0.0;
    }
    let sum: f64 = points.iter().map(|&(s, t)| ((predict(segments, s) - t) / t).powi(2)).sum();
    (sum / points.len() as f64).sqrt()
}

/// The time of an `s`-byte message by the segment that covers `s` (the first one above it
/// for sizes between segments, the last one beyond them), µs.
///
/// # Panics
/// If `segments` is empty.
pub fn predict(segments: &[Segment], s: u64) -> f64 {
    segment_for(segments, s).time_us(s as f64)
}

/// The segment that covers size `s`, as [`predict`] chooses it.
///
/// # Panics
/// If `segments` is empty.
pub fn segment_for(segments: &[Segment], s: u64) -> &Segment {
    segments.iter().find(|g| s <= g.to_bytes).unwrap_or_else(|| segments.last().expect("at least one segment"))
}

/// The fit of `points` (sorted or not): one line, or two split at the breakpoint that gives
/// the smallest RMS relative error, kept if that at least halves the single line's. Each
/// side of a split has at least three sizes. `None` if not even one line fits.
pub fn fit(points: &[(u64, f64)]) -> Option<Vec<Segment>> {
    let mut sorted = points.to_vec();
    sorted.sort_by_key(|p| p.0);
    let single = vec![line(&sorted)?];
    let single_error = rms_error(&single, &sorted);
    let best = (3..sorted.len().saturating_sub(2))
        .filter_map(|cut| {
            let (low, high) = sorted.split_at(cut);
            let pair = vec![line(low)?, line(high)?];
            Some((rms_error(&pair, &sorted), pair))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0));
    match best {
        Some((error, pair)) if error <= single_error / 2.0 => Some(pair),
        _ => Some(single),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes() -> Vec<u64> {
        (0..=26).map(|i| 1u64 << i).collect()
    }

    #[test]
    fn an_exact_line_is_recovered() {
        let points: Vec<(u64, f64)> = sizes().iter().map(|&s| (s, 0.6 + s as f64 / 8000.0)).collect();
        let fitted = fit(&points).unwrap();
        assert_eq!(fitted.len(), 1, "{fitted:?}");
        assert!((fitted[0].latency_us - 0.6).abs() < 1e-9 && (fitted[0].bytes_per_us - 8000.0).abs() < 1e-6);
        assert!(worst_error(&fitted, &points) < 1e-12);
    }

    #[test]
    fn a_protocol_switch_gives_two_segments() {
        // Eager up to 4 KiB (0.5 µs, 4 GB/s), rendezvous above (3 µs, 8 GB/s).
        let t = |s: u64| if s <= 4096 { 0.5 + s as f64 / 4000.0 } else { 3.0 + s as f64 / 8000.0 };
        let points: Vec<(u64, f64)> = sizes().iter().map(|&s| (s, t(s))).collect();
        let fitted = fit(&points).unwrap();
        assert_eq!(fitted.len(), 2, "{fitted:?}");
        assert_eq!((fitted[0].to_bytes, fitted[1].from_bytes), (4096, 8192));
        assert!((fitted[1].latency_us - 3.0).abs() < 1e-6 && (fitted[1].bytes_per_us - 8000.0).abs() < 1e-3);
        assert!((predict(&fitted, 100) - t(100)).abs() < 1e-9);
        assert!((predict(&fitted, 1 << 30) - t(1 << 30)).abs() < 1e-3);
    }

    #[test]
    fn one_disturbed_size_does_not_decide_the_shape() {
        // A straight line, but the 1-byte round trip caught a scheduler time slice.
        let mut points: Vec<(u64, f64)> = sizes().iter().map(|&s| (s, 0.3 + s as f64 / 7000.0)).collect();
        points[0].1 = 4000.0;
        let fitted = fit(&points).unwrap();
        assert_eq!(fitted.len(), 1, "{fitted:?}");
        assert!((fitted[0].bytes_per_us - 7000.0).abs() / 7000.0 < 0.01, "{fitted:?}");
    }

    #[test]
    fn the_latency_is_never_negative_and_bad_points_give_none() {
        // Pure bandwidth: the unconstrained fit could dip below zero.
        let points = [(1000, 0.1), (2000, 0.2), (4000, 0.41)];
        let g = line(&points).unwrap();
        assert!(g.latency_us >= 0.0 && g.bytes_per_us > 0.0);
        assert_eq!(line(&[(8, 1.0)]), None);
        assert_eq!(line(&[(8, 1.0), (8, 1.0)]), None);
        assert_eq!(line(&[(8, 1.0), (16, f64::NAN)]), None);
        assert_eq!(line(&[(8, 2.0), (16, 1.0)]), None, "time falling with size: no positive bandwidth");
    }
}
