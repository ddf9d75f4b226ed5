//! The direct kernel with AVX2 (for CPUs without AVX-512 VNNI), on the Karatsuba layout of
//! [`super::karatsuba`]: per register tile, 3 watches × 8 base lags (16 lags with their
//! partners) in 9 accumulators of 8 i32 (P, Q0, Q1 per watch), the three station vectors,
//! a watch value and a product: 14 of the 16 YMM registers. Per step (four k): three loads,
//! then per watch three `vpmaddwd` (16 products summed pairwise into 8 i32) and three
//! `vpaddd`, where the plain sums take four of each. The sums are exact integers, the same
//! as every other path's, and the epilogue computes `kernel::numerator` with the same f64
//! operations; the first lag reaching the best u is found again at the end: every path
//! gives the same bits.

use std::arch::x86_64::*;

use super::karatsuba::{direct_sum, tau, watch_pairs, Layout, BASE, LANES, STEPS, TILE_I16};
use super::{numerator, Prepared, Watch, TILE_WATCHES};

/// Watches per register tile.
const W: usize = 3;
/// Vector tiles (8 base lags) per chunk: the chunk's station values (8 × 1920 B) stay in L1
/// while every watch tile passes over them.
const CHUNK_TILES: usize = 8;

/// Whether the CPU has every feature [`correlate_tiles`] enables.
pub(crate) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// Per watch, stream (base lags, partners) and lane (4 lanes of f64): the lane's best u so
/// far, and the first vector tile where the lane reached it. Along a stream the lags grow
/// with the tile, so that tile holds the lane's first lag reaching it.
#[derive(Clone, Copy)]
struct LaneBest {
    u: [[__m256d; 2]; W],
    tile: [[__m256d; 2]; W],
}

/// The best (u, lag) of each watch of each tile over all lags.
///
/// # Safety
/// The CPU must have the features [`available`] checks (AVX2 and FMA).
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn correlate_tiles(
    station: &Prepared,
    tiles: &[[Watch; TILE_WATCHES]],
) -> Vec<[(f64, u32); TILE_WATCHES]> {
    const { assert!(TILE_WATCHES.is_multiple_of(W) && (BASE / LANES).is_multiple_of(CHUNK_TILES)) };
    let layout = station.karatsuba();
    assert_eq!(layout.rows.len(), BASE / LANES * TILE_I16, "the Karatsuba layout");
    assert!(layout.inv_sy.iter().chain(&layout.sy_inv_sy).all(|v| v.len() == BASE));
    let watches: Vec<&[Watch; W]> =
        tiles.iter().flat_map(|t| t.chunks_exact(W)).map(|w| w.try_into().expect("W watches")).collect();
    let xs: Vec<[[[i32; 3]; STEPS]; W]> =
        watches.iter().map(|w| std::array::from_fn(|i| watch_pairs(&w[i].x))).collect();
    let start = LaneBest { u: [[_mm256_set1_pd(f64::NEG_INFINITY); 2]; W], tile: [[_mm256_setzero_pd(); 2]; W] };
    let mut lanes = vec![start; watches.len()];
    for c0 in (0..BASE / LANES).step_by(CHUNK_TILES) {
        for ((group, xs), lanes) in watches.iter().zip(&xs).zip(&mut lanes) {
            // SAFETY: the caller's features; c0 + CHUNK_TILES <= BASE / LANES; the lengths asserted above.
            unsafe { correlate_chunk(layout, group, xs, c0, lanes) };
        }
    }
    let best: Vec<(f64, u32)> = watches
        .iter()
        .zip(&lanes)
        .flat_map(|(group, lanes)| (0..W).map(move |w| first_best(station, layout, &group[w], lanes, w)))
        .collect();
    best.chunks_exact(TILE_WATCHES).map(|b| b.try_into().expect("a tile's watches")).collect()
}

/// Watch w's best u and its first lag: the lanes' best u, the first tiles holding it, and
/// there the first lag whose u, from the exact sum by `kernel::numerator` (the same f64
/// operations as the vectors'), equals it.
fn first_best(station: &Prepared, layout: &Layout, watch: &Watch, lanes: &LaneBest, w: usize) -> (f64, u32) {
    // SAFETY: an __m256d is 4 f64, and every bit pattern is one.
    let (u, tile) = unsafe {
        (
            std::mem::transmute::<[__m256d; 2], [[f64; 4]; 2]>(lanes.u[w]),
            std::mem::transmute::<[__m256d; 2], [[f64; 4]; 2]>(lanes.tile[w]),
        )
    };
    let best = u.iter().flatten().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut lag = usize::MAX;
    for s in 0..2 {
        for l in 0..4 {
            if u[s][l] != best {
                continue;
            }
            // Lane l of a tile's two f64 vectors holds base lags 8t + l and 8t + 4 + l.
            let t = tile[s][l] as usize;
            for i in [t * LANES + l, t * LANES + 4 + l] {
                let sum = direct_sum(station, &watch.x, i, s);
                if numerator(sum, watch.mean, layout.inv_sy[s][i], layout.sy_inv_sy[s][i]) == best {
                    lag = lag.min(tau(i, s));
                }
            }
        }
    }
    assert!(lag != usize::MAX, "the lanes' best u is at a lag of its tile");
    (best, lag as u32)
}

/// Runs the watches over the vector tiles c0..c0 + [`CHUNK_TILES`], updating their lanes.
///
/// # Safety
/// AVX2 and FMA; `c0 + CHUNK_TILES <= BASE / LANES`, the layout's lengths as
/// [`correlate_tiles`] asserts.
#[target_feature(enable = "avx2,fma")]
unsafe fn correlate_chunk(
    layout: &Layout,
    group: &[Watch; W],
    xs: &[[[i32; 3]; STEPS]; W],
    c0: usize,
    lanes: &mut LaneBest,
) {
    let rows = layout.rows.as_ptr();
    // In locals, not through `lanes`: a blend into memory became a masked store
    // (`vmaskmovpd`), slow on AMD.
    let (mut best_u, mut best_tile) = (lanes.u, lanes.tile);
    for t in c0..c0 + CHUNK_TILES {
        let mut acc = [[_mm256_setzero_si256(); 3]; W];
        #[allow(clippy::needless_range_loop)] // m indexes the station's steps and every watch's
        for m in 0..STEPS {
            let at = t * TILE_I16 + m * 3 * 2 * LANES;
            // SAFETY: t < BASE / LANES, so at + 48 <= (t + 1)·TILE_I16 = rows.len() at most.
            let y: [__m256i; 3] = std::array::from_fn(|r| unsafe { _mm256_loadu_si256(rows.add(at + 16 * r).cast()) });
            for w in 0..W {
                for r in 0..3 {
                    let x = _mm256_set1_epi32(xs[w][m][r]);
                    acc[w][r] = _mm256_add_epi32(acc[w][r], _mm256_madd_epi16(x, y[r]));
                }
            }
        }
        let i0 = t * LANES;
        let tile = _mm256_set1_pd(t as f64);
        for s in 0..2 {
            // SAFETY: i0 + 8 <= BASE = the length of every per-lag array.
            let (inv_sy, sy_inv_sy): ([__m256d; 2], [__m256d; 2]) = unsafe {
                (
                    std::array::from_fn(|h| _mm256_loadu_pd(layout.inv_sy[s].as_ptr().add(i0 + 4 * h))),
                    std::array::from_fn(|h| _mm256_loadu_pd(layout.sy_inv_sy[s].as_ptr().add(i0 + 4 * h))),
                )
            };
            for w in 0..W {
                // S = P + Q0 at the base lags, P + Q1 at their partners.
                let sums = _mm256_add_epi32(acc[w][0], acc[w][1 + s]);
                let mean = _mm256_set1_pd(group[w].mean);
                let halves = [_mm256_castsi256_si128(sums), _mm256_extracti128_si256::<1>(sums)];
                let u: [__m256d; 2] = std::array::from_fn(|h| {
                    // numerator(): −(x̄·(Sy·inv_sy)) + S·inv_sy, one rounding for the product, one fused.
                    _mm256_fnmadd_pd(mean, sy_inv_sy[h], _mm256_mul_pd(_mm256_cvtepi32_pd(halves[h]), inv_sy[h]))
                });
                let m = _mm256_max_pd(u[0], u[1]);
                // Strictly greater: a lane keeps the first tile reaching its best.
                let better = _mm256_cmp_pd::<_CMP_GT_OQ>(m, best_u[w][s]);
                best_u[w][s] = _mm256_max_pd(m, best_u[w][s]);
                best_tile[w][s] = _mm256_blendv_pd(best_tile[w][s], tile, better);
            }
        }
    }
    (lanes.u, lanes.tile) = (best_u, best_tile);
}
