//! TSPLIB distance functions, exactly as TSPLIB95 defines them (integer results).
//!
//! `nint(x)` is `(int)(x + 0.5)`; EUC_2D rounds the Euclidean distance to the nearest
//! integer, CEIL_2D rounds it up, ATT is the pseudo-Euclidean distance of the att48/att532
//! instances, and GEO reads coordinates as `DDD.MM` (degrees and minutes) and measures the
//! great-circle distance on TSPLIB's idealised sphere (radius 6378.388 km).
//!
//! Every function computes in `f64` and converts once, in [`to_weight`]: a distance that is
//! not a finite number below 2^63 (huge coordinates overflow `dx²`) is `None` from
//! [`Metric::weight`] and `i64::MAX` from the others, never a wrapped or zero value (`f64 as
//! i64` would turn NaN into 0). The instance's weight bound then refuses it.

/// TSPLIB's `nint`: round half up, then truncate (coordinates are non-negative distances).
/// Saturates at `i64::MAX` (NaN too).
pub fn nint(x: f64) -> i64 {
    to_weight((x + 0.5).trunc()).unwrap_or(i64::MAX)
}

/// An integral distance as an `i64`, or `None` if it is not a finite number in `0..2^63`.
pub fn to_weight(x: f64) -> Option<i64> {
    // 2^63 is exactly representable; every f64 below it converts without saturating.
    (x.is_finite() && (0.0..9_223_372_036_854_775_808.0).contains(&x)).then_some(x as i64)
}

/// How the distance between two cities is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Metric {
    /// `nint(sqrt(dx² + dy²))`.
    Euc2d,
    /// `ceil(sqrt(dx² + dy²))`.
    Ceil2d,
    /// Pseudo-Euclidean: `r = sqrt((dx² + dy²) / 10)`, rounded up unless `nint(r) >= r`.
    Att,
    /// Geographical distance; coordinates are latitude and longitude in `DDD.MM` form.
    Geo,
    /// Given by an explicit matrix.
    Explicit,
}

impl Metric {
    /// The TSPLIB `EDGE_WEIGHT_TYPE` keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            Metric::Euc2d => "EUC_2D",
            Metric::Ceil2d => "CEIL_2D",
            Metric::Att => "ATT",
            Metric::Geo => "GEO",
            Metric::Explicit => "EXPLICIT",
        }
    }

    /// The distance between points `a` and `b` (not for [`Metric::Explicit`]), or `None`
    /// if it is not a finite integer below 2^63.
    ///
    /// # Panics
    /// For [`Metric::Explicit`], which has no function.
    pub fn weight(self, a: [f64; 2], b: [f64; 2]) -> Option<i64> {
        to_weight(match self {
            Metric::Euc2d => (euclid(a, b) + 0.5).trunc(),
            Metric::Ceil2d => euclid(a, b).ceil(),
            Metric::Att => att_f64(a, b),
            Metric::Geo => geo_f64(a, b),
            Metric::Explicit => panic!("EXPLICIT distances come from the matrix, not from coordinates"),
        })
    }

    /// As [`weight`](Self::weight), saturating at `i64::MAX`.
    ///
    /// # Panics
    /// For [`Metric::Explicit`], which has no function.
    pub fn distance(self, a: [f64; 2], b: [f64; 2]) -> i64 {
        self.weight(a, b).unwrap_or(i64::MAX)
    }
}

fn euclid(a: [f64; 2], b: [f64; 2]) -> f64 {
    let (dx, dy) = (a[0] - b[0], a[1] - b[1]);
    (dx * dx + dy * dy).sqrt()
}

/// EUC_2D: the Euclidean distance rounded to the nearest integer.
pub fn euc_2d(a: [f64; 2], b: [f64; 2]) -> i64 {
    Metric::Euc2d.distance(a, b)
}

/// CEIL_2D: the Euclidean distance rounded up.
pub fn ceil_2d(a: [f64; 2], b: [f64; 2]) -> i64 {
    Metric::Ceil2d.distance(a, b)
}

/// ATT: TSPLIB's pseudo-Euclidean distance.
pub fn att(a: [f64; 2], b: [f64; 2]) -> i64 {
    Metric::Att.distance(a, b)
}

/// ATT in `f64`: `t = nint(r)`, plus one if `t < r`.
fn att_f64(a: [f64; 2], b: [f64; 2]) -> f64 {
    let (dx, dy) = (a[0] - b[0], a[1] - b[1]);
    let r = ((dx * dx + dy * dy) / 10.0).sqrt();
    let t = (r + 0.5).trunc();
    if t < r {
        t + 1.0
    } else {
        t
    }
}

/// TSPLIB's value of pi for GEO (deliberately short: the published optima depend on it).
#[allow(clippy::approx_constant)]
const GEO_PI: f64 = 3.141592;
/// TSPLIB's earth radius for GEO, in km.
const GEO_RADIUS: f64 = 6378.388;

/// A `DDD.MM` coordinate in radians: the integer part is degrees, the fraction minutes.
/// The degrees are truncated toward zero, as TSPLIB's reference code does (its text says
/// `nint`, but the published optima are computed with truncation).
fn geo_radians(x: f64) -> f64 {
    let deg = x.trunc();
    let min = x - deg;
    GEO_PI * (deg + 5.0 * min / 3.0) / 180.0
}

/// GEO: the great-circle distance in km between `(latitude, longitude)` points in `DDD.MM`.
pub fn geo(a: [f64; 2], b: [f64; 2]) -> i64 {
    Metric::Geo.distance(a, b)
}

/// GEO in `f64`. The cosine is clamped to [-1, 1]: rounding can push it just outside, where
/// `acos` is NaN (TSPLIB's C code would then convert NaN to an integer, undefined).
fn geo_f64(a: [f64; 2], b: [f64; 2]) -> f64 {
    let (lat_a, lon_a) = (geo_radians(a[0]), geo_radians(a[1]));
    let (lat_b, lon_b) = (geo_radians(b[0]), geo_radians(b[1]));
    let q1 = (lon_a - lon_b).cos();
    let q2 = (lat_a - lat_b).cos();
    let q3 = (lat_a + lat_b).cos();
    let cosine = (0.5 * ((1.0 + q1) * q2 - (1.0 - q1) * q3)).clamp(-1.0, 1.0);
    (GEO_RADIUS * cosine.acos() + 1.0).trunc()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn euc_2d_rounds_to_nearest() {
        assert_eq!(euc_2d([0.0, 0.0], [3.0, 4.0]), 5);
        // sqrt(2) = 1.414 -> 1; sqrt(2.5^2 + 0) = 2.5 -> 3 (half up).
        assert_eq!(euc_2d([0.0, 0.0], [1.0, 1.0]), 1);
        assert_eq!(euc_2d([0.0, 0.0], [2.5, 0.0]), 3);
        // berlin52 cities 1 (565, 575) and 2 (25, 185): sqrt(540^2 + 390^2) = 666.108 -> 666.
        assert_eq!(euc_2d([565.0, 575.0], [25.0, 185.0]), 666);
    }

    #[test]
    fn ceil_2d_rounds_up() {
        assert_eq!(ceil_2d([0.0, 0.0], [1.0, 1.0]), 2);
        assert_eq!(ceil_2d([0.0, 0.0], [3.0, 4.0]), 5);
        assert_eq!(ceil_2d([565.0, 575.0], [25.0, 185.0]), 667);
    }

    #[test]
    fn att_is_pseudo_euclidean() {
        // att48 cities 1 (6734, 1453) and 2 (2233, 10): r = sqrt((4501^2 + 1443^2) / 10)
        // = 1494.70..., nint = 1495 >= r, so 1495.
        assert_eq!(att([6734.0, 1453.0], [2233.0, 10.0]), 1495);
        // r = sqrt(100 / 10) = 3.162: nint = 3 < r, so 4.
        assert_eq!(att([0.0, 0.0], [10.0, 0.0]), 4);
        // r = sqrt(1000 / 10) = 10 exactly: 10.
        assert_eq!(att([0.0, 0.0], [0.0, 31.622_776_601_683_793]), 10);
    }

    #[test]
    fn geo_uses_degrees_and_minutes() {
        // 16.47 is 16 degrees 47 minutes: (16 + 5 * 0.47 / 3) * pi / 180.
        let r = geo_radians(16.47);
        assert!((r - GEO_PI * (16.0 + 0.47 * 5.0 / 3.0) / 180.0).abs() < 1e-12);
        // burma14 cities 1 (16.47, 96.10) and 2 (16.47, 94.44): 153 km (TSPLIB's matrix).
        assert_eq!(geo([16.47, 96.10], [16.47, 94.44]), 153);
        // burma14 cities 1 and 3 (20.09, 92.54): 510 km.
        assert_eq!(geo([16.47, 96.10], [20.09, 92.54]), 510);
        // A point to itself: acos(1) = 0, plus 1, truncated: 1 (TSPLIB's formula as written).
        assert_eq!(geo([38.24, 20.42], [38.24, 20.42]), 1);
    }

    #[test]
    fn huge_or_invalid_distances_are_none_never_wrapped_or_zero() {
        let far = [1e300, 0.0];
        for m in [Metric::Euc2d, Metric::Ceil2d, Metric::Att] {
            assert_eq!(m.weight([0.0, 0.0], far), None, "{m:?}");
            assert_eq!(m.distance([0.0, 0.0], far), i64::MAX, "{m:?}");
            assert_eq!(m.weight([0.0, 0.0], [f64::NAN, 0.0]), None, "{m:?}: NaN is not 0");
            assert_eq!(m.weight([f64::INFINITY, 0.0], [0.0, 0.0]), None, "{m:?}");
        }
        assert_eq!(to_weight(9.2e18), Some(9_200_000_000_000_000_000));
        assert_eq!(to_weight(9.3e18), None);
        assert_eq!(to_weight(-1.0), None);
        assert_eq!(nint(f64::NAN), i64::MAX);
        // Absurd GEO coordinates still give a distance on the sphere.
        assert!(Metric::Geo.weight([1e300, 3.0], [-1e300, 7.0]).is_some_and(|d| d <= 20_040));
    }
}
