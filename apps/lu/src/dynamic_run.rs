//! The runner of the `dynamic` variant (`--alloc`, `--per-iteration`): the collections, the
//! timed runs with the coordinator's iteration stamps, the serial blocked reference per
//! iteration (alternating with the parallel runs), the check and the record.

use std::collections::BTreeSet;
use std::sync::Arc;

use anyhow::Result;
use dps_dense::grain::Choice;
use dps_harness::{bad_input, median, BadInput, Common};

use crate::alloc::{kept_ranks, Alloc, Members};
use crate::dynamic::{Clock, Coordinator, Graphs, MultCache};
use crate::graph::Columns;
use crate::iterations::{self, SerialClock};
use crate::kernel::Source;
use crate::record::Record;
use crate::run::{conclude, Args, Variant};

/// Refuses `--alloc` and `--per-iteration` outside the `dynamic` variant (they would be
/// silently ignored).
///
/// # Errors
/// A [`BadInput`] naming the option.
pub fn check_options(args: &Args) -> Result<()> {
    if args.variant != Variant::Dynamic {
        if let Some(alloc) = args.alloc {
            bad_input!("--alloc {alloc} needs --variant dynamic (the other variants have no multiplication threads)");
        }
        if args.per_iteration {
            bad_input!("--per-iteration needs --variant dynamic (the only schedule with clean iteration boundaries)");
        }
    }
    Ok(())
}

/// The run's clock: seconds since the coordinator was created, simulated under `--simulate`.
fn run_clock(rt: &dps::Runtime) -> Clock {
    let watch = rt.stopwatch();
    Arc::new(move || watch.seconds())
}

/// Runs the `dynamic` variant on a matrix already checked and described.
///
/// # Errors
/// Bad `--alloc` or `--map` (before any work), a singular matrix, or a failed check.
pub fn run(args: &Args, n: usize, choice: &Choice, src: Source) -> Result<()> {
    let r = choice.block;
    let nb = n.div_ceil(r);
    let alloc = args.alloc.unwrap_or(Alloc::All);
    alloc.check(nb).map_err(BadInput::new)?;
    let simulated = args.run.standard.sim.simulate.is_some();
    if simulated && args.run.standard.sim.mode() != dps::SimMode::De {
        bad_input!(
            "--sim-mode {}: the dynamic variant's kernels are not marked for skipping (its prediction would \
             charge them nothing); use --sim-mode de",
            args.run.standard.sim.mode().name()
        );
    }
    dps_dense::blas::one_thread_per_worker();
    let rt = args.run.standard.sim.start(&args.run.standard.runtime, &crate::run::SIMULATION)?;
    let kept = kept_ranks(rt.ranks());
    let owners: Vec<String> = (0..kept).map(|rank| rank.to_string()).collect();
    let main = rt.collection("main", "0", |_| ())?;
    let coordinator = rt.collection("coordinator", "0", |_| Coordinator::new(run_clock(&rt)))?;
    let columns = rt.collection("columns", &owners.join(" "), |t| Columns::new(n, r, src.clone(), t, kept))?;
    let mults = rt.collection("mults", &args.run.map.map, |_| MultCache::default())?;
    let rank_of: Vec<usize> = (0..mults.len()).map(|t| mults.rank_of(t)).collect();
    let members =
        Members::new(&rank_of, kept).map_err(|e| BadInput::new(format!("--map {:?}: {e}", args.run.map.map)))?;
    let graphs = Graphs::build(&rt, (n, r), &main, &coordinator, &columns, &mults, &members, alloc)?;
    let mut outcome = Ok(());
    if rt.is_root() {
        let (mut times, mut parallel, mut serial) = (Vec::new(), Vec::new(), Vec::new());
        let (mut info, mut ipiv) = (0, Vec::new());
        for rep in 0..args.run.repeat.runs() {
            if rep > 0 {
                rt.call(&graphs.reload, ())?;
            }
            let t = rt.stopwatch();
            let stamps = rt.call(&graphs.factor, ())?;
            (ipiv, info) = rt.call(&graphs.finish, ())?;
            times.push(t.seconds());
            if args.per_iteration && args.run.repeat.is_timed(rep) {
                parallel.push(iterations::durations(&stamps));
                serial.push(iterations::serial_iterations(&src, n, r, SerialClock::of_run(simulated)));
            }
        }
        let common =
            Common::new("lu", "dynamic", rt.ranks(), mults.len(), median(&times[args.run.repeat.warmup..]), None)
                .bound_by(&rt);
        let mut record = Record::new(common, n, choice, args.run.repeat.reps);
        record.first_call_s = times.first().copied();
        record.alloc = Some(alloc.to_string());
        if args.per_iteration {
            let allocation: Vec<(usize, usize)> = (0..nb)
                .map(|k| {
                    let threads = members.of(alloc, k);
                    (threads.len(), threads.iter().map(|&t| rank_of[t]).collect::<BTreeSet<_>>().len())
                })
                .collect();
            let rows =
                iterations::rows(nb, &iterations::medians(&parallel), &iterations::medians(&serial), &allocation);
            let total: f64 = rows.iter().map(|r| r.seconds).sum();
            record.serial_seconds = Some(rows.iter().map(|r| r.serial_seconds).sum());
            record.efficiency = Some(iterations::overall(&rows));
            record.first_iteration_share = rows.first().map(|r| r.seconds / total);
            record.iterations = Some(rows);
        }
        outcome = conclude(&rt, &graphs.gather, (&src, n), (&ipiv, info), args.run.standard.check.verify, &mut record);
        outcome = outcome.and(dps_harness::print_record(&record, args.run.standard.output.json));
    }
    rt.shutdown()?;
    outcome
}
