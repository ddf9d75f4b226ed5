//! The station side of the vector kernels: three nested Karatsuba levels, so that 27 products
//! of 10 taps give 8 lags' sums where the plain sums take 8 × 80 (27/64 of the products).
//! The AVX2 kernel reads it 8 entries to a vector ([`Layout8`]), the AVX-512 one 16
//! ([`Layout16`]); the arrangement is the same, [`Layout`] is generic over the lanes.
//!
//! For a phase φ = τ mod 50, the lags τ = φ + 50n are a correlation of the watch's 80
//! values F = x with the sequence Z[m] = Lgq[φ + 50m]: S(n) = Σ_k F_k·Z[n + k]. One level
//! splits it into three correlations of half the taps and half the outputs, n = 2h + o:
//!
//! ```text
//! S(2h)     = P(h) + Q0(h)      P  : F_P[j]  = F[2j] + F[2j+1],  Z_P[m]  = Z[2m+1]
//! S(2h + 1) = P(h) + Q1(h)      Q0 : F_Q0[j] = F[2j],            Z_Q0[m] = Z[2m] − Z[2m+1]
//!                               Q1 : F_Q1[j] = F[2j+1],          Z_Q1[m] = Z[2m+2] − Z[2m+1]
//! ```
//!
//! (each of P, Q0, Q1 is `Σ_j F_a[j]·Z_a[h + j]`). Three levels nested give 27 correlations
//! ("subs" s = 9a + 3b + c, each of a, b, c ∈ {P, Q0, Q1}) of 10 taps, their outputs g
//! giving the lags n = 8g + o, o = o1 + 2·o2 + 4·o3 (o1 the first level's output parity).
//!
//! **Ranges** (every sum exact): `log_energies_fixed` gives 9096 ≤ Lgq ≤ 14296 (the energy
//! lies between N and N + 150·32768², so 64·6·log2(1 + energy) between 9095.6 and
//! 14296.3), a spread of w = 5200. A P sequence keeps its values, a Q sequence is a
//! difference: after three levels |Z_s| ≤ max(14296, 4w = 20800) < 2^15, so Z_s fits i16.
//! The filters' values are sums of at most 8 watch values, ≤ 2040. Each sub's sum is at most
//! 10·2040·20800 < 2^31, and every combination of them is the (exact) sum of a sub-problem
//! of the level above; the lanes add with wrap-around anyway, and the final S(τ) <
//! 80·255·14296 < 2^31 is exact. The sequence beyond the station's last value (lags past
//! 6000 only) repeats that value, so the ranges hold there too.
//!
//! Entries i = 50g + φ are laid out LANES to a vector (lane = i mod LANES), each giving 8
//! lags `tau(i, o)`: lags 0..=6000 are entries 0..=750, padded to whole tiles.

use super::{Prepared, BLOCK_MS, LAGS, LOG_ENERGIES, WATCH_BLOCKS};

/// Nested Karatsuba levels.
pub(crate) const LEVELS: usize = 3;
/// Lags per entry: 2^LEVELS.
pub(crate) const OUTS: usize = 1 << LEVELS;
/// Sub-correlations: 3^LEVELS.
pub(crate) const SUBS: usize = 27;
/// Taps per sub-correlation.
pub(crate) const TAPS: usize = WATCH_BLOCKS / OUTS;
/// Pairs of taps per sub (one `vpmaddwd` each).
pub(crate) const PAIRS: usize = TAPS / 2;
/// Groups g of 8 outputs per phase (n = 0..=120).
const GROUPS: usize = (LAGS - 1) / BLOCK_MS / OUTS + 1;
/// Values of a sub's sequence that the groups read.
const SUB_LEN: usize = GROUPS + TAPS - 1;
/// Entries holding a real lag: up to that of the last lag (φ = 0 of the last group).
const ENTRIES: usize = entry(LAGS - 1) + 1;
/// The AVX2 kernel's layout: 8 i32 lanes, 96 vectors (whole chunks of 4 tiles of 3 vectors).
pub(crate) type Layout8 = Layout<8, { vectors(8, 12) }>;
/// The AVX-512 kernel's layout: 16 i32 lanes, 48 vectors (whole tiles of 1, 2, 3, 4 or 6).
pub(crate) type Layout16 = Layout<16, { vectors(16, 12) }>;
/// `sy_inv_sy` (f32) of a lag past the last: its screen value −x̄·1e30 never reaches a real
/// lag's of a watch with x̄ > 0 (every unflagged one), and such lags are never evaluated.
const NEVER: f32 = 1e30;

const _: () = assert!(OUTS * TAPS == WATCH_BLOCKS && TAPS.is_multiple_of(2) && SUBS == 3usize.pow(LEVELS as u32));

/// Vectors of `lanes` entries holding every entry, padded to a multiple of `multiple`.
pub(crate) const fn vectors(lanes: usize, multiple: usize) -> usize {
    ENTRIES.div_ceil(lanes * multiple) * multiple
}

/// The entry of lag τ.
pub(crate) const fn entry(tau: usize) -> usize {
    let n = tau / BLOCK_MS;
    BLOCK_MS * (n / OUTS) + tau % BLOCK_MS
}

/// Lag o of entry i.
pub(crate) fn tau(i: usize, o: usize) -> usize {
    i % BLOCK_MS + BLOCK_MS * (OUTS * (i / BLOCK_MS) + o)
}

/// A station minute laid out for the nested Karatsuba sums, `LANES` entries to a vector,
/// `VECTORS` vectors.
#[derive(Clone, Debug)]
pub(crate) struct Layout<const LANES: usize, const VECTORS: usize> {
    /// `rows[v·VECTOR_I16 + ((s·PAIRS + p)·LANES + l)·2 + h]`: entry i = LANES·v + l (φ,
    /// g), sub s, tap 2p + h: `Z_s[g + 2p + h]` of phase φ.
    pub rows: Vec<i16>,
    /// `inv_sy` as f32 per vector, output and lane (0 past the last lag).
    pub inv_sy: Vec<f32>,
    /// `sy_inv_sy` as f32 per vector, output and lane ([`NEVER`] past the last lag).
    pub sy_inv_sy: Vec<f32>,
    /// Per vector: the largest `inv_sy` (f64) of its real lags.
    pub inv_sy_max: Vec<f64>,
    /// `inv_sy_max` as f32.
    pub inv_sy_max32: Vec<f32>,
    /// The largest `Lgq`.
    pub lgq_max: f64,
}

/// One level on each of `input`'s sequences of length n (back to back): for each, its
/// Z_P, Z_Q0 and Z_Q1 of length n' (back to back, in that order) in `output`.
fn split_sequences(input: &[i32], n: usize, output: &mut [i32], n_out: usize) {
    for (z, out) in input.chunks_exact(n).zip(output.chunks_exact_mut(3 * n_out)) {
        let (p, q) = out.split_at_mut(n_out);
        let (q0, q1) = q.split_at_mut(n_out);
        for m in 0..n_out {
            p[m] = z[2 * m + 1];
            q0[m] = z[2 * m] - z[2 * m + 1];
            q1[m] = z[2 * m + 2] - z[2 * m + 1];
        }
    }
}

/// One level on each of `input`'s filters of length n: F_P, F_Q0, F_Q1 of length n/2.
#[inline(always)]
fn split_filters(input: &[i16], n: usize, output: &mut [i16]) {
    for (f, out) in input.chunks_exact(n).zip(output.chunks_exact_mut(3 * n / 2)) {
        let (p, q) = out.split_at_mut(n / 2);
        let (q0, q1) = q.split_at_mut(n / 2);
        for j in 0..n / 2 {
            p[j] = f[2 * j] + f[2 * j + 1];
            q0[j] = f[2 * j];
            q1[j] = f[2 * j + 1];
        }
    }
}

/// Values of Y, Z_a and Z_ab a phase's subs need (a level takes 2n + 1 values for n).
const SEQ_LEN: [usize; LEVELS + 1] =
    [((SUB_LEN * 2 + 1) * 2 + 1) * 2 + 1, (SUB_LEN * 2 + 1) * 2 + 1, SUB_LEN * 2 + 1, SUB_LEN];

impl<const LANES: usize, const VECTORS: usize> Layout<LANES, VECTORS> {
    /// i16 per vector: per sub and pair, LANES lanes × 2 taps.
    pub(crate) const VECTOR_I16: usize = SUBS * PAIRS * LANES * 2;

    pub(crate) fn new(station: &Prepared) -> Self {
        const { assert!(LEVELS == 3 && VECTORS * LANES >= ENTRIES) };
        let real = &station.lgq[..LOG_ENERGIES];
        // Per phase, the 27 sequences of SUB_LEN values, back to back.
        let mut z = vec![0i16; BLOCK_MS * SUBS * SUB_LEN];
        let mut y = [0i32; SEQ_LEN[0]];
        let mut z1 = [0i32; 3 * SEQ_LEN[1]];
        let mut z2 = [0i32; 9 * SEQ_LEN[2]];
        let mut z3 = [0i32; SUBS * SUB_LEN];
        for (phi, z) in z.chunks_exact_mut(SUBS * SUB_LEN).enumerate() {
            for (m, y) in y.iter_mut().enumerate() {
                *y = i32::from(real[(phi + BLOCK_MS * m).min(LOG_ENERGIES - 1)]);
            }
            split_sequences(&y, SEQ_LEN[0], &mut z1, SEQ_LEN[1]);
            split_sequences(&z1, SEQ_LEN[1], &mut z2, SEQ_LEN[2]);
            split_sequences(&z2, SEQ_LEN[2], &mut z3, SEQ_LEN[3]);
            for (z, &v) in z.iter_mut().zip(&z3) {
                // In range for every Lgq `log_energies_fixed` gives (the module's comment).
                *z = i16::try_from(v).expect("a Karatsuba difference beyond i16");
            }
        }
        // As i32 pairs of taps: rows32[(v·SUBS + s)·PAIRS + p)·LANES + l] = taps 2p, 2p + 1.
        let mut rows = vec![0i16; VECTORS * Self::VECTOR_I16];
        for (v, vector) in rows.chunks_exact_mut(Self::VECTOR_I16).enumerate() {
            for l in 0..LANES {
                let i = LANES * v + l;
                let z = &z[(i % BLOCK_MS) * SUBS * SUB_LEN + i / BLOCK_MS..];
                for s in 0..SUBS {
                    let z = &z[s * SUB_LEN..][..TAPS];
                    for p in 0..PAIRS {
                        let at = ((s * PAIRS + p) * LANES + l) * 2;
                        vector[at..at + 2].copy_from_slice(&z[2 * p..2 * p + 2]);
                    }
                }
            }
        }
        let per_lag = |values: &[f64], past: f32| -> Vec<f32> {
            (0..VECTORS * OUTS * LANES)
                .map(|at| {
                    let (v, o, l) = (at / (OUTS * LANES), at / LANES % OUTS, at % LANES);
                    let tau = tau(LANES * v + l, o);
                    if tau < LAGS {
                        values[tau] as f32
                    } else {
                        past
                    }
                })
                .collect()
        };
        let inv_sy_max: Vec<f64> = (0..VECTORS)
            .map(|v| {
                let lags = (0..LANES * OUTS).map(|k| tau(LANES * v + k % LANES, k / LANES)).filter(|&t| t < LAGS);
                lags.map(|t| station.inv_sy[t]).fold(0.0, f64::max)
            })
            .collect();
        Layout {
            rows,
            inv_sy: per_lag(&station.inv_sy, 0.0),
            sy_inv_sy: per_lag(&station.sy_inv_sy, NEVER),
            inv_sy_max32: inv_sy_max.iter().map(|&a| a as f32).collect(),
            inv_sy_max,
            lgq_max: f64::from(real.iter().copied().max().unwrap_or(0)),
        }
    }
}

/// A watch's side: per sub and pair, the i32 of taps 2p (low half) and 2p + 1 (high half).
pub(crate) fn watch_pairs(x: &[i16; WATCH_BLOCKS]) -> [i32; SUBS * PAIRS] {
    const { assert!(LEVELS == 3) };
    // Sums of at most 8 values 0..=255: they fit i16.
    let mut f1 = [0i16; 3 * WATCH_BLOCKS / 2];
    let mut f2 = [0i16; 9 * WATCH_BLOCKS / 4];
    let mut f3 = [0i16; SUBS * TAPS];
    split_filters(x, WATCH_BLOCKS, &mut f1);
    split_filters(&f1, WATCH_BLOCKS / 2, &mut f2);
    split_filters(&f2, WATCH_BLOCKS / 4, &mut f3);
    std::array::from_fn(|k| (f3[2 * k] as u16 as i32) | (i32::from(f3[2 * k + 1]) << 16))
}

/// The 8 sums S of an entry from its 27 sub sums `m`, in output order o (the AVX2 kernel
/// does the same adds on vectors of entries).
#[cfg(test)]
fn combine<T: Copy>(m: &[T; SUBS], add: impl Fn(T, T) -> T) -> [T; OUTS] {
    // Level 3: R_ab(2g + o3) = m_abP + m_abQo3.
    let r_ab: [[[T; 2]; 3]; 3] = std::array::from_fn(|a| {
        std::array::from_fn(|b| std::array::from_fn(|o3| add(m[9 * a + 3 * b], m[9 * a + 3 * b + 1 + o3])))
    });
    // Level 2: R_a = R_aP + R_aQo2.
    let r_a: [[[T; 2]; 2]; 3] = std::array::from_fn(|a| {
        std::array::from_fn(|o2| std::array::from_fn(|o3| add(r_ab[a][0][o3], r_ab[a][1 + o2][o3])))
    });
    // Level 1: S = R_P + R_Qo1, at o = o1 + 2·o2 + 4·o3.
    std::array::from_fn(|o| {
        let (o1, o2, o3) = (o & 1, (o >> 1) & 1, o >> 2);
        add(r_a[0][o2][o3], r_a[1 + o1][o2][o3])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{Watch, STATION_SAMPLES};
    use rand::{Rng, SeedableRng};

    fn direct_sum(station: &Prepared, x: &[i16; WATCH_BLOCKS], tau: usize) -> i32 {
        x.iter().enumerate().map(|(k, &x)| i32::from(x) * i32::from(station.lgq[tau + BLOCK_MS * k])).sum()
    }

    /// The layout's 27 sums per entry, formed as the vector code forms them (pairs of
    /// products, wrapping adds) and combined, are the direct sums at every lag, on stations
    /// of the extreme values (silence, full scale) and random ones, with extreme watches.
    #[test]
    fn the_combined_subs_are_the_direct_sums() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(21);
        let stations: Vec<Vec<i16>> = vec![
            (0..STATION_SAMPLES).map(|_| rng.gen_range(-9000..9000)).collect(),
            // Blocks of digital silence and of full scale: Lgq at both ends of its range.
            (0..STATION_SAMPLES).map(|t| if (t / 150) % 2 == 0 { 0 } else { i16::MIN }).collect(),
            (0..STATION_SAMPLES).map(|t| if rng.gen_bool(0.5) && t % 7 != 0 { 0 } else { i16::MIN }).collect(),
        ];
        for samples in &stations {
            let station = Prepared::new(samples);
            let (lo, hi) = (station.lgq[..LOG_ENERGIES].iter().min(), station.lgq[..LOG_ENERGIES].iter().max());
            assert!(*lo.unwrap() >= 9096 && *hi.unwrap() <= 14296, "{lo:?} {hi:?}");
            let qs: [[u8; WATCH_BLOCKS]; 3] = [
                [255; WATCH_BLOCKS],
                std::array::from_fn(|k| if k % 2 == 0 { 255 } else { 0 }),
                std::array::from_fn(|_| rng.gen()),
            ];
            for q in &qs {
                let watch = Watch::new(q, true);
                check_sums(&Layout8::new(&station), &station, &watch);
                check_sums(&Layout16::new(&station), &station, &watch);
            }
        }
    }

    /// Every lag's sum from the layout's 27 subs, formed as the vector code forms them
    /// (pairs of products, wrapping adds) and combined, is the direct sum.
    fn check_sums<const LANES: usize, const VECTORS: usize>(
        layout: &Layout<LANES, VECTORS>,
        station: &Prepared,
        watch: &Watch,
    ) {
        let xs = watch_pairs(&watch.x);
        let madd = |x: i32, row: &[i16]| {
            i32::from(x as i16).wrapping_mul(i32::from(row[0])).wrapping_add((x >> 16).wrapping_mul(i32::from(row[1])))
        };
        let mut lags = std::collections::BTreeSet::new();
        for i in 0..VECTORS * LANES {
            let (v, l) = (i / LANES, i % LANES);
            let m: [i32; SUBS] = std::array::from_fn(|s| {
                (0..PAIRS).fold(0i32, |acc, p| {
                    let at = v * Layout::<LANES, VECTORS>::VECTOR_I16 + ((s * PAIRS + p) * LANES + l) * 2;
                    acc.wrapping_add(madd(xs[s * PAIRS + p], &layout.rows[at..at + 2]))
                })
            });
            for (o, sum) in combine(&m, i32::wrapping_add).into_iter().enumerate() {
                let tau = tau(i, o);
                if tau < LAGS {
                    assert_eq!(sum, direct_sum(station, &watch.x, tau), "{LANES} lanes, lag {tau}");
                    assert!(lags.insert(tau), "lag {tau} twice");
                }
            }
        }
        assert_eq!(lags.len(), LAGS, "every lag once");
    }
}
