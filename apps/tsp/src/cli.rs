//! The command line: options, the run on every rank, and the report rank 0 prints.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use serde_json::json;

use crate::graph::{Kernel, Layout, Search, Solution, Start};
use crate::tsplib::Instance;
use crate::variants::{Fast, Thesis};
use crate::{dp, heuristic, plot, tour_io, BadInput};

/// Travelling salesman branch and bound on DPS (thesis ch. 10).
#[derive(Parser, Debug)]
#[command(name = "dps-tsp", args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// `bench`: the TSPLIB table on 1 and 2 ranks.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options of a single run.
    #[command(flatten)]
    pub solve: SolveArgs,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Solves every instance of a directory on 1 and 2 ranks and writes a markdown table.
    Bench(crate::bench::BenchArgs),
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
    fn name(self) -> &'static str {
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
    #[arg(long, value_name = "N", conflicts_with = "file")]
    pub random: Option<usize>,
    /// Seed of `--random` (and of the local search's kicks).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Search strategy.
    #[arg(long, value_enum, default_value_t = Variant::Fast)]
    pub variant: Variant,
    /// Work per job: search nodes (fast, default 32) or DFS steps (thesis, default 200000).
    #[arg(long)]
    pub steps: Option<u64>,
    /// fast: depth of the master's breadth-first job generation (default 3); thesis: jobs
    /// are not split within this many cities of a tour (`CutOffDepth`, default 5).
    #[arg(long)]
    pub cutoff: Option<usize>,
    /// Jobs in flight per slave (the thesis's `PipelineDepth`).
    #[arg(long, default_value_t = 2)]
    pub pipeline_depth: usize,
    /// Slave threads per rank (the slave collection is mapped "all*THREADS").
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// fast: iterated local search kicks for the first tour (default 20 per city).
    #[arg(long)]
    pub kicks: Option<usize>,
    /// thesis: turn off the no-crossing test (on by default for EUC_2D instances).
    #[arg(long)]
    pub no_crossing: bool,
    /// Stop handing out jobs after this many seconds; the tour is then not proven optimal.
    #[arg(long, value_name = "SECONDS")]
    pub time_limit: Option<f64>,
    /// Print one JSON object on rank 0.
    #[arg(long)]
    pub json: bool,
    /// Check the tour independently (and against the dynamic program for n <= 12).
    #[arg(long)]
    pub verify: bool,
    /// Write the tour in TSPLIB `.tour` format.
    #[arg(long, value_name = "FILE")]
    pub tour_out: Option<PathBuf>,
    /// Draw the cities and the tour into a PNG.
    #[arg(long, value_name = "FILE.png")]
    pub plot: Option<PathBuf>,
    /// Runtime options.
    #[command(flatten)]
    pub runtime: dps::RuntimeArgs,
}

/// Largest instance `--verify` compares with the dynamic program.
const DP_VERIFY_MAX: usize = 12;

fn load(args: &SolveArgs) -> Result<Instance> {
    let bad = |m: String| anyhow::Error::new(BadInput(m));
    if args.threads == 0 || args.pipeline_depth == 0 {
        return Err(bad("--threads and --pipeline-depth must be at least 1".into()));
    }
    let inst = match (&args.file, args.random) {
        (_, Some(n)) if n < 3 => return Err(bad(format!("--random {n}: a tour needs at least 3 cities"))),
        (_, Some(n)) => Instance::random(n, args.seed),
        (Some(file), None) => Instance::read(file).map_err(|e| bad(e.to_string()))?,
        (None, None) => return Err(bad("give a FILE.tsp or --random N".into())),
    };
    if inst.n > u16::MAX as usize {
        return Err(bad(format!("{} cities: at most {} are supported", inst.n, u16::MAX)));
    }
    if args.plot.is_some() && inst.coords.is_none() {
        return Err(bad(format!("--plot: {} has no coordinates to draw", inst.name)));
    }
    Ok(inst)
}

/// Runs one solve on this rank (every rank runs it; rank 0 reports).
///
/// # Errors
/// [`BadInput`] for unusable input (before any MPI work), other errors for failures.
pub fn run(args: &SolveArgs) -> Result<()> {
    let inst = Arc::new(load(args)?);
    let rt = args.runtime.start()?;
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
        report(&rt, &inst, args, &timed, steps, cutoff)?;
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

/// Builds the graph on every rank and, on rank 0, finds the first tour and runs the search.
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
    let (upper, tour) = match args.variant {
        Variant::Fast => heuristic::initial_tour(inst, args.kicks.unwrap_or(20 * inst.n), args.seed),
        Variant::Thesis => (i64::MAX, Vec::new()),
    };
    let first = start.elapsed().as_secs_f64();
    let solution = search.run(rt, Start { upper, tour, time_limit: args.time_limit })?;
    Ok(Some(Timed { solution, seconds: start.elapsed().as_secs_f64(), first_tour_seconds: first, initial: upper }))
}

fn report(rt: &dps::Runtime, inst: &Instance, args: &SolveArgs, t: &Timed, steps: u64, cutoff: usize) -> Result<()> {
    let (s, seconds, initial) = (&t.solution, t.seconds, t.initial);
    let verified = args.verify.then(|| verify(inst, s));
    if let Some(Err(e)) = &verified {
        eprintln!("dps-tsp: verification failed: {e}");
    }
    let verified = verified.map(|v| v.is_ok());
    let rate = s.nodes as f64 / seconds.max(1e-9);
    if args.json {
        let j = json!({
            "app": "tsp", "variant": args.variant.name(), "instance": inst.name, "n": inst.n,
            "ranks": rt.ranks(), "threads": args.threads, "slaves": rt.ranks() * args.threads,
            "pipeline_depth": args.pipeline_depth, "steps": steps, "cutoff": cutoff,
            "seconds": seconds, "nodes_per_s": rate, "verified": verified,
            "length": (!s.tour.is_empty()).then_some(s.length), "optimal": s.complete, "nodes": s.nodes, "jobs": s.jobs, "idle_tokens": s.idle,
            "first_tour_seconds": t.first_tour_seconds,
            "initial_length": (initial != i64::MAX).then_some(initial),
        });
        println!("{j}");
    } else {
        let status = match (s.tour.is_empty(), s.complete) {
            (true, _) => "(no tour found before the time limit)",
            (false, true) => "optimal (proven)",
            (false, false) => "not proven optimal (time limit)",
        };
        let check = match verified {
            Some(true) => ", verified",
            Some(false) => ", VERIFICATION FAILED",
            None => "",
        };
        println!(
            "{}: {} cities, length {} {status}, {} nodes, {} jobs, {} ranks x {} slave threads, {seconds:.3} s ({rate:.0} nodes/s){check}",
            inst.name,
            inst.n,
            if s.tour.is_empty() { "-".to_string() } else { s.length.to_string() },
            s.nodes,
            s.jobs,
            rt.ranks(),
            args.threads
        );
        let cities: Vec<String> = s.tour.iter().map(|c| (c + 1).to_string()).collect();
        println!("tour: {}", cities.join(" "));
    }
    if let Some(path) = &args.tour_out {
        std::fs::write(path, tour_io::to_tsplib(&inst.name, s.length, &s.tour))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let (Some(path), Some(coords)) = (&args.plot, &inst.coords) {
        plot::draw(coords, &s.tour, path).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if verified == Some(false) {
        anyhow::bail!("the tour failed verification");
    }
    Ok(())
}

/// `--verify`: the tour is a permutation of the stated length, and optimal by the dynamic
/// program for small instances.
fn verify(inst: &Instance, s: &Solution) -> Result<(), String> {
    if s.tour.is_empty() {
        return Err("no tour was found".into());
    }
    tour_io::check(inst, &s.tour, s.length)?;
    if inst.n <= DP_VERIFY_MAX {
        let (opt, _) = dp::solve(inst);
        if s.complete && opt != s.length {
            return Err(format!("the dynamic program's optimum is {opt}, the search found {}", s.length));
        }
    }
    Ok(())
}
