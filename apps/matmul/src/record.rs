//! The result record of a run: the JSON object `--json` prints and the human-readable line,
//! both from [`Record`].

use std::fmt;

use dps_dense::grain::Tiling;
use dps_dense::kernel_choice::BlasInfo;
use dps_harness::{Common, FiniteOrText};
use serde::{Deserialize, Serialize};

use crate::kernel::Kernel;

/// One run of `dps-matmul`. Fields of other variants are absent, not null.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Record {
    /// App, variant, ranks, threads, seconds (median), verified.
    #[serde(flatten)]
    pub common: Common,
    /// The BLAS library, version, kernel set (core) and threads of rank 0's process.
    #[serde(flatten)]
    pub blas: BlasInfo,
    /// The block product (`--kernel`): `blas` or `loops`.
    pub kernel: String,
    /// Matrix order.
    pub n: usize,
    /// Rows of a block of C (the block size of `--block`).
    pub block: usize,
    /// Columns of a block of C: `block` for square blocks, n for strips of whole rows.
    pub block_cols: usize,
    /// Rows of the first row strip, the master's worker's: `block`, or more when the cost
    /// model gives that worker, which receives nothing, a taller strip.
    pub block_first_rows: usize,
    /// Pieces a job travels in, one per depth chunk: 1, or more in the cost model's
    /// pipelined tiling (the worker starts on the first piece; `dps_dense::grain`).
    #[serde(default = "one")]
    pub block_depth_chunks: usize,
    /// Why these blocks: `--block`, `--s K`, or the cost model's predictions (`dps_dense::grain`).
    pub block_reason: String,
    /// How this node pages the memory its ranks share (`dps::shared_memory_huge_pages`):
    /// the operand strips lent to the other ranks of the node are on huge pages unless it is
    /// `never` (or `deny`). Empty in records from before it was recorded.
    #[serde(default)]
    pub shared_memory_huge_pages: String,
    /// Blocks per column of C: row strips (not in the serial variant).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s: Option<usize>,
    /// Timed runs.
    pub reps: usize,
    /// The first run's time, s, warm-up or not, to set against `seconds` (the median of the
    /// timed runs): what starting up still costs (not in the serial variant).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_call_s: Option<f64>,
    /// `phased`, `compare`: communication time over computation time (median).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm_comp_ratio: Option<f64>,
    /// `phased`, `compare`: the phased run's time, s (median).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phased_s: Option<f64>,
    /// `phased`, `compare`: the reduction perfect overlap would give at this ratio.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub potential_reduction: Option<f64>,
    /// `compare`: the pipelined run's time, s (median).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipelined_s: Option<f64>,
    /// `compare`: `1 - pipelined_s / phased_s`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reduction: Option<f64>,
    /// 2n³ floating-point operations over the time, in GFLOP/s.
    pub gflops: f64,
    /// `--verify`: the relative Frobenius error against one serial dgemm.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<FiniteOrText>,
}

/// Records written before depth chunks existed had whole jobs.
fn one() -> usize {
    1
}

impl Record {
    /// A record without the phase fields and the error: the caller adds those it has.
    pub fn new(common: Common, n: usize, block: &Tiling, s: Option<usize>, reps: usize, kernel: Kernel) -> Record {
        let gflops = 2.0 * (n as f64).powi(3) / common.seconds / 1e9;
        Record {
            common,
            blas: BlasInfo::of_this_process(),
            kernel: kernel.name().to_string(),
            n,
            block: block.rows,
            block_cols: block.cols,
            block_first_rows: block.first_rows,
            block_depth_chunks: block.depth_chunks,
            block_reason: block.reason.clone(),
            shared_memory_huge_pages: dps::shared_memory_huge_pages(),
            s,
            reps,
            first_call_s: None,
            comm_comp_ratio: None,
            phased_s: None,
            potential_reduction: None,
            pipelined_s: None,
            reduction: None,
            gflops,
            error: None,
        }
    }
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.common;
        write!(f, "matmul {} n={} block={}", c.variant, self.n, self.block)?;
        if self.block_cols != self.block {
            write!(f, "x{}", self.block_cols)?;
        }
        write!(f, " ranks={} threads={}: {:.3} s, {:.1} GFLOP/s", c.ranks, c.threads, c.seconds, self.gflops)?;
        match (self.reduction, self.comm_comp_ratio) {
            (Some(red), Some(ratio)) => write!(f, ", reduction {:.1}% at comm/comp {ratio:.2}", red * 100.0)?,
            (None, Some(ratio)) => write!(f, ", comm/comp {ratio:.2}")?,
            _ => {}
        }
        if let Some(e) = self.error {
            let verdict = if c.verified == Some(true) { "verified" } else { "NOT verified" };
            write!(f, ", {verdict} (error {e:.1e})")?;
        }
        write!(f, " [{} {}]", self.blas.blas_library, self.blas.blas_core)
    }
}
