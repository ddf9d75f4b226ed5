//! The direct kernel with AVX-512 VNNI, on the nested Karatsuba layout of
//! [`super::karatsuba`] with 16 entries (128 lags) to a vector: per tile of [`W`] watches ×
//! [`V`] vectors, the 27 sub sums by `vpdpwssd` (32 i16 products summed pairwise into 16
//! i32 lanes, the add included: one instruction per product pair, where AVX2 takes two).
//!
//! The sums are combined by chaining the accumulators: `vpdpwssd` adds onto whatever the
//! accumulator holds, so a sub whose sum is only ever needed plus another's starts from
//! that other's sum. With s = (a, b, c) and R_ab(o3) = m_abP + m_abQo3 (`karatsuba`),
//! m_aPP is summed once and both R_aP(o3) continue from it; m_aQo2P is summed once, and
//! R_a(o2, o3) = R_aP(o3) + m_aQo2P + m_aQo2Qo3 continues from the first two's sum; for
//! a = Qo1, S(o) = R_P(o2, o3) + R_a(o2, o3) continues from R_P + R_aP + m_aQo2P. That is
//! 20 adds per watch and vector instead of the 38 of a separate combination, and the same
//! wrapping i32 sums of the same 8 subs per lag: exact, the same as every other path's.
//!
//! The epilogue screens the 128 lags of a vector in f32 and computes the f64 r only where
//! the proven error bound of [`super::screen`] cannot rule a lag out (the bound does not
//! depend on the lanes; a vector that raises L waits as [`Pending`] until the next one
//! does, so that most are never evaluated).
//!
//! The tile, 8 watches × 2 vectors (16 accumulators), was the fastest of those measured:
//! 10 × 2 was as fast; 8 × 3, 12 × 2, 4 × 4, 16 × 1 were 5-10 % slower, 6 × 4, 4 × 6, 3 × 6
//! and 2 × 12 15-50 %. The larger V, the more of L1 the tile's station values (V · 8.6 KB)
//! and partial sums (16 · W · V · 64 B) take, and V = 1 needs a load per product.

use std::arch::asm;
use std::arch::x86_64::*;
use std::cell::RefCell;
use std::mem::MaybeUninit;

use super::karatsuba::{tau, vectors, watch_pairs, Layout16, OUTS, PAIRS, SUBS};
use super::screen::Best;
use super::{groups, Prepared, Watch};

/// Entries (i32 lanes) per vector.
const LANES: usize = 16;
/// Watches per register tile.
const W: usize = 8;
/// Vectors per register tile: W·V accumulators, V station vectors and a watch broadcast
/// fit the 32 registers (the module's comment for the choice).
const V: usize = 2;
/// Vectors of the layout ([`Layout16`]'s, whole tiles).
const VECTORS: usize = vectors(LANES, 12);
/// i16 per vector of the layout.
const VECTOR_I16: usize = Layout16::VECTOR_I16;

/// A sum per watch and vector of the tile.
type Acc = [[__m512i; V]; W];
/// The tile's slots of partial sums (the module's comment): m_aPP, R_aP(o3), m_aQo2P,
/// R_P(o2, o3) at 2·o2 + o3, S(o).
const M_PP: usize = 0;
const R_AP: usize = 1;
const M_QP: usize = 3;
const R_P: usize = 4;
const SUMS: usize = 8;
const SLOTS: usize = SUMS + OUTS;

/// A vector some of whose lags passed the screen, kept (its sums, 0.5 KB) until a later
/// one raises L past all of it, or to the end: of the 5-6 vectors per watch that raise L
/// (the records of the running maximum), most never need their lags evaluated.
#[derive(Clone, Copy)]
struct Pending {
    /// Its index, or [`NONE`].
    vector: usize,
    /// Its largest screen value.
    top: f32,
    sums: [__m512i; OUTS],
}

/// No pending vector.
const NONE: usize = usize::MAX;

thread_local! {
    /// [`watch_pairs`] of every watch of a call.
    static XS: RefCell<Vec<[[i32; SUBS * PAIRS]; W]>> = const { RefCell::new(Vec::new()) };
    /// Every watch's pending vector (kept between calls: 0.6 MB for 1000 watches).
    static PENDING: RefCell<Vec<[Pending; W]>> = const { RefCell::new(Vec::new()) };
}

/// `acc += vpdpwssd(x, y)`, in asm: LLVM's machine combiner splits a chain of
/// `_mm512_dpwssd_epi32` into `vpmaddwd` and `vpaddd` to shorten its latency, two
/// instructions per product pair where the point of this path is one.
macro_rules! dpwssd {
    ($acc:expr, $x:expr, $y:expr) => {
        // SAFETY: the enclosing function enables avx512vnni; registers only.
        unsafe {
            asm!("vpdpwssd {acc}, {x}, {y}", acc = inout(zmm_reg) $acc, x = in(zmm_reg) $x, y = in(zmm_reg) $y,
                 options(pure, nomem, nostack, preserves_flags))
        }
    };
}

/// Whether the CPU has every feature [`correlate`] enables.
pub(crate) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vnni")
}

/// The best (u, lag) of each watch over all lags, in order (then those of the blank
/// watches padding the last group).
///
/// # Safety
/// The CPU must have the features [`available`] checks.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub(crate) unsafe fn correlate(station: &Prepared, watches: &[&Watch]) -> Vec<(f64, u32)> {
    const { assert!(VECTORS.is_multiple_of(V)) };
    let layout = station.karatsuba16();
    assert_eq!(layout.rows.len(), VECTORS * VECTOR_I16, "the Karatsuba layout");
    assert!([&layout.inv_sy, &layout.sy_inv_sy].iter().all(|v| v.len() == VECTORS * OUTS * LANES));
    assert!(layout.inv_sy_max.len() == VECTORS && layout.inv_sy_max32.len() == VECTORS);
    let watches: Vec<[&Watch; W]> = groups(watches);
    let mut best: Vec<[Best; W]> =
        watches.iter().map(|group| group.map(|watch| Best::new(watch, layout.lgq_max))).collect();
    XS.with_borrow_mut(|xs| {
        PENDING.with_borrow_mut(|pending| {
            xs.clear();
            xs.extend(watches.iter().map(|w| std::array::from_fn::<_, W, _>(|i| watch_pairs(&w[i].x))));
            let none = Pending { vector: NONE, top: 0.0, sums: [_mm512_setzero_si512(); OUTS] };
            pending.resize(watches.len().max(pending.len()), [none; W]);
            pending.iter_mut().flatten().for_each(|p| p.vector = NONE);
            // A tile's station values (V · 8.6 KB) stay in L1 while every watch group passes.
            for v0 in (0..VECTORS).step_by(V) {
                for (((group, xs), best), pending) in
                    watches.iter().zip(xs.iter()).zip(&mut best).zip(pending.iter_mut())
                {
                    // SAFETY: the caller's features; v0 + V <= VECTORS; the lengths asserted above.
                    unsafe { correlate_tile(station, layout, group, xs, v0, best, pending) };
                }
            }
            for ((group, best), pending) in watches.iter().zip(&mut best).zip(pending.iter()) {
                for ((watch, best), pending) in group.iter().zip(best).zip(pending) {
                    if pending.vector != NONE {
                        // SAFETY: the caller's features.
                        unsafe { evaluate(station, layout, watch, pending.vector, &pending.sums, best) };
                    }
                }
            }
        })
    });
    watches.iter().zip(&best).flat_map(|(group, best)| std::iter::zip(group, best).map(|(w, b)| b.result(w))).collect()
}

/// Runs the watches over the vectors v0..v0 + V.
///
/// # Safety
/// AVX-512 F, BW and VNNI; `v0 + V <= VECTORS`, the layout's lengths as [`correlate`] asserts.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn correlate_tile(
    station: &Prepared,
    layout: &Layout16,
    group: &[&Watch; W],
    xs: &[[i32; SUBS * PAIRS]; W],
    v0: usize,
    best: &mut [Best; W],
    pending: &mut [Pending; W],
) {
    let rows = layout.rows.as_ptr();
    // The tile's partial sums, an `Acc` per slot: written before they are read (not zeroed:
    // an 18 KB memset per tile took 6 %), and addressed by pointer (as arrays passed by
    // value, LLVM copied them with memcpy).
    let mut slots = [MaybeUninit::<Acc>::uninit(); SLOTS];
    let base: *mut __m512i = slots.as_mut_ptr().cast();
    // The tile's sums of sub `s` added onto the sum of the slots `starts`, into slot `out`.
    macro_rules! dot {
        ($out:expr, [$($start:expr),*], $s:expr) => {{
            let (out, s) = ($out, $s);
            let mut acc: Acc = [[_mm512_setzero_si512(); V]; W];
            $(
                for (w, acc) in acc.iter_mut().enumerate() {
                    for (v, acc) in acc.iter_mut().enumerate() {
                        // SAFETY: the start slots were written before (the order below).
                        *acc = _mm512_add_epi32(*acc, unsafe { base.add($start * W * V + w * V + v).read() });
                    }
                }
            )*
            macro_rules! pair {
                ($p:expr) => {{
                    let p: usize = $p;
                    let y: [__m512i; V] = std::array::from_fn(|v| {
                        // SAFETY: v0 + v < VECTORS, so the 32 i16 at this offset are in `rows`.
                        unsafe { _mm512_loadu_si512(rows.add((v0 + v) * VECTOR_I16 + (s * PAIRS + p) * LANES * 2).cast()) }
                    });
                    for (acc, xs) in acc.iter_mut().zip(xs) {
                        let x = _mm512_set1_epi32(xs[s * PAIRS + p]);
                        for (acc, &y) in acc.iter_mut().zip(&y) {
                            dpwssd!(*acc, x, y);
                        }
                    }
                }};
            }
            const { assert!(PAIRS == 5) };
            pair!(0);
            pair!(1);
            pair!(2);
            pair!(3);
            pair!(4);
            for (w, acc) in acc.iter().enumerate() {
                for (v, &acc) in acc.iter().enumerate() {
                    // SAFETY: out < SLOTS.
                    unsafe { base.add(out * W * V + w * V + v).write(acc) };
                }
            }
        }};
    }
    // The subs s = 9a + 3b + c, P = 0, Qj = 1 + j (the module's comment).
    for a in 0..3 {
        dot!(M_PP, [], 9 * a);
        dot!(R_AP, [M_PP], 9 * a + 1);
        dot!(R_AP + 1, [M_PP], 9 * a + 2);
        for o2 in 0..2 {
            dot!(M_QP, [], 9 * a + 3 * (1 + o2));
            for o3 in 0..2 {
                let s = 9 * a + 3 * (1 + o2) + 1 + o3;
                if a == 0 {
                    dot!(R_P + 2 * o2 + o3, [R_AP + o3, M_QP], s);
                } else {
                    dot!(SUMS + (a - 1) + 2 * o2 + 4 * o3, [R_P + 2 * o2 + o3, R_AP + o3, M_QP], s);
                }
            }
        }
    }
    for (w, (best, pending)) in best.iter_mut().zip(pending).enumerate() {
        let mean = _mm512_set1_ps(group[w].mean as f32);
        for v in 0..V {
            // SAFETY: every o = o1 + 2·o2 + 4·o3 was written above (o1 = a − 1).
            let sums: [__m512i; OUTS] =
                std::array::from_fn(|o| unsafe { base.add((SUMS + o) * W * V + w * V + v).read() });
            let screen = screen(layout, v0 + v, &sums, mean);
            let top = _mm512_max_ps(
                _mm512_max_ps(_mm512_max_ps(screen[0], screen[1]), _mm512_max_ps(screen[2], screen[3])),
                _mm512_max_ps(_mm512_max_ps(screen[4], screen[5]), _mm512_max_ps(screen[6], screen[7])),
            );
            let threshold = _mm512_set1_ps(best.threshold32(layout.inv_sy_max32[v0 + v]));
            if _mm512_cmp_ps_mask::<_CMP_GE_OQ>(top, threshold) != 0 {
                // SAFETY: the caller's features.
                unsafe { record(station, layout, group[w], v0 + v, sums, top, best, pending) };
            }
        }
    }
}

/// The screen values v of the lags of `vector` from their sums S, in output order (the
/// module `screen`'s v: the same operations wherever they are computed).
#[inline]
#[target_feature(enable = "avx512f")]
fn screen(layout: &Layout16, vector: usize, sums: &[__m512i; OUTS], mean: __m512) -> [__m512; OUTS] {
    let at = vector * OUTS * LANES;
    assert!(at + OUTS * LANES <= layout.inv_sy.len().min(layout.sy_inv_sy.len()));
    std::array::from_fn(|o| {
        // SAFETY: asserted in bounds.
        let (a, b) = unsafe {
            (
                _mm512_loadu_ps(layout.inv_sy.as_ptr().add(at + o * LANES)),
                _mm512_loadu_ps(layout.sy_inv_sy.as_ptr().add(at + o * LANES)),
            )
        };
        _mm512_fnmadd_ps(mean, b, _mm512_mul_ps(_mm512_cvtepi32_ps(sums[o]), a))
    })
}

/// A vector some of whose lags pass the screen: raises L by its largest v, evaluates the
/// pending vector if some of its lags still pass, and keeps this one pending instead.
///
/// # Safety
/// AVX-512 F.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f")]
unsafe fn record(
    station: &Prepared,
    layout: &Layout16,
    watch: &Watch,
    vector: usize,
    sums: [__m512i; OUTS],
    top: __m512,
    best: &mut Best,
    pending: &mut Pending,
) {
    // The largest of 16 finite values: exact in any order.
    let top = _mm512_reduce_max_ps(top);
    best.raise(top, layout.inv_sy_max[vector]);
    if pending.vector != NONE && pending.top >= best.threshold(layout.inv_sy_max[pending.vector]) {
        // SAFETY: the caller's features.
        unsafe { evaluate(station, layout, watch, pending.vector, &pending.sums, best) };
    }
    *pending = Pending { vector, top, sums };
}

/// Evaluates exactly every lag of `vector` whose v passes the current threshold, keeping
/// the first lag of the best u. (Its screen is computed again here: the hot loop keeps no
/// copy of it.)
///
/// # Safety
/// AVX-512 F.
#[target_feature(enable = "avx512f")]
unsafe fn evaluate(
    station: &Prepared,
    layout: &Layout16,
    watch: &Watch,
    vector: usize,
    sums: &[__m512i; OUTS],
    best: &mut Best,
) {
    let screen = screen(layout, vector, sums, _mm512_set1_ps(watch.mean as f32));
    let threshold = _mm512_set1_ps(best.threshold(layout.inv_sy_max[vector]));
    // The passing lags as bits 16·o + lane.
    let mut lanes = screen
        .iter()
        .enumerate()
        .fold(0u128, |m, (o, &v)| m | u128::from(_mm512_cmp_ps_mask::<_CMP_GE_OQ>(v, threshold)) << (LANES * o));
    // SAFETY: an __m512i is 16 i32; every bit pattern is one.
    let sums = unsafe { std::mem::transmute::<[__m512i; OUTS], [[i32; LANES]; OUTS]>(*sums) };
    while lanes != 0 {
        let bit = lanes.trailing_zeros() as usize;
        lanes &= lanes - 1;
        let (o, l) = (bit / LANES, bit % LANES);
        best.consider(station, watch, sums[o][l], tau(LANES * vector + l, o));
    }
}
