//! Runs `gather`: process-and-gather timed from rank 0, verified against the serial
//! zero-padded convolution, the window written as a PNG.

use anyhow::{bail, Result};
use dps_harness::simulate::Support;
use dps_harness::{median as median_of, Common, OutputFile};

use super::input::Input;
use super::job::{self, Job};
use super::verdict;
use crate::cli::gather::GatherPlan;
use crate::cli::memory::Footprint;
use crate::graph::gather::GatherRequest;
use crate::kernel::linear::{self, Area, Filter};
use crate::raster::{Depth, Raster};
use crate::record::Record;
use crate::store;

/// What the simulator supports of `gather`: direct execution only.
const SIMULATION: Support = Support {
    program: "dps-filter gather",
    modes: &[],
    why_not: "its linear filters have no cost table in the platform file",
    kernels: &[],
};

/// Executes a `gather` plan.
///
/// # Errors
/// Bad input (the input checked on every rank), a failed run or output, a failed
/// verification.
pub(super) fn execute(plan: &GatherPlan) -> Result<()> {
    // Opened before the runtime (the plan tried it already): a bad path then ends the job at
    // once, where after the start rank 0 would wait for the other ranks' shutdown (10 s).
    let out = match (&plan.out, dps_harness::launch_rank().unwrap_or(0) == 0) {
        (Some(path), true) => Some(OutputFile::create("--out", path)?),
        _ => None,
    };
    let (rt, threads) = job::start(&plan.standard, &SIMULATION, &plan.map)?;
    // Rank 0: the window's sums (4 bytes a pixel) and its PNG; verification's part of the
    // input, its sums and theirs.
    let footprint = Footprint::window_reads(rt.ranks(), threads, 8 + 12 * u64::from(plan.standard.verify()));
    let (checked, input) = Input::prepare(&plan.source, &footprint, rt.rank(), false)?;
    let window = plan.check_input(&checked)?;
    let job = job::build(rt, &plan.map, &input, (&plan.source.name, "unused"), 0, crate::cli::THESIS_IN_FLIGHT)?;
    let outcome = if job.rt.is_root() { drive(plan, &job, &input, window, out) } else { Ok(()) };
    job::end(job, outcome)
}

fn drive(plan: &GatherPlan, job: &Job, input: &Input, window: Area, out: Option<OutputFile>) -> Result<()> {
    let tiling = input.meta.tiling();
    let request = GatherRequest { tiling, window, filter: plan.filter };
    let (mut times, mut last) = (Vec::new(), None);
    for run in 0..plan.repeat.runs() {
        let t = job.rt.stopwatch();
        let gathered = job.rt.call(&job.graphs.gather, request)?;
        if let Some(why) = gathered.failed {
            bail!("{why}");
        }
        if plan.repeat.is_timed(run) {
            times.push(t.seconds());
            last = Some(gathered);
        }
    }
    let gathered = last.expect("at least one timed run");
    let seconds = median_of(&times);
    let t_p = median_of(&gathered.compute_ns.iter().map(|&x| x as f64 * 1e-9).collect::<Vec<_>>());
    let common = Common::new("filter", "gather", job.rt.ranks(), job.threads, seconds, None).bound_by(&job.rt);
    let mpix_per_s = (window.w * window.h) as f64 / seconds / 1e6;
    let mut record = Record {
        window: Some(job.window),
        t_p_s: Some(t_p),
        filter: Some(format!("{:?}", plan.filter).to_lowercase()),
        ..Record::new(common, &tiling, input.label(), mpix_per_s, gathered.tiles)
    };
    let mut outcome = Ok(());
    if plan.standard.verify() {
        let want = serial_window(input, &plan.source.name, plan.filter, window)?;
        outcome = verdict(&gathered.sums, &want, window.w, &mut record);
    }
    let outcome = match (out, outcome) {
        (Some(file), Ok(())) => write_filtered(file, &gathered.sums, window, plan.filter, input.meta.depth()),
        (Some(file), Err(e)) => Err(anyhow::anyhow!("{e:#}; {} not written", file.path().display())),
        (None, outcome) => outcome,
    };
    let printed = dps_harness::print_record(&record, plan.standard.json());
    outcome.and(printed)
}

/// The serial reference of a window: the zero-padded convolution of the window's
/// neighbourhood (the window grown by the kernel's radius, cut by the image), which equals
/// the whole image's inside the window.
fn serial_window(input: &Input, name: &str, filter: Filter, window: Area) -> Result<Vec<i32>> {
    let k = filter.kernel();
    let (width, height) = (input.meta.width as i64, input.meta.height as i64);
    let x0 = (window.x - k.rx() as i64).max(0);
    let y0 = (window.y - k.ry() as i64).max(0);
    let x1 = (window.x + window.w as i64 + k.rx() as i64).min(width);
    let y1 = (window.y + window.h as i64 + k.ry() as i64).min(height);
    let area = (x0 as usize, y0 as usize, (x1 - x0) as usize, (y1 - y0) as usize);
    let part = match (&input.image, &input.dir) {
        (Some(image), _) => image.crop(area.0, area.1, area.2, area.3),
        (None, Some(dir)) => store::read_window(dir, name, &input.meta, area)?,
        (None, None) => bail!("no input"),
    };
    let grey = part.grey().expect("a grey image (checked)");
    let sums = linear::convolve_image(&grey, area.2, area.3, &k);
    let (ox, oy) = ((window.x - x0) as usize, (window.y - y0) as usize);
    Ok((0..window.h).flat_map(|row| sums[(oy + row) * area.2 + ox..][..window.w].to_vec()).collect())
}

fn write_filtered(file: OutputFile, sums: &[i32], window: Area, filter: Filter, depth: Depth) -> Result<()> {
    let divisor = filter.kernel().sum();
    let max = depth.max_grey().expect("a grey image (checked)");
    let levels: Vec<u16> = sums.iter().map(|&s| linear::normalise(s, divisor, max)).collect();
    Raster::from_grey(window.w, window.h, depth, &levels).write_png(file)
}
