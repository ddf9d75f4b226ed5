//! The command line: options, the run on every rank, and the report rank 0 prints.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, ValueEnum};
use dps_harness::options::{Check, Output, Seed};
use dps_harness::simulate::{Simulate, Support};
use dps_harness::{Common, OutputFile};

use crate::deadline::Deadline;
use crate::graph::{Kernel, Layout, Search, Solution, Start};
use crate::record::Record;
use crate::tsplib::{Instance, MAX_CITIES};
use crate::variants::{Fast, Thesis};
use crate::{dp, heuristic, plot, tour_io, BadInput};

/// Travelling salesman branch and bound on DPS (thesis ch. 10).
#[derive(Parser, Debug)]
#[command(name = "dps-tsp")]
#[command(mut_arg("seed", |a| a.help("Seed of `--random` (and of the local search's kicks)")))]
#[command(mut_arg("verify", |a| a.help("Check the tour independently (and against the dynamic program for n <= 12)")))]
pub struct Cli {
    /// Options of a single run.
    #[command(flatten)]
    pub solve: SolveArgs,
}

/// The search strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Variant {
    /// Held-Karp bounds, a local-search first tour, edge branching.
    Fast,
    /// The thesis's scheme as published: the bound is the partial path's cost.
    Thesis,
}

impl Variant {
    /// The variant's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Fast => "fast",
            Variant::Thesis => "thesis",
        }
    }
}

/// Options of one solve.
#[derive(clap::Args, Debug, Clone)]
pub struct SolveArgs {
    /// A TSPLIB `.tsp` file.
    #[arg(value_name = "FILE.tsp", required_unless_present = "random")]
    pub file: Option<PathBuf>,
    /// Instead of a file: N random cities in [0, 1000)² (EUC_2D).
    #[arg(long, value_name = "N", conflicts_with = "file", allow_negative_numbers = true)]
    pub random: Option<usize>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub seed: Seed<1>,
    /// Search strategy.
    #[arg(long, value_enum, default_value_t = Variant::Fast)]
    pub variant: Variant,
    /// Work per job, at least 1: search nodes (fast, default 32) or DFS steps (thesis,
    /// default 200000; the thesis's loop takes `steps - 1` steps, and at least one).
    #[arg(long, allow_negative_numbers = true)]
    pub steps: Option<u64>,
    /// fast: depth of the master's breadth-first job generation (default 3, at most 8);
    /// thesis: jobs are not split within this many cities of a tour (`CutOffDepth`, default 5).
    #[arg(long, allow_negative_numbers = true)]
    pub cutoff: Option<usize>,
    /// Jobs in flight per slave (the thesis's `PipelineDepth`), 1 to 1024.
    #[arg(long, default_value_t = 2, allow_negative_numbers = true)]
    pub pipeline_depth: usize,
    /// Slave threads per rank (the slave collection is mapped "all*THREADS"), 1 to 256.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub threads: usize,
    /// fast: iterated local search kicks for the first tour (default 20 per city).
    #[arg(long, allow_negative_numbers = true)]
    pub kicks: Option<usize>,
    /// thesis: turn off the no-crossing test (on by default for EUC_2D instances).
    #[arg(long)]
    pub no_crossing: bool,
    /// Stop after this many seconds (the first tour, the root bound and handing out jobs
    /// all stop); the tour is then not proven optimal.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub time_limit: Option<f64>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub output: Output,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub check: Check,
    /// Write the tour in TSPLIB `.tour` format.
    #[arg(long, value_name = "FILE")]
    pub tour_out: Option<PathBuf>,
    /// Draw the cities and the tour into a PNG.
    #[arg(long, value_name = "FILE.png")]
    pub plot: Option<PathBuf>,
    /// Runtime options.
    #[command(flatten)]
    pub runtime: dps::RuntimeArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub sim: Simulate,
}

/// What the simulator supports of dps-tsp: direct execution only.
const SIMULATION: Support = Support {
    program: "dps-tsp",
    modes: &[],
    why_not: "a branch and bound's control flow depends on the data (what is pruned depends on the bounds and \
              tours found, so the work cannot be charged without doing it)",
    kernels: &[],
};

/// Largest instance `--verify` compares with the dynamic program.
const DP_VERIFY_MAX: usize = 12;
/// Most slave threads per rank.
pub const MAX_THREADS: usize = 256;
/// Most jobs in flight per slave.
pub const MAX_PIPELINE_DEPTH: usize = 1024;
/// Deepest breadth-first expansion of the fast variant's master (up to 3^cutoff jobs).
pub const MAX_FAST_CUTOFF: usize = 8;
/// Longest `--time-limit`, in seconds (about 31 years; leave the option out for none).
pub const MAX_TIME_LIMIT_S: f64 = 1e9;

/// Checks the options that need no file and no memory figures: every refusal names its
/// option.
///
/// # Errors
/// A [`BadInput`] naming the option.
pub fn check_options(args: &SolveArgs) -> Result<()> {
    if !(1..=MAX_THREADS).contains(&args.threads) {
        dps_harness::bad_input!("--threads {}: give 1 to {MAX_THREADS} slave threads per rank", args.threads);
    }
    if !(1..=MAX_PIPELINE_DEPTH).contains(&args.pipeline_depth) {
        dps_harness::bad_input!(
            "--pipeline-depth {}: give 1 to {MAX_PIPELINE_DEPTH} jobs per slave",
            args.pipeline_depth
        );
    }
    if args.steps == Some(0) {
        dps_harness::bad_input!("--steps 0: a job must do at least one step");
    }
    if let (Variant::Fast, Some(c)) = (args.variant, args.cutoff) {
        if c > MAX_FAST_CUTOFF {
            dps_harness::bad_input!(
                "--cutoff {c}: the fast variant's master expands up to 3^cutoff subproblems before the slaves start; \
                 give at most {MAX_FAST_CUTOFF}"
            );
        }
    }
    if let Some(t) = args.time_limit {
        if !(t > 0.0 && t <= MAX_TIME_LIMIT_S) {
            let t = if t.abs() < 1e15 { t.to_string() } else { format!("{t:e}") };
            dps_harness::bad_input!(
                "--time-limit {t}: give a number of seconds above 0 and at most {MAX_TIME_LIMIT_S:e} (leave the option \
                 out for no limit)"
            );
        }
    }
    if let (Some(p), Some(_)) = (args.sim.simulate, args.time_limit) {
        dps_harness::bad_input!(
            "--simulate {p}: --time-limit counts wall-clock seconds, which a simulation does not follow; \
             leave it out"
        );
    }
    match (&args.file, args.random) {
        (_, Some(n)) if n < 3 => dps_harness::bad_input!("--random {n}: a tour needs at least 3 cities"),
        (None, None) => dps_harness::bad_input!("give a FILE.tsp or --random N"),
        _ => {}
    }
    Ok(())
}

/// Memory a run on `n` cities needs on rank 0 and on every other rank: the distance
/// matrix on every rank and, for the fast variant, each search's Held-Karp costs (`f64`)
/// and constraint states (`i8`), one per slave thread plus the master's (saturating).
pub fn run_bytes(n: usize, variant: Variant, threads: usize) -> (u64, u64) {
    let square = (n as u64).saturating_mul(n as u64);
    let matrix = crate::tsplib::matrix_bytes(n);
    let search = match variant {
        Variant::Fast => square.saturating_mul(9),
        Variant::Thesis => 0,
    };
    let slaves = search.saturating_mul(threads as u64);
    let other = matrix.saturating_add(slaves);
    (other.saturating_add(search), other)
}

/// Refuses (bad input) a run on `n` cities whose memory this node does not have; `what`
/// names the option or line that set `n`.
fn check_run_memory(what: &str, n: usize, args: &SolveArgs) -> Result<()> {
    let (rank0, other) = run_bytes(n, args.variant, args.threads);
    dps_harness::check_memory(what, rank0, other)
}

fn load(args: &SolveArgs) -> Result<Instance> {
    let inst = match (&args.file, args.random) {
        (_, Some(n)) => {
            check_run_memory(&format!("--random {n}"), n, args)?;
            if n > MAX_CITIES {
                dps_harness::bad_input!("--random {n}: at most {MAX_CITIES} cities are supported");
            }
            Instance::random(n, args.seed.seed)
        }
        (Some(file), None) => {
            let fits = |n: usize| check_run_memory(&format!("DIMENSION {n}"), n, args);
            Instance::read_with(file, &fits).map_err(|e| BadInput::new(e.to_string()))?
        }
        (None, None) => dps_harness::bad_input!("give a FILE.tsp or --random N"),
    };
    if args.plot.is_some() && inst.coords.is_none() {
        dps_harness::bad_input!("--plot: {} has no coordinates to draw", inst.name);
    }
    Ok(inst)
}

/// The run's output files, opened (as unnamed files in their directories) before any work.
#[derive(Default)]
struct Outputs {
    tour: Option<OutputFile>,
    plot: Option<OutputFile>,
}

impl Outputs {
    fn create(args: &SolveArgs) -> Result<Outputs> {
        dps_harness::options::check_trace(&args.runtime)?;
        let open =
            |option: &str, path: &Option<PathBuf>| path.as_ref().map(|p| OutputFile::create(option, p)).transpose();
        Ok(Outputs { tour: open("--tour-out", &args.tour_out)?, plot: open("--plot", &args.plot)? })
    }
}

/// Runs one solve on this rank (every rank runs it; rank 0 reports).
///
/// # Errors
/// [`BadInput`] for unusable input (before any MPI work), other errors for failures.
pub fn run(args: &SolveArgs) -> Result<()> {
    check_options(args)?;
    let outputs = Outputs::create(args)?;
    let inst = Arc::new(load(args)?);
    let rt = args.sim.start(&args.runtime, &SIMULATION)?;
    // Rank 0 writes the files. The others drop their temporary files now, not at the end:
    // mpirun kills them when rank 0 fails, and a killed rank would leave its file behind.
    let outputs = if rt.is_root() { outputs } else { Outputs::default() };
    let layout = Layout { threads: args.threads, pipeline_depth: args.pipeline_depth };
    let (steps, cutoff);
    let result = match args.variant {
        Variant::Fast => {
            (steps, cutoff) = (args.steps.unwrap_or(32), args.cutoff.unwrap_or(3));
            let kernel = Fast { inst: inst.clone(), steps, cutoff };
            solve(&rt, &inst, kernel, layout, args)?
        }
        Variant::Thesis => {
            (steps, cutoff) = (args.steps.unwrap_or(200_000), args.cutoff.unwrap_or(5));
            let crossing = !args.no_crossing && inst.metric == crate::distance::Metric::Euc2d;
            let kernel = Thesis { inst: inst.clone(), steps, cutoff, crossing };
            solve(&rt, &inst, kernel, layout, args)?
        }
    };
    if let Some(timed) = result {
        report(&rt, &inst, args, &timed, steps, cutoff, outputs)?;
    }
    rt.shutdown()?;
    Ok(())
}

/// A search's result and timings (rank 0).
struct Timed {
    solution: Solution,
    /// Whole run: first tour and search.
    seconds: f64,
    /// The first tour (local search).
    first_tour_seconds: f64,
    /// The first tour's length.
    initial: i64,
}

/// Builds the graph on every rank and, on rank 0, finds the first tour and runs the search;
/// `--time-limit` counts from the first tour on. The time is the first tour's (measured: it
/// runs on rank 0 before the search, in a simulation too) plus the search's on the
/// runtime's clock (simulated under `--simulate`).
fn solve<K: Kernel>(
    rt: &dps::Runtime,
    inst: &Instance,
    kernel: K,
    layout: Layout,
    args: &SolveArgs,
) -> Result<Option<Timed>> {
    let search = Search::build(rt, Arc::new(kernel), layout)?;
    if !rt.is_root() {
        return Ok(None);
    }
    let start = Instant::now();
    let deadline = Deadline::after(args.time_limit);
    let (upper, tour) = match args.variant {
        Variant::Fast => {
            let kicks = args.kicks.unwrap_or(20usize.saturating_mul(inst.n));
            heuristic::initial_tour(inst, kicks, args.seed.seed, deadline)
        }
        Variant::Thesis => (i64::MAX, Vec::new()),
    };
    let first = start.elapsed().as_secs_f64();
    let clock = rt.stopwatch();
    let solution = search.run(rt, Start { upper, tour, time_limit: deadline.remaining_seconds() })?;
    let seconds = first + clock.seconds();
    Ok(Some(Timed { solution, seconds, first_tour_seconds: first, initial: upper }))
}

#[allow(clippy::too_many_arguments)] // the report shows the run's settings
fn report(
    rt: &dps::Runtime,
    inst: &Instance,
    args: &SolveArgs,
    t: &Timed,
    steps: u64,
    cutoff: usize,
    outputs: Outputs,
) -> Result<()> {
    let (s, seconds, initial) = (&t.solution, t.seconds, t.initial);
    let verified = args.check.verify.then(|| verify(inst, s));
    if let Some(Err(e)) = &verified {
        eprintln!("dps-tsp: verification failed: {e}");
    }
    let verified = verified.map(|v| v.is_ok());
    let record = Record {
        common: Common::new("tsp", args.variant.name(), rt.ranks(), args.threads, seconds, verified).bound_by(rt),
        instance: inst.name.clone(),
        n: inst.n,
        slaves: rt.ranks() * args.threads,
        pipeline_depth: args.pipeline_depth,
        steps,
        cutoff,
        nodes_per_s: s.nodes as f64 / seconds.max(1e-9),
        length: (!s.tour.is_empty()).then_some(s.length),
        optimal: s.complete,
        nodes: s.nodes,
        jobs: s.jobs,
        idle_tokens: s.idle,
        first_tour_seconds: t.first_tour_seconds,
        initial_length: (initial != i64::MAX).then_some(initial),
        tour: s.tour.clone(),
    };
    dps_harness::print_record(&record, args.output.json)?;
    if verified == Some(false) {
        // A failed run leaves no output file: the temporary files are removed on drop.
        anyhow::bail!("the tour failed verification");
    }
    outputs.write(inst, s)
}

impl Outputs {
    /// Writes every output into its temporary file, then renames them all: a failed write
    /// (a full disk) leaves none of them behind.
    fn write(mut self, inst: &Instance, s: &Solution) -> Result<()> {
        let fill = |file: &mut OutputFile, bytes: &[u8]| {
            let path = file.path().display().to_string();
            file.file()
                .write_all(bytes)
                .and_then(|()| file.file().flush())
                .with_context(|| format!("cannot write {path}"))
        };
        if let Some(file) = &mut self.tour {
            fill(file, tour_io::to_tsplib(&inst.name, s.length, &s.tour).as_bytes())?;
        }
        if let (Some(file), Some(coords)) = (&mut self.plot, &inst.coords) {
            fill(file, &plot::png(coords, &s.tour).context("cannot draw the plot")?)?;
        }
        for file in [self.tour, self.plot].into_iter().flatten() {
            file.commit()?;
        }
        Ok(())
    }
}

/// `--verify`, failing closed: a tour was found, it visits every city once, its length
/// recomputed with checked sums is the one reported, and for small instances the dynamic
/// program (checked sums too) agrees: never shorter than the optimum, equal to it when the
/// search claims a proof.
fn verify(inst: &Instance, s: &Solution) -> Result<(), String> {
    if s.tour.is_empty() {
        return Err("no tour was found".into());
    }
    tour_io::check(inst, &s.tour, s.length)?;
    if inst.n <= DP_VERIFY_MAX {
        let (opt, _) = dp::solve(inst).map_err(|e| format!("the dynamic program failed: {e:#}"))?;
        if s.length < opt || (s.complete && opt != s.length) {
            return Err(format!("the dynamic program's optimum is {opt}, the search found {}", s.length));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn solution(length: i64, tour: Vec<usize>, complete: bool) -> Solution {
        Solution { length, tour, complete, nodes: 1, jobs: 0, idle: 0 }
    }

    /// `--verify` passes only a real tour of the reported length that the dynamic program
    /// does not contradict.
    #[test]
    fn verify_fails_closed() {
        let inst = Instance::random(8, 1);
        let (opt, tour) = dp::solve(&inst).unwrap();
        verify(&inst, &solution(opt, tour.clone(), true)).unwrap();
        assert!(verify(&inst, &solution(opt, Vec::new(), false)).is_err(), "no tour");
        assert!(verify(&inst, &solution(opt - 1, tour.clone(), false)).is_err(), "wrong length");
        assert!(verify(&inst, &solution(-opt, tour.clone(), false)).is_err(), "negative length");
        let mut twice = tour.clone();
        twice[1] = twice[2];
        assert!(verify(&inst, &solution(opt, twice, false)).is_err(), "not a permutation");
        // A longer tour claimed optimal contradicts the dynamic program.
        let mut worse = tour;
        worse.swap(1, 4);
        let len = inst.tour_length(&worse);
        if len != opt {
            assert!(verify(&inst, &solution(len, worse.clone(), true)).is_err(), "false proof");
            verify(&inst, &solution(len, worse, false)).unwrap();
        }
    }

    #[test]
    fn run_memory_saturates_instead_of_wrapping() {
        assert_eq!(run_bytes(usize::MAX, Variant::Fast, MAX_THREADS), (u64::MAX, u64::MAX));
        let (rank0, other) = run_bytes(100, Variant::Fast, 2);
        assert_eq!((rank0, other), (80_000 + 3 * 90_000, 80_000 + 2 * 90_000));
        assert_eq!(run_bytes(100, Variant::Thesis, 4), (80_000, 80_000));
    }
}
