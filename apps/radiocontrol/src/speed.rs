//! `dps-radiocontrol bench-kernel`: the direct kernel against the FFT one on one core, and
//! what the paper-scale day (§2.5: 24 h × 100 stations × 1000 watches × 60 minutes = 144 M
//! correlations) would take at the measured rate.

use std::time::Instant;

use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::kernel::fft::Fft;
use crate::kernel::{correlate_on, Match, Path, Prepared, Watch, STATION_SAMPLES, WATCH_BLOCKS};

/// Correlations of the paper-scale day.
pub const PAPER_DAY_CORRELATIONS: f64 = 24.0 * 100.0 * 1000.0 * 60.0;

/// Measured rates of the two kernels.
#[derive(Serialize, Debug, Clone)]
pub struct KernelSpeed {
    /// Watches per station minute in the measurement.
    pub watches: usize,
    /// Station minutes per sample.
    pub minutes: usize,
    /// The direct kernel's code path measured (by default the one `run` takes on this
    /// CPU): "Avx512Vnni", "Avx2" or "Portable".
    pub direct_path: String,
    /// Median seconds per correlation of the direct kernel (station preparation included).
    pub direct_us: f64,
    /// Median seconds per correlation of the FFT kernel (station spectra included).
    pub fft_us: f64,
    /// Correlations per second on one core with the direct kernel.
    pub direct_per_s: f64,
    /// Paper-scale day on 2 cores at the direct kernel's rate (the kernel `run` uses: its
    /// exact sums make the result file the same bytes on every CPU), in minutes.
    pub paper_day_minutes_2_cores: f64,
}

/// Times both kernels on random records, `reps` samples each, alternating; the direct one
/// on `path`.
///
/// # Panics
/// If the CPU cannot run `path`.
pub fn measure(watches: usize, minutes: usize, reps: usize, path: Path) -> KernelSpeed {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let stations: Vec<Vec<i16>> =
        (0..minutes).map(|_| (0..STATION_SAMPLES).map(|_| rng.gen_range(-8000..8000)).collect()).collect();
    let ws: Vec<Watch> =
        (0..watches).map(|_| Watch::new(&std::array::from_fn::<u8, WATCH_BLOCKS, _>(|_| rng.gen()), true)).collect();
    let mut out = vec![Match { r: 0.0, lag: 0, flags: 0 }; watches];
    let (mut direct, mut fft) = (Vec::new(), Vec::new());
    let mut f = Fft::default();
    let mut sink = 0.0f32;
    for _ in 0..reps {
        let t = Instant::now();
        for s in &stations {
            let p = Prepared::new(s);
            correlate_on(path, &p, &ws, &mut out);
            sink += out[0].r;
        }
        direct.push(t.elapsed().as_secs_f64() / (minutes * watches) as f64);
        let t = Instant::now();
        for s in &stations {
            let p = Prepared::new(s);
            let phases = f.station(&p);
            for w in &ws {
                let conj = f.watch(w);
                sink += f.correlate(&p, &phases, w, &conj).r;
            }
        }
        fft.push(t.elapsed().as_secs_f64() / (minutes * watches) as f64);
    }
    std::hint::black_box(sink);
    let (d, ff) = (dps_harness::median(&direct), dps_harness::median(&fft));
    KernelSpeed {
        watches,
        minutes,
        direct_path: format!("{path:?}"),
        direct_us: d * 1e6,
        fft_us: ff * 1e6,
        direct_per_s: 1.0 / d,
        paper_day_minutes_2_cores: PAPER_DAY_CORRELATIONS * d / 2.0 / 60.0,
    }
}
