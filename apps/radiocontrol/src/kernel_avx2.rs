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

use crate::kernel::{numerator, Prepared, Watch, K_PAIRS, LAGS, LAGS_PADDED, TILE_WATCHES};

const W: usize = TILE_WATCHES;
/// Lags per register tile: two vectors of 8 i32.
const LAGS_STEP: usize = 16;
/// f64 vectors of 4 lags per tile, in the epilogue.
const QUARTERS: usize = LAGS_STEP / 4;

/// Whether the CPU has every feature [`correlate_tile`] enables.
pub(crate) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// Lags per chunk: the interleaved station values of a chunk (40 rows of 128 lags × 2 i16,
/// 20 KiB) stay in L1 while every watch tile passes over them.
const CHUNK_LAGS: usize = 128;

/// Per watch and lane (4 lanes of f64): the lane's best u over the lags seen so far, and
/// the first register tile (its first lag) where the lane reached it.
#[derive(Clone, Copy)]
struct LaneBest {
    u: [__m256d; W],
    tile: [__m256d; W],
}

/// The best (u, lag) of each watch of each tile over all lags.
///
/// # Safety
/// The CPU must have the features [`available`] checks (AVX2 and FMA).
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn correlate_tiles(station: &Prepared, tiles: &[[Watch; W]]) -> Vec<[(f64, u32); W]> {
    const { assert!(LAGS_PADDED.is_multiple_of(CHUNK_LAGS) && CHUNK_LAGS.is_multiple_of(LAGS_STEP) && W == 6) };
    assert_eq!(station.pairs.len(), K_PAIRS * LAGS_PADDED * 2, "the interleaved station values");
    assert!(station.inv_sy.len() >= LAGS_PADDED && station.sy_inv_sy.len() >= LAGS_PADDED);
    let xs: Vec<[[i32; K_PAIRS]; W]> = tiles.iter().map(pair_xs).collect();
    let start = LaneBest { u: [_mm256_set1_pd(f64::NEG_INFINITY); W], tile: [_mm256_setzero_pd(); W] };
    let mut lanes = vec![start; tiles.len()];
    for c0 in (0..LAGS_PADDED).step_by(CHUNK_LAGS) {
        for ((tile, xs), lanes) in tiles.iter().zip(&xs).zip(&mut lanes) {
            // SAFETY: the caller's features; c0 + CHUNK_LAGS <= LAGS_PADDED; the lengths asserted above.
            unsafe { correlate_chunk(station, tile, xs, c0, lanes) };
        }
    }
    tiles
        .iter()
        .zip(&xs)
        .zip(&lanes)
        // SAFETY: the caller's features; the lengths asserted above.
        .map(|((tile, xs), lanes)| std::array::from_fn(|w| unsafe { first_best(station, &tile[w], &xs[w], lanes, w) }))
        .collect()
}

/// Per watch and pair of k: x[2p] in the low half of an i32, x[2p+1] in the high half.
fn pair_xs(tile: &[Watch; W]) -> [[i32; K_PAIRS]; W] {
    std::array::from_fn(|w| {
        std::array::from_fn(|p| (tile[w].x[2 * p] as u16 as i32) | (i32::from(tile[w].x[2 * p + 1]) << 16))
    })
}

/// The exact sums S of one watch at the 16 lags of the register tile at t0.
///
/// # Safety
/// AVX2; `t0 + LAGS_STEP <= LAGS_PADDED` and `pairs` as [`correlate_tiles`] asserts.
#[target_feature(enable = "avx2,fma")]
unsafe fn sums(pairs: &[i16], xs: &[i32; K_PAIRS], t0: usize) -> [__m256i; 2] {
    let mut acc = [_mm256_setzero_si256(); 2];
    for (p, &x) in xs.iter().enumerate() {
        let at = (p * LAGS_PADDED + t0) * 2;
        let x = _mm256_set1_epi32(x);
        for (h, acc) in acc.iter_mut().enumerate() {
            // SAFETY: t0 + 16 <= LAGS_PADDED, so at + 32 <= (p + 1)·LAGS_PADDED·2 <= pairs.len().
            let y = unsafe { _mm256_loadu_si256(pairs.as_ptr().add(at + 16 * h).cast()) };
            *acc = _mm256_add_epi32(*acc, _mm256_madd_epi16(x, y));
        }
    }
    acc
}

/// Watch w's best u and its first lag: the lanes' best u, the first tile holding it, and
/// in that tile the first lag, its u recomputed by `kernel::numerator` (the same f64
/// operations as the vectors', so the same bits).
///
/// # Safety
/// AVX2 and FMA; the lengths [`correlate_tiles`] asserts.
#[target_feature(enable = "avx2,fma")]
unsafe fn first_best(station: &Prepared, watch: &Watch, xs: &[i32; K_PAIRS], lanes: &LaneBest, w: usize) -> (f64, u32) {
    let (mut u, mut tile) = ([0.0f64; 4], [0.0f64; 4]);
    // SAFETY: 4 f64 each.
    unsafe {
        _mm256_storeu_pd(u.as_mut_ptr(), lanes.u[w]);
        _mm256_storeu_pd(tile.as_mut_ptr(), lanes.tile[w]);
    }
    let best = u.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let t0 = u.iter().zip(&tile).filter(|(&u, _)| u == best).map(|(_, &t)| t as usize).min().expect("4 lanes");
    // SAFETY: t0 is a tile's first lag, t0 + 16 <= LAGS_PADDED.
    let acc = unsafe { sums(&station.pairs, xs, t0) };
    let mut s = [0i32; LAGS_STEP];
    // SAFETY: 8 i32 each at 0 and 8.
    unsafe {
        _mm256_storeu_si256(s.as_mut_ptr().cast(), acc[0]);
        _mm256_storeu_si256(s.as_mut_ptr().add(8).cast(), acc[1]);
    }
    let tau = (t0..(t0 + LAGS_STEP).min(LAGS))
        .find(|&tau| numerator(s[tau - t0], watch.mean, station.inv_sy[tau], station.sy_inv_sy[tau]) == best)
        .expect("the lanes' best u is at a lag of its tile");
    (best, tau as u32)
}

/// Runs the tile's watches over the lags c0..c0 + [`CHUNK_LAGS`], updating their lanes.
///
/// # Safety
/// AVX2 and FMA; `c0 + CHUNK_LAGS <= LAGS_PADDED`, `pairs`, `inv_sy` and `sy_inv_sy` at
/// least as long as [`correlate_tiles`] asserts.
#[target_feature(enable = "avx2,fma")]
unsafe fn correlate_chunk(
    station: &Prepared,
    tile: &[Watch; W],
    xs: &[[i32; K_PAIRS]; W],
    c0: usize,
    lanes: &mut LaneBest,
) {
    let pairs = &station.pairs[..];
    let lane = _mm256_setr_pd(0.0, 1.0, 2.0, 3.0);
    let last = _mm256_set1_pd(LAGS as f64);
    for t0 in (c0..c0 + CHUNK_LAGS).step_by(LAGS_STEP) {
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
        // SAFETY: t0 + 16 <= LAGS_PADDED <= inv_sy.len(), sy_inv_sy.len().
        let (inv_sy, sy_inv_sy): ([__m256d; QUARTERS], [__m256d; QUARTERS]) = unsafe {
            (
                std::array::from_fn(|q| _mm256_loadu_pd(station.inv_sy.as_ptr().add(t0 + 4 * q))),
                std::array::from_fn(|q| _mm256_loadu_pd(station.sy_inv_sy.as_ptr().add(t0 + 4 * q))),
            )
        };
        let full = t0 + LAGS_STEP <= LAGS;
        let tile_start = _mm256_set1_pd(t0 as f64);
        for w in 0..W {
            let mean = _mm256_set1_pd(tile[w].mean);
            let mut m = _mm256_set1_pd(f64::NEG_INFINITY);
            for q in 0..QUARTERS {
                let v = acc[2 * w + q / 2];
                let half = if q % 2 == 0 { _mm256_castsi256_si128(v) } else { _mm256_extracti128_si256::<1>(v) };
                let s = _mm256_cvtepi32_pd(half);
                // numerator(): −(x̄·(Sy·inv_sy)) + S·inv_sy, one rounding for the product, one fused.
                let mut u = _mm256_fnmadd_pd(mean, sy_inv_sy[q], _mm256_mul_pd(s, inv_sy[q]));
                if !full {
                    // Lags past the last are padding (u = 0 there), never a result.
                    let taus = _mm256_add_pd(lane, _mm256_set1_pd((t0 + 4 * q) as f64));
                    u = _mm256_blendv_pd(m, u, _mm256_cmp_pd::<_CMP_LT_OQ>(taus, last));
                }
                m = _mm256_max_pd(m, u);
            }
            // Strictly greater: a lane keeps the first tile reaching its best.
            let better = _mm256_cmp_pd::<_CMP_GT_OQ>(m, lanes.u[w]);
            lanes.u[w] = _mm256_max_pd(m, lanes.u[w]);
            lanes.tile[w] = _mm256_blendv_pd(lanes.tile[w], tile_start, better);
        }
    }
}
