//! The station side of the AVX2 kernel's Karatsuba step: three products give two lags'
//! sums where the plain sums take four, so `vpmaddwd` (which, unlike `vpdpwssd`, needs an
//! add beside each product) does 3/4 of the work.
//!
//! With A_j = x_2j, B_j = x_2j+1 and Y_m = Lgq[τ + 50m], the lags τ and τ + 50 are
//!
//! ```text
//! S(τ)      = Σ_j A_j·Y_2j + B_j·Y_2j+1     = P + Q0,  P  = Σ_j (A_j + B_j)·Y_2j+1
//! S(τ + 50) = Σ_j A_j·Y_2j+1 + B_j·Y_2j+2   = P + Q1,  Q0 = Σ_j A_j·(Y_2j − Y_2j+1)
//!                                                      Q1 = Σ_j B_j·(Y_2j+2 − Y_2j+1)
//! ```
//!
//! exact integers as before (|differences| ≤ 14300 and A + B ≤ 510 fit i16; every partial
//! sum fits i32). The "base" lags τ are those with ⌊τ/50⌋ even, numbered i = 0, 1, …:
//! τ(i) = 100·⌊i/50⌋ + i mod 50, each giving τ and its partner τ + 50.

use super::{Prepared, BLOCK_MS, LAGS, WATCH_BLOCKS};

/// Base lags per vector (8 i32 lanes).
pub(crate) const LANES: usize = 8;
/// Base lags: 61 rows of 50 cover the lags 0..6100, padded to whole chunks of 8 vectors.
pub(crate) const BASE: usize = (LAGS.div_ceil(2 * BLOCK_MS) * BLOCK_MS).div_ceil(8 * LANES) * 8 * LANES;
/// Steps of two j (four k) each, one `vpmaddwd` per product.
pub(crate) const STEPS: usize = WATCH_BLOCKS / 4;
/// i16 per vector tile of the layout: per step, the P, Q0 and Q1 rows of 8 lags × 2 j.
pub(crate) const TILE_I16: usize = STEPS * 3 * 2 * LANES;
/// `sy_inv_sy` of a lag past the last: its u = S·0 − x̄·1e300 loses to every real lag of a
/// watch with x̄ > 0 (every unflagged one: |u| ≤ ‖x − x̄‖ < 2300 at the real lags).
const NEVER: f64 = 1e300;

/// The lag of base lag `i` (`stream` 0) or of its partner (`stream` 1).
pub(crate) fn tau(i: usize, stream: usize) -> usize {
    2 * BLOCK_MS * (i / BLOCK_MS) + i % BLOCK_MS + BLOCK_MS * stream
}

/// A station minute laid out for the Karatsuba step, vector tile by vector tile.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    /// `rows[t·TILE_I16 + ((m·3 + row)·8 + l)·2 + h]`: for base lag i = 8t + l, step m and
    /// j = 2m + h, the P row Y_2j+1, the Q0 row Y_2j − Y_2j+1, the Q1 row Y_2j+2 − Y_2j+1.
    pub rows: Vec<i16>,
    /// Per stream (base, partner) and base lag: `inv_sy` at its lag (0 past the last).
    pub inv_sy: [Vec<f64>; 2],
    /// Per stream and base lag: `sy_inv_sy` at its lag ([`NEVER`] past the last).
    pub sy_inv_sy: [Vec<f64>; 2],
}

impl Layout {
    pub(crate) fn new(station: &Prepared) -> Layout {
        // Lgq zero-padded (as `Prepared::lgq`'s padding) to the last base lag's Y_80.
        let mut y = vec![0i32; tau(BASE - 1, 0) + BLOCK_MS * WATCH_BLOCKS + 1];
        for (y, &v) in y.iter_mut().zip(&station.lgq) {
            *y = i32::from(v);
        }
        let mut rows = vec![0i16; BASE / LANES * TILE_I16];
        for (t, tile) in rows.chunks_exact_mut(TILE_I16).enumerate() {
            for l in 0..LANES {
                let ys = &y[tau(t * LANES + l, 0)..];
                for m in 0..STEPS {
                    for h in 0..2 {
                        let j = 2 * m + h;
                        let (y0, y1, y2) =
                            (ys[BLOCK_MS * 2 * j], ys[BLOCK_MS * (2 * j + 1)], ys[BLOCK_MS * (2 * j + 2)]);
                        for (row, v) in [y1, y0 - y1, y2 - y1].into_iter().enumerate() {
                            // 0 <= Lgq < 14300 (`log_energies_fixed`): values and differences fit i16.
                            tile[((m * 3 + row) * LANES + l) * 2 + h] = v as i16;
                        }
                    }
                }
            }
        }
        let per_lag = |values: &[f64], past: f64| -> [Vec<f64>; 2] {
            std::array::from_fn(|s| {
                (0..BASE).map(|i| if tau(i, s) < LAGS { values[tau(i, s)] } else { past }).collect()
            })
        };
        Layout { rows, inv_sy: per_lag(&station.inv_sy, 0.0), sy_inv_sy: per_lag(&station.sy_inv_sy, NEVER) }
    }
}

/// A watch's side: per step, the i32 pairs (low half j = 2m, high half 2m + 1) of A + B,
/// A and B.
pub(crate) fn watch_pairs(x: &[i16; WATCH_BLOCKS]) -> [[i32; 3]; STEPS] {
    let pair = |lo: i16, hi: i16| (lo as u16 as i32) | (i32::from(hi) << 16);
    std::array::from_fn(|m| {
        let (a0, b0, a1, b1) = (x[4 * m], x[4 * m + 1], x[4 * m + 2], x[4 * m + 3]);
        [pair(a0 + b0, a1 + b1), pair(a0, a1), pair(b0, b1)]
    })
}

/// S at the lag of base lag `i` in `stream`, directly (for the lag found again at the end).
pub(crate) fn direct_sum(station: &Prepared, x: &[i16; WATCH_BLOCKS], i: usize, stream: usize) -> i32 {
    let tau = tau(i, stream);
    let y = |k: usize| i32::from(station.lgq.get(tau + BLOCK_MS * k).copied().unwrap_or(0));
    x.iter().enumerate().map(|(k, &x)| i32::from(x) * y(k)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{Watch, STATION_SAMPLES};
    use rand::{Rng, SeedableRng};

    /// The layout's three sums, as the vector code forms them (pairs of products per step),
    /// are the direct sums at every base lag and its partner, padding included.
    #[test]
    fn p_plus_q_are_the_direct_sums() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(21);
        let samples: Vec<i16> = (0..STATION_SAMPLES).map(|_| rng.gen_range(-9000..9000)).collect();
        let station = Prepared::new(&samples);
        let layout = Layout::new(&station);
        let watch = Watch::new(&std::array::from_fn(|_| rng.gen()), true);
        let xs = watch_pairs(&watch.x);
        let madd = |x: i32, row: &[i16]| i32::from(x as i16) * i32::from(row[0]) + (x >> 16) * i32::from(row[1]);
        let mut lags = std::collections::BTreeSet::new();
        for i in 0..BASE {
            let (t, l) = (i / LANES, i % LANES);
            let mut sums = [0i32; 3];
            for (m, xs) in xs.iter().enumerate() {
                for (row, sum) in sums.iter_mut().enumerate() {
                    let at = t * TILE_I16 + ((m * 3 + row) * LANES + l) * 2;
                    *sum += madd(xs[row], &layout.rows[at..at + 2]);
                }
            }
            assert_eq!(sums[0] + sums[1], direct_sum(&station, &watch.x, i, 0), "base lag {i}");
            assert_eq!(sums[0] + sums[2], direct_sum(&station, &watch.x, i, 1), "partner of {i}");
            lags.extend([tau(i, 0), tau(i, 1)]);
        }
        assert!((0..LAGS).all(|tau| lags.contains(&tau)), "every lag is a base lag or a partner");
        assert_eq!(lags.len(), 2 * BASE, "each once");
    }
}
