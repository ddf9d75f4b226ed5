//! The direct kernel with AVX2 (for CPUs without AVX-512 VNNI), on the nested Karatsuba
//! layout of [`super::karatsuba`]: per tile of 3 watches × 3 vectors (24 entries, 192 lags),
//! the 27 sub sums by `vpmaddwd` and `vpaddd` (9 accumulators; per pair of taps, three
//! station loads and three watch broadcasts), then per watch and vector the 8 sums S by 38
//! adds. The sums are exact integers, the same as every other path's.
//!
//! The epilogue screens the 64 lags of a vector in f32 and computes the f64 r only where
//! the proven error bound of [`super::screen`] cannot rule a lag out.

use std::arch::x86_64::*;
use std::cell::RefCell;
use std::mem::MaybeUninit;

use super::karatsuba::{tau, vectors, watch_pairs, Layout8, OUTS, PAIRS, SUBS};
use super::screen::Best;
use super::{groups, Prepared, Watch};

/// Entries (i32 lanes) per vector.
const LANES: usize = 8;
/// Vectors of the layout (whole chunks: [`Layout8`]'s).
const VECTORS: usize = vectors(LANES, V * CHUNK_TILES);
/// i16 per vector of the layout.
const VECTOR_I16: usize = Layout8::VECTOR_I16;
/// Watches per register tile.
const W: usize = 3;
/// Vectors per register tile.
const V: usize = 3;
/// Tiles of vectors per chunk: the chunk's station values (52 KB) stay in L2 while every
/// watch tile passes over them, and the watches' sides (0.5 KB each) are read once per chunk
/// (4 tiles measured 3-5 % faster than 1, as fast as 8).
const CHUNK_TILES: usize = 4;

thread_local! {
    /// [`watch_pairs`] of every watch of a call.
    static XS: RefCell<Vec<[[i32; SUBS * PAIRS]; W]>> = const { RefCell::new(Vec::new()) };
}

/// Whether the CPU has every feature [`correlate_tiles`] enables.
pub(crate) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// The best (u, lag) of each watch over all lags, in order (then those of the blank
/// watches padding the last group).
///
/// # Safety
/// The CPU must have the features [`available`] checks (AVX2 and FMA).
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn correlate(station: &Prepared, watches: &[&Watch]) -> Vec<(f64, u32)> {
    const { assert!((VECTORS / V).is_multiple_of(CHUNK_TILES)) };
    let layout = station.karatsuba8();
    assert_eq!(layout.rows.len(), VECTORS * VECTOR_I16, "the Karatsuba layout");
    assert!([&layout.inv_sy, &layout.sy_inv_sy].iter().all(|v| v.len() == VECTORS * OUTS * LANES));
    assert!(layout.inv_sy_max.len() == VECTORS && layout.inv_sy_max32.len() == VECTORS);
    let watches: Vec<[&Watch; W]> = groups(watches);
    let mut best: Vec<[Best; W]> =
        watches.iter().map(|group| group.map(|watch| Best::new(watch, layout.lgq_max))).collect();
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
    watches.iter().zip(&best).flat_map(|(group, best)| std::iter::zip(group, best).map(|(w, b)| b.result(w))).collect()
}

/// Runs the watches over the vectors v0..v0 + V.
///
/// # Safety
/// AVX2 and FMA; `v0 + V <= VECTORS`, the layout's lengths as [`correlate_tiles`] asserts.
#[target_feature(enable = "avx2,fma")]
unsafe fn correlate_tile(
    station: &Prepared,
    layout: &Layout8,
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
            let threshold = _mm256_set1_ps(best.threshold32(layout.inv_sy_max32[v0 + v]));
            if _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GE_OQ>(top, threshold)) != 0 {
                let inv_sy_max = layout.inv_sy_max[v0 + v];
                // SAFETY: the caller's features.
                unsafe { candidates(station, group[w], LANES * (v0 + v), &sums, &screen, top, inv_sy_max, best) };
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
    inv_sy_max: f64,
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
    best.raise(top, inv_sy_max);
    let threshold = _mm256_set1_ps(best.threshold(inv_sy_max));
    for (o, screen) in screen.iter().enumerate() {
        let mut lanes = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GE_OQ>(*screen, threshold)) as u32;
        while lanes != 0 {
            let l = lanes.trailing_zeros() as usize;
            lanes &= lanes - 1;
            best.consider(station, watch, sums[o][l], tau(i0 + l, o));
        }
    }
}
