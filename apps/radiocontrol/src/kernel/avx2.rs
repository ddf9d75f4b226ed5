//! The direct kernel with AVX2 (for CPUs without AVX-512 VNNI), on the nested Karatsuba
//! layout of [`super::karatsuba`]: per tile of 3 watches × 3 vectors (24 entries, 192 lags),
//! the 27 sub sums by `vpmaddwd` and `vpaddd` (9 accumulators; per pair of taps, three
//! station loads and three watch broadcasts), then per watch and vector the 8 sums S by 38
//! adds. The sums are exact integers, the same as every other path's.
//!
//! **The epilogue screens in f32** and computes `kernel::numerator` (f64, the same
//! operations as every path) only at the lags that can be the maximum. Per lag, the screen
//! value is v = fl32(fl32(S)·fl32(inv_sy) − fl32(x̄)·fl32(sy_inv_sy)) (`vcvtdq2ps`,
//! `vmulps`, `vfnmadd`). **The bound:** with ε = 2^-24, a = inv_sy ≥ 0, b = sy_inv_sy ≥ 0,
//! S ≥ 0 and U = S·a − x̄·b the exact value of the f64 inputs: the product is within
//! (3ε + O(ε²))·S·a of S·a (three roundings), x̄·b within (2ε + O(ε²))·x̄·b, the fused
//! subtraction adds ε·|result|, and |U| ≤ max(S·a, x̄·b); so |v − U| ≤ 4.001ε·(S·a + x̄·b).
//! The f64 u differs from U by at most 2^-52·(S·a + |u|). With S ≤ Σx·max Lgq, Sy ≤ 80·max
//! Lgq and x̄ = Σx/80, S·a + x̄·b ≤ (1 + 2^-51)·2·Σx·max Lgq·a, so
//! |v − u| ≤ 2^-21·1.001·Σx·max Lgq·a < E/4 with **E = 2^-19·Σx·max Lgq·a_max** (a_max the
//! largest a of the vector's lags). Per watch, L is the largest v − E over the lags screened
//! so far (every u ≥ its v − E, so L ≤ the best u); a lag whose v < L − E has u < L and
//! cannot be the maximum, and every lag whose v ≥ L − E is evaluated exactly. The best lag
//! is among those (its v ≥ u* − E/4 ≥ L − E), so the exact maximum and its first lag are
//! the portable scan's.
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
//! f64 and rounded down to f32 (`f32_at_most`), the same argument.

use std::arch::x86_64::*;
use std::cell::RefCell;
use std::mem::MaybeUninit;

use super::karatsuba::{tau, watch_pairs, Layout, LANES, OUTS, PAIRS, SUBS, TILE_VECTORS, VECTORS, VECTOR_I16};
use super::{numerator, Prepared, Tile, Watch, LAGS, TILE_WATCHES};

/// Watches per register tile.
const W: usize = 3;
/// Vectors per register tile.
const V: usize = TILE_VECTORS;
/// Tiles of vectors per chunk: the chunk's station values (52 KB) stay in L2 while every
/// watch tile passes over them, and the watches' sides (0.5 KB each) are read once per chunk
/// (4 tiles measured 3-5 % faster than 1, as fast as 8).
const CHUNK_TILES: usize = 4;
/// The factor of E (the module's comment): 2^-19.
const E_FACTOR: f64 = 1.0 / (1u64 << 19) as f64;

thread_local! {
    /// [`watch_pairs`] of every watch of a call.
    static XS: RefCell<Vec<[[i32; SUBS * PAIRS]; W]>> = const { RefCell::new(Vec::new()) };
}

/// Whether the CPU has every feature [`correlate_tiles`] enables.
pub(crate) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// A watch's screen state and best exact (u, lag) so far.
#[derive(Clone, Copy)]
struct Best {
    /// L: the largest v − E so far (a lower bound of the best u).
    floor: f64,
    /// L rounded down to f32.
    floor32: f32,
    /// 2^-19·Σx·max Lgq: E of a vector is this times its `inv_sy_max`.
    e_scale: f64,
    /// `e_scale` as f32.
    e_scale32: f32,
    u: f64,
    lag: u32,
}

/// The best (u, lag) of each watch of each tile over all lags.
///
/// # Safety
/// The CPU must have the features [`available`] checks (AVX2 and FMA).
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn correlate_tiles(station: &Prepared, tiles: &[Tile]) -> Vec<[(f64, u32); TILE_WATCHES]> {
    const { assert!(TILE_WATCHES.is_multiple_of(W) && (VECTORS / V).is_multiple_of(CHUNK_TILES)) };
    let layout = station.karatsuba();
    assert_eq!(layout.rows.len(), VECTORS * VECTOR_I16, "the Karatsuba layout");
    assert!([&layout.inv_sy, &layout.sy_inv_sy].iter().all(|v| v.len() == VECTORS * OUTS * LANES));
    assert!(layout.inv_sy_max.len() == VECTORS && layout.inv_sy_max32.len() == VECTORS);
    let watches: Vec<&[&Watch; W]> =
        tiles.iter().flat_map(|t| t.chunks_exact(W)).map(|w| w.try_into().expect("W watches")).collect();
    let mut best: Vec<[Best; W]> = watches
        .iter()
        .map(|group| {
            std::array::from_fn(|w| {
                let sum: i32 = group[w].x.iter().map(|&v| i32::from(v)).sum();
                let e_scale = E_FACTOR * f64::from(sum) * layout.lgq_max;
                Best {
                    floor: f64::NEG_INFINITY,
                    floor32: f32::NEG_INFINITY,
                    e_scale,
                    e_scale32: e_scale as f32,
                    u: f64::NEG_INFINITY,
                    lag: u32::MAX,
                }
            })
        })
        .collect();
    // The watches' sides, in a buffer kept per thread (0.5 MB for 1000 watches: allocated
    // afresh, its pages were faulted in again on every call).
    XS.with_borrow_mut(|xs| {
        xs.clear();
        xs.extend(watches.iter().map(|w| std::array::from_fn::<_, W, _>(|i| watch_pairs(&w[i].x))));
        for c0 in (0..VECTORS).step_by(V * CHUNK_TILES) {
            for ((group, xs), best) in watches.iter().zip(xs.iter()).zip(&mut best) {
                for v0 in (c0..c0 + V * CHUNK_TILES).step_by(V) {
                    // SAFETY: the caller's features; v0 + V <= VECTORS; the lengths asserted above.
                    unsafe { correlate_tile(station, layout, group, xs, v0, best) };
                }
            }
        }
    });
    for (group, best) in watches.iter().zip(&best) {
        for (watch, b) in group.iter().zip(best) {
            assert!(watch.flags != 0 || (b.lag as usize) < LAGS, "an unflagged watch's best lag was evaluated");
        }
    }
    let best: Vec<(f64, u32)> = best.iter().flatten().map(|b| (b.u, b.lag)).collect();
    best.chunks_exact(TILE_WATCHES).map(|b| b.try_into().expect("a tile's watches")).collect()
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

/// Runs the watches over the vectors v0..v0 + V.
///
/// # Safety
/// AVX2 and FMA; `v0 + V <= VECTORS`, the layout's lengths as [`correlate_tiles`] asserts.
#[target_feature(enable = "avx2,fma")]
unsafe fn correlate_tile(
    station: &Prepared,
    layout: &Layout,
    group: &[&Watch; W],
    xs: &[[i32; SUBS * PAIRS]; W],
    v0: usize,
    best: &mut [Best; W],
) {
    let rows = layout.rows.as_ptr();
    // Written for every s below (not zeroed: a 7.8 KB memset per tile was measurable).
    let mut m = [MaybeUninit::<[[__m256i; V]; W]>::uninit(); SUBS];
    for (s, m) in m.iter_mut().enumerate() {
        let mut acc = [[_mm256_setzero_si256(); V]; W];
        for p in 0..PAIRS {
            let mut y = [_mm256_setzero_si256(); V];
            for (v, y) in y.iter_mut().enumerate() {
                // SAFETY: v0 + v < VECTORS, so the 16 i16 at this offset are in `rows`.
                *y =
                    unsafe { _mm256_loadu_si256(rows.add((v0 + v) * VECTOR_I16 + (s * PAIRS + p) * LANES * 2).cast()) };
            }
            for w in 0..W {
                let x = _mm256_set1_epi32(xs[w][s * PAIRS + p]);
                for v in 0..V {
                    acc[w][v] = _mm256_add_epi32(acc[w][v], _mm256_madd_epi16(x, y[v]));
                }
            }
        }
        m.write(acc);
    }
    // SAFETY: every element was written above.
    let m: [[[__m256i; V]; W]; SUBS] = unsafe { std::mem::transmute(m) };
    for (w, best) in best.iter_mut().enumerate() {
        let mean = _mm256_set1_ps(group[w].mean as f32);
        for v in 0..V {
            let sums = combine(&m, w, v);
            let at = (v0 + v) * OUTS * LANES;
            let mut screen = [_mm256_setzero_ps(); OUTS];
            for (o, screen) in screen.iter_mut().enumerate() {
                // SAFETY: at + 64 <= VECTORS·OUTS·LANES, the length of both arrays.
                let (a, b) = unsafe {
                    (
                        _mm256_loadu_ps(layout.inv_sy.as_ptr().add(at + o * LANES)),
                        _mm256_loadu_ps(layout.sy_inv_sy.as_ptr().add(at + o * LANES)),
                    )
                };
                *screen = _mm256_fnmadd_ps(mean, b, _mm256_mul_ps(_mm256_cvtepi32_ps(sums[o]), a));
            }
            let top = _mm256_max_ps(
                _mm256_max_ps(_mm256_max_ps(screen[0], screen[1]), _mm256_max_ps(screen[2], screen[3])),
                _mm256_max_ps(_mm256_max_ps(screen[4], screen[5]), _mm256_max_ps(screen[6], screen[7])),
            );
            // L − E in f32 (fused: one rounding; the module's comment).
            let threshold = _mm256_set1_ps((-best.e_scale32).mul_add(layout.inv_sy_max32[v0 + v], best.floor32));
            if _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GE_OQ>(top, threshold)) != 0 {
                let e = best.e_scale * layout.inv_sy_max[v0 + v];
                // SAFETY: the caller's features.
                unsafe { candidates(station, group[w], LANES * (v0 + v), &sums, &screen, top, e, best) };
            }
        }
    }
}

/// The 8 sums S of watch w's vector v from its 27 subs (the adds of the tests'
/// `karatsuba::combine`, on vectors of 8 entries).
#[inline]
#[target_feature(enable = "avx2")]
#[allow(clippy::needless_range_loop)] // a, b, o2 and o3 index the sums of every level
fn combine(subs: &[[[__m256i; V]; W]; SUBS], w: usize, v: usize) -> [__m256i; OUTS] {
    let m = |s: usize| subs[s][w][v];
    let mut r_ab = [[[_mm256_setzero_si256(); 2]; 3]; 3];
    for a in 0..3 {
        for b in 0..3 {
            for o3 in 0..2 {
                r_ab[a][b][o3] = _mm256_add_epi32(m(9 * a + 3 * b), m(9 * a + 3 * b + 1 + o3));
            }
        }
    }
    let mut r_a = [[[_mm256_setzero_si256(); 2]; 2]; 3];
    for a in 0..3 {
        for o2 in 0..2 {
            for o3 in 0..2 {
                r_a[a][o2][o3] = _mm256_add_epi32(r_ab[a][0][o3], r_ab[a][1 + o2][o3]);
            }
        }
    }
    let mut s = [_mm256_setzero_si256(); OUTS];
    for (o, s) in s.iter_mut().enumerate() {
        let (o1, o2, o3) = (o & 1, (o >> 1) & 1, o >> 2);
        *s = _mm256_add_epi32(r_a[0][o2][o3], r_a[1 + o1][o2][o3]);
    }
    s
}

/// A vector some of whose lags pass the screen: raises L by its largest v, then evaluates
/// exactly every lag still passing, keeping the first lag of the best u. (Lags past the
/// last have v = −x̄·1e30 ≤ −1.2e28 for an unflagged watch, a valid lower bound of its best
/// u; they are never evaluated. A flagged watch's result is not used.)
///
/// # Safety
/// AVX2 and FMA.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
unsafe fn candidates(
    station: &Prepared,
    watch: &Watch,
    i0: usize,
    sums: &[__m256i; OUTS],
    screen: &[__m256; OUTS],
    top: __m256,
    e: f64,
    best: &mut Best,
) {
    // SAFETY: an __m256 is 8 f32 and an __m256i 8 i32; every bit pattern is one.
    let (top, sums) = unsafe {
        (
            std::mem::transmute::<__m256, [f32; LANES]>(top),
            std::mem::transmute::<[__m256i; OUTS], [[i32; LANES]; OUTS]>(*sums),
        )
    };
    let top = top.into_iter().fold(f32::NEG_INFINITY, f32::max);
    best.floor = best.floor.max(f64::from(top) - e);
    best.floor32 = f32_at_most(best.floor);
    let threshold = _mm256_set1_ps(f32_at_most(best.floor - e));
    for (o, screen) in screen.iter().enumerate() {
        let mut lanes = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GE_OQ>(*screen, threshold)) as u32;
        while lanes != 0 {
            let l = lanes.trailing_zeros() as usize;
            lanes &= lanes - 1;
            let tau = tau(i0 + l, o);
            if tau < LAGS {
                let u = numerator(sums[o][l], watch.mean, station.inv_sy[tau], station.sy_inv_sy[tau]);
                if u > best.u || (u == best.u && (tau as u32) < best.lag) {
                    (best.u, best.lag) = (u, tau as u32);
                }
            }
        }
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
