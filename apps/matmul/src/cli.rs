//! The command line: the options, parsed and checked once into a [`Plan`] before any work
//! (bad input exits 2 here); nothing past this module sees the raw options.

use anyhow::Result;
use clap::{Parser, ValueEnum};
use dps::SimMode;
use dps_dense::footprint;
use dps_dense::grain::{self, Tiling};
use dps_harness::options::{Repeat, Standard, Timed};
use dps_harness::{bad_input, check_memory};

use crate::kernel::{self, Kernel};

/// Which algorithm runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Variant {
    /// Strip pairs flow to the workers as they are cut; communication overlaps computation.
    Pipelined,
    /// The same work with all communication first, then all computation, then the gather.
    Phased,
    /// Pipelined and phased alternately, reporting the reduction (the paper's Table 1).
    Compare,
    /// The thesis's master/worker farm: block pairs, load balancing, flow control.
    Farm,
    /// One OpenBLAS dgemm in this process (`--blas-threads` threads), without DPS or MPI.
    Serial,
}

impl Variant {
    /// The variant's name in records.
    pub fn name(self) -> String {
        format!("{self:?}").to_lowercase()
    }
}

/// `dps-matmul`: C = A·B for random n×n matrices, split into blocks.
#[derive(Parser, Debug)]
#[command(name = "dps-matmul", version, about)]
#[command(mut_arg("seed", |a| a.help("Seed of the random matrices")))]
#[command(mut_arg("verify", |a| a.help("Compare the product with one serial dgemm (relative Frobenius error ≤ 10·n·ε)")))]
pub struct Args {
    /// Matrix order.
    #[arg(long, default_value_t = 1024)]
    pub n: usize,
    /// Block size: square blocks of C (the last block of a dimension may be smaller)
    /// [default: blocks chosen by a cost model from n and the rank count, usually one strip
    /// of whole rows per worker; the record's block, block_cols and block_reason say which
    /// and why].
    #[arg(long, conflicts_with = "s")]
    pub block: Option<usize>,
    /// Number of blocks per dimension (instead of --block).
    #[arg(long)]
    pub s: Option<usize>,
    /// Algorithm.
    #[arg(long, value_enum, default_value = "pipelined")]
    pub variant: Variant,
    /// Jobs in flight at most (default: 2 per worker; at least 1).
    #[arg(long)]
    pub window: Option<usize>,
    /// The block product: OpenBLAS dgemm, or the textbook triple loop (tens of times slower:
    /// the thesis's machines' pace against their network, for the emulated cluster's tables).
    #[arg(long, value_enum, default_value = "blas")]
    pub kernel: Kernel,
    /// `--map`, `--reps`, `--warmup`, `--blas-threads`, `--seed` and the standard options.
    #[command(flatten)]
    pub run: Timed<42>,
}

/// A checked run: every option validated and every default chosen.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Matrix order.
    pub n: usize,
    /// The algorithm.
    pub variant: Variant,
    /// The blocks of C, and why these.
    pub tiling: Tiling,
    /// Jobs in flight at most (`None`: 2 per worker).
    pub window: Option<usize>,
    /// The block product.
    pub kernel: Kernel,
    /// Seed of the random matrices.
    pub seed: u64,
    /// Mapping of the worker collection.
    pub map: String,
    /// Timed runs after the warm-up.
    pub repeat: Repeat,
    /// OpenBLAS threads of the serial variant.
    pub blas_threads: usize,
    /// `--verify`, `--json`, the runtime's and the simulator's options.
    pub standard: Standard,
}

impl Args {
    /// Checks every option and chooses the blocks (bad input, before any work). Without
    /// --block or --s, the cost model of `dps_dense::grain` chooses them from n and the ranks
    /// launched (one worker each), within half of the node's memory: any tiling for the
    /// pipelined and phased variants, square blocks for the farm. The run's memory is then
    /// checked against this node's.
    ///
    /// # Errors
    /// A `dps_harness::BadInput` naming the option: n, the block size, the block count or the
    /// window is 0, the block or the block count is larger than n, the thread or run counts
    /// are out of range, the data does not fit in memory, the trace cannot be written, or a
    /// simulation is asked of what cannot be simulated.
    pub fn plan(&self) -> Result<Plan> {
        let n = self.n;
        if n == 0 {
            bad_input!("--n must be at least 1");
        }
        let tiling = match (self.block, self.s) {
            (Some(0), _) => bad_input!("--block 0: the block size must be between 1 and n = {n}"),
            (Some(b), _) if b > n => bad_input!("--block {b} must be between 1 and n = {n}"),
            (Some(b), _) => Tiling::even(b, b, "--block"),
            (None, Some(0)) => bad_input!("--s must be at least 1"),
            (None, Some(s)) if s > n => bad_input!("--s {s}: at most n = {n} blocks per dimension"),
            (None, Some(s)) => Tiling::even(n.div_ceil(s), n.div_ceil(s), format!("--s {s}")),
            (None, None) => self.default_tiling(),
        };
        if self.window == Some(0) {
            bad_input!("--window 0: at least one job must be in flight");
        }
        self.run.check()?;
        let plan = Plan {
            n,
            variant: self.variant,
            tiling,
            window: self.window,
            kernel: self.kernel,
            seed: self.run.seed.seed,
            map: self.run.map.map.clone(),
            repeat: self.run.repeat.clone(),
            blas_threads: self.run.blas.blas_threads,
            standard: self.run.standard.clone(),
        };
        plan.check_memory()?;
        plan.check_simulation()?;
        plan.standard.check()?;
        Ok(plan)
    }

    /// The cost model's blocks for this run (see [`Args::plan`]).
    fn default_tiling(&self) -> Tiling {
        let sizes = Sizes::of(self);
        let ranks = sizes.ranks as usize;
        let on_node = dps_harness::memory::ranks_on_this_node();
        let fits = |rows, cols| {
            let (rank0, other) = sizes.memory_need(rows, cols);
            grain::fits_in_half_the_node(rank0, other, on_node)
        };
        if self.variant == Variant::Farm {
            let c = grain::matmul_block(&grain::DEV_VM, self.n, ranks, |b| fits(b, b));
            return Tiling::even(c.block, c.block, c.reason);
        }
        // Only the pipelined variant sends jobs in depth pieces: `phased` (and so `compare`,
        // Table 1) ships whole jobs, since nothing starts before its phase anyway.
        let pieces = self.variant == Variant::Pipelined;
        // Every rank on this node, where the others' strips (their rows of A, and B) fit in
        // node-shared memory: the workers map them.
        let others =
            self.n.saturating_mul(self.n).saturating_mul(2).saturating_sub(self.n.saturating_mul(self.n) / ranks);
        let lent = self.run.standard.simulated_ranks().is_none()
            && on_node == ranks as u64
            && dps::Shared::<f64>::room_for(others);
        grain::matmul_tiling(&grain::DEV_VM, self.n, ranks, pieces, lent, fits)
    }
}

impl Plan {
    /// Bytes the run needs on rank 0 and on every other rank.
    pub fn memory_need(&self) -> (u64, u64) {
        let (rank0, other) = self.sizes().memory_need(self.tiling.tallest(), self.tiling.cols);
        let library = footprint::blas_library();
        (rank0.saturating_add(library), if other == 0 { 0 } else { other.saturating_add(library) })
    }

    /// Bytes a simulation needs: every virtual rank lives in this process, so the master's
    /// matrices and what all the workers hold at once, counted once (not once per rank: the
    /// jobs in flight are the job's, however many ranks share them).
    pub fn simulated_memory_need(&self) -> u64 {
        let sizes = self.sizes();
        sizes.master_need().saturating_add(sizes.held_by_workers(self.tiling.tallest(), self.tiling.cols))
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            n: self.n,
            variant: self.variant,
            window: self.window,
            verify: self.standard.verify(),
            ranks: ranks(&self.standard),
        }
    }

    /// Refuses what the simulator cannot run.
    fn check_simulation(&self) -> Result<()> {
        if self.standard.simulated_ranks().is_none() {
            return Ok(());
        }
        if self.variant == Variant::Serial {
            bad_input!("--simulate: the serial variant runs no DPS graph to simulate");
        }
        let mode = self.standard.sim.mode();
        if self.kernel == Kernel::Loops && mode != SimMode::De {
            bad_input!(
                "--kernel loops: --sim-mode {} charges the platform file's dgemm, which it is not; use --sim-mode de",
                mode.name()
            );
        }
        if self.standard.verify() && mode != SimMode::De {
            bad_input!(
                "--verify: --sim-mode {} skips the products, so there is no result to verify; use --sim-mode de",
                mode.name()
            );
        }
        Ok(())
    }

    /// Refuses a run whose data cannot fit in this node's memory.
    fn check_memory(&self) -> Result<()> {
        match self.standard.simulated_ranks() {
            // NOALLOC allocates no matrix: its memory does not depend on n².
            Some(_) if self.standard.sim.noalloc() => Ok(()),
            // Every virtual rank lives in this process.
            Some(p) => check_memory(
                &format!("--n {} --simulate {p}", self.n),
                self.simulated_memory_need().saturating_add(dps_harness::simulate::simulator_bytes(p)),
                0,
            ),
            None => {
                let (rank0, other) = self.memory_need();
                check_memory(&format!("--n {}", self.n), rank0, other)
            }
        }
    }
}

/// The ranks of the run: launched, or simulated (`--simulate P`).
fn ranks(standard: &Standard) -> u64 {
    standard.simulated_ranks().map_or_else(|| dps_harness::launch_size() as u64, |p| p.max(1) as u64)
}

/// What the memory a run needs depends on, for any blocks.
struct Sizes {
    n: usize,
    variant: Variant,
    window: Option<usize>,
    verify: bool,
    ranks: u64,
}

impl Sizes {
    fn of(args: &Args) -> Sizes {
        let standard = &args.run.standard;
        Sizes {
            n: args.n,
            variant: args.variant,
            window: args.window,
            verify: standard.verify(),
            ranks: ranks(standard),
        }
    }

    /// Bytes the run needs on rank 0 and on every other rank, with blocks of C of `rows` ×
    /// `cols`.
    fn memory_need(&self, rows: usize, cols: usize) -> (u64, u64) {
        let m = footprint::matrix(self.n);
        if self.variant == Variant::Serial {
            return (m.saturating_mul(3), 0); // A, B and C
        }
        let held = self.held_by_workers(rows, cols);
        let other = match self.variant {
            // Every job's strips and its block of C stay on the workers between the phases.
            Variant::Phased | Variant::Compare => held.div_ceil(self.ranks),
            // The jobs in flight may all sit on one rank.
            _ => held,
        };
        (self.master_need().saturating_add(other), other)
    }

    /// The master's bytes: A, B, C, and the strips it cuts from A and B; --verify fetches C
    /// and recomputes A, B and the serial product.
    fn master_need(&self) -> u64 {
        footprint::matrix(self.n).saturating_mul(if self.verify { 9 } else { 5 })
    }

    /// What the workers of all ranks hold at once: the strips and blocks of C of the jobs in
    /// flight (of every job between the phases of `phased`).
    fn held_by_workers(&self, rows: usize, cols: usize) -> u64 {
        let n = self.n;
        let jobs = (kernel::blocks(n, rows) as u64).saturating_mul(kernel::blocks(n, cols) as u64);
        // A job's strips (received as a copy per job) and its block of C.
        let job = footprint::block(rows.saturating_add(cols), n).saturating_add(footprint::block(rows, cols));
        // Jobs in flight: the default window is 2 per worker, one worker per rank by default.
        let window = self.window.map_or(2 * self.ranks, |w| w as u64).min(jobs);
        match self.variant {
            Variant::Phased | Variant::Compare => job.saturating_mul(jobs),
            Variant::Pipelined => job.saturating_mul(window),
            // Farm pairs: A_ik (rows × cols), B_kj and the partial product (cols × cols at most).
            _ => footprint::block(rows.max(cols), cols).saturating_mul(3).saturating_mul(window),
        }
    }
}
