//! A TSP instance as the kernels use it: the cities, their metric and coordinates, and the
//! distance matrix (the TSPLIB parser that reads one is [`crate::tsplib`]).
//!
//! **The weight bound.** Every [`Instance`] satisfies `n * max_weight <= 2^53`
//! ([`weight_limit`]): no tour length can overflow an `i64`, and every sum of weights is
//! exact in an `f64` (the Held-Karp bounds), so a length the search proves optimal is the
//! true one. The constructors refuse instances beyond it ([`WeightError`]).

use std::fmt;

use rand::{Rng, SeedableRng};

use super::distance::Metric;

/// Most cities of an instance (the search stores cities as `u16`).
pub const MAX_CITIES: usize = u16::MAX as usize;

/// `2^53`: every tour length (at most `n` weights) stays within it.
pub const WEIGHT_SUM_LIMIT: i64 = 1 << 53;

/// The largest edge weight an instance of `n` cities may have: `n * weight <= 2^53`.
pub fn weight_limit(n: usize) -> i64 {
    WEIGHT_SUM_LIMIT / i64::try_from(n.max(1)).unwrap_or(i64::MAX)
}

/// Bytes of the distance matrix of `n` cities (saturating).
pub fn matrix_bytes(n: usize) -> u64 {
    let n = n as u64;
    n.saturating_mul(n).saturating_mul(std::mem::size_of::<i64>() as u64)
}

/// An edge weight beyond the instance's bound ([`weight_limit`]), or not a usable number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightError {
    /// The edge's cities (0-based).
    pub i: usize,
    /// The edge's other city.
    pub j: usize,
    /// The weight; `None` if it is not a finite number below 2^63.
    pub weight: Option<i64>,
    /// Cities of the instance.
    pub n: usize,
}

impl WeightError {
    /// The message, with `city` naming a (0-based) city: "3", or "3 (line 9)".
    pub fn describe(&self, city: impl Fn(usize) -> String) -> String {
        let (i, j, n) = (city(self.i), city(self.j), self.n);
        match self.weight {
            Some(w) if w < 0 => format!("the distance between cities {i} and {j} is negative ({w})"),
            w => {
                let w = w.map_or("not a finite number below 2^63".to_string(), |w| w.to_string());
                format!(
                    "the largest distance, between cities {i} and {j}, is {w}; with {n} cities at most {} is allowed \
                     ({n} x weight <= 2^53, so that tour lengths cannot overflow): scale the instance down",
                    weight_limit(n)
                )
            }
        }
    }
}

impl fmt::Display for WeightError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe(|c| (c + 1).to_string()))
    }
}

impl std::error::Error for WeightError {}

/// A symmetric TSP instance with integer distances within the weight bound.
#[derive(Clone, Debug)]
pub struct Instance {
    /// The instance's name (`NAME`, or the file name).
    pub name: String,
    /// Number of cities.
    pub n: usize,
    /// How distances were computed.
    pub metric: Metric,
    /// City coordinates, if the file has any (node or display coordinates).
    pub coords: Option<Vec<[f64; 2]>>,
    dist: Vec<i64>,
}

impl Instance {
    /// Builds an instance from coordinates and a metric.
    ///
    /// # Errors
    /// The largest distance, if it breaks the weight bound (or is not a number).
    pub fn from_coords(name: &str, metric: Metric, coords: Vec<[f64; 2]>) -> Result<Instance, WeightError> {
        let n = coords.len();
        let mut dist = vec![0; n * n];
        // The largest distance and its cities; one that is not representable (`None`)
        // ranks above every number.
        let rank = |w: Option<i64>| w.map_or(i128::MAX, i128::from);
        let mut largest = (Some(0), 0, 0);
        for i in 0..n {
            for j in 0..i {
                let d = metric.weight(coords[i], coords[j]);
                if rank(d) > rank(largest.0) {
                    largest = (d, i, j);
                }
                let d = d.unwrap_or(i64::MAX);
                dist[i * n + j] = d;
                dist[j * n + i] = d;
            }
        }
        let (weight, i, j) = largest;
        if rank(weight) > i128::from(weight_limit(n)) {
            return Err(WeightError { i, j, weight, n });
        }
        Ok(Instance { name: name.to_string(), n, metric, coords: Some(coords), dist })
    }

    /// Builds an instance from a full symmetric matrix (row-major, `n * n`).
    ///
    /// # Errors
    /// A negative weight, or the largest one if it breaks the weight bound.
    ///
    /// # Panics
    /// If the matrix is not `n * n`.
    pub fn from_matrix(name: &str, n: usize, dist: Vec<i64>) -> Result<Instance, WeightError> {
        assert_eq!(dist.len(), n * n, "a distance matrix of {n} cities has {} entries", n * n);
        let off_diagonal = || (0..n).flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)));
        if let Some((i, j)) = off_diagonal().find(|&(i, j)| dist[i * n + j] < 0) {
            return Err(WeightError { i, j, weight: Some(dist[i * n + j]), n });
        }
        if let Some((i, j)) = off_diagonal().max_by_key(|&(i, j)| dist[i * n + j]) {
            if dist[i * n + j] > weight_limit(n) {
                return Err(WeightError { i, j, weight: Some(dist[i * n + j]), n });
            }
        }
        Ok(Instance { name: name.to_string(), n, metric: Metric::Explicit, coords: None, dist })
    }

    /// A matrix instance that skips the weight bound: for tests of what the bound prevents.
    #[cfg(test)]
    pub(crate) fn unchecked_matrix(n: usize, dist: Vec<i64>) -> Instance {
        Instance { name: "unchecked".into(), n, metric: Metric::Explicit, coords: None, dist }
    }

    /// `n` cities uniform in `[0, 1000)²` with EUC_2D distances, from `seed`.
    ///
    /// # Panics
    /// If `n` is more than [`MAX_CITIES`] (the caller checks sizes and memory first).
    pub fn random(n: usize, seed: u64) -> Instance {
        assert!(n <= MAX_CITIES, "at most {MAX_CITIES} cities, not {n}");
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let coords = (0..n).map(|_| [rng.gen_range(0.0..1000.0f64).floor(), rng.gen_range(0.0..1000.0f64).floor()]);
        Instance::from_coords(&format!("random{n}-seed{seed}"), Metric::Euc2d, coords.collect())
            .expect("distances below 1415 are far within the weight bound of 65535 cities")
    }

    /// The distance between cities `i` and `j` (0-based).
    #[inline]
    pub fn d(&self, i: usize, j: usize) -> i64 {
        self.dist[i * self.n + j]
    }

    /// The row-major distance matrix.
    pub fn matrix(&self) -> &[i64] {
        &self.dist
    }

    /// The length of the closed tour visiting `tour` in order, or `None` if the sum
    /// overflows (it cannot for a tour of at most `n` cities: the weight bound).
    pub fn checked_tour_length(&self, tour: &[usize]) -> Option<i64> {
        (0..tour.len()).try_fold(0i64, |sum, k| sum.checked_add(self.d(tour[k], tour[(k + 1) % tour.len()])))
    }

    /// The length of the closed tour visiting `tour` (a tour of this instance) in order.
    ///
    /// # Panics
    /// If the sum overflows, which the weight bound rules out for tours of `n` cities.
    pub fn tour_length(&self, tour: &[usize]) -> i64 {
        self.checked_tour_length(tour).expect("the weight bound keeps tour lengths below 2^53")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_enforce_the_bound() {
        let big = weight_limit(3) + 1;
        let e = Instance::from_matrix("m", 3, vec![0, 1, big, 1, 0, 1, big, 1, 0]).unwrap_err();
        assert_eq!(((e.i.min(e.j), e.i.max(e.j)), e.weight), ((0, 2), Some(big)));
        let e = Instance::from_matrix("m", 3, vec![0, -1, 1, -1, 0, 1, 1, 1, 0]).unwrap_err();
        assert!(e.to_string().contains("negative"), "{e}");
        let e =
            Instance::from_coords("c", Metric::Euc2d, vec![[0.0, 0.0], [f64::MAX, 0.0], [-f64::MAX, 0.0]]).unwrap_err();
        assert_eq!(e.weight, None);
    }
}
