//! `dps-bench peak`: the double-precision peak of this machine's cores, measured.
//!
//! A rate against a reference that runs the same slow kernels proves nothing (issue 26:
//! OpenBLAS on Prescott kernels made dgemm 5× slower, and every ratio to it read 1.0). The
//! peak is the number no library can hide from: every core runs chains of independent fused
//! multiply-adds on the CPU's widest vectors (AVX-512, else AVX2 with FMA; twelve to sixteen
//! chains cover the FMA units' latency), at the clock the cores actually run, turbo and all.
//! `bench/linalg.sh` prints each GFLOP/s beside it.

use std::time::{Duration, Instant};

use anyhow::Result;
use dps_dense::kernel_choice::{cpu_vectors, Vectors};
use serde::Serialize;

/// Options of `dps-bench peak`.
#[derive(clap::Args, Debug)]
pub(crate) struct Options {
    /// Seconds each of the measurements runs (three on one core, three on all; 0.05 to 60).
    #[arg(long, default_value_t = 0.3)]
    seconds: f64,
    #[command(flatten)]
    output: dps_harness::options::Output,
}

/// What `peak` measured.
#[derive(Serialize, Debug)]
struct Peak {
    /// `peak`.
    app: &'static str,
    /// The vectors the loop used: `avx512`, `avx2`, or `none` (no FMA: nothing measured).
    vectors: String,
    /// Logical CPUs, each running one loop for `all_cores_gflops`.
    cores: usize,
    /// One core alone, GFLOP/s.
    core_gflops: f64,
    /// Every core at once, GFLOP/s: the machine's double-precision peak.
    all_cores_gflops: f64,
    /// The flops per cycle per core this implies at the CPU's nominal clock (`/proc/cpuinfo`'s
    /// `cpu MHz`); above the vector units' count when the cores run above that clock.
    flops_per_cycle_at_nominal: Option<f64>,
    /// The nominal clock, MHz.
    nominal_mhz: Option<f64>,
}

/// Measures and prints the peak.
pub(crate) fn run(opts: &Options) -> Result<()> {
    if !(opts.seconds.is_finite() && (0.05..=60.0).contains(&opts.seconds)) {
        dps_harness::bad_input!("--seconds {}: must be in 0.05..=60", opts.seconds);
    }
    let vectors = cpu_vectors();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let span = Duration::from_secs_f64(opts.seconds);
    // The best of three: other processes can only lower a rate.
    let best_of_3 = |threads| (0..3).map(|_| rate(vectors, span, threads)).fold(0.0, f64::max);
    let core_gflops = best_of_3(1);
    let all_cores_gflops = best_of_3(cores);
    let nominal_mhz = nominal_mhz();
    let peak = Peak {
        app: "peak",
        vectors: match vectors {
            Vectors::Avx512 => "avx512",
            Vectors::Avx2 => "avx2",
            Vectors::Avx | Vectors::Sse => "none",
        }
        .into(),
        cores,
        core_gflops,
        all_cores_gflops,
        flops_per_cycle_at_nominal: nominal_mhz.map(|mhz| core_gflops * 1e3 / mhz),
        nominal_mhz,
    };
    let text = if opts.output.json {
        serde_json::to_string(&peak)?
    } else {
        format!(
            "peak ({} FMA): {:.1} GFLOP/s on one core, {:.1} GFLOP/s on all {} cores",
            peak.vectors, core_gflops, all_cores_gflops, cores
        )
    };
    crate::print_out(&format!("{text}\n"))
}

/// GFLOP/s of `threads` threads each running the FMA loop for `span`.
fn rate(vectors: Vectors, span: Duration, threads: usize) -> f64 {
    let start = Instant::now();
    let flops: f64 = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads).map(|_| s.spawn(move || fma_for(vectors, span))).collect();
        handles.into_iter().map(|h| h.join().expect("the FMA loop does not panic")).sum()
    });
    flops / start.elapsed().as_secs_f64() / 1e9
}

/// Runs the FMA loop for about `span`; returns the flops done (0 without FMA).
fn fma_for(vectors: Vectors, span: Duration) -> f64 {
    const ROUND: u64 = 100_000;
    let start = Instant::now();
    let mut flops = 0.0;
    while start.elapsed() < span {
        flops += match vectors {
            // SAFETY: the CPU has the features each loop enables (cpu_vectors checked them).
            #[cfg(target_arch = "x86_64")]
            Vectors::Avx512 => unsafe { fma::avx512(ROUND) },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            Vectors::Avx2 => unsafe { fma::avx2(ROUND) },
            _ => return 0.0,
        };
    }
    flops
}

#[cfg(target_arch = "x86_64")]
mod fma {
    use std::arch::x86_64::*;

    /// `rounds` rounds of 12 independent 4-wide FMA chains; returns the flops.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn avx2(rounds: u64) -> f64 {
        let (a, b) = (_mm256_set1_pd(0.999_999), _mm256_set1_pd(1e-9));
        let mut acc = [_mm256_set1_pd(1.0); 12];
        for _ in 0..rounds {
            for x in &mut acc {
                *x = _mm256_fmadd_pd(*x, a, b);
            }
        }
        std::hint::black_box(acc);
        (rounds * 12 * 4 * 2) as f64
    }

    /// `rounds` rounds of 16 independent 8-wide FMA chains; returns the flops.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn avx512(rounds: u64) -> f64 {
        let (a, b) = (_mm512_set1_pd(0.999_999), _mm512_set1_pd(1e-9));
        let mut acc = [_mm512_set1_pd(1.0); 16];
        for _ in 0..rounds {
            for x in &mut acc {
                *x = _mm512_fmadd_pd(*x, a, b);
            }
        }
        std::hint::black_box(acc);
        (rounds * 16 * 8 * 2) as f64
    }
}

/// `/proc/cpuinfo`'s first `cpu MHz`.
fn nominal_mhz() -> Option<f64> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = cpuinfo.lines().find(|l| l.starts_with("cpu MHz"))?;
    line.split_once(':')?.1.trim().parse().ok()
}
