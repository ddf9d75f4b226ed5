//! Command-line options and the runner: builds the graphs, times the chosen variant, checks
//! the product against one serial dgemm, and reports a human line or a JSON object.

use std::time::Instant;

use anyhow::{bail, Result};
use clap::{Parser, ValueEnum};
use dps::{Runtime, SimMode};
use dps_dense::footprint;
use dps_dense::grain::{self, Tiling};
use dps_harness::options::Timed;
use dps_harness::simulate::Support;
use dps_harness::{bad_input, median, Common, FiniteOrText};

use crate::graph::{self, Graphs, Master};
use crate::kernel;
use crate::record::Record;

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
    #[command(flatten)]
    #[allow(missing_docs)]
    pub run: Timed<42>,
}

impl Args {
    /// The blocks of C and why, after checking every option (bad input, before any work).
    /// Without --block or --s, the cost model of `dps_dense::grain` chooses them from n and
    /// the ranks launched (one worker each), within half of the node's memory: any tiling
    /// for the pipelined and phased variants, square blocks for the farm.
    ///
    /// # Errors
    /// A `dps_harness::BadInput` naming the option: n, the block size, the block count or the window
    /// is 0, the block or the block count is larger than n, the thread or run counts are
    /// out of range.
    pub fn block_size(&self) -> Result<Tiling> {
        let n = self.n;
        if n == 0 {
            bad_input!("--n must be at least 1");
        }
        let bs = match (self.block, self.s) {
            (Some(0), _) => bad_input!("--block 0: the block size must be between 1 and n = {n}"),
            (Some(b), _) if b > n => bad_input!("--block {b} must be between 1 and n = {n}"),
            (Some(b), _) => Tiling { rows: b, cols: b, reason: "--block".into() },
            (None, Some(0)) => bad_input!("--s must be at least 1"),
            (None, Some(s)) if s > n => bad_input!("--s {s}: at most n = {n} blocks per dimension"),
            (None, Some(s)) => Tiling { rows: n.div_ceil(s), cols: n.div_ceil(s), reason: format!("--s {s}") },
            (None, None) => self.default_block(),
        };
        if self.window == Some(0) {
            bad_input!("--window 0: at least one job must be in flight");
        }
        self.run.check()?;
        Ok(bs)
    }

    /// The cost model's blocks for this run (see [`Args::block_size`]).
    fn default_block(&self) -> Tiling {
        let ranks = self.ranks() as usize;
        let on_node = dps_harness::memory::ranks_on_this_node();
        let fits = |rows, cols| {
            let (rank0, other) = self.memory_need(rows, cols);
            grain::fits_in_half_the_node(rank0, other, on_node)
        };
        if self.variant == Variant::Farm {
            let c = grain::matmul_block(&grain::DEV_VM, self.n, ranks, |b| fits(b, b));
            return Tiling { rows: c.block, cols: c.block, reason: c.reason };
        }
        grain::matmul_tiling(&grain::DEV_VM, self.n, ranks, fits)
    }

    /// The ranks of the run: launched, or simulated (`--simulate P`).
    fn ranks(&self) -> u64 {
        self.run.sim.simulate.map_or_else(footprint::launched_ranks, |p| p.max(1) as u64)
    }

    /// Bytes the run needs on rank 0 and on every other rank, from the options alone, with
    /// blocks of C of `rows` × `cols`.
    pub fn memory_need(&self, rows: usize, cols: usize) -> (u64, u64) {
        let m = footprint::matrix(self.n);
        if self.variant == Variant::Serial {
            return (m.saturating_mul(3), 0); // A, B and C
        }
        let held = self.held_by_workers(rows, cols);
        let other = match self.variant {
            // Every job's strips and its block of C stay on the workers between the phases.
            Variant::Phased | Variant::Compare => held.div_ceil(self.ranks()),
            // The jobs in flight may all sit on one rank.
            _ => held,
        };
        (self.master_need().saturating_add(other), other)
    }

    /// Bytes a simulation needs: every virtual rank lives in this process, so the master's
    /// matrices and what all the workers hold at once, counted once (not once per rank: the
    /// jobs in flight are the job's, however many ranks share them).
    pub fn simulated_memory_need(&self, rows: usize, cols: usize) -> u64 {
        self.master_need().saturating_add(self.held_by_workers(rows, cols))
    }

    /// The master's bytes: A, B, C, and the strips it cuts from A and B; --verify fetches C
    /// and recomputes A, B and the serial product.
    fn master_need(&self) -> u64 {
        footprint::matrix(self.n).saturating_mul(if self.run.check.verify { 9 } else { 5 })
    }

    /// What the workers of all ranks hold at once: the strips and blocks of C of the jobs in
    /// flight (of every job between the phases of `phased`).
    fn held_by_workers(&self, rows: usize, cols: usize) -> u64 {
        let n = self.n;
        let jobs = (kernel::blocks(n, rows) as u64).saturating_mul(kernel::blocks(n, cols) as u64);
        // A job's strips (received as a copy per job) and its block of C.
        let job = footprint::block(rows.saturating_add(cols), n).saturating_add(footprint::block(rows, cols));
        // Jobs in flight: the default window is 2 per worker, one worker per rank by default.
        let window = self.window.map_or(2 * self.ranks(), |w| w as u64).min(jobs);
        match self.variant {
            Variant::Phased | Variant::Compare => job.saturating_mul(jobs),
            Variant::Pipelined => job.saturating_mul(window),
            // Farm pairs: A_ik (rows × cols), B_kj and the partial product (cols × cols at most).
            _ => footprint::block(rows.max(cols), cols).saturating_mul(3).saturating_mul(window),
        }
    }
}

/// What the simulator supports of dps-matmul: every mode (the control flow never depends
/// on the values). PDEXEC charges the products as gemm calls and the strip cuts and the
/// assembly of C as copies; NOALLOC also leaves A, B, C and every block out (tokens carry
/// their sizes).
const SIMULATION: Support = Support {
    program: "dps-matmul",
    modes: &[SimMode::De, SimMode::Pdexec, SimMode::Noalloc],
    why_not: "",
    kernels: &["gemm", "copy"],
};

/// The time of `f` on the runtime's clock (simulated under --simulate).
fn timed(rt: &Runtime, f: impl FnOnce() -> Result<()>) -> Result<f64> {
    let t = rt.stopwatch();
    f()?;
    Ok(t.seconds())
}

/// Runs the program; returns the exit code.
///
/// # Errors
/// Bad options (before any work) or a failed run.
pub fn run(args: &Args) -> Result<()> {
    let choice = args.block_size()?;
    let (rank0, other) = args.memory_need(choice.rows, choice.cols);
    match args.run.sim.simulate {
        // NOALLOC allocates no matrix: its memory does not depend on n².
        Some(_) if args.run.sim.noalloc() => {}
        // Every virtual rank lives in this process.
        Some(p) => dps_harness::check_memory(
            &format!("--n {} --simulate {p}", args.n),
            args.simulated_memory_need(choice.rows, choice.cols)
                .saturating_add(dps_harness::simulate::simulator_bytes(p)),
            0,
        )?,
        None => dps_harness::check_memory(&format!("--n {}", args.n), rank0, other)?,
    }
    if args.run.sim.simulate.is_some() {
        if args.variant == Variant::Serial {
            bad_input!("--simulate: the serial variant runs no DPS graph to simulate");
        }
        if args.run.check.verify && args.run.sim.mode() != SimMode::De {
            bad_input!(
                "--verify: --sim-mode {} skips the products, so there is no result to verify; use --sim-mode de",
                args.run.sim.mode().name()
            );
        }
    }
    dps_harness::options::check_trace(&args.run.runtime)?;
    let n = args.n;
    if args.variant == Variant::Serial {
        return run_serial(args, &choice);
    }
    dps_dense::blas::one_thread_per_worker();
    let rt = args.run.sim.start(&args.run.runtime, &SIMULATION)?;
    let main = rt.collection("main", "0", |_| Master::new(n, choice.rows, choice.cols, args.run.seed.seed))?;
    let workers = rt.collection("workers", &args.run.map.map, |_| graph::worker(n))?;
    let window = args.window.unwrap_or(2 * workers.len());
    let graphs = Graphs::build(&rt, &main, &workers, window)?;
    if rt.is_root() {
        report(args, &rt, &graphs, &choice, workers.len())?;
    }
    rt.shutdown()?;
    Ok(())
}

fn report(args: &Args, rt: &Runtime, g: &Graphs, choice: &Tiling, threads: usize) -> Result<()> {
    let n = args.n;
    let mut seconds = Vec::new();
    let (mut phased, mut pipelined, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let mut first_call = None;
    for rep in 0..args.run.repeat.runs() {
        if rep == args.run.repeat.warmup {
            (seconds, phased, pipelined, ratios) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        }
        match args.variant {
            Variant::Pipelined => {
                seconds.push(timed(rt, || rt.call(&g.pipelined, ()).map(|_| ()).map_err(Into::into))?)
            }
            Variant::Farm => seconds.push(timed(rt, || rt.call(&g.farm, ()).map(|_| ()).map_err(Into::into))?),
            Variant::Phased | Variant::Compare => {
                let t1 = timed(rt, || rt.call(&g.distribute, ()).map(|_| ()).map_err(Into::into))?;
                let t2 = timed(rt, || rt.call(&g.compute, ()).map(|_| ()).map_err(Into::into))?;
                let t3 = timed(rt, || rt.call(&g.gather, ()).map(|_| ()).map_err(Into::into))?;
                phased.push(t1 + t2 + t3);
                ratios.push((t1 + t3) / t2);
                if args.variant == Variant::Compare {
                    pipelined.push(timed(rt, || rt.call(&g.pipelined, ()).map(|_| ()).map_err(Into::into))?);
                }
            }
            Variant::Serial => unreachable!("handled before the runtime starts"),
        }
        first_call = first_call.or(seconds.first().copied()).or(phased.first().copied());
    }
    if args.variant == Variant::Compare {
        seconds = pipelined.clone();
    } else if args.variant == Variant::Phased {
        seconds = phased.clone();
    }
    let variant = format!("{:?}", args.variant).to_lowercase();
    let common = Common::new("matmul", &variant, rt.ranks(), threads, median(&seconds), None).bound_by(rt);
    let mut record = Record::new(common, n, choice, Some(kernel::blocks(n, choice.rows)), args.run.repeat.reps);
    record.first_call_s = first_call;
    if !ratios.is_empty() {
        let ratio = median(&ratios);
        record.comm_comp_ratio = Some(ratio);
        record.phased_s = Some(median(&phased));
        record.potential_reduction = Some(if ratio <= 1.0 { ratio / (ratio + 1.0) } else { 1.0 / (1.0 + ratio) });
    }
    if args.variant == Variant::Compare {
        let (p, f) = (median(&pipelined), median(&phased));
        record.pipelined_s = Some(p);
        record.reduction = Some(1.0 - p / f);
    }
    if args.run.check.verify {
        let c = rt.call(&g.fetch, ())?;
        let (sa, sb) = kernel::seeds(args.run.seed.seed);
        let (err, ok) = kernel::error_against_serial(&c, &kernel::matrix(n, sa), &kernel::matrix(n, sb), n);
        record.error = Some(FiniteOrText(err));
        record.common.verified = Some(ok);
        if !ok {
            dps_harness::print_record(&record, args.run.output.json)?;
            bail!(
                "verification failed: relative error {err:.3e} is not within 10·n·ε = {:.3e}",
                10.0 * n as f64 * f64::EPSILON
            );
        }
    }
    dps_harness::print_record(&record, args.run.output.json)
}

fn run_serial(args: &Args, choice: &Tiling) -> Result<()> {
    let n = args.n;
    dps_dense::blas::set_threads(args.run.blas.blas_threads);
    let (sa, sb) = kernel::seeds(args.run.seed.seed);
    let (a, b) = (kernel::matrix(n, sa), kernel::matrix(n, sb));
    let seconds = median(
        &(0..args.run.repeat.runs())
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(kernel::serial(&a, &b, n));
                t.elapsed().as_secs_f64()
            })
            .skip(args.run.repeat.warmup)
            .collect::<Vec<_>>(),
    );
    // The serial product is the reference itself: nothing to verify.
    let common = Common::new("matmul", "serial", 1, args.run.blas.blas_threads, seconds, None);
    dps_harness::print_record(&Record::new(common, n, choice, None, args.run.repeat.reps), args.run.output.json)
}
