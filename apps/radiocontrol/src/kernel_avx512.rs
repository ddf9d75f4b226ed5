//! The direct kernel's register tile in AVX-512 intrinsics: [`TILE_WATCHES`] watches ×
//! [`TILE_LAGS`] lags in 12 accumulators, one load of `Lg` per 6 fused multiply-adds.
//! Same operations in the same order as `kernel::correlate_tile` (a fused multiply-add per
//! term, k ascending; then × inv_sy × inv_norm), so both give the same bits.

use std::arch::x86_64::*;

use crate::kernel::{
    reduce_lanes, Match, Prepared, Watch, BLOCK_MS, LAGS, LAGS_PADDED, TILE_LAGS, TILE_WATCHES, WATCH_BLOCKS,
};

const W: usize = TILE_WATCHES;

/// The best match of each watch of the tile over all lags.
#[target_feature(enable = "avx512f,fma")]
pub(crate) fn correlate_tile(station: &Prepared, tile: &[Watch; W]) -> [Match; W] {
    const { assert!(TILE_LAGS == 32 && W == 6) };
    let lg = &station.lg[..];
    assert!(lg.len() >= LAGS_PADDED + BLOCK_MS * (WATCH_BLOCKS - 1), "Lg is padded to whole tiles");
    let mut best_r = [[f32::NEG_INFINITY; TILE_LAGS]; W];
    let mut best_t = [[0u32; TILE_LAGS]; W];
    let lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for t0 in (0..LAGS_PADDED).step_by(TILE_LAGS) {
        let mut acc = [_mm512_setzero_ps(); 2 * W];
        for k in 0..WATCH_BLOCKS {
            let base = t0 + BLOCK_MS * k;
            // SAFETY: base + 32 <= LAGS_PADDED + 50·79 <= lg.len() (asserted above).
            let (y0, y1) =
                unsafe { (_mm512_loadu_ps(lg.as_ptr().add(base)), _mm512_loadu_ps(lg.as_ptr().add(base + 16))) };
            for w in 0..W {
                let x = _mm512_set1_ps(tile[w].xc[k]);
                acc[2 * w] = _mm512_fmadd_ps(x, y0, acc[2 * w]);
                acc[2 * w + 1] = _mm512_fmadd_ps(x, y1, acc[2 * w + 1]);
            }
        }
        let valid = LAGS.saturating_sub(t0).min(TILE_LAGS);
        let mut inv_sy = [0.0f32; TILE_LAGS];
        inv_sy[..valid].copy_from_slice(&station.inv_sy[t0..t0 + valid]);
        for half in 0..2 {
            // SAFETY: inv_sy has 32 elements; half * 16 + 16 <= 32.
            let sy = unsafe { _mm512_loadu_ps(inv_sy.as_ptr().add(16 * half)) };
            let in_range = (1u32 << valid.saturating_sub(16 * half).min(16)) - 1;
            let taus = _mm512_add_epi32(lane, _mm512_set1_epi32((t0 + 16 * half) as i32));
            for w in 0..W {
                let r = _mm512_mul_ps(_mm512_mul_ps(acc[2 * w + half], sy), _mm512_set1_ps(tile[w].inv_norm));
                let br = &mut best_r[w][16 * half..16 * half + 16];
                let bt = &mut best_t[w][16 * half..16 * half + 16];
                // SAFETY: br and bt are 16 elements long.
                unsafe {
                    let old = _mm512_loadu_ps(br.as_ptr());
                    let better = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(r, old) & (in_range as u16);
                    _mm512_storeu_ps(br.as_mut_ptr(), _mm512_mask_blend_ps(better, old, r));
                    let old_t = _mm512_loadu_si512(bt.as_ptr().cast());
                    _mm512_storeu_si512(bt.as_mut_ptr().cast(), _mm512_mask_blend_epi32(better, old_t, taus));
                }
            }
        }
    }
    reduce_lanes(&best_r, &best_t)
}
