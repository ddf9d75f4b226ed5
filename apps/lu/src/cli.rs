//! The command line: the options, parsed and checked once into a [`Plan`] before any work
//! (bad input exits 2 here, the matrix file included); nothing past this module sees the raw
//! options.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use clap::{Parser, ValueEnum};
use dps::SimMode;
use dps_dense::footprint;
use dps_dense::grain::{self, Choice};
use dps_dense::market::MatrixFile;
use dps_harness::options::{Repeat, Standard, Timed};
use dps_harness::{bad_input, BadInput};

use crate::alloc::{self, Alloc};
use crate::kernel::{Blocking, Source};
use crate::scheduled::{Costs, WithdrawArg};

/// Which schedule runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Variant {
    /// Streams: panel k+1 starts while the updates of step k go on (DPS paper, Fig. 12).
    Stream,
    /// A full merge, then a split, at every step (the paper's comparison).
    MergeSplit,
    /// LAPACK dgetrf in this process (`--blas-threads` threads), without DPS or MPI.
    Serial,
    /// The simulator paper's basic graph with a separate multiplication collection whose membership
    /// `--alloc` sets per iteration (the column blocks on the first half of the ranks).
    Dynamic,
}

impl Variant {
    /// The variant's name in records (its `--variant` value).
    pub fn name(self) -> String {
        self.to_possible_value().expect("every variant has a name").get_name().to_string()
    }

    /// Whether it runs the staged pipeline (graded blocks by default).
    pub fn is_staged(self) -> bool {
        matches!(self, Variant::Stream | Variant::MergeSplit)
    }
}

/// `dps-lu`: P·A = L·U with partial pivoting, by blocks of columns.
#[derive(Parser, Debug)]
#[command(name = "dps-lu", version, about)]
#[command(mut_arg("map", |a| a.help("Mapping of the column collection (one thread per rank by default)")))]
#[command(mut_arg("seed", |a| a.help("Seed of the random matrix (not with --file)").conflicts_with("file")))]
#[command(mut_arg("verify", |a| a.help("Check the HPL scaled residual (< 16) and the pivots against a serial dgetrf")))]
pub struct Args {
    /// Matrix order (random matrix; not with --file).
    #[arg(long, default_value_t = 1024, conflicts_with = "file")]
    pub n: usize,
    /// Block (column panel) width r [default: chosen by a cost model from n and the rank
    /// count; the record's block_reason says why].
    #[arg(long)]
    pub block: Option<usize>,
    /// Schedule.
    #[arg(long, value_enum, default_value = "stream")]
    pub variant: Variant,
    /// `stream` and `merge-split`: blocks of r columns throughout, as in the paper [default:
    /// from n = 4r on, the first and the last r columns in two blocks each, which halves the
    /// wait for the first panel and the last steps' waits; the record's `blocking` says which].
    #[arg(long)]
    pub uniform_blocks: bool,
    /// A Matrix Market file (`array` or `coordinate`, `real general`, square) to factor.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// `dynamic` variant: multiplication threads per iteration: `all` (P always), `half`
    /// (the threads on the first half of the ranks, P/2 always), `half-after:K` (P for
    /// iterations 1..=K, then P/2), `schedule` (the ranks the layered scheduler allots to
    /// each iteration) [default: all; schedule with --withdraw].
    #[arg(long, value_name = "all|half|half-after:K|schedule")]
    pub alloc: Option<Alloc>,
    /// `dynamic` variant, `--alloc schedule`: rank RANK (or the one rank on host HOST) is
    /// withdrawn as iteration K (from 1) begins; the iterations left switch to the schedule
    /// pre-computed for one rank fewer and its multiplication threads get no more work.
    #[arg(long, value_name = "RANK@iteration:K|HOST@iteration:K")]
    pub withdraw: Option<WithdrawArg>,
    /// `dynamic` variant: the column blocks live on ranks 0..C, one column thread per rank
    /// (block j on rank j % C) [default: the first half of the ranks, at least 1].
    #[arg(long, value_name = "C")]
    pub column_ranks: Option<usize>,
    /// `dynamic` variant: report each iteration's time beside the serial blocked
    /// reference's (measured on rank 0 after each timed run) and its efficiency E_i.
    #[arg(long)]
    pub per_iteration: bool,
    /// `--map`, `--reps`, `--warmup`, `--blas-threads`, `--seed` and the standard options.
    #[command(flatten)]
    pub run: Timed<42>,
}

/// A checked run: every option validated, the matrix read or described, the block width
/// chosen.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Matrix order.
    pub n: usize,
    /// The block (panel) width, and why this one.
    pub block: Choice,
    /// How the columns are cut into blocks of that width: graded in the staged variants
    /// (unless `--uniform-blocks`), uniform in the others.
    pub blocking: Blocking,
    /// The schedule.
    pub variant: Variant,
    /// The matrix: random (its seed) or read from `--file`.
    pub source: Source,
    /// `dynamic` variant: the multiplication threads of each iteration (`all` by default).
    pub alloc: Alloc,
    /// `dynamic` variant: report each iteration against the serial blocked reference.
    pub per_iteration: bool,
    /// `--withdraw`: the rank (or host) withdrawn and the first iteration without it.
    pub withdraw: Option<WithdrawArg>,
    /// `dynamic` variant: the ranks holding the column blocks (0..column_ranks).
    pub column_ranks: usize,
    /// `--alloc schedule`: the kernel times and the link the scheduler's τ tables come from.
    pub costs: Option<Costs>,
    /// Mapping of the column collection (the multiplication collection in `dynamic`).
    pub map: String,
    /// Timed runs after the warm-up.
    pub repeat: Repeat,
    /// OpenBLAS threads of the serial variant.
    pub blas_threads: usize,
    /// `--verify`, `--json`, the runtime's and the simulator's options.
    pub standard: Standard,
}

impl Plan {
    /// Block columns, which is also the number of iterations.
    pub fn blocks(&self) -> usize {
        self.blocking.count()
    }
}

impl Args {
    /// Checks every option, reads or describes the matrix and chooses the block width (bad
    /// input, before any work). Without --block, the cost model of `dps_dense::grain`
    /// chooses it from n and the ranks launched, within half of the node's memory; the run's
    /// memory is then checked against this node's before the file is read.
    ///
    /// # Errors
    /// A `dps_harness::BadInput` naming the option or the file: a simulation asked of what
    /// cannot be simulated, n or the block width is 0, the block is wider than n, the thread
    /// or run counts are out of range, `--alloc` or `--per-iteration` without the dynamic
    /// variant, the trace cannot be written, the file cannot be read or holds no square real
    /// matrix, the data does not fit in memory, `--alloc half-after:K` leaves no iteration
    /// on one side, `--column-ranks` is not one of 1..=P or not with `dynamic`,
    /// `--withdraw` is malformed, without `--alloc schedule`, names a rank
    /// not in the job, rank 0 (the coordinator), or an iteration past the last, or the
    /// platform file `--alloc schedule` reads cannot be loaded.
    pub fn plan(&self) -> Result<Plan> {
        self.check_simulation()?;
        self.check_options()?;
        self.run.standard.check()?;
        let file = match &self.file {
            Some(path) => Some(MatrixFile::open(path).map_err(|e| BadInput::new(format!("--file {e}")))?),
            None => None,
        };
        let n = file.as_ref().map_or(self.n, MatrixFile::order);
        let file_bytes = file.as_ref().map_or(0, MatrixFile::bytes_needed);
        let block = self.block_width(n, file_bytes)?;
        let (rank0, other) = self.memory_need(n, block.block, file_bytes);
        let what = match &self.file {
            Some(path) => format!("--file {} (n = {n})", path.display()),
            None => format!("--n {n}"),
        };
        if !self.run.standard.sim.noalloc() {
            dps_harness::check_memory(&what, rank0, other)?;
        }
        let source = match file {
            Some(file) => Source::Given(Arc::new(file.read().map_err(|e| BadInput::new(format!("--file {e}")))?)),
            None => Source::Random(self.run.seed.seed),
        };
        let blocking = match self.variant.is_staged() && !self.uniform_blocks {
            true => Blocking::graded(n, block.block),
            false => Blocking::uniform(n, block.block),
        };
        let plan = Plan {
            n,
            block,
            blocking,
            variant: self.variant,
            source,
            alloc: self.alloc.unwrap_or(if self.withdraw.is_some() { Alloc::Schedule } else { Alloc::All }),
            per_iteration: self.per_iteration,
            withdraw: self.withdraw.clone(),
            column_ranks: self.column_ranks(),
            costs: None,
            map: self.run.map.map.clone(),
            repeat: self.run.repeat.clone(),
            blas_threads: self.run.blas.blas_threads,
            standard: self.run.standard.clone(),
        };
        let mut plan = plan;
        if plan.variant == Variant::Dynamic {
            plan.check_dynamic(self.ranks() as usize)?;
            if plan.alloc == Alloc::Schedule {
                plan.costs = Some(self.schedule_costs(plan.block.block)?);
            }
        }
        Ok(plan)
    }

    /// Refusals of simulation options that do not depend on the matrix.
    fn check_simulation(&self) -> Result<()> {
        let standard = &self.run.standard;
        if standard.simulated_ranks().is_none() {
            return Ok(());
        }
        if self.variant == Variant::Serial {
            bad_input!("--simulate: the serial variant runs no DPS graph to simulate");
        }
        let mode = standard.sim.mode();
        if standard.verify() && mode != SimMode::De {
            bad_input!(
                "--verify: --sim-mode {} skips the factorization (identity pivots), so there is no result to \
                 verify; use --sim-mode de",
                mode.name()
            );
        }
        if self.file.is_some() && mode == SimMode::Noalloc {
            bad_input!("--file: --sim-mode noalloc leaves the matrix out; give its order with --n instead");
        }
        Ok(())
    }

    /// Checks the options that do not depend on the matrix.
    fn check_options(&self) -> Result<()> {
        if self.file.is_none() && self.n == 0 {
            bad_input!("--n 0: the matrix order must be at least 1");
        }
        if self.block == Some(0) {
            bad_input!("--block 0: the block width must be at least 1");
        }
        self.run.check()?;
        if self.uniform_blocks && !self.variant.is_staged() {
            bad_input!(
                "--uniform-blocks needs --variant stream or merge-split (the {} variant's blocks are always uniform)",
                self.variant.name()
            );
        }
        // --alloc and --per-iteration would be silently ignored by the other variants.
        if self.variant != Variant::Dynamic {
            if let Some(alloc) = self.alloc {
                bad_input!(
                    "--alloc {alloc} needs --variant dynamic (the other variants have no multiplication threads)"
                );
            }
            if self.per_iteration {
                bad_input!(
                    "--per-iteration needs --variant dynamic (the only schedule with clean iteration boundaries)"
                );
            }
            if let Some(w) = &self.withdraw {
                bad_input!(
                    "--withdraw {w} needs --variant dynamic (the other variants have no multiplication threads)"
                );
            }
            if let Some(c) = self.column_ranks {
                bad_input!("--column-ranks {c} needs --variant dynamic (the others place the columns with --map)");
            }
        }
        if let Some(c) = self.column_ranks {
            let ranks = self.ranks();
            if c == 0 || c as u64 > ranks {
                bad_input!("--column-ranks {c}: the column blocks need between 1 and {ranks} ranks (the job's)");
            }
        }
        if let (Some(w), Some(alloc)) = (&self.withdraw, self.alloc) {
            if alloc != Alloc::Schedule {
                bad_input!(
                    "--withdraw {w} needs --alloc schedule (the pre-computed schedule it switches to), not {alloc}"
                );
            }
        }
        Ok(())
    }

    /// The kernel times and link of `--alloc schedule`: from the platform file the simulation
    /// charges under `--simulate`, from `$DPS_PLATFORM` in a real run if set, else the
    /// kernels at 20 Gflop/s without communication cost.
    fn schedule_costs(&self, r: usize) -> Result<Costs> {
        let path = if self.run.standard.simulated_ranks().is_some() {
            Some(self.run.standard.sim.platform_path())
        } else {
            std::env::var_os("DPS_PLATFORM").map(PathBuf::from)
        };
        let platform = match path {
            None => None,
            Some(path) => Some(
                dps_model::platform::Platform::load(&path)
                    .map_err(|e| BadInput::new(format!("--alloc schedule: platform file {}: {e}", path.display())))?,
            ),
        };
        Ok(Costs::of(platform.as_ref(), r))
    }

    /// The block width for order n and why: the cost model of `dps_dense::grain` (from n and
    /// the ranks launched, within half of the node's memory) unless --block gives it; an
    /// explicit width larger than n is refused, because the run would not measure the block
    /// the user asked for.
    fn block_width(&self, n: usize, file_bytes: u64) -> Result<Choice> {
        match self.block {
            None => {
                let on_node = dps_harness::memory::ranks_on_this_node();
                let fits = |r| {
                    let (rank0, other) = self.memory_need(n, r, file_bytes);
                    grain::fits_in_half_the_node(rank0, other, on_node)
                };
                Ok(grain::lu_block(&grain::DEV_VM, n, self.ranks() as usize, fits))
            }
            Some(r) if r > n => bad_input!("--block {r} is larger than the matrix order n = {n}"),
            Some(r) => Ok(Choice { block: r, reason: "--block".into() }),
        }
    }

    /// The ranks holding the column blocks in the dynamic variant: `--column-ranks`, else
    /// the first half of the ranks (at least one).
    fn column_ranks(&self) -> usize {
        self.column_ranks.unwrap_or_else(|| alloc::kept_ranks(self.ranks() as usize))
    }

    /// The ranks of the run: launched, or simulated (`--simulate P`).
    fn ranks(&self) -> u64 {
        self.run.standard.simulated_ranks().map_or_else(|| dps_harness::launch_size() as u64, |p| p.max(1) as u64)
    }

    /// Bytes the run needs on rank 0 and on every other rank, from the options alone.
    /// `file_bytes` is what reading the file allocates (every rank reads it).
    fn memory_need(&self, n: usize, r: usize, file_bytes: u64) -> (u64, u64) {
        let m = footprint::matrix(n);
        let given = if self.file.is_some() { m } else { 0 };
        // Reading peaks at the parsed matrix plus the reader's own bookkeeping; the matrix stays.
        let source = given.max(file_bytes);
        if self.variant == Variant::Serial {
            // The source, and a fresh copy factored in place per repetition.
            return (source.saturating_add(m).saturating_add(footprint::blas_library()), 0);
        }
        let ranks = self.ranks();
        // The dynamic variant keeps the blocks on --column-ranks (the first half of the ranks).
        let holders = if self.variant == Variant::Dynamic { self.column_ranks() as u64 } else { ranks };
        let blocks = n.div_ceil(r) as u64;
        // A withdrawal may move a column thread onto a rank that holds one: twice its share.
        let moved = if self.withdraw.is_some() && holders > 1 { 2 } else { 1 };
        // Column blocks owned by a rank, plus panels in flight (a few per rank).
        let owned = footprint::block(n, r).saturating_mul(blocks.div_ceil(holders)).saturating_mul(moved);
        let panels = footprint::block(n, r).saturating_mul(4);
        let other = source.saturating_add(owned).saturating_add(panels);
        // --verify on rank 0: the gathered factors (with the copies of its own blocks), the
        // matrix again, and the factors of the reference dgetrf.
        let verify = if self.run.standard.verify() { m.saturating_mul(3).saturating_add(owned) } else { 0 };
        // --per-iteration: the serial blocked reference's copy of the matrix, on rank 0.
        let serial = if self.per_iteration { m } else { 0 };
        let other = other.saturating_add(footprint::blas_library());
        (other.saturating_add(verify).saturating_add(serial), other)
    }
}

impl Plan {
    /// The dynamic variant's refusals once the matrix is known: `--alloc half-after:K` must
    /// leave an iteration on each side, `--withdraw` name a rank of the `ranks` other than
    /// rank 0 and an iteration of the factorization, and only direct execution
    /// can simulate it.
    fn check_dynamic(&self, ranks: usize) -> Result<()> {
        self.alloc.check(self.blocks()).map_err(BadInput::new)?;
        if let Some(w) = &self.withdraw {
            w.check(ranks, self.blocks()).map_err(BadInput::new)?;
        }
        let mode = self.standard.sim.mode();
        if self.standard.simulated_ranks().is_some() && mode != SimMode::De {
            bad_input!(
                "--sim-mode {}: the dynamic variant's kernels are not marked for skipping (its prediction would \
                 charge them nothing); use --sim-mode de",
                mode.name()
            );
        }
        Ok(())
    }
}
