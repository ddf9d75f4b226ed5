//! The same correlation as [`super::correlate_minute`] computed by FFT (realfft), kept to measure
//! against the direct kernel (`dps-radiocontrol bench-kernel`), not used by `run`.
//!
//! Polyphase form: with τ = 50a + b, Σ_k xc_k Lg[τ + 50k] = Σ_k xc_k Z_b[a + k] where
//! `Z_b[j] = Lg[50j + b]` (200 values). For each of the 50 phases b that is a correlation of
//! 80 values with 200 (121 outputs a = 0..=120), one 256-point real FFT product each: the
//! watch's spectrum once per watch, the station's 50 spectra once per station minute, and
//! per pair 50 products and 50 inverse FFTs (about 6× fewer flops than the direct sums).

use std::sync::Arc;

use realfft::num_complex::Complex;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};

use super::{Match, Prepared, Watch, BLOCK_MS, LAGS, WATCH_BLOCKS};

const N: usize = 256;
const PHASE_LEN: usize = 200;
const SPECTRUM: usize = N / 2 + 1;

/// FFT plans and scratch buffers.
pub struct Fft {
    forward: Arc<dyn RealToComplex<f32>>,
    inverse: Arc<dyn ComplexToReal<f32>>,
    time: Vec<f32>,
    freq: Vec<Complex<f32>>,
    scratch: Vec<Complex<f32>>,
}

impl std::fmt::Debug for Fft {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fft")
    }
}

impl Default for Fft {
    fn default() -> Self {
        let mut planner = RealFftPlanner::<f32>::new();
        let (forward, inverse) = (planner.plan_fft_forward(N), planner.plan_fft_inverse(N));
        let scratch_len = forward.get_scratch_len().max(inverse.get_scratch_len());
        Fft {
            forward,
            inverse,
            time: vec![0.0; N],
            freq: vec![Complex::default(); SPECTRUM],
            scratch: vec![Complex::default(); scratch_len],
        }
    }
}

impl Fft {
    fn spectrum(&mut self, values: impl Iterator<Item = f32>) -> Vec<Complex<f32>> {
        self.time.fill(0.0);
        for (t, v) in self.time.iter_mut().zip(values) {
            *t = v;
        }
        self.forward.process_with_scratch(&mut self.time, &mut self.freq, &mut self.scratch).expect("FFT sizes");
        self.freq.clone()
    }

    /// The 50 phase spectra of a prepared station minute.
    pub fn station(&mut self, station: &Prepared) -> Vec<Vec<Complex<f32>>> {
        (0..BLOCK_MS)
            .map(|b| self.spectrum((0..PHASE_LEN).map(|j| station.lg.get(BLOCK_MS * j + b).copied().unwrap_or(0.0))))
            .collect()
    }

    /// The conjugated spectrum of a watch's centred values.
    pub fn watch(&mut self, watch: &Watch) -> Vec<Complex<f32>> {
        self.spectrum(watch.xc.iter().copied()).into_iter().map(|c| c.conj()).collect()
    }

    /// The best match of one watch against one station minute.
    pub fn correlate(
        &mut self,
        station: &Prepared,
        phases: &[Vec<Complex<f32>>],
        watch: &Watch,
        watch_conj: &[Complex<f32>],
    ) -> Match {
        if watch.flags != 0 {
            return Match { r: 0.0, lag: 0, flags: watch.flags };
        }
        let scale = watch.inv_norm as f32 / N as f32;
        let (mut best_r, mut best_t) = (f32::NEG_INFINITY, 0usize);
        for (b, zb) in phases.iter().enumerate() {
            for ((f, x), z) in self.freq.iter_mut().zip(watch_conj).zip(zb) {
                *f = x * z;
            }
            // The DC and Nyquist terms of a real signal's spectrum are real.
            self.freq[0].im = 0.0;
            self.freq[SPECTRUM - 1].im = 0.0;
            self.inverse.process_with_scratch(&mut self.freq, &mut self.time, &mut self.scratch).expect("FFT sizes");
            for a in 0..=PHASE_LEN - WATCH_BLOCKS {
                let tau = BLOCK_MS * a + b;
                if tau >= LAGS {
                    break;
                }
                let r = self.time[a] * station.inv_sy_f32(tau) * scale;
                if r > best_r || (r == best_r && tau < best_t) {
                    (best_r, best_t) = (r, tau);
                }
            }
        }
        Match { r: best_r, lag: best_t as u16, flags: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{correlate_minute, STATION_SAMPLES};
    use rand::{Rng, SeedableRng};

    #[test]
    fn fft_agrees_with_the_direct_kernel() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let samples: Vec<i16> = (0..STATION_SAMPLES).map(|_| rng.gen_range(-3000..3000)).collect();
        let station = Prepared::new(&samples);
        let watches: Vec<Watch> = (0..4).map(|_| Watch::new(&std::array::from_fn(|_| rng.gen()), true)).collect();
        let mut direct = vec![Match { r: 0.0, lag: 0, flags: 0 }; watches.len()];
        correlate_minute(&station, &watches, &mut direct);
        let mut fft = Fft::default();
        let phases = fft.station(&station);
        for (w, d) in watches.iter().zip(&direct) {
            let conj = fft.watch(w);
            let m = fft.correlate(&station, &phases, w, &conj);
            assert!((m.r - d.r).abs() <= 1e-4, "{m:?} vs {d:?}");
        }
    }
}
