//! The direct kernel's register tile with AVX2 (for CPUs without AVX-512 VNNI):
//! [`TILE_WATCHES`] watches × [`LAGS_STEP`] lags in 12 accumulators of 8 i32, which with
//! the two station vectors, a watch vector and a product leaves none of the 16 YMM
//! registers spare. Per pair of k: two loads of the interleaved station values, then per
//! watch two `vpmaddwd` (16 products summed pairwise into 8 i32) and two `vpaddd`. The sums
//! are exact integers, the same as every other path's, and the epilogue computes
//! `kernel::numerator` with the same f64 operations, 4 lags per vector, keeping per lane
//! the first best lag and then the first among the lanes' bests (the portable scan's first
//! maximum): every path gives the same bits.

use std::arch::x86_64::*;

use crate::kernel::{Prepared, Watch, K_PAIRS, LAGS, LAGS_PADDED, TILE_WATCHES};

const W: usize = TILE_WATCHES;
/// Lags per register tile: two vectors of 8 i32.
const LAGS_STEP: usize = 16;
/// f64 vectors of 4 lags per tile, in the epilogue.
const QUARTERS: usize = LAGS_STEP / 4;

/// Whether the CPU has every feature [`correlate_tile`] enables.
pub(crate) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// The best (u, lag) of each watch of the tile over all lags.
///
/// # Safety
/// The CPU must have the features [`available`] checks (AVX2 and FMA).
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn correlate_tile(station: &Prepared, tile: &[Watch; W]) -> [(f64, u32); W] {
    const { assert!(LAGS_PADDED % LAGS_STEP == 0 && W == 6) };
    let pairs = &station.pairs[..];
    assert_eq!(pairs.len(), K_PAIRS * LAGS_PADDED * 2, "the interleaved station values");
    assert!(station.inv_sy.len() >= LAGS_PADDED && station.sy_inv_sy.len() >= LAGS_PADDED);
    // Per watch and pair of k: x[2p] in the low half of an i32, x[2p+1] in the high half.
    let xs: [[i32; K_PAIRS]; W] = std::array::from_fn(|w| {
        std::array::from_fn(|p| (tile[w].x[2 * p] as u16 as i32) | (i32::from(tile[w].x[2 * p + 1]) << 16))
    });
    let means: [__m256d; W] = std::array::from_fn(|w| _mm256_set1_pd(tile[w].mean));
    // Per watch and lane (4 lanes × 4 vectors = the 16 lags of a tile): the best u and its
    // lag among the lags that lane saw (strictly greater: the first on ties).
    let mut best_u = [[_mm256_set1_pd(f64::NEG_INFINITY); QUARTERS]; W];
    let mut best_t = [[_mm256_setzero_pd(); QUARTERS]; W];
    let lane = _mm256_setr_pd(0.0, 1.0, 2.0, 3.0);
    let last = _mm256_set1_pd(LAGS as f64);
    for t0 in (0..LAGS_PADDED).step_by(LAGS_STEP) {
        let mut acc = [_mm256_setzero_si256(); 2 * W];
        #[allow(clippy::needless_range_loop)] // p indexes the station rows and every watch's pairs
        for p in 0..K_PAIRS {
            let at = (p * LAGS_PADDED + t0) * 2;
            // SAFETY: t0 + 16 <= LAGS_PADDED, so at + 32 <= (p + 1)·LAGS_PADDED·2 <= pairs.len().
            let (y0, y1) = unsafe {
                (
                    _mm256_loadu_si256(pairs.as_ptr().add(at).cast()),
                    _mm256_loadu_si256(pairs.as_ptr().add(at + 16).cast()),
                )
            };
            for w in 0..W {
                let x = _mm256_set1_epi32(xs[w][p]);
                acc[2 * w] = _mm256_add_epi32(acc[2 * w], _mm256_madd_epi16(x, y0));
                acc[2 * w + 1] = _mm256_add_epi32(acc[2 * w + 1], _mm256_madd_epi16(x, y1));
            }
        }
        for q in 0..QUARTERS {
            let tau0 = t0 + 4 * q;
            // SAFETY: tau0 + 4 <= LAGS_PADDED <= inv_sy.len(), sy_inv_sy.len() (asserted).
            let (inv_sy, sy_inv_sy) = unsafe {
                (
                    _mm256_loadu_pd(station.inv_sy.as_ptr().add(tau0)),
                    _mm256_loadu_pd(station.sy_inv_sy.as_ptr().add(tau0)),
                )
            };
            let taus = _mm256_add_pd(lane, _mm256_set1_pd(tau0 as f64));
            // Lags past the last are padding (u = 0 there), never a result.
            let in_range = _mm256_cmp_pd::<_CMP_LT_OQ>(taus, last);
            let full = tau0 + 4 <= LAGS;
            for w in 0..W {
                let v = acc[2 * w + q / 2];
                let half = if q % 2 == 0 { _mm256_castsi256_si128(v) } else { _mm256_extracti128_si256::<1>(v) };
                let s = _mm256_cvtepi32_pd(half);
                // numerator(): −(x̄·(Sy·inv_sy)) + S·inv_sy, one rounding for the product, one fused.
                let u = _mm256_fnmadd_pd(means[w], sy_inv_sy, _mm256_mul_pd(s, inv_sy));
                let mut better = _mm256_cmp_pd::<_CMP_GT_OQ>(u, best_u[w][q]);
                if !full {
                    better = _mm256_and_pd(better, in_range);
                }
                best_u[w][q] = _mm256_blendv_pd(best_u[w][q], u, better);
                best_t[w][q] = _mm256_blendv_pd(best_t[w][q], taus, better);
            }
        }
    }
    std::array::from_fn(|w| {
        let (mut u, mut t) = ([0.0f64; LAGS_STEP], [0.0f64; LAGS_STEP]);
        for q in 0..QUARTERS {
            // SAFETY: u and t have 16 f64, stores of 4 at 4·q.
            unsafe {
                _mm256_storeu_pd(u.as_mut_ptr().add(4 * q), best_u[w][q]);
                _mm256_storeu_pd(t.as_mut_ptr().add(4 * q), best_t[w][q]);
            }
        }
        let mut best = (f64::NEG_INFINITY, u32::MAX);
        for (&u, &t) in u.iter().zip(&t) {
            let t = t as u32;
            if u > best.0 || (u == best.0 && t < best.1) {
                best = (u, t);
            }
        }
        best
    })
}
