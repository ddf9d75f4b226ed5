//! Runs `median`: exchange-process-and-store timed from rank 0, its output committed to the
//! store, verified against the serial whole-image median; or the serial variant alone.

use std::time::Instant;

use anyhow::{bail, Result};
use dps::SimMode;
use dps_harness::simulate::Support;
use dps_harness::{median as median_of, Common};

use super::input::Input;
use super::job::{self, Job};
use super::verdict;
use crate::cli::median::{MedianPlan, MedianVariant};
use crate::cli::source::{SourcePlan, Storage};
use crate::graph::exchange::ExchangeReport;
use crate::graph::Control;
use crate::kernel::median;
use crate::layout::Tiling;
use crate::record::Record;
use crate::store::{self, generation, Generation};

/// What the simulator supports of `median`: DE, PDEXEC with the median charged from the
/// platform's `median` table (the control flow never depends on the pixels), and NOALLOC
/// (PDEXEC with the image and every tile left out: only their sizes travel).
const SIMULATION: Support = Support {
    program: "dps-filter median",
    modes: &[SimMode::Pdexec, SimMode::Noalloc],
    why_not: "",
    kernels: &["median"],
};

/// Executes a `median` plan.
///
/// # Errors
/// Bad input (the input checked on every rank), a failed run or store, a failed
/// verification.
pub(super) fn execute(plan: &MedianPlan) -> Result<()> {
    if plan.variant == MedianVariant::Serial {
        return serial(plan);
    }
    let (rt, threads) = job::start(&plan.standard, &SIMULATION, &plan.map)?;
    let noalloc = plan.standard.sim.noalloc();
    let footprint = plan.footprint(rt.ranks(), threads);
    let (checked, input) = Input::prepare(&plan.source, &footprint, rt.rank(), noalloc)?;
    plan.check_input(&checked, rt.is_root())?;
    if let (Some(note), true) = (plan.tile_count_note(&checked), rt.is_root()) {
        eprintln!("dps-filter: note: {note}");
    }
    let cache = plan.cache(&checked, threads);
    let job = job::build(rt, &plan.map, &input, (&plan.source.name, &plan.out_name), cache, plan.in_flight)?;
    let outcome = if job.rt.is_root() { drive(plan, &job, &input, cache) } else { Ok(()) };
    job::end(job, outcome)
}

/// The timed runs of the median.
struct Runs {
    times: Vec<f64>,
    serial_times: Vec<f64>,
    first_call: Option<f64>,
    last: ExchangeReport,
}

fn drive(plan: &MedianPlan, job: &Job, input: &Input, cache: usize) -> Result<()> {
    let tiling = input.meta.tiling();
    let (rt, g) = (&job.rt, &job.graphs);
    // A stored output is committed by its metadata once every run is done: until then, and
    // whatever fails, readers see the older output of the name, if any.
    let generation = Generation::fresh();
    let stored = match (&input.dir, &input.scratch) {
        (Some(dir), None) => Some(dir),
        _ => None,
    };
    let out_name = &plan.out_name;
    let runs = run_median(plan, job, input, generation).and_then(|runs| {
        if let Some(dir) = stored {
            store::commit(dir, out_name, &input.meta.with_generation(generation))?;
        }
        Ok(runs)
    });
    if let (Err(_), Some(dir)) = (&runs, stored) {
        // Best effort: an uncommitted generation is never read, and the next write removes it.
        let _ = generation::remove_generation(dir, out_name, generation);
    }
    let Runs { times, serial_times, first_call, last: report } = runs?;
    let seconds = median_of(&times);
    let per_node = tiles_per_node(&tiling, job.threads);
    let max_tiles = per_node.iter().copied().max().unwrap_or(0);
    let ns =
        |v: &[u64]| if v.is_empty() { 0.0 } else { median_of(&v.iter().map(|&x| x as f64 * 1e-9).collect::<Vec<_>>()) };
    let (t_p, t_dr, t_dw) = (ns(&report.compute_ns), ns(&report.read_ns), ns(&report.write_ns));
    let model = t_dr + max_tiles as f64 * t_p + t_dw;
    let common = Common::new("filter", "exchange", rt.ranks(), job.threads, seconds, None).bound_by(rt);
    let mpix_per_s = (tiling.width * tiling.height) as f64 / seconds / 1e6;
    let mut record = Record {
        window: Some(job.window),
        max_in_flight: Some(report.max_in_flight),
        tiles_max_per_node: Some(max_tiles),
        reads: Some(report.reads),
        reads_per_tile: Some(report.reads as f64 / report.tiles as f64),
        requests: Some(report.requests),
        cache_tiles: Some(if input.dir.is_some() { cache } else { 0 }),
        t_p_s: Some(t_p),
        t_dr_s: Some(t_dr),
        t_dw_s: Some(t_dw),
        model_seconds: Some(model),
        first_call_s: first_call,
        model_speedup: Some(tiling.count() as f64 * t_p / model),
        filter: Some("median5".into()),
        serial_mpix_per_s: (!serial_times.is_empty())
            .then(|| (tiling.width * tiling.height) as f64 / median_of(&serial_times) / 1e6),
        ..Record::new(common, &tiling, input.label(), mpix_per_s, report.tiles)
    };
    let mut outcome = Ok(());
    if plan.standard.verify() {
        let got = rt.call(&g.collect, tiling)?.map_err(|why| anyhow::anyhow!("verification: {why}"))?;
        let source = input.whole(&plan.source.name)?;
        let want = median::median_image(&source.data, tiling.width, tiling.height);
        outcome = verdict(&got, &want, tiling.width, &mut record);
    }
    let printed = dps_harness::print_record(&record, plan.standard.json());
    outcome.and(printed)
}

/// Runs the median `--warmup` + `--reps` times, each run's output in files of `generation`.
fn run_median(plan: &MedianPlan, job: &Job, input: &Input, generation: Generation) -> Result<Runs> {
    let tiling = input.meta.tiling();
    let (rt, g) = (&job.rt, &job.graphs);
    let mut times = Vec::new();
    let mut serial_times = Vec::new();
    let (mut last, mut first_call) = (None, None);
    let serial_input = if plan.compare_serial { Some(input.whole(&plan.source.name)?) } else { None };
    for run in 0..plan.repeat.runs() {
        rt.call(&g.control, (tiling.disks, Control::Reset(generation)))?;
        let t = rt.stopwatch();
        let report = rt.call(&g.exchange, tiling)?;
        let seconds = t.seconds();
        first_call = first_call.or(Some(seconds));
        let failed = rt.call(&g.control, (tiling.disks, Control::Commit))?;
        if let Some(first) = failed.first() {
            let more = match failed.len() {
                1 => String::new(),
                n => format!(" (and {} more disks failed)", n - 1),
            };
            bail!("{first}{more}; the output was not replaced");
        }
        if report.tiles != tiling.count() {
            bail!("{} tiles processed, the image has {}", report.tiles, tiling.count());
        }
        // The runtime pulls one token ahead of the window (to learn early that a split is
        // over): created, not sent.
        if report.max_in_flight > job.window + 1 {
            bail!("{} tiles were created and not merged at once, the window is {}", report.max_in_flight, job.window);
        }
        if plan.repeat.is_timed(run) {
            times.push(seconds);
            last = Some(report);
            if let Some(image) = &serial_input {
                let t = Instant::now();
                std::hint::black_box(median::median_image(&image.data, image.width, image.height));
                serial_times.push(t.elapsed().as_secs_f64());
            }
        }
    }
    Ok(Runs { times, serial_times, first_call, last: last.expect("at least one timed run") })
}

/// Tiles per compute thread under the rule: disk mod threads.
fn tiles_per_node(tiling: &Tiling, threads: usize) -> Vec<usize> {
    let mut n = vec![0; threads];
    for id in tiling.tiles() {
        n[tiling.node(id, threads)] += 1;
    }
    n
}

/// `median --variant serial`: the whole-image vector kernel on one core, no DPS.
fn serial(plan: &MedianPlan) -> Result<()> {
    let source = SourcePlan { storage: Storage::Preloaded, ..plan.source.clone() };
    let (checked, input) = Input::prepare(&source, &plan.footprint(1, 1), 0, false)?;
    plan.check_input(&checked, true)?;
    let image = input.whole(&plan.source.name)?;
    let (w, h) = (image.width, image.height);
    let mut times = Vec::new();
    let mut out = Vec::new();
    for run in 0..plan.repeat.runs() {
        let t = Instant::now();
        out = median::median_image(&image.data, w, h);
        if plan.repeat.is_timed(run) {
            times.push(t.elapsed().as_secs_f64());
        }
    }
    let seconds = median_of(&times);
    let t = input.meta.tiling();
    let mpix_per_s = (w * h) as f64 / seconds / 1e6;
    let mut record = Record {
        width: w,
        height: h,
        filter: Some("median5".into()),
        ..Record::new(Common::new("filter", "serial", 1, 1, seconds, None), &t, input.label(), mpix_per_s, t.count())
    };
    let mut outcome = Ok(());
    if plan.standard.verify() {
        outcome = verdict(&out, &median::median_naive(&image.data, w, h), w, &mut record);
    }
    let printed = dps_harness::print_record(&record, plan.standard.json());
    outcome.and(printed)
}
