//! The result record of a run: the JSON object `--json` prints and the human-readable line,
//! both from [`Record`].

use std::fmt;

use dps_dense::grain::Choice;
use dps_dense::kernel_choice::BlasInfo;
use dps_harness::{Common, FiniteOrText};
use serde::{Deserialize, Serialize};

use crate::iterations::Iteration;
use crate::kernel::Blocking;
use crate::scheduled::ScheduleReport;

/// One run of `dps-lu`. The check's fields are absent without `--verify`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Record {
    /// App, variant, ranks, threads, seconds (median), verified.
    #[serde(flatten)]
    pub common: Common,
    /// The BLAS library, version, kernel set (core) and threads of rank 0's process.
    #[serde(flatten)]
    pub blas: BlasInfo,
    /// Matrix order.
    pub n: usize,
    /// Block (panel) width.
    pub block: usize,
    /// Why this width: `--block`, or the cost model's predictions (`dps_dense::grain`).
    pub block_reason: String,
    /// `graded` (half-width blocks at both ends, `kernel::Blocking`) or `uniform`.
    pub blocking: String,
    /// Timed runs.
    pub reps: usize,
    /// The first factorisation's time, s, warm-up or not, to set against `seconds` (the
    /// median of the timed ones): what starting up still costs (not in the serial variant).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_call_s: Option<f64>,
    /// ⅔n³ floating-point operations over the time, in GFLOP/s.
    pub gflops: f64,
    /// `--verify`: the HPL scaled residual ‖PA − LU‖ / (‖A‖·n·ε), as text when not finite
    /// (a NaN or an overflow, which never passes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub residual: Option<FiniteOrText>,
    /// `--verify`: whether the pivots are dgetrf's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pivots_match: Option<bool>,
    /// `dynamic` variant: the thread-allocation strategy (`--alloc`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alloc: Option<String>,
    /// `--per-iteration`: each iteration's time, serial time, allocation and efficiency E_i.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations: Option<Vec<Iteration>>,
    /// `--per-iteration`: the serial blocked reference's total, s (sum of its iterations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial_seconds: Option<f64>,
    /// `--per-iteration`: Σ T_seq,i / Σ P_i·T_par,i, the run's efficiency over the
    /// rank-seconds it held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<f64>,
    /// `--per-iteration`: iteration 1's share of the iterations' total time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_iteration_share: Option<f64>,
    /// `--alloc schedule`: each iteration's threads and ranks as the scheduler chose them,
    /// the withdrawal and its switch, and the model's makespans.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleReport>,
}

impl Record {
    /// A record without the check: the caller adds it when it verifies.
    pub fn new(common: Common, blocking: Blocking, block: &Choice, reps: usize) -> Record {
        let n = blocking.n;
        let gflops = 2.0 / 3.0 * (n as f64).powi(3) / 1e9 / common.seconds;
        Record {
            common,
            blas: BlasInfo::of_this_process(),
            n,
            block: block.block,
            block_reason: block.reason.clone(),
            blocking: if blocking.is_graded() { "graded" } else { "uniform" }.to_string(),
            reps,
            first_call_s: None,
            gflops,
            residual: None,
            pivots_match: None,
            alloc: None,
            iterations: None,
            serial_seconds: None,
            efficiency: None,
            first_iteration_share: None,
            schedule: None,
        }
    }
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.common;
        write!(
            f,
            "lu {} n={} block={} ({}) ranks={} threads={}: {:.3} s, {:.1} GFLOP/s",
            c.variant, self.n, self.block, self.blocking, c.ranks, c.threads, c.seconds, self.gflops
        )?;
        if let Some(alloc) = &self.alloc {
            write!(f, ", alloc {alloc}")?;
        }
        if let (Some(e), Some(share)) = (self.efficiency, self.first_iteration_share) {
            write!(f, ", efficiency {e:.3}, iteration 1 {:.0}% of the time", share * 100.0)?;
        }
        if let (Some(residual), Some(pivots)) = (self.residual, self.pivots_match) {
            let pivots = if pivots { "match dgetrf" } else { "differ from dgetrf" };
            let verdict = if c.verified == Some(true) { "verified" } else { "NOT verified" };
            write!(f, ", residual {residual:.3}, pivots {pivots}, {verdict}")?;
        }
        write!(f, " [{} {}]", self.blas.blas_library, self.blas.blas_core)?;
        if let Some(schedule) = &self.schedule {
            write!(f, "\n{schedule}")?;
        }
        Ok(())
    }
}
