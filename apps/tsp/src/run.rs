//! The runner: executes a checked [`Plan`] on every rank: builds the search's graph, finds
//! the first tour and runs the search on rank 0, checks the tour when `--verify` is given,
//! and prints the record and writes the output files.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use dps::Runtime;
use dps_harness::simulate::Support;
use dps_harness::Common;

use crate::cli::{Cli, Plan, Variant};
use crate::graph::variants::{Fast, Thesis};
use crate::graph::{Kernel, Layout, Search, Solution, Start};
use crate::kernel::deadline::Deadline;
use crate::kernel::{heuristic, verify};
use crate::outputs::Outputs;
use crate::record::Record;

/// What the simulator supports of dps-tsp: direct execution only.
const SIMULATION: Support = Support {
    program: "dps-tsp",
    modes: &[],
    why_not: "a branch and bound's control flow depends on the data (what is pruned depends on the bounds and \
              tours found, so the work cannot be charged without doing it)",
    kernels: &[],
};

/// The program: checks the options into a plan, then executes it.
///
/// # Errors
/// Bad options (before any work) or a failed run.
pub fn run(cli: &Cli) -> Result<()> {
    execute(cli.solve.plan()?)
}

/// Executes a plan on this rank (every rank runs it; rank 0 reports). It takes the plan by
/// value: the plan owns the output files, which rank 0 writes and the other ranks drop.
///
/// # Errors
/// A failed run or a tour that fails verification.
pub fn execute(mut plan: Plan) -> Result<()> {
    let standard = &plan.standard;
    let rt = standard.sim.start(&standard.runtime, &SIMULATION)?;
    // Rank 0 writes the files. The others drop their temporary files now, not at the end:
    // mpirun kills them when rank 0 fails, and a killed rank would leave its file behind.
    let outputs = std::mem::take(&mut plan.outputs);
    let outputs = if rt.is_root() { outputs } else { Outputs::default() };
    let inst = plan.inst.clone();
    let result = match plan.variant {
        Variant::Fast => solve(&rt, &plan, Fast { inst, steps: plan.steps, cutoff: plan.cutoff })?,
        Variant::Thesis => {
            let kernel = Thesis { inst, steps: plan.steps, cutoff: plan.cutoff, crossing: plan.crossing };
            solve(&rt, &plan, kernel)?
        }
    };
    if let Some(timed) = result {
        report(&rt, &plan, &timed, outputs)?;
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
fn solve<K: Kernel>(rt: &Runtime, plan: &Plan, kernel: K) -> Result<Option<Timed>> {
    let layout = Layout { threads: plan.threads, pipeline_depth: plan.pipeline_depth };
    let search = Search::build(rt, Arc::new(kernel), layout)?;
    if !rt.is_root() {
        return Ok(None);
    }
    let start = Instant::now();
    let deadline = Deadline::after(plan.time_limit);
    let (upper, tour) = match plan.variant {
        Variant::Fast => heuristic::initial_tour(&plan.inst, plan.kicks, plan.seed, deadline),
        Variant::Thesis => (i64::MAX, Vec::new()),
    };
    let first = start.elapsed().as_secs_f64();
    let clock = rt.stopwatch();
    let solution = search.run(rt, Start { upper, tour, time_limit: deadline.remaining_seconds() })?;
    let seconds = first + clock.seconds();
    Ok(Some(Timed { solution, seconds, first_tour_seconds: first, initial: upper }))
}

/// Rank 0: checks the tour (`--verify`), prints the record and writes the output files.
fn report(rt: &Runtime, plan: &Plan, t: &Timed, outputs: Outputs) -> Result<()> {
    let (inst, s, seconds, initial) = (&plan.inst, &t.solution, t.seconds, t.initial);
    let verified = plan.standard.verify().then(|| verify(inst, &s.tour, s.length, s.complete));
    if let Some(Err(e)) = &verified {
        eprintln!("dps-tsp: verification failed: {e}");
    }
    let verified = verified.map(|v| v.is_ok());
    let record = Record {
        common: Common::new("tsp", plan.variant.name(), rt.ranks(), plan.threads, seconds, verified).bound_by(rt),
        instance: inst.name.clone(),
        n: inst.n,
        slaves: rt.ranks() * plan.threads,
        pipeline_depth: plan.pipeline_depth,
        steps: plan.steps,
        cutoff: plan.cutoff,
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
    dps_harness::print_record(&record, plan.standard.json())?;
    if verified == Some(false) {
        // A failed run leaves no output file: the temporary files are removed on drop.
        anyhow::bail!("the tour failed verification");
    }
    outputs.write(inst, s.length, &s.tour)
}
