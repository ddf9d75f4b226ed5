//! The correlation of §2.10: a watch minute (80 log-energy values, one per 50 ms) against
//! a station minute (10 s of 3 kHz PCM), Pearson r at every lag τ = 0..=6000 ms, keeping
//! the maximum and its first lag.
//!
//! The station side is prepared once per station minute and shared by every watch
//! ([`Prepared`]): 1 ms energies, the 50 ms log energies `Lg[t] = 6·log2(1 + N + Σ e)`
//! with N the energy of the watch's own noise ([`WATCH_NOISE_ENERGY`]: the station as a
//! watch hears it), **stored in fixed point, `Lgq = round(64·Lg)` as i16** (the correlation
//! centre's compression of the station sound, Fig. 9.1; the definition of r below is on
//! these values), and per lag the inverse standard deviation of the 80 samples `Lgq[τ + 50k]`.
//! The watch side is the record's 80 `u8` values `x` as they are. Then
//!
//! ```text
//! S(τ) = Σ_k x_k · Lgq[τ+50k]          (an exact integer: at most 80·255·14290 < 2^31)
//! r(τ) = (S(τ) − x̄·Sy(τ)) · inv_sy(τ) / ‖x − x̄‖
//! ```
//!
//! S is the only part that costs (80 × 6001 multiply-adds per pair). [`correlate_minute`]
//! computes it for a block of watches at once in register tiles, on the fastest [`Path`]
//! the CPU has, both vector paths with three nested Karatsuba levels that get 8 lags
//! τ + 400g + 50o from 27 sums of 10 taps, 27/64 of the products (`karatsuba`): AVX-512
//! VNNI (`vpdpwssd`, product and add in one instruction, 16 i32 lanes; tiles of 8 watches
//! × 2 vectors of 16 entries, `avx512`), else AVX2 (`vpmaddwd` and `vpaddd`, 8 lanes; tiles
//! of 3 watches × 3 vectors, `avx2`), else portable code. The epilogue computes r in f64
//! with the same operations on every path (the vector paths only at the lags an f32 screen
//! with a proven error bound cannot rule out: `screen`). Integer sums are exact, so every
//! path and every run gives the same bits: a job's result depends on the job only.
//! Flagged watches (not worn, flat) are not correlated. [`fft`] is the same correlation by
//! FFT, measured against this one by `dps-radiocontrol bench-kernel`. [`naive`] is the f64
//! double loop the tests hold both to (RC-2).

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
pub mod fft;
mod karatsuba;
#[cfg(target_arch = "x86_64")]
mod screen;

use std::sync::OnceLock;

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
/// Fixed-point scale of the stored log energies.
pub const LG_SCALE: f64 = 64.0;
/// σ of the noise a watch adds to everything it records (microphone and room), in PCM
/// units: the generator's N(0, 300) on listening minutes.
pub const WATCH_NOISE_SIGMA: f64 = 300.0;
/// Its expected energy in a 50 ms block of 150 samples, 150·σ² = 1.35e7: a watch block
/// holds E[Σ(s + n)²] = Σs² + 150·σ², so it never records less than 6·log2(1 + 1.35e7) ≈
/// 142.1. The station's block energies get it added before the log. Without it a station
/// block of (near) digital silence was Lg ≈ 0 against the watch's ~142, an outlier carrying
/// 27–40 % of the station's variance over the 80 blocks, and the best r moved to the
/// nearest lag at which no block lay in the silence: 28–33 ms off (issue 27).
pub const WATCH_NOISE_ENERGY: f64 = (3 * BLOCK_MS) as f64 * WATCH_NOISE_SIGMA * WATCH_NOISE_SIGMA;

/// Watches per tile of the portable path.
pub const TILE_WATCHES: usize = 6;
/// Lags per tile of the portable path.
pub const TILE_LAGS: usize = 32;
/// Lags rounded up to whole tiles.
pub(crate) const LAGS_PADDED: usize = LAGS.div_ceil(TILE_LAGS) * TILE_LAGS;
/// `Lgq` padded so that the last tile reads in bounds (the padding is never a result).
pub(crate) const LG_PADDED: usize = LAGS_PADDED + BLOCK_MS * WATCH_BLOCKS;

/// Result flag: the watch record is not valid (not worn); r = 0, lag = 0.
pub const FLAG_INVALID: u16 = 1;
/// Result flag: the watch signal is flat (no variance); r = 0, lag = 0.
pub const FLAG_FLAT: u16 = 2;

/// The 50 ms log energies of a station minute's PCM as a watch hears it (plus
/// [`WATCH_NOISE_ENERGY`]), in fixed point: round(64·Lg).
pub fn log_energies_fixed(samples: &[i16]) -> Vec<i16> {
    assert_eq!(samples.len(), STATION_SAMPLES, "a station minute has {STATION_SAMPLES} samples");
    let mut prefix = vec![0.0f64; ENERGIES + 1];
    for t in 0..ENERGIES {
        let e: f64 = samples[3 * t..3 * t + 3].iter().map(|&s| f64::from(s) * f64::from(s)).sum();
        prefix[t + 1] = prefix[t] + e;
    }
    // At most 6·log2(1 + 1.35e7 + 150·32768²) ≈ 223.3, so 64·Lg < 14300 fits an i16.
    (0..LOG_ENERGIES)
        .map(|t| {
            let energy = WATCH_NOISE_ENERGY + prefix[t + BLOCK_MS] - prefix[t];
            (LG_SCALE * 6.0 * (1.0 + energy).log2()).round() as i16
        })
        .collect()
}

/// The stored log energies as f64 (for the reference and the generator's checks).
pub fn log_energies(samples: &[i16]) -> Vec<f64> {
    log_energies_fixed(samples).into_iter().map(f64::from).collect()
}

/// A station minute prepared for correlation (shared by every watch of the minute).
#[derive(Clone, Debug)]
pub struct Prepared {
    /// `Lgq[t]`, zero-padded to whole lag tiles.
    pub lgq: Vec<i16>,
    /// The AVX2 path's layout, built on first use.
    karatsuba8: OnceLock<karatsuba::Layout8>,
    /// The AVX-512 path's layout, built on first use.
    karatsuba16: OnceLock<karatsuba::Layout16>,
    /// Per lag: 1 / the norm of the centred samples `Lgq[τ + 50k]` (0 where they are flat,
    /// and beyond the last lag).
    pub inv_sy: Vec<f64>,
    /// Per lag: `Sy(τ) · inv_sy(τ)`.
    pub sy_inv_sy: Vec<f64>,
    /// `Lgq` as f32, for the FFT variant.
    pub lg: Vec<f32>,
}

impl Prepared {
    /// Prepares a station minute record.
    pub fn new(samples: &[i16]) -> Prepared {
        let fixed = log_energies_fixed(samples);
        let mut lgq = vec![0i16; LG_PADDED];
        lgq[..fixed.len()].copy_from_slice(&fixed);
        let n = WATCH_BLOCKS as f64;
        let mut inv_sy = vec![0.0f64; LAGS_PADDED];
        let mut sy_inv_sy = vec![0.0f64; LAGS_PADDED];
        // Sums over k of Lgq[τ + 50k] and its square, exact integers (at most 80 · 14300² <
        // 2^53): directly for the first 50 lags, then sliding by one block,
        // S(τ + 50) = S(τ) − Lgq[τ] + Lgq[τ + 4000].
        let mut sums = vec![(0i64, 0i64); LAGS];
        for tau in 0..LAGS {
            sums[tau] = if tau < BLOCK_MS {
                (0..WATCH_BLOCKS).fold((0, 0), |(s, q), k| {
                    let y = i64::from(lgq[tau + BLOCK_MS * k]);
                    (s + y, q + y * y)
                })
            } else {
                let (s, q) = sums[tau - BLOCK_MS];
                let (out, inn) =
                    (i64::from(lgq[tau - BLOCK_MS]), i64::from(lgq[tau - BLOCK_MS + BLOCK_MS * WATCH_BLOCKS]));
                (s - out + inn, q - out * out + inn * inn)
            };
        }
        for (tau, &(sy, syy)) in sums.iter().enumerate() {
            let var = syy as f64 - (sy as f64) * (sy as f64) / n;
            if var > 1e-9 * (syy as f64).max(1.0) {
                inv_sy[tau] = 1.0 / var.sqrt();
                sy_inv_sy[tau] = sy as f64 * inv_sy[tau];
            }
        }
        let lg = lgq.iter().map(|&v| f32::from(v)).collect();
        Prepared { lgq, karatsuba8: OnceLock::new(), karatsuba16: OnceLock::new(), inv_sy, sy_inv_sy, lg }
    }

    /// The station laid out for the AVX2 path's nested Karatsuba sums ([`karatsuba`]).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) fn karatsuba8(&self) -> &karatsuba::Layout8 {
        self.karatsuba8.get_or_init(|| karatsuba::Layout8::new(self))
    }

    /// The same for the AVX-512 path, 16 entries to a vector.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) fn karatsuba16(&self) -> &karatsuba::Layout16 {
        self.karatsuba16.get_or_init(|| karatsuba::Layout16::new(self))
    }

    /// `inv_sy` as f32, for the FFT variant.
    pub fn inv_sy_f32(&self, tau: usize) -> f32 {
        self.inv_sy[tau] as f32
    }
}

/// A watch minute prepared for correlation.
#[derive(Clone, Copy, Debug)]
pub struct Watch {
    /// The record's values.
    pub x: [i16; WATCH_BLOCKS],
    /// Their mean.
    pub mean: f64,
    /// `x − mean`, for the FFT variant.
    pub xc: [f32; WATCH_BLOCKS],
    /// 1 / ‖x − mean‖, or 0 for a record that is invalid or flat (`flags` says which).
    pub inv_norm: f64,
    /// [`FLAG_INVALID`] or [`FLAG_FLAT`] (the result's flags), else 0.
    pub flags: u16,
}

impl Watch {
    /// Prepares the envelope of a watch record; `valid` is the record's worn flag.
    pub fn new(q: &[u8; WATCH_BLOCKS], valid: bool) -> Watch {
        let sum: u32 = q.iter().map(|&v| u32::from(v)).sum();
        let sum_sq: u64 = q.iter().map(|&v| u64::from(v) * u64::from(v)).sum();
        let mean = f64::from(sum) / WATCH_BLOCKS as f64;
        // ‖x − x̄‖² = Σx² − (Σx)²/n, from exact integers.
        let var = sum_sq as f64 - f64::from(sum) * f64::from(sum) / WATCH_BLOCKS as f64;
        let flags = if !valid {
            FLAG_INVALID
        } else if var <= 0.0 {
            FLAG_FLAT
        } else {
            0
        };
        Watch {
            x: std::array::from_fn(|k| i16::from(q[k])),
            mean,
            xc: std::array::from_fn(|k| (f64::from(q[k]) - mean) as f32),
            inv_norm: if flags == 0 { 1.0 / var.sqrt() } else { 0.0 },
            flags,
        }
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
/// [`Match`] per watch into `out`, on the fastest [`Path`] this CPU has.
pub fn correlate_minute(station: &Prepared, watches: &[Watch], out: &mut [Match]) {
    correlate_on(Path::detect(), station, watches, out)
}

/// A code path of the direct kernel. All give the same bits (exact integer sums, the same
/// f64 epilogue); they differ in speed only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// `vpdpwssd` tiles of 8 watches × 256 lags on the nested Karatsuba layout (`avx512`).
    Avx512Vnni,
    /// `vpmaddwd` tiles of 3 watches × 192 lags on the nested Karatsuba layout (`avx2`).
    Avx2,
    /// Plain Rust (the reference for the others' bits).
    Portable,
}

impl Path {
    /// Every path, fastest first.
    const ALL: [Path; 3] = [Path::Avx512Vnni, Path::Avx2, Path::Portable];

    /// The path's name on the command line (`bench-kernel --path`).
    pub fn name(self) -> &'static str {
        match self {
            Path::Avx512Vnni => "avx512-vnni",
            Path::Avx2 => "avx2",
            Path::Portable => "portable",
        }
    }

    /// The path of that [`name`](Path::name), if any.
    pub fn from_name(name: &str) -> Option<Path> {
        Path::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The fastest path the CPU has: AVX-512 VNNI, else AVX2 (with FMA), else portable.
    pub fn detect() -> Path {
        Path::available().into_iter().next().unwrap_or(Path::Portable)
    }

    /// Every path the CPU can run, fastest first (the portable one always last).
    pub fn available() -> Vec<Path> {
        let mut paths = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if avx512::available() {
                paths.push(Path::Avx512Vnni);
            }
            if avx2::available() {
                paths.push(Path::Avx2);
            }
        }
        paths.push(Path::Portable);
        paths
    }
}

/// [`correlate_minute`] on a given path.
///
/// # Panics
/// If the CPU cannot run `path` (see [`Path::available`]).
pub fn correlate_on(path: Path, station: &Prepared, watches: &[Watch], out: &mut [Match]) {
    assert_eq!(watches.len(), out.len());
    assert!(Path::available().contains(&path), "this CPU cannot run the {path:?} kernel");
    // Flagged watches (not worn, or flat) are not correlated: their result is their flag.
    let valid: Vec<&Watch> = watches.iter().filter(|w| w.flags == 0).collect();
    // (u, lag) per valid watch in order, then the padding's.
    let best: Vec<(f64, u32)> = match path {
        // SAFETY: `Path::available()` (asserted above) listed Avx512Vnni only if
        // `avx512::available()` found avx512f, avx512bw and avx512vnni.
        #[cfg(target_arch = "x86_64")]
        Path::Avx512Vnni => unsafe { avx512::correlate(station, &valid) },
        // SAFETY: listed only if `avx2::available()` found avx2 and fma.
        #[cfg(target_arch = "x86_64")]
        Path::Avx2 => unsafe { avx2::correlate(station, &valid) },
        _ => groups(&valid).iter().flat_map(|t| correlate_tile(station, t)).collect(),
    };
    let mut best = best.iter();
    for (r, w) in out.iter_mut().zip(watches) {
        *r = if w.flags != 0 {
            Match { r: 0.0, lag: 0, flags: w.flags }
        } else {
            let &(u, lag) = best.next().expect("a result per unflagged watch");
            finish(u, lag, w)
        };
    }
}

/// A tile of watches of the portable path (references: a watch is 0.5 KB).
type Tile<'a> = [&'a Watch; TILE_WATCHES];

/// The flagged watch that pads a partial group.
static BLANK: Watch =
    Watch { x: [0; WATCH_BLOCKS], mean: 0.0, xc: [0.0; WATCH_BLOCKS], inv_norm: 0.0, flags: FLAG_INVALID };

/// The watches in groups of N, the last one padded with flagged ones.
pub(crate) fn groups<'a, const N: usize>(watches: &[&'a Watch]) -> Vec<[&'a Watch; N]> {
    watches.chunks(N).map(|group| std::array::from_fn(|i| group.get(i).copied().unwrap_or(&BLANK))).collect()
}

/// The match from the best `u = (S − x̄·Sy)·inv_sy` and its lag.
fn finish(u: f64, lag: u32, w: &Watch) -> Match {
    Match { r: (u * w.inv_norm) as f32, lag: lag as u16, flags: 0 }
}

/// `u(τ) = S·inv_sy − x̄·(Sy·inv_sy)`, the same operations on every path.
#[inline(always)]
pub(crate) fn numerator(s: i32, mean: f64, inv_sy: f64, sy_inv_sy: f64) -> f64 {
    (-mean).mul_add(sy_inv_sy, f64::from(s) * inv_sy)
}

/// The best (u, lag) of each watch of the tile over all lags, portable.
fn correlate_tile(station: &Prepared, tile: &Tile) -> [(f64, u32); TILE_WATCHES] {
    let mut best = [(f64::NEG_INFINITY, 0u32); TILE_WATCHES];
    for t0 in (0..LAGS_PADDED).step_by(TILE_LAGS) {
        let mut acc = [[0i32; TILE_LAGS]; TILE_WATCHES];
        for k in 0..WATCH_BLOCKS {
            let y = &station.lgq[t0 + BLOCK_MS * k..][..TILE_LAGS];
            for (a, w) in acc.iter_mut().zip(tile) {
                let x = i32::from(w.x[k]);
                for (a, &y) in a.iter_mut().zip(y) {
                    *a += x * i32::from(y);
                }
            }
        }
        for (l, tau) in (t0..(t0 + TILE_LAGS).min(LAGS)).enumerate() {
            for (b, (a, w)) in best.iter_mut().zip(acc.iter().zip(tile)) {
                let u = numerator(a[l], w.mean, station.inv_sy[tau], station.sy_inv_sy[tau]);
                if u > b.0 {
                    *b = (u, tau as u32);
                }
            }
        }
    }
    best
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

    /// Every path this CPU has gives the portable path's bits (the serial and parallel
    /// runs must write the same bytes whichever path a machine takes), on full and partial
    /// watch tiles, flagged watches, and a copy at the last lag (in the partial lag tile).
    #[test]
    fn every_code_path_gives_the_same_bits() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        for _ in 0..3 {
            let samples = random_station(&mut rng);
            let station = Prepared::new(&samples);
            let lg = log_energies(&samples);
            let copy: [u8; WATCH_BLOCKS] =
                std::array::from_fn(|k| (lg[LAGS - 1 + BLOCK_MS * k] / LG_SCALE * 2.0 - 150.0) as u8);
            let mut watches: Vec<Watch> =
                (0..13).map(|i| Watch::new(&std::array::from_fn(|_| rng.gen()), i != 5)).collect();
            watches.push(Watch::new(&copy, true));
            let mut portable = vec![Match { r: 0.0, lag: 0, flags: 0 }; watches.len()];
            correlate_on(Path::Portable, &station, &watches, &mut portable);
            assert_eq!(portable[5].flags, FLAG_INVALID);
            assert_eq!(usize::from(portable[13].lag), LAGS - 1, "{:?}", portable[13]);
            for path in Path::available() {
                let mut fast = vec![Match { r: 0.0, lag: 0, flags: 9 }; watches.len()];
                correlate_on(path, &station, &watches, &mut fast);
                for (a, b) in fast.iter().zip(&portable) {
                    assert_eq!((a.r.to_bits(), a.lag, a.flags), (b.r.to_bits(), b.lag, b.flags), "{path:?}");
                }
            }
        }
    }

    /// Every path gives the portable path's bits at the edges of the AVX2 path's f32 screen
    /// and Karatsuba ranges (issue 26): stations with Lgq at both ends of its range,
    /// periodic ones (u ties exactly at lags 100 ms apart: the first lag must win), flat and
    /// nearly flat ones (inv_sy 0 or large, so the screen's error bound is 0 or wide), full
    /// scale random; watches at 0 and 255, alternating, single spikes, flat, not worn,
    /// random; more than one tile of each kind.
    #[test]
    fn every_code_path_gives_the_same_bits_at_the_extremes() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(26);
        let stations: Vec<Vec<i16>> = vec![
            (0..STATION_SAMPLES).map(|t| if (t / 150) % 2 == 0 { 0 } else { i16::MIN }).collect(),
            (0..STATION_SAMPLES).map(|t| ((t % 300) as i16 - 150) * 200).collect(),
            vec![0; STATION_SAMPLES],
            (0..STATION_SAMPLES).map(|_| if rng.gen_bool(0.002) { rng.gen_range(-400..400) } else { 0 }).collect(),
            (0..STATION_SAMPLES).map(|_| rng.gen()).collect(),
        ];
        let mut qs: Vec<([u8; WATCH_BLOCKS], bool)> = vec![
            ([255; WATCH_BLOCKS], true),
            ([0; WATCH_BLOCKS], true),
            (std::array::from_fn(|k| if k == 0 { 0 } else { 255 }), true),
            (std::array::from_fn(|k| if k == 79 { 255 } else { 0 }), true),
            (std::array::from_fn(|k| if k % 2 == 0 { 255 } else { 0 }), true),
            (std::array::from_fn(|k| if k % 3 == 0 { 0 } else { 255 }), true),
            (std::array::from_fn(|_| rng.gen()), false),
        ];
        qs.extend((0..20).map(|_| (std::array::from_fn(|_| rng.gen()), true)));
        qs.extend((0..6).map(|_| (std::array::from_fn(|_| rng.gen_range(250..=255)), true)));
        let watches: Vec<Watch> = qs.iter().map(|(q, valid)| Watch::new(q, *valid)).collect();
        for samples in &stations {
            let station = Prepared::new(samples);
            let mut portable = vec![Match { r: 0.0, lag: 0, flags: 0 }; watches.len()];
            correlate_on(Path::Portable, &station, &watches, &mut portable);
            for path in Path::available() {
                let mut fast = vec![Match { r: 0.0, lag: 0, flags: 9 }; watches.len()];
                correlate_on(path, &station, &watches, &mut fast);
                for (i, (a, b)) in fast.iter().zip(&portable).enumerate() {
                    assert_eq!((a.r.to_bits(), a.lag, a.flags), (b.r.to_bits(), b.lag, b.flags), "{path:?}, watch {i}");
                }
            }
        }
    }

    /// The dispatch offers each vectorised path wherever the CPU has its features, so the
    /// test above runs it there (the AVX2 one on any x86-64 CPU of the last decade).
    #[test]
    fn the_cpu_features_select_the_paths() {
        let paths = Path::available();
        assert_eq!(paths.last(), Some(&Path::Portable));
        #[cfg(target_arch = "x86_64")]
        {
            let avx2 = std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma");
            assert_eq!(paths.contains(&Path::Avx2), avx2);
            let vnni = std::arch::is_x86_feature_detected!("avx512vnni")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512f");
            assert_eq!(paths.contains(&Path::Avx512Vnni), vnni);
        }
        assert_eq!(Path::detect(), paths[0]);
    }

    /// `bench-kernel --path` names every path, and only those.
    #[test]
    fn every_path_is_found_by_its_name() {
        for path in Path::ALL {
            assert_eq!(Path::from_name(path.name()), Some(path));
        }
        assert_eq!(Path::from_name("Avx2"), None);
        assert_eq!(Path::from_name(""), None);
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
        let q: [u8; WATCH_BLOCKS] = std::array::from_fn(|k| (lg[tau + BLOCK_MS * k] / LG_SCALE * 2.0 - 150.0) as u8);
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
