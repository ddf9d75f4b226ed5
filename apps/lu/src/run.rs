//! Command-line options and the runner: loads or generates the matrix, builds the graphs,
//! times the factorization, verifies it (HPL residual, pivots against dgetrf) and reports.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use clap::{Parser, ValueEnum};
use dps::SimMode;
use dps_dense::footprint;
use dps_dense::grain::{self, Choice};
use dps_dense::market::MatrixFile;
use dps_harness::options::Timed;
use dps_harness::{bad_input, median, BadInput, Common, FiniteOrText};

use crate::alloc::Alloc;
use crate::graph::{Columns, Graphs, Pipelining};
use crate::kernel::{self, Source};
use crate::record::Record;

/// Which schedule runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Variant {
    /// Streams: panel k+1 starts while the updates of step k go on (DPS paper, Fig. 12).
    Stream,
    /// A full merge, then a split, at every step (the paper's comparison).
    MergeSplit,
    /// LAPACK dgetrf in this process (`--blas-threads` threads), without DPS or MPI.
    Serial,
    /// Seed 003's basic graph with a separate multiplication collection whose membership
    /// `--alloc` sets per iteration (the column blocks on the first half of the ranks).
    Dynamic,
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
    /// A Matrix Market file (`array` or `coordinate`, `real general`, square) to factor.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// `dynamic` variant: multiplication threads per iteration: `all` (P always), `half`
    /// (the threads on the first half of the ranks, P/2 always), `half-after:K` (P for
    /// iterations 1..=K, then P/2) [default: all].
    #[arg(long, value_name = "all|half|half-after:K")]
    pub alloc: Option<Alloc>,
    /// `dynamic` variant: report each iteration's time beside the serial blocked
    /// reference's (measured on rank 0 after each timed run) and its efficiency E_i.
    #[arg(long)]
    pub per_iteration: bool,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub run: Timed<42>,
}

/// Checks the options that do not depend on the matrix.
fn check_options(args: &Args) -> Result<()> {
    if args.file.is_none() && args.n == 0 {
        bad_input!("--n 0: the matrix order must be at least 1");
    }
    if args.block == Some(0) {
        bad_input!("--block 0: the block width must be at least 1");
    }
    args.run.check()?;
    crate::dynamic_run::check_options(args)?;
    Ok(())
}

/// The block width for order n and why: the cost model of `dps_dense::grain` (from n and
/// the ranks launched, within half of the node's memory) unless --block gives it; an explicit
/// width larger than n is refused, because the run would not measure the block the user
/// asked for.
fn block_width(args: &Args, n: usize, file_bytes: u64) -> Result<Choice> {
    match args.block {
        None => {
            let on_node = dps_harness::memory::ranks_on_this_node();
            let fits = |r| {
                let (rank0, other) = memory_need(args, n, r, file_bytes);
                grain::fits_in_half_the_node(rank0, other, on_node)
            };
            Ok(grain::lu_block(&grain::DEV_VM, n, ranks(args) as usize, fits))
        }
        Some(r) if r > n => bad_input!("--block {r} is larger than the matrix order n = {n}"),
        Some(r) => Ok(Choice { block: r, reason: "--block".into() }),
    }
}

/// The ranks of the run: launched, or simulated (`--simulate P`).
fn ranks(args: &Args) -> u64 {
    args.run.standard.sim.simulate.map_or_else(footprint::launched_ranks, |p| p.max(1) as u64)
}

/// What the simulator supports of the `dynamic` variant: direct execution only.
pub(crate) const SIMULATION: dps_harness::simulate::Support = dps_harness::simulate::Support {
    program: "dps-lu --variant dynamic",
    modes: &[],
    why_not: "its kernels are not marked for skipping (the stream and merge-split variants support pdexec and noalloc)",
    kernels: &[],
};

/// What the simulator supports of the stream and merge-split variants: every mode. The
/// graph's structure does not depend on the pivots, so PDEXEC charges getrf, trsm, gemm, the
/// row swaps and the copies from the platform's tables and uses identity pivots; NOALLOC
/// also leaves the matrix, the blocks and the panels out (tokens carry their sizes).
const STAGED_SIMULATION: dps_harness::simulate::Support = dps_harness::simulate::Support {
    program: "dps-lu",
    modes: &[SimMode::De, SimMode::Pdexec, SimMode::Noalloc],
    why_not: "",
    kernels: &["getrf", "trsm", "gemm", "laswp", "copy"],
};

/// Refusals of simulation options that do not depend on the matrix.
fn check_simulation(args: &Args) -> Result<()> {
    if args.run.standard.sim.simulate.is_none() {
        return Ok(());
    }
    if args.variant == Variant::Serial {
        bad_input!("--simulate: the serial variant runs no DPS graph to simulate");
    }
    let mode = args.run.standard.sim.mode();
    if args.run.standard.check.verify && mode != SimMode::De {
        bad_input!(
            "--verify: --sim-mode {} skips the factorization (identity pivots), so there is no result to verify; \
             use --sim-mode de",
            mode.name()
        );
    }
    if args.file.is_some() && mode == SimMode::Noalloc {
        bad_input!("--file: --sim-mode noalloc leaves the matrix out; give its order with --n instead");
    }
    Ok(())
}

/// Bytes the run needs on rank 0 and on every other rank, from the options alone.
/// `file_bytes` is what reading the file allocates (every rank reads it).
fn memory_need(args: &Args, n: usize, r: usize, file_bytes: u64) -> (u64, u64) {
    let m = footprint::matrix(n);
    let given = if args.file.is_some() { m } else { 0 };
    // Reading peaks at the parsed matrix plus the reader's own bookkeeping; the matrix stays.
    let source = given.max(file_bytes);
    if args.variant == Variant::Serial {
        // The source, and a fresh copy factored in place per repetition.
        return (source.saturating_add(m), 0);
    }
    let ranks = ranks(args);
    // The dynamic variant keeps the blocks on the first half of the ranks.
    let holders =
        if args.variant == Variant::Dynamic { crate::alloc::kept_ranks(ranks as usize) as u64 } else { ranks };
    let blocks = n.div_ceil(r) as u64;
    // Column blocks owned by a rank, plus panels in flight (a few per rank).
    let owned = footprint::block(n, r).saturating_mul(blocks.div_ceil(holders));
    let panels = footprint::block(n, r).saturating_mul(4);
    let other = source.saturating_add(owned).saturating_add(panels);
    // --verify on rank 0: the gathered factors (with the copies of its own blocks), the
    // matrix again, and the factors of the reference dgetrf.
    let verify = if args.run.standard.check.verify { m.saturating_mul(3).saturating_add(owned) } else { 0 };
    // --per-iteration: the serial blocked reference's copy of the matrix, on rank 0.
    let serial = if args.per_iteration { m } else { 0 };
    (other.saturating_add(verify).saturating_add(serial), other)
}

/// Reads or describes the matrix after checking the options and the memory it needs.
fn source(args: &Args) -> Result<(usize, Choice, Source)> {
    check_options(args)?;
    dps_harness::options::check_trace(&args.run.standard.runtime)?;
    let file = match &args.file {
        Some(path) => Some(MatrixFile::open(path).map_err(|e| BadInput::new(format!("--file {e}")))?),
        None => None,
    };
    let n = file.as_ref().map_or(args.n, MatrixFile::order);
    let file_bytes = file.as_ref().map_or(0, MatrixFile::bytes_needed);
    let choice = block_width(args, n, file_bytes)?;
    let (rank0, other) = memory_need(args, n, choice.block, file_bytes);
    let what = match &args.file {
        Some(path) => format!("--file {} (n = {n})", path.display()),
        None => format!("--n {n}"),
    };
    if !args.run.standard.sim.noalloc() {
        dps_harness::check_memory(&what, rank0, other)?;
    }
    let src = match file {
        Some(file) => Source::Given(Arc::new(file.read().map_err(|e| BadInput::new(format!("--file {e}")))?)),
        None => Source::Random(args.run.seed.seed),
    };
    Ok((n, choice, src))
}

/// Whether a check passes: a finite residual below 16 and the pivots of dgetrf. A NaN or an
/// infinite residual never passes.
pub fn passes(check: &kernel::Check) -> bool {
    check.residual.is_finite() && check.residual < 16.0 && check.pivots_match
}

/// Why a check failed.
pub(crate) fn failure(check: &kernel::Check) -> String {
    let mut why = Vec::new();
    if !check.residual.is_finite() {
        why.push(format!("the scaled residual is {} (a NaN or an overflow, not a number to trust)", check.residual));
    } else if check.residual >= 16.0 {
        why.push(format!("the scaled residual {:.3} is not below 16", check.residual));
    }
    if !check.pivots_match {
        why.push("the pivots differ from dgetrf's".into());
    }
    format!("verification failed: {}", why.join("; "))
}

/// The error of a matrix without LU factorization (dgetrf's `info` > 0). It is a property of
/// the matrix given, not a fault of the run, so it is reported as bad input.
pub(crate) fn singular(info: i32) -> anyhow::Error {
    BadInput::new(format!("the matrix is singular: U({info},{info}) is exactly zero")).into()
}

/// The end of a factorization on rank 0, from the pivots and dgetrf-style `info` it
/// returned: a singular matrix is an error; with `verify`, the factors `gather` brings to
/// rank 0 are checked against dgetrf's (the record says so) and a failed check is an error.
pub(crate) fn conclude(
    rt: &dps::Runtime,
    gather: &dps::Graph<(), dps::Bulk<f64>>,
    (src, n): (&Source, usize),
    (ipiv, info): (&[i32], i32),
    verify: bool,
    record: &mut Record,
) -> Result<()> {
    if info > 0 {
        return Err(singular(info));
    }
    if verify {
        let lu = rt.call(gather, ())?;
        let check = kernel::check(&src.matrix(n), n, &lu, ipiv);
        record.residual = Some(FiniteOrText(check.residual));
        record.pivots_match = Some(check.pivots_match);
        record.common.verified = Some(passes(&check));
        if !passes(&check) {
            return Err(anyhow::anyhow!(failure(&check)));
        }
    }
    Ok(())
}

/// Runs the program.
///
/// # Errors
/// Bad options or input (before any work), a singular matrix, or a failed check.
pub fn run(args: &Args) -> Result<()> {
    check_simulation(args)?;
    let (n, choice, src) = source(args)?;
    let r = choice.block;
    let variant = args.variant.to_possible_value().expect("every variant has a name").get_name().to_string();
    if args.variant == Variant::Serial {
        dps_dense::blas::set_threads(args.run.blas.blas_threads);
        let mut times = Vec::new();
        for _ in 0..args.run.repeat.runs() {
            let mut a = src.matrix(n);
            let t = Instant::now();
            let (_, info) = kernel::serial(&mut a, n);
            times.push(t.elapsed().as_secs_f64());
            if info > 0 {
                return Err(singular(info));
            }
        }
        let common =
            Common::new("lu", &variant, 1, args.run.blas.blas_threads, median(&times[args.run.repeat.warmup..]), None);
        return dps_harness::print_record(
            &Record::new(common, n, &choice, args.run.repeat.reps),
            args.run.standard.output.json,
        );
    }
    if args.variant == Variant::Dynamic {
        return crate::dynamic_run::run(args, n, &choice, src);
    }
    let how = if args.variant == Variant::Stream { Pipelining::Stream } else { Pipelining::MergeSplit };
    dps_dense::blas::one_thread_per_worker();
    let rt = args.run.standard.sim.start(&args.run.standard.runtime, &STAGED_SIMULATION)?;
    let main = rt.collection("main", "0", |_| ())?;
    let threads = rt.threads_in(&args.run.map.map)?;
    let columns = rt.collection("columns", &args.run.map.map, |t| Columns::new(n, r, src.clone(), t, threads))?;
    let panels = rt.collection("panels", "all", |_| ())?;
    let graphs = Graphs::build(&rt, (n, r), &main, &columns, &panels, how)?;
    let mut outcome = Ok(());
    if rt.is_root() {
        let mut times = Vec::new();
        let mut info = 0;
        let mut ipiv = Vec::new();
        for rep in 0..args.run.repeat.runs() {
            if rep > 0 {
                rt.call(&graphs.reload, ())?;
            }
            let t = rt.stopwatch();
            rt.call(&graphs.factor, ())?;
            (ipiv, info) = rt.call(&graphs.finish, ())?;
            times.push(t.seconds());
        }
        let common = Common::new("lu", &variant, rt.ranks(), threads, median(&times[args.run.repeat.warmup..]), None)
            .bound_by(&rt);
        let mut record = Record::new(common, n, &choice, args.run.repeat.reps);
        record.first_call_s = times.first().copied();
        outcome = conclude(&rt, &graphs.gather, (&src, n), (&ipiv, info), args.run.standard.check.verify, &mut record);
        let printed = dps_harness::print_record(&record, args.run.standard.output.json);
        outcome = outcome.and(printed);
    }
    rt.shutdown()?;
    outcome
}
