//! The runner: executes a checked [`Plan`]: starts the runtime, builds the collections and
//! the graphs of the variant's pipeline, times the factorizations, verifies them (HPL
//! residual, pivots against dgetrf) and prints the record.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use dps::{Runtime, SimMode};
use dps_harness::simulate::Support;
use dps_harness::{median, BadInput, Common, FiniteOrText};

use crate::alloc::{kept_ranks, Alloc, Members};
use crate::cli::{Args, Plan, Variant};
use crate::graph::dynamic::{self, Clock, Coordinator, MultCache};
use crate::graph::staged::{self, Pipelining};
use crate::graph::{Columns, Graphs, Placement};
use crate::iterations::{self, SerialClock};
use crate::kernel;
use crate::record::Record;
use crate::scheduled::{Allotment, ColumnMove, Moves, ScheduleReport, Scheduled};

/// What the simulator supports of the stream and merge-split variants: every mode. The
/// graph's structure does not depend on the pivots, so PDEXEC charges getrf, trsm, gemm, the
/// row swaps and the copies from the platform's tables and uses identity pivots; NOALLOC
/// also leaves the matrix, the blocks and the panels out (tokens carry their sizes).
const STAGED_SIMULATION: Support = Support {
    program: "dps-lu",
    modes: &[SimMode::De, SimMode::Pdexec, SimMode::Noalloc],
    why_not: "",
    kernels: &["getrf", "trsm", "gemm", "laswp", "copy"],
};

/// What the simulator supports of the `dynamic` variant: direct execution only.
const DYNAMIC_SIMULATION: Support = Support {
    program: "dps-lu --variant dynamic",
    modes: &[],
    why_not: "its kernels are not marked for skipping (the stream and merge-split variants support pdexec and noalloc)",
    kernels: &[],
};

/// The program: checks the options into a plan, then executes it.
///
/// # Errors
/// Bad options or input (before any work), a singular matrix, or a failed check.
pub fn run(args: &Args) -> Result<()> {
    execute(&args.plan()?)
}

/// Executes a plan: the serial variant in this process, the others on the DPS runtime.
///
/// # Errors
/// A bad `--map` (found by the runtime), a failed run, a singular matrix, or a failed check.
pub fn execute(plan: &Plan) -> Result<()> {
    match plan.variant {
        Variant::Serial => run_serial(plan),
        Variant::Stream => run_staged(plan, Pipelining::Stream),
        Variant::MergeSplit => run_staged(plan, Pipelining::MergeSplit),
        Variant::Dynamic => run_dynamic(plan),
    }
}

/// LAPACK dgetrf on the whole matrix, `--blas-threads` threads, a fresh copy per run.
fn run_serial(plan: &Plan) -> Result<()> {
    let n = plan.n;
    dps_dense::blas::set_threads(plan.blas_threads);
    let mut times = Vec::new();
    for _ in 0..plan.repeat.runs() {
        let mut a = plan.source.matrix(n);
        let t = Instant::now();
        let (_, info) = kernel::serial(&mut a, n);
        times.push(t.elapsed().as_secs_f64());
        if info > 0 {
            return Err(singular(info));
        }
    }
    let seconds = median(&times[plan.repeat.warmup..]);
    let common = Common::new("lu", &plan.variant.name(), 1, plan.blas_threads, seconds, None);
    dps_harness::print_record(&Record::new(common, plan.blocking, &plan.block, plan.repeat.reps), plan.standard.json())
}

/// The stream and merge-split variants: the staged pipeline, the column blocks on the
/// threads of `--map`, a collector thread on every rank.
fn run_staged(plan: &Plan, how: Pipelining) -> Result<()> {
    let blocking = plan.blocking;
    dps_dense::blas::one_thread_per_worker();
    let rt = plan.standard.sim.start(&plan.standard.runtime, &STAGED_SIMULATION)?;
    let main = rt.collection("main", "0", |_| ())?;
    let threads = rt.threads_in(&plan.map)?;
    let columns =
        rt.collection("columns", &plan.map, |t| Columns::new(blocking, Placement::Snake, &plan.source, t, threads))?;
    let panels = rt.collection("panels", "all", |_| ())?;
    let graphs = staged::build(&rt, blocking, &plan.source, &main, &columns, &panels, how)?;
    let mut outcome = Ok(());
    if rt.is_root() {
        let factor = || Ok(rt.call(&graphs.factor, ())?);
        let (mut record, pivots) = factorize(plan, &rt, &graphs, threads, || Ok(()), factor, |_, _| ())?;
        outcome = conclude(plan, &rt, &graphs, pivots, &mut record);
        outcome = outcome.and(dps_harness::print_record(&record, plan.standard.json()));
    }
    rt.shutdown()?;
    outcome
}

/// The dynamic variant: the dynamic pipeline, the column blocks on `--column-ranks` (by
/// default the ranks `--alloc half` keeps), the multiplications on the threads of `--map`,
/// each iteration on those `--alloc` gives it (`schedule`: the layered scheduler, switching
/// at `--withdraw`, the withdrawn rank's column thread moved to a rank that stays); with
/// `--per-iteration`, each timed run is followed by the serial blocked reference on rank 0.
fn run_dynamic(plan: &Plan) -> Result<()> {
    let (n, r, nb, alloc) = (plan.n, plan.block.block, plan.blocks(), plan.alloc);
    let simulated = plan.standard.simulated_ranks().is_some();
    dps_dense::blas::one_thread_per_worker();
    let rt = plan.standard.sim.start(&plan.standard.runtime, &DYNAMIC_SIMULATION)?;
    let kept = kept_ranks(rt.ranks());
    let main = rt.collection("main", "0", |_| ())?;
    let mults = rt.collection("mults", &plan.map, |_| MultCache::default())?;
    let rank_of: Vec<usize> = (0..mults.len()).map(|t| mults.rank_of(t)).collect();
    let map_error = |e| BadInput::new(format!("--map {:?}: {e}", plan.map));
    // A host named by --withdraw is known by its rank only now.
    let withdraw = plan.withdraw.as_ref().map(|w| w.resolve(rt.hosts(), nb)).transpose().map_err(BadInput::new)?;
    let (allotment, scheduled) = match (alloc, plan.costs) {
        (Alloc::Schedule, Some(costs)) => {
            let scheduled = Arc::new(Scheduled::compute(nb, r, rt.ranks(), costs));
            (Allotment::scheduled(scheduled.clone(), &rank_of, withdraw).map_err(map_error)?, Some(scheduled))
        }
        _ => {
            let members = Members::new(&rank_of, kept).map_err(map_error)?;
            (Allotment::fixed((0..nb).map(|k| members.of(alloc, k).to_vec()).collect()), None)
        }
    };
    let allotment = Arc::new(allotment);
    let coordinator = rt.collection("coordinator", "0", |_| Coordinator::new(run_clock(&rt), allotment.clone()))?;
    // Column thread t on rank t; a withdrawn rank's thread moves at its iteration.
    let holders = plan.column_ranks;
    let owners: Vec<String> = (0..holders).map(|rank| rank.to_string()).collect();
    let moves = withdraw.map_or_else(Vec::new, |w| ColumnMove::plan(w, rt.ranks(), holders, (n, r)));
    let columns_state = |t| Columns::new(plan.blocking, Placement::Cyclic, &plan.source, t, holders);
    let columns = match moves.is_empty() {
        true => rt.collection("columns", &owners.join(" "), columns_state)?,
        false => rt.movable_collection("columns", &owners.join(" "), columns_state)?,
    };
    let cut = withdraw.filter(|_| !moves.is_empty()).map(|w| w.iteration - 1);
    let (graphs, halves) =
        dynamic::build(&rt, plan.blocking, &plan.source, &main, &coordinator, &columns, &mults, &allotment, cut)?;
    let mut outcome = Ok(());
    if rt.is_root() {
        let (mut parallel, mut serial) = (Vec::new(), Vec::new());
        let away: Vec<(usize, usize)> = moves.iter().map(|m| (m.thread, m.to)).collect();
        let home: Vec<(usize, usize)> = moves.iter().map(|m| (m.thread, m.from)).collect();
        let moved = std::cell::Cell::new(false);
        let mut move_s = Vec::new();
        // Before a factorization: the moved threads go home (untimed), so that each starts
        // on all ranks.
        let reset = || {
            if moved.replace(false) {
                rt.migrate_each(&columns, &home)?;
            }
            Ok(())
        };
        // With moves: the iterations before the withdrawal, the moves (timed on the run's
        // clock) while no token is on its way to the columns, then the iterations left.
        let factor = || -> Result<(Vec<f64>, Option<f64>)> {
            let Some(h) = &halves else { return Ok((rt.call(&graphs.factor, ())?, None)) };
            let step = rt.call(&h.head, ())?;
            let t = rt.stopwatch();
            rt.migrate_each(&columns, &away)?;
            moved.set(true);
            let seconds = t.seconds();
            Ok((rt.call(&h.tail, step)?, Some(seconds)))
        };
        let (mut record, pivots) = factorize(plan, &rt, &graphs, mults.len(), reset, factor, |rep, (stamps, s)| {
            if plan.repeat.is_timed(rep) {
                move_s.extend(s);
            }
            if plan.per_iteration && plan.repeat.is_timed(rep) {
                parallel.push(iterations::durations(&stamps));
                serial.push(iterations::serial_iterations(&plan.source, plan.blocking, SerialClock::of_run(simulated)));
            }
        })?;
        record.alloc = Some(alloc.to_string());
        let moved =
            Moves { moves, seconds: (!move_s.is_empty()).then(|| median(&move_s)), comm: plan.costs.map(|c| c.comm) };
        record.schedule = scheduled.map(|s| ScheduleReport::new(&s, &allotment, &rank_of, withdraw, moved));
        if plan.per_iteration {
            let allocation: Vec<(usize, usize)> = allotment
                .rows()
                .iter()
                .map(|threads| (threads.len(), threads.iter().map(|&t| rank_of[t]).collect::<BTreeSet<_>>().len()))
                .collect();
            let rows =
                iterations::rows(nb, &iterations::medians(&parallel), &iterations::medians(&serial), &allocation);
            let total: f64 = rows.iter().map(|r| r.seconds).sum();
            record.serial_seconds = Some(rows.iter().map(|r| r.serial_seconds).sum());
            record.efficiency = Some(iterations::overall(&rows));
            record.first_iteration_share = rows.first().map(|r| r.seconds / total);
            record.iterations = Some(rows);
        }
        outcome = conclude(plan, &rt, &graphs, pivots, &mut record);
        outcome = outcome.and(dps_harness::print_record(&record, plan.standard.json()));
    }
    rt.shutdown()?;
    outcome
}

/// The run's clock: seconds since the coordinator was created, simulated under `--simulate`.
fn run_clock(rt: &Runtime) -> Clock {
    let watch = rt.stopwatch();
    Arc::new(move || watch.seconds())
}

/// The warm-up and timed factorizations on rank 0 (each a call of `factor`), the matrix
/// reloaded before each but the first (after `reset`), timed on the runtime's clock
/// (simulated under `--simulate`); `after` gets each run's index and what `factor` returned, once its time is taken. Returns the
/// record (the median of the timed runs and the first run's time) and the last run's
/// global pivots and dgetrf-style `info`.
fn factorize<T, U>(
    plan: &Plan,
    rt: &Runtime,
    graphs: &Graphs<T>,
    threads: usize,
    mut reset: impl FnMut() -> Result<()>,
    mut factor: impl FnMut() -> Result<U>,
    mut after: impl FnMut(usize, U),
) -> Result<(Record, (Vec<i32>, i32))> {
    let mut times = Vec::new();
    let mut pivots = (Vec::new(), 0);
    for rep in 0..plan.repeat.runs() {
        if rep > 0 {
            reset()?;
            rt.call(&graphs.reload, ())?;
        }
        let t = rt.stopwatch();
        let out = factor()?;
        pivots = rt.call(&graphs.finish, ())?;
        times.push(t.seconds());
        after(rep, out);
    }
    let seconds = median(&times[plan.repeat.warmup..]);
    let common = Common::new("lu", &plan.variant.name(), rt.ranks(), threads, seconds, None).bound_by(rt);
    let mut record = Record::new(common, plan.blocking, &plan.block, plan.repeat.reps);
    record.first_call_s = times.first().copied();
    Ok((record, pivots))
}

/// The end of a factorization on rank 0, from the pivots and dgetrf-style `info` it
/// returned: a singular matrix is an error; with `--verify`, the factors `gather` brings to
/// rank 0 are checked against dgetrf's (the record says so) and a failed check is an error.
fn conclude<T>(
    plan: &Plan,
    rt: &Runtime,
    graphs: &Graphs<T>,
    (ipiv, info): (Vec<i32>, i32),
    record: &mut Record,
) -> Result<()> {
    if info > 0 {
        return Err(singular(info));
    }
    if plan.standard.verify() {
        let n = plan.n;
        let lu = rt.call(&graphs.gather, ())?;
        let check = kernel::check(&plan.source.matrix(n), n, &lu, &ipiv);
        record.residual = Some(FiniteOrText(check.residual));
        record.pivots_match = Some(check.pivots_match);
        record.common.verified = Some(passes(&check));
        if !passes(&check) {
            return Err(anyhow::anyhow!(failure(&check)));
        }
    }
    Ok(())
}

/// Whether a check passes: a finite residual below 16 and the pivots of dgetrf. A NaN or an
/// infinite residual never passes.
pub fn passes(check: &kernel::Check) -> bool {
    check.residual.is_finite() && check.residual < 16.0 && check.pivots_match
}

/// Why a check failed.
fn failure(check: &kernel::Check) -> String {
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
fn singular(info: i32) -> anyhow::Error {
    BadInput::new(format!("the matrix is singular: U({info},{info}) is exactly zero")).into()
}
