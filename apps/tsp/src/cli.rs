//! The command line: the options, parsed and checked once into a [`Plan`] before any work
//! (bad input exits 2 here: the options, the output files, the instance and the memory it
//! needs); nothing past this module sees the raw options.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use clap::{Parser, ValueEnum};
use dps_harness::options::{Seed, Standard};
use dps_harness::{bad_input, BadInput};

use crate::kernel::distance::Metric;
use crate::kernel::instance::{matrix_bytes, Instance, MAX_CITIES};
use crate::outputs::Outputs;
use crate::tsplib;

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
    /// `--seed`.
    #[command(flatten)]
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
    /// Write the tour in TSPLIB `.tour` format.
    #[arg(long, value_name = "FILE")]
    pub tour_out: Option<PathBuf>,
    /// Draw the cities and the tour into a PNG.
    #[arg(long, value_name = "FILE.png")]
    pub plot: Option<PathBuf>,
    /// `--verify`, `--json`, the runtime's and the simulator's options.
    #[command(flatten)]
    pub standard: Standard,
}

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
fn check_options(args: &SolveArgs) -> Result<()> {
    if !(1..=MAX_THREADS).contains(&args.threads) {
        bad_input!("--threads {}: give 1 to {MAX_THREADS} slave threads per rank", args.threads);
    }
    if !(1..=MAX_PIPELINE_DEPTH).contains(&args.pipeline_depth) {
        bad_input!("--pipeline-depth {}: give 1 to {MAX_PIPELINE_DEPTH} jobs per slave", args.pipeline_depth);
    }
    if args.steps == Some(0) {
        bad_input!("--steps 0: a job must do at least one step");
    }
    if let (Variant::Fast, Some(c)) = (args.variant, args.cutoff) {
        if c > MAX_FAST_CUTOFF {
            bad_input!(
                "--cutoff {c}: the fast variant's master expands up to 3^cutoff subproblems before the slaves start; \
                 give at most {MAX_FAST_CUTOFF}"
            );
        }
    }
    if let Some(t) = args.time_limit {
        if !(t > 0.0 && t <= MAX_TIME_LIMIT_S) {
            let t = if t.abs() < 1e15 { t.to_string() } else { format!("{t:e}") };
            bad_input!(
                "--time-limit {t}: give a number of seconds above 0 and at most {MAX_TIME_LIMIT_S:e} (leave the option \
                 out for no limit)"
            );
        }
    }
    if let (Some(p), Some(_)) = (args.standard.sim.simulate, args.time_limit) {
        bad_input!(
            "--simulate {p}: --time-limit counts wall-clock seconds, which a simulation does not follow; \
             leave it out"
        );
    }
    match (&args.file, args.random) {
        (_, Some(n)) if n < 3 => bad_input!("--random {n}: a tour needs at least 3 cities"),
        (None, None) => bad_input!("give a FILE.tsp or --random N"),
        _ => {}
    }
    Ok(())
}

/// Memory a run on `n` cities needs on rank 0 and on every other rank: the distance
/// matrix on every rank and, for the fast variant, each search's Held-Karp costs (`f64`)
/// and constraint states (`i8`), one per slave thread plus the master's (saturating).
fn run_bytes(n: usize, variant: Variant, threads: usize) -> (u64, u64) {
    let square = (n as u64).saturating_mul(n as u64);
    let matrix = matrix_bytes(n);
    let search = match variant {
        Variant::Fast => square.saturating_mul(9),
        Variant::Thesis => 0,
    };
    let slaves = search.saturating_mul(threads as u64);
    let other = matrix.saturating_add(slaves);
    (other.saturating_add(search), other)
}

/// A checked run: the instance loaded, every option validated and every default chosen.
#[derive(Debug)]
pub struct Plan {
    /// The instance (read, or random).
    pub inst: Arc<Instance>,
    /// The search strategy.
    pub variant: Variant,
    /// Work per job: search nodes (fast) or DFS steps (thesis).
    pub steps: u64,
    /// fast: depth of the master's breadth-first job generation; thesis: the `CutOffDepth`.
    pub cutoff: usize,
    /// fast: the local search's kicks for the first tour.
    pub kicks: usize,
    /// thesis: whether the no-crossing test is on (EUC_2D instances, unless turned off).
    pub crossing: bool,
    /// Slave threads per rank.
    pub threads: usize,
    /// Jobs in flight per slave.
    pub pipeline_depth: usize,
    /// Seed of the local search's kicks (and of `--random`, already used).
    pub seed: u64,
    /// Seconds after which the search stops (`None`: no limit).
    pub time_limit: Option<f64>,
    /// The output files, opened.
    pub outputs: Outputs,
    /// `--verify`, `--json`, the runtime's and the simulator's options.
    pub standard: Standard,
}

impl SolveArgs {
    /// Checks every option, opens the output files and loads the instance (bad input, before
    /// any work), in this order: the options alone (`check_options`), the files written
    /// (`--trace`, `--tour-out`, `--plot`), then the instance with the memory its run needs.
    ///
    /// # Errors
    /// A [`BadInput`] naming the option, the file or its line.
    pub fn plan(&self) -> Result<Plan> {
        check_options(self)?;
        self.standard.check()?;
        let outputs = Outputs::create(&self.tour_out, &self.plot)?;
        let inst = self.load()?;
        let (steps, cutoff) = match self.variant {
            Variant::Fast => (self.steps.unwrap_or(32), self.cutoff.unwrap_or(3)),
            Variant::Thesis => (self.steps.unwrap_or(200_000), self.cutoff.unwrap_or(5)),
        };
        Ok(Plan {
            variant: self.variant,
            steps,
            cutoff,
            kicks: self.kicks.unwrap_or(20usize.saturating_mul(inst.n)),
            crossing: !self.no_crossing && inst.metric == Metric::Euc2d,
            threads: self.threads,
            pipeline_depth: self.pipeline_depth,
            seed: self.seed.seed,
            time_limit: self.time_limit,
            outputs,
            standard: self.standard.clone(),
            inst: Arc::new(inst),
        })
    }

    /// Refuses (bad input) a run on `n` cities whose memory this node does not have; `what`
    /// names the option or line that set `n`.
    fn check_run_memory(&self, what: &str, n: usize) -> Result<()> {
        let (rank0, other) = run_bytes(n, self.variant, self.threads);
        dps_harness::check_memory(what, rank0, other)
    }

    /// The instance: `--random N` cities, or the file read with the run's memory as its
    /// DIMENSION check.
    fn load(&self) -> Result<Instance> {
        let inst = match (&self.file, self.random) {
            (_, Some(n)) => {
                self.check_run_memory(&format!("--random {n}"), n)?;
                if n > MAX_CITIES {
                    bad_input!("--random {n}: at most {MAX_CITIES} cities are supported");
                }
                Instance::random(n, self.seed.seed)
            }
            (Some(file), None) => {
                let fits = |n: usize| self.check_run_memory(&format!("DIMENSION {n}"), n);
                tsplib::read_with(file, &fits).map_err(|e| BadInput::new(e.to_string()))?
            }
            (None, None) => bad_input!("give a FILE.tsp or --random N"),
        };
        if self.plot.is_some() && inst.coords.is_none() {
            bad_input!("--plot: {} has no coordinates to draw", inst.name);
        }
        Ok(inst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_memory_saturates_instead_of_wrapping() {
        assert_eq!(run_bytes(usize::MAX, Variant::Fast, MAX_THREADS), (u64::MAX, u64::MAX));
        let (rank0, other) = run_bytes(100, Variant::Fast, 2);
        assert_eq!((rank0, other), (80_000 + 3 * 90_000, 80_000 + 2 * 90_000));
        assert_eq!(run_bytes(100, Variant::Thesis, 4), (80_000, 80_000));
    }
}
