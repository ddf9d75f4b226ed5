//! The direct kernel's register tile with AVX-512 VNNI: [`TILE_WATCHES`] watches ×
//! [`TILE_LAGS`] lags in 12 accumulators of 16 i32; per pair of k, two loads of the
//! interleaved station values and 12 `vpdpwssd` (each 32 products summed pairwise). The
//! sums are exact integers, and the epilogue computes `kernel::numerator` with the same
//! f64 operations, 8 lags per vector, keeping per lane the first best lag and then the
//! first among the lanes' bests, which is the portable scan's first maximum: both paths
//! give the same bits.

use std::arch::x86_64::*;

use super::{Prepared, Watch, K_PAIRS, LAGS, LAGS_PADDED, TILE_LAGS, TILE_WATCHES};

const W: usize = TILE_WATCHES;

/// Whether the CPU has every feature [`correlate_tile`] enables.
pub(crate) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vnni")
}

/// The best (u, lag) of each watch of the tile over all lags.
///
/// # Safety
/// The CPU must have the features [`available`] checks.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub(crate) unsafe fn correlate_tile(station: &Prepared, tile: &[&Watch; W]) -> [(f64, u32); W] {
    const { assert!(TILE_LAGS == 32 && W == 6) };
    let pairs = station.pairs();
    assert_eq!(pairs.len(), K_PAIRS * LAGS_PADDED * 2, "the interleaved station values");
    // Per watch and pair of k: x[2p] in the low half of an i32, x[2p+1] in the high half.
    let xs: [[i32; K_PAIRS]; W] = std::array::from_fn(|w| {
        std::array::from_fn(|p| (tile[w].x[2 * p] as u16 as i32) | (i32::from(tile[w].x[2 * p + 1]) << 16))
    });
    // Per watch and lane (8 lanes × 4 vectors = the 32 lags of a tile): the best u and its
    // lag among the lags that lane saw (strictly greater: the first on ties).
    let mut best_u = [[_mm512_set1_pd(f64::NEG_INFINITY); 4]; W];
    let mut best_t = [[_mm512_setzero_pd(); 4]; W];
    let lane = _mm512_setr_pd(0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0);
    for t0 in (0..LAGS_PADDED).step_by(TILE_LAGS) {
        let mut acc = [_mm512_setzero_si512(); 2 * W];
        #[allow(clippy::needless_range_loop)] // p indexes the station rows and every watch's pairs
        for p in 0..K_PAIRS {
            let at = (p * LAGS_PADDED + t0) * 2;
            // SAFETY: t0 + 32 <= LAGS_PADDED, so at + 64 <= (p + 1)·LAGS_PADDED·2 <= pairs.len().
            let (y0, y1) = unsafe {
                (
                    _mm512_loadu_si512(pairs.as_ptr().add(at).cast()),
                    _mm512_loadu_si512(pairs.as_ptr().add(at + 32).cast()),
                )
            };
            for w in 0..W {
                let x = _mm512_set1_epi32(xs[w][p]);
                acc[2 * w] = _mm512_dpwssd_epi32(acc[2 * w], x, y0);
                acc[2 * w + 1] = _mm512_dpwssd_epi32(acc[2 * w + 1], x, y1);
            }
        }
        for q in 0..4 {
            let tau0 = t0 + 8 * q;
            // SAFETY: tau0 + 8 <= LAGS_PADDED = inv_sy.len() = sy_inv_sy.len().
            let (inv_sy, sy_inv_sy) = unsafe {
                (
                    _mm512_loadu_pd(station.inv_sy.as_ptr().add(tau0)),
                    _mm512_loadu_pd(station.sy_inv_sy.as_ptr().add(tau0)),
                )
            };
            let in_range: __mmask8 =
                if tau0 + 8 <= LAGS { 0xff } else { ((1u32 << LAGS.saturating_sub(tau0)) - 1) as u8 };
            let taus = _mm512_add_pd(lane, _mm512_set1_pd(tau0 as f64));
            for w in 0..W {
                let half = if q % 2 == 0 {
                    _mm512_castsi512_si256(acc[2 * w + q / 2])
                } else {
                    _mm512_extracti64x4_epi64::<1>(acc[2 * w + q / 2])
                };
                let s = _mm512_cvtepi32_pd(half);
                // numerator(): −(x̄·(Sy·inv_sy)) + S·inv_sy, one rounding for the product, one fused.
                let u = _mm512_fnmadd_pd(_mm512_set1_pd(tile[w].mean), sy_inv_sy, _mm512_mul_pd(s, inv_sy));
                let better = _mm512_cmp_pd_mask::<_CMP_GT_OQ>(u, best_u[w][q]) & in_range;
                best_u[w][q] = _mm512_mask_blend_pd(better, best_u[w][q], u);
                best_t[w][q] = _mm512_mask_blend_pd(better, best_t[w][q], taus);
            }
        }
    }
    std::array::from_fn(|w| {
        let (mut u, mut t) = ([0.0f64; 32], [0.0f64; 32]);
        for q in 0..4 {
            // SAFETY: u and t have 32 f64, stores of 8 at 8·q.
            unsafe {
                _mm512_storeu_pd(u.as_mut_ptr().add(8 * q), best_u[w][q]);
                _mm512_storeu_pd(t.as_mut_ptr().add(8 * q), best_t[w][q]);
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
