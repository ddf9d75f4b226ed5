//! Dynamic efficiency (the simulator paper, §8): per LU iteration i,
//! E_i = T_seq,i / (P_i · T_par,i), with T_par,i the iteration's wall time in the parallel
//! run (between the coordinator's stamps), T_seq,i the same iteration of the serial blocked
//! reference (same block width, one thread: panel factorization and the update of every
//! later block) and P_i the ranks allocated to it.
//!
//! The serial reference is timed with the clock of the run it is compared with: the wall
//! clock in a real run; under `--simulate` (direct execution) this thread's CPU time, the
//! clock the simulator charges every operation with, so that T_seq,i and T_par,i count the
//! same thing and time lost to other processes on a loaded machine counts in neither.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::kernel::{self, Blocking, Source};

/// One iteration of the factorization, as `--per-iteration` reports it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Iteration {
    /// Iteration number, from 1 (the paper's numbering): block column `iteration − 1`.
    pub iteration: usize,
    /// Block multiplications of the iteration, (nb − iteration)².
    pub multiplications: usize,
    /// Multiplication threads allocated.
    pub threads: usize,
    /// Ranks allocated (P_i): the ranks hosting those threads.
    pub ranks: usize,
    /// Wall time in the parallel run, s (median over the timed runs).
    pub seconds: f64,
    /// The serial blocked reference's time for the same iteration, s (median).
    pub serial_seconds: f64,
    /// E_i = serial_seconds / (ranks · seconds).
    pub efficiency: f64,
}

/// A clock for the serial reference, in seconds from an arbitrary origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SerialClock {
    /// The wall clock (a real run: T_par,i is wall time).
    Wall,
    /// This thread's CPU time (a simulated run: direct execution charges CPU time).
    ThreadCpu,
}

impl SerialClock {
    /// The clock of a run: CPU time under `--simulate`, wall time otherwise.
    pub fn of_run(simulated: bool) -> Self {
        if simulated {
            SerialClock::ThreadCpu
        } else {
            SerialClock::Wall
        }
    }

    /// Seconds on this clock since `origin` (a wall-clock instant taken with it).
    fn since(self, origin: (Instant, f64)) -> f64 {
        match self {
            SerialClock::Wall => origin.0.elapsed().as_secs_f64(),
            SerialClock::ThreadCpu => thread_cpu_seconds() - origin.1,
        }
    }

    fn origin(self) -> (Instant, f64) {
        let cpu = if self == SerialClock::ThreadCpu { thread_cpu_seconds() } else { 0.0 };
        (Instant::now(), cpu)
    }
}

/// This thread's CPU time, s (as the simulator's direct execution reads it).
fn thread_cpu_seconds() -> f64 {
    dps::cpu_time::thread().as_secs_f64()
}

/// The serial blocked reference, timed per iteration on `clock`: block k factors its panel,
/// then every later block applies it (`kernel::apply_panel`, the stream and merge-split
/// variants' kernel).
pub fn serial_iterations(src: &Source, blocking: Blocking, clock: SerialClock) -> Vec<f64> {
    let nb = blocking.count();
    let mut blocks: Vec<Vec<f64>> = (0..nb).map(|j| src.column_block(blocking, j)).collect();
    (0..nb)
        .map(|k| {
            let t = clock.origin();
            let (done, later) = blocks.split_at_mut(k + 1);
            let panel = kernel::factor_panel(&mut done[k], blocking, k);
            for block in later {
                kernel::apply_panel(block, blocking.n, &panel);
            }
            clock.since(t)
        })
        .collect()
}

/// Per-iteration durations from the coordinator's stamps (the start, then each end).
pub fn durations(stamps: &[f64]) -> Vec<f64> {
    stamps.windows(2).map(|w| w[1] - w[0]).collect()
}

/// The median of each position over several runs of equal length.
pub fn medians(runs: &[Vec<f64>]) -> Vec<f64> {
    let len = runs.first().map_or(0, Vec::len);
    (0..len).map(|i| dps_harness::median(&runs.iter().map(|r| r[i]).collect::<Vec<_>>())).collect()
}

/// Block multiplications of iteration k (from 0) in the dynamic pipeline: one per tile
/// (i, j), i, j > k.
pub fn multiplications(nb: usize, k: usize) -> usize {
    (nb - 1 - k).pow(2)
}

/// The iterations' rows: `allocation[i]` = (threads, ranks) of iteration i (from 0).
pub fn rows(nb: usize, parallel: &[f64], serial: &[f64], allocation: &[(usize, usize)]) -> Vec<Iteration> {
    (0..nb)
        .map(|k| {
            let (threads, ranks) = allocation[k];
            Iteration {
                iteration: k + 1,
                multiplications: multiplications(nb, k),
                threads,
                ranks,
                seconds: parallel[k],
                serial_seconds: serial[k],
                efficiency: serial[k] / (ranks as f64 * parallel[k]),
            }
        })
        .collect()
}

/// The whole run's efficiency under a changing allocation: Σ T_seq,i / Σ P_i·T_par,i (the
/// rank-seconds the serial work needs over those the run held).
pub fn overall(rows: &[Iteration]) -> f64 {
    let serial: f64 = rows.iter().map(|r| r.serial_seconds).sum();
    let held: f64 = rows.iter().map(|r| r.ranks as f64 * r.seconds).sum();
    serial / held
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn efficiency_divides_by_the_ranks_allocated() {
        let rows = rows(3, &[1.0, 0.5, 0.25], &[1.6, 0.5, 0.25], &[(2, 2), (1, 1), (1, 1)]);
        assert_eq!(rows.iter().map(|r| r.efficiency).collect::<Vec<_>>(), [0.8, 1.0, 1.0]);
        assert_eq!(rows.iter().map(|r| r.multiplications).collect::<Vec<_>>(), [4, 1, 0]);
        // 2.35 serial seconds over 2·1 + 0.5 + 0.25 rank-seconds.
        assert!((overall(&rows) - 2.35 / 2.75).abs() < 1e-12);
    }

    #[test]
    fn durations_and_medians() {
        assert_eq!(durations(&[10.0, 11.0, 13.0]), [1.0, 2.0]);
        assert_eq!(medians(&[vec![1.0, 5.0], vec![3.0, 4.0], vec![2.0, 6.0]]), [2.0, 5.0]);
    }

    #[test]
    fn the_serial_iterations_cover_every_block_column() {
        for clock in [SerialClock::Wall, SerialClock::ThreadCpu] {
            let t = serial_iterations(&Source::Random(1), Blocking::uniform(50, 16), clock);
            assert_eq!(t.len(), 4);
            assert!(t.iter().all(|s| s.is_finite() && *s >= 0.0), "{clock:?}: {t:?}");
        }
    }

    #[test]
    fn the_cpu_clock_does_not_count_sleep() {
        let clock = SerialClock::ThreadCpu;
        let t = clock.origin();
        std::thread::sleep(std::time::Duration::from_millis(30));
        assert!(clock.since(t) < 0.02, "a sleeping thread used {} s of CPU", clock.since(t));
        // Spins until the clock shows 5 ms, or 10 s of wall time if it does not count the
        // spin (a spin of fixed wall time may get little CPU on a loaded machine).
        let spin = Instant::now();
        while clock.since(t) <= 0.005 && spin.elapsed().as_secs() < 10 {}
        assert!(clock.since(t) > 0.005, "a thread spinning for {:?} used {} s of CPU", spin.elapsed(), clock.since(t));
    }
}
