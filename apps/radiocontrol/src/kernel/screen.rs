//! The f32 screen of the vector kernels' epilogue (AVX2 on 8 lanes, AVX-512 on 16): it
//! computes `kernel::numerator` (f64, the same operations as every path) only at the lags
//! that can be the maximum, so the result keeps the portable path's bits.
//!
//! Per lag, the screen value is v = fl32(fl32(S)·fl32(inv_sy) − fl32(x̄)·fl32(sy_inv_sy))
//! (`vcvtdq2ps`, `vmulps`, `vfnmadd`, on any number of lanes). **The bound:** with ε =
//! 2^-24, a = inv_sy ≥ 0, b = sy_inv_sy ≥ 0, S ≥ 0 and U = S·a − x̄·b the exact value of the
//! f64 inputs: the product is within (3ε + O(ε²))·S·a of S·a (three roundings), x̄·b within
//! (2ε + O(ε²))·x̄·b, the fused subtraction adds ε·|result|, and |U| ≤ max(S·a, x̄·b); so
//! |v − U| ≤ 4.001ε·(S·a + x̄·b). The f64 u differs from U by at most 2^-52·(S·a + |u|).
//! With S ≤ Σx·max Lgq, Sy ≤ 80·max Lgq and x̄ = Σx/80, S·a + x̄·b ≤ (1 + 2^-51)·2·Σx·max
//! Lgq·a, so |v − u| ≤ 2^-21·1.001·Σx·max Lgq·a < E/4 with **E = 2^-19·Σx·max Lgq·a_max**
//! (a_max the largest a of the lags of the vector the lag is screened in: 64 lags on AVX2,
//! 128 on AVX-512; nothing below depends on their number). Per watch, L is the largest
//! v − E over the lags screened so far (every u ≥ its v − E, so L ≤ the best u); a lag
//! whose v < L − E has u < L and cannot be the maximum, and every lag whose v ≥ L − E is
//! evaluated exactly. The best lag is among those (its v ≥ u* − E/4 ≥ L − E), so the exact
//! maximum and its first lag are the portable scan's.
//!
//! **Rounding of L and the threshold.** For any lag of a vector, |u| ≤ S·a + x̄·b ≤ 2^20·E.
//! L is raised in f64 to fl(top − E) for a vector's top screen value: within 2^-53·(|u| +
//! 2E) ≪ 3E/4 of top − E ≤ u(top's lag) − 3E/4, so still L ≤ u*. (A lag past the last has
//! v = −x̄·1e30, a lower bound of every u* of an unflagged watch, x̄ ≥ 1/80.) The threshold
//! t = fl32(L32 − e32·a32) (one fused rounding; L32 ≤ L rounded down, e32 and a32 within
//! 2^-24 of 2^-19·Σx·max Lgq and a_max): if L ≥ 0, |L| ≤ u* ≤ 2^20·E and the roundings add
//! at most E/16 + 2^-22·E; if L < 0 the final rounding moves t toward zero by at most
//! 2^-24·|t|, and t ≤ L·(1 + 2^-24) − 0.99·E ≤ u* − 0.99·E. Either way t ≤ u* − 0.9·E <
//! u* − E/4 ≤ v(τ*): the best lag always passes. The candidates' threshold is computed in
//! f64 and rounded down to f32 ([`f32_at_most`]), the same argument.

use super::{numerator, Prepared, Watch, LAGS};

/// The factor of E (the module's comment): 2^-19.
const E_FACTOR: f64 = 1.0 / (1u64 << 19) as f64;

/// A watch's screen state and best exact (u, lag) so far.
#[derive(Clone, Copy)]
pub(super) struct Best {
    /// L: the largest v − E so far (a lower bound of the best u).
    floor: f64,
    /// L rounded down to f32.
    floor32: f32,
    /// 2^-19·Σx·max Lgq: E of a vector is this times its `inv_sy_max`.
    e_scale: f64,
    /// `e_scale` as f32.
    e_scale32: f32,
    /// The best exact u so far.
    pub(super) u: f64,
    /// Its first lag (`u32::MAX` until a lag was evaluated).
    pub(super) lag: u32,
}

impl Best {
    /// Nothing screened yet, for a watch on a station whose largest `Lgq` is `lgq_max`.
    pub(super) fn new(watch: &Watch, lgq_max: f64) -> Best {
        let sum: i32 = watch.x.iter().map(|&v| i32::from(v)).sum();
        let e_scale = E_FACTOR * f64::from(sum) * lgq_max;
        Best {
            floor: f64::NEG_INFINITY,
            floor32: f32::NEG_INFINITY,
            e_scale,
            e_scale32: e_scale as f32,
            u: f64::NEG_INFINITY,
            lag: u32::MAX,
        }
    }

    /// L − E in f32 for a vector whose largest `inv_sy` is `inv_sy_max32` (fused: one
    /// rounding; the module's comment): a vector none of whose v reaches it is skipped.
    #[inline(always)]
    pub(super) fn threshold32(&self, inv_sy_max32: f32) -> f32 {
        (-self.e_scale32).mul_add(inv_sy_max32, self.floor32)
    }

    /// Raises L by `top`, the largest v of a vector whose largest `inv_sy` is `inv_sy_max`.
    pub(super) fn raise(&mut self, top: f32, inv_sy_max: f64) {
        self.floor = self.floor.max(f64::from(top) - self.e_scale * inv_sy_max);
        self.floor32 = f32_at_most(self.floor);
    }

    /// L − E, rounded down, for a vector whose largest `inv_sy` is `inv_sy_max`: its lags
    /// whose v reaches it are evaluated exactly.
    pub(super) fn threshold(&self, inv_sy_max: f64) -> f32 {
        f32_at_most(self.floor - self.e_scale * inv_sy_max)
    }

    /// Evaluates lag τ (if real) exactly from its sum S, keeping the first lag of the best u.
    #[inline(always)]
    pub(super) fn consider(&mut self, station: &Prepared, watch: &Watch, s: i32, tau: usize) {
        if tau < LAGS {
            let u = numerator(s, watch.mean, station.inv_sy[tau], station.sy_inv_sy[tau]);
            if u > self.u || (u == self.u && (tau as u32) < self.lag) {
                (self.u, self.lag) = (u, tau as u32);
            }
        }
    }

    /// The result (u, lag) of an unflagged watch, whose best lag the screen always lets
    /// through (a flagged one's is not used).
    pub(super) fn result(&self, watch: &Watch) -> (f64, u32) {
        assert!(watch.flags != 0 || (self.lag as usize) < LAGS, "an unflagged watch's best lag was evaluated");
        (self.u, self.lag)
    }
}

/// The largest f32 not above `x`.
fn f32_at_most(x: f64) -> f32 {
    let f = x as f32;
    if f64::from(f) > x {
        f.next_down()
    } else {
        f
    }
}

#[cfg(test)]
mod tests {
    use super::f32_at_most;

    /// The thresholds are rounded down: the largest f32 not above the f64.
    #[test]
    fn f32_at_most_rounds_down() {
        for x in [0.0, -0.0, 1.0, -1.0, 0.1, -0.1, 1e-40, -1e-40, 123456.789, -9.87654321e20, f64::NEG_INFINITY] {
            let f = f32_at_most(x);
            assert!(f64::from(f) <= x, "{x}");
            assert!(f == f32::INFINITY || f64::from(f.next_up()) > x, "{x}");
        }
    }
}
