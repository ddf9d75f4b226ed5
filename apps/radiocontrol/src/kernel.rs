//! The correlation of §2.10: a watch minute (80 log-energy values, one per 50 ms) against
//! a station minute (10 s of 3 kHz PCM), Pearson r at every lag τ = 0..=6000 ms, keeping
//! the maximum and its first lag.
//!
//! The station side is prepared once per station minute and shared by every watch
//! ([`Prepared`]): 1 ms energies, the 50 ms log-energy `Lg[t]`, and per lag the inverse
//! standard deviation of the 80 samples `Lg[τ + 50k]`. With the watch record centred
//! (`xc = x − mean`, so `Σ xc = 0`), r(τ) = Σ_k xc_k Lg[τ+50k] · inv_sy(τ) / ‖xc‖, and
//! the sum is the only part that costs: 80 × 6001 multiply-adds per pair.
//!
//! [`correlate_minute`] computes it directly for a block of watches at once (register
//! tiles of [`TILE_WATCHES`] watches × [`TILE_LAGS`] lags, one load of `Lg` per
//! [`TILE_WATCHES`] fused multiply-adds), compiled for AVX-512 or AVX2 where the CPU has
//! them. `crate::fft` is the same correlation by FFT, measured against this one by
//! `dps-radiocontrol bench-kernel`; this one is faster on this machine (see the README).
//! [`naive`] is the f64 double loop the tests hold both to (RC-2).
//!
//! Determinism: every sum runs in the same order (k ascending, `f32::mul_add`) whatever
//! the code path, so a job's result depends on the job only and the serial and parallel
//! runs write the same bytes.

/// Samples of a station minute record: 10 s at 3 kHz.
pub const STATION_SAMPLES: usize = 30_000;
/// Log-energy values of a watch minute record: 4 s in 50 ms blocks.
pub const WATCH_BLOCKS: usize = 80;
/// Milliseconds per watch block.
pub const BLOCK_MS: usize = 50;
/// Lags tried, 0..=6000 ms.
pub const LAGS: usize = 6001;
/// 1 ms energies of a station minute.
const ENERGIES: usize = STATION_SAMPLES / 3;
/// 50 ms log energies `Lg[t]`, t = 0..=9950.
pub const LOG_ENERGIES: usize = ENERGIES - BLOCK_MS + 1;

/// Watches per register tile.
pub const TILE_WATCHES: usize = 6;
/// Lags per register tile (two AVX-512 vectors of f32).
pub const TILE_LAGS: usize = 32;
/// Lags rounded up to whole tiles.
pub(crate) const LAGS_PADDED: usize = LAGS.div_ceil(TILE_LAGS) * TILE_LAGS;
/// `Lg` padded so that the last tile reads in bounds (the padding is never a result).
const LG_PADDED: usize = LAGS_PADDED + BLOCK_MS * (WATCH_BLOCKS - 1);

/// Result flag: the watch record is not valid (not worn); r = 0, lag = 0.
pub const FLAG_INVALID: u16 = 1;
/// Result flag: the watch signal is flat (no variance); r = 0, lag = 0.
pub const FLAG_FLAT: u16 = 2;

/// The 50 ms log energies of a station minute's PCM, in f64 (the reference's precision).
pub fn log_energies(samples: &[i16]) -> Vec<f64> {
    assert_eq!(samples.len(), STATION_SAMPLES, "a station minute has {STATION_SAMPLES} samples");
    let mut prefix = vec![0.0f64; ENERGIES + 1];
    for t in 0..ENERGIES {
        let e: f64 = samples[3 * t..3 * t + 3].iter().map(|&s| f64::from(s) * f64::from(s)).sum();
        prefix[t + 1] = prefix[t] + e;
    }
    (0..LOG_ENERGIES).map(|t| 6.0 * (1.0 + prefix[t + BLOCK_MS] - prefix[t]).log2()).collect()
}

/// A station minute prepared for correlation (shared by every watch of the minute).
#[derive(Clone, Debug)]
pub struct Prepared {
    /// `Lg[t]` as f32, zero-padded to whole lag tiles.
    pub lg: Vec<f32>,
    /// Per lag: 1 / the norm of the centred samples `Lg[τ + 50k]`, 0 where they are flat.
    pub inv_sy: Vec<f32>,
}

impl Prepared {
    /// Prepares a station minute record.
    pub fn new(samples: &[i16]) -> Prepared {
        let lg64 = log_energies(samples);
        let mut lg = vec![0.0f32; LG_PADDED];
        for (d, s) in lg.iter_mut().zip(&lg64) {
            *d = *s as f32;
        }
        let n = WATCH_BLOCKS as f64;
        let inv_sy = (0..LAGS)
            .map(|tau| {
                let (mut sy, mut syy) = (0.0f64, 0.0f64);
                for k in 0..WATCH_BLOCKS {
                    let y = f64::from(lg[tau + BLOCK_MS * k]);
                    sy += y;
                    syy += y * y;
                }
                let var = syy - sy * sy / n;
                if var > 1e-9 * syy.max(1.0) {
                    (1.0 / var.sqrt()) as f32
                } else {
                    0.0
                }
            })
            .collect();
        Prepared { lg, inv_sy }
    }
}

/// A watch minute prepared for correlation: centred values and 1 / their norm.
#[derive(Clone, Copy, Debug)]
pub struct Watch {
    /// `x − mean(x)`.
    pub xc: [f32; WATCH_BLOCKS],
    /// 1 / ‖xc‖, or 0 for a record that is invalid or flat (`flags` says which).
    pub inv_norm: f32,
    /// [`FLAG_INVALID`] or [`FLAG_FLAT`] (the result's flags), else 0.
    pub flags: u16,
}

impl Watch {
    /// Prepares the envelope of a watch record; `valid` is the record's worn flag.
    pub fn new(q: &[u8; WATCH_BLOCKS], valid: bool) -> Watch {
        let mean = q.iter().map(|&v| f64::from(v)).sum::<f64>() / WATCH_BLOCKS as f64;
        let mut xc = [0.0f32; WATCH_BLOCKS];
        for (c, &v) in xc.iter_mut().zip(q) {
            *c = (f64::from(v) - mean) as f32;
        }
        let norm = xc.iter().map(|&c| f64::from(c) * f64::from(c)).sum::<f64>().sqrt();
        let flags = if !valid {
            FLAG_INVALID
        } else if norm == 0.0 {
            FLAG_FLAT
        } else {
            0
        };
        let inv_norm = if flags == 0 { (1.0 / norm) as f32 } else { 0.0 };
        Watch { xc, inv_norm, flags }
    }
}

/// One correlation's result: the §2.10 result record's fields.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Match {
    /// max over τ of r(τ) (0 for a flagged watch).
    pub r: f32,
    /// The first τ (ms) reaching it.
    pub lag: u16,
    /// [`FLAG_INVALID`], [`FLAG_FLAT`] or 0.
    pub flags: u16,
}

/// Correlates every watch of `watches` with the station minute `station`, writing one
/// [`Match`] per watch into `out`.
pub fn correlate_minute(station: &Prepared, watches: &[Watch], out: &mut [Match]) {
    assert_eq!(watches.len(), out.len());
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has both features `correlate_avx512` enables (checked above).
            return unsafe { correlate_avx512(station, watches, out) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has both features `correlate_avx2` enables (checked above).
            return unsafe { correlate_avx2(station, watches, out) };
        }
    }
    correlate_generic(station, watches, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
fn correlate_avx512(station: &Prepared, watches: &[Watch], out: &mut [Match]) {
    for (group, res) in watches.chunks(TILE_WATCHES).zip(out.chunks_mut(TILE_WATCHES)) {
        let tile = pad_tile(group);
        let best = crate::kernel_avx512::correlate_tile(station, &tile);
        finish_group(group, res, best);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn correlate_avx2(station: &Prepared, watches: &[Watch], out: &mut [Match]) {
    correlate_generic(station, watches, out)
}

#[inline(always)]
fn correlate_generic(station: &Prepared, watches: &[Watch], out: &mut [Match]) {
    for (group, res) in watches.chunks(TILE_WATCHES).zip(out.chunks_mut(TILE_WATCHES)) {
        let tile = pad_tile(group);
        let best = correlate_tile(station, &tile);
        finish_group(group, res, best);
    }
}

/// Up to [`TILE_WATCHES`] watches, padded with flagged ones.
#[inline(always)]
pub(crate) fn pad_tile(group: &[Watch]) -> [Watch; TILE_WATCHES] {
    let mut tile = [Watch { xc: [0.0; WATCH_BLOCKS], inv_norm: 0.0, flags: FLAG_INVALID }; TILE_WATCHES];
    tile[..group.len()].copy_from_slice(group);
    tile
}

/// The tile's best matches, flagged watches replaced by their flag.
#[inline(always)]
fn finish_group(group: &[Watch], res: &mut [Match], best: [Match; TILE_WATCHES]) {
    for ((r, w), b) in res.iter_mut().zip(group).zip(best) {
        *r = if w.flags != 0 { Match { r: 0.0, lag: 0, flags: w.flags } } else { b };
    }
}

/// The best match of each of [`TILE_WATCHES`] watches over all lags.
#[inline(always)]
fn correlate_tile(station: &Prepared, tile: &[Watch; TILE_WATCHES]) -> [Match; TILE_WATCHES] {
    // Per watch and lane: the best r and its lag among the lags that lane has seen.
    let mut best_r = [[f32::NEG_INFINITY; TILE_LAGS]; TILE_WATCHES];
    let mut best_t = [[0u32; TILE_LAGS]; TILE_WATCHES];
    let lg = &station.lg[..];
    for t0 in (0..LAGS_PADDED).step_by(TILE_LAGS) {
        let mut acc = [[0.0f32; TILE_LAGS]; TILE_WATCHES];
        for k in 0..WATCH_BLOCKS {
            let y: &[f32; TILE_LAGS] = lg[t0 + BLOCK_MS * k..][..TILE_LAGS].try_into().unwrap();
            for w in 0..TILE_WATCHES {
                let x = tile[w].xc[k];
                for l in 0..TILE_LAGS {
                    acc[w][l] = x.mul_add(y[l], acc[w][l]);
                }
            }
        }
        let mut inv_sy = [0.0f32; TILE_LAGS];
        let valid = LAGS.saturating_sub(t0).min(TILE_LAGS);
        inv_sy[..valid].copy_from_slice(&station.inv_sy[t0..t0 + valid]);
        for w in 0..TILE_WATCHES {
            let scale = tile[w].inv_norm;
            for l in 0..TILE_LAGS {
                let r = acc[w][l] * inv_sy[l] * scale;
                // Strictly greater: a lane keeps its first lag on ties. Padding lanes beyond
                // the last lag have r = 0 and lose to any real lag (lag 0 comes first).
                let better = r > best_r[w][l] && l < valid;
                best_r[w][l] = if better { r } else { best_r[w][l] };
                best_t[w][l] = if better { (t0 + l) as u32 } else { best_t[w][l] };
            }
        }
    }
    reduce_lanes(&best_r, &best_t)
}

/// Per watch, the best of its lanes' best matches (first lag on ties).
#[inline(always)]
pub(crate) fn reduce_lanes(
    best_r: &[[f32; TILE_LAGS]; TILE_WATCHES],
    best_t: &[[u32; TILE_LAGS]; TILE_WATCHES],
) -> [Match; TILE_WATCHES] {
    std::array::from_fn(|w| {
        let (mut r, mut t) = (f32::NEG_INFINITY, u32::MAX);
        for l in 0..TILE_LAGS {
            let (lr, lt) = (best_r[w][l], best_t[w][l]);
            if lr > r || (lr == r && lt < t) {
                (r, t) = (lr, lt);
            }
        }
        Match { r, lag: t as u16, flags: 0 }
    })
}

/// The reference: the f64 Pearson correlation at every lag by a double loop, first lag on
/// ties. Returns (max r, lag) or `None` if the watch is flat.
pub fn naive(q: &[u8; WATCH_BLOCKS], lg: &[f64]) -> Option<(f64, u16)> {
    let n = WATCH_BLOCKS as f64;
    let x: Vec<f64> = q.iter().map(|&v| f64::from(v)).collect();
    let (sx, sxx) = (x.iter().sum::<f64>(), x.iter().map(|v| v * v).sum::<f64>());
    let vx = sxx - sx * sx / n;
    if vx <= 0.0 {
        return None;
    }
    let mut best = (f64::NEG_INFINITY, 0u16);
    for tau in 0..LAGS {
        let (mut sy, mut syy, mut sxy) = (0.0, 0.0, 0.0);
        for k in 0..WATCH_BLOCKS {
            let y = lg[tau + BLOCK_MS * k];
            sy += y;
            syy += y * y;
            sxy += x[k] * y;
        }
        let vy = syy - sy * sy / n;
        let r = if vy > 1e-9 * syy.max(1.0) { (sxy - sx * sy / n) / (vx * vy).sqrt() } else { 0.0 };
        if r > best.0 {
            best = (r, tau as u16);
        }
    }
    Some(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn random_station(rng: &mut impl Rng) -> Vec<i16> {
        (0..STATION_SAMPLES).map(|_| rng.gen_range(-3000..3000)).collect()
    }

    /// RC-2: the tiled f32 kernel against the f64 double loop, over random records and all
    /// lags: |Δr| ≤ 1e-5, and the same lag unless another lag is within that tolerance.
    #[test]
    fn tiled_kernel_matches_the_f64_double_loop() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let samples = random_station(&mut rng);
        let lg = log_energies(&samples);
        let station = Prepared::new(&samples);
        // 7 watches: a full tile and a partial one.
        let qs: Vec<[u8; WATCH_BLOCKS]> = (0..7).map(|_| std::array::from_fn(|_| rng.gen())).collect();
        let watches: Vec<Watch> = qs.iter().map(|q| Watch::new(q, true)).collect();
        let mut out = vec![Match { r: 0.0, lag: 0, flags: 9 }; qs.len()];
        correlate_minute(&station, &watches, &mut out);
        for (q, m) in qs.iter().zip(&out) {
            let (r, lag) = naive(q, &lg).unwrap();
            assert_eq!(m.flags, 0);
            assert!((f64::from(m.r) - r).abs() <= 1e-5, "r {} vs {r}", m.r);
            if m.lag != lag {
                // Only a near tie may pick another lag: r at the kernel's lag, in f64.
                let at = naive_at(q, &lg, m.lag);
                assert!((at - r).abs() <= 1e-5, "lag {} (r {at}) vs {lag} (r {r})", m.lag);
            }
        }
    }

    /// The vectorised path and the portable one give the same bits (the serial and parallel
    /// runs must write the same bytes whichever path a machine takes).
    #[test]
    fn every_code_path_gives_the_same_bits() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let samples = random_station(&mut rng);
        let station = Prepared::new(&samples);
        let watches: Vec<Watch> = (0..13).map(|i| Watch::new(&std::array::from_fn(|_| rng.gen()), i != 5)).collect();
        let mut fast = vec![Match { r: 0.0, lag: 0, flags: 0 }; watches.len()];
        let mut portable = fast.clone();
        correlate_minute(&station, &watches, &mut fast);
        correlate_generic(&station, &watches, &mut portable);
        for (a, b) in fast.iter().zip(&portable) {
            assert_eq!((a.r.to_bits(), a.lag, a.flags), (b.r.to_bits(), b.lag, b.flags));
        }
        assert_eq!(fast[5].flags, FLAG_INVALID);
    }

    fn naive_at(q: &[u8; WATCH_BLOCKS], lg: &[f64], tau: u16) -> f64 {
        let mut shifted = lg[usize::from(tau)..].to_vec();
        shifted.resize(lg.len(), 0.0);
        let x: Vec<f64> = q.iter().map(|&v| f64::from(v)).collect();
        let y: Vec<f64> = (0..WATCH_BLOCKS).map(|k| shifted[BLOCK_MS * k]).collect();
        let (mx, my) = (x.iter().sum::<f64>() / 80.0, y.iter().sum::<f64>() / 80.0);
        let sxy: f64 = x.iter().zip(&y).map(|(a, b)| (a - mx) * (b - my)).sum();
        let sxx: f64 = x.iter().map(|a| (a - mx) * (a - mx)).sum();
        let syy: f64 = y.iter().map(|b| (b - my) * (b - my)).sum();
        sxy / (sxx * syy).sqrt()
    }

    #[test]
    fn an_exact_copy_is_found_at_its_lag_with_r_one() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let samples = random_station(&mut rng);
        let lg = log_energies(&samples);
        let tau = 1234;
        let q: [u8; WATCH_BLOCKS] = std::array::from_fn(|k| (lg[tau + BLOCK_MS * k] * 2.0 - 150.0) as u8);
        let mut out = [Match { r: 0.0, lag: 0, flags: 0 }];
        correlate_minute(&Prepared::new(&samples), &[Watch::new(&q, true)], &mut out);
        assert!(out[0].r > 0.95, "{:?}", out[0]); // the u8 rounding and clipping of the copy
        assert_eq!(out[0].lag, tau as u16);
    }

    #[test]
    fn flagged_watches_give_zero_and_their_flag() {
        let samples = vec![100i16; STATION_SAMPLES];
        let station = Prepared::new(&samples);
        assert!(station.inv_sy.iter().all(|&v| v == 0.0), "a constant station has no variance");
        let w = [Watch::new(&[5; WATCH_BLOCKS], true), Watch::new(&[1; WATCH_BLOCKS], false)];
        let mut out = [Match { r: 1.0, lag: 1, flags: 0 }; 2];
        correlate_minute(&station, &w, &mut out);
        assert_eq!(out[0], Match { r: 0.0, lag: 0, flags: FLAG_FLAT });
        assert_eq!(out[1], Match { r: 0.0, lag: 0, flags: FLAG_INVALID });
    }
}
