//! The runners of `gather` and `median`: the input checked on every rank, the collections
//! and graphs built, the runs timed from rank 0, verified against the serial references,
//! reported.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use dps::{Runtime, SimMode};
use dps_harness::simulate::{Simulate, Support};
use dps_harness::{bad_input, median as median_of, Common, OutputFile};

use crate::disk::{Disk, Throttle};
use crate::exchange::ExchangeReport;
use crate::generation::{self, Generation};
use crate::graph::{self, Compute, Control, GatherRequest, Graphs};
use crate::layout::Tiling;
use crate::linear::{self, Area};
use crate::median::{self, RADIUS};
use crate::output_path::check_outputs_outside_store;
use crate::raster::{Depth, Raster};
use crate::record::Record;
use crate::run::{
    check_depth, check_name, check_window, choose_stride, GatherArgs, MedianArgs, MedianVariant, Source, Storage,
};
use crate::store::{self, Meta, MAX_SIDE};

/// The input, as every rank sees it.
struct Input {
    meta: Meta,
    /// The whole image, on every rank (random images only).
    image: Option<Raster>,
    /// The store's directory (stored images, and random ones with --storage disk).
    dir: Option<PathBuf>,
    /// A scratch store to remove at the end (rank 0).
    scratch: Option<PathBuf>,
    /// The emulated disks' speed.
    throttle: Throttle,
    /// A NOALLOC simulation of a random image: neither image nor store is made, and this
    /// is where the tiles would be.
    absent: Option<Storage>,
}

impl Input {
    fn label(&self) -> &'static str {
        if self.dir.is_some() || self.absent == Some(Storage::Disk) {
            "disk"
        } else {
            "preloaded"
        }
    }

    /// The whole input image (rank 0, for verification and the serial variant).
    fn whole(&self, name: &str) -> Result<Raster> {
        match (&self.image, &self.dir) {
            (Some(image), _) => Ok(image.clone()),
            (None, Some(dir)) => store::read_window(dir, name, &self.meta, (0, 0, self.meta.width, self.meta.height)),
            (None, None) => bail!("no input"),
        }
    }
}

/// Checks the source options and opens or makes the input (`threads`: compute threads, the
/// default disk count of a random image; `noalloc`: a NOALLOC simulation, which makes no
/// image).
fn prepare(src: &Source, threads: usize, rank: usize, noalloc: bool) -> Result<Input> {
    check_name(&src.name, "--name")?;
    let (ms, mbps) = (src.disk_latency_ms, src.disk_mb_per_s);
    // A rate under a byte a second would make a tile's wait years (and past the simulated
    // clock's range, or a Duration's): the same floor as a platform file's bandwidth.
    if !(0.0..=10_000.0).contains(&ms) || !(mbps == 0.0 || (1e-6..=1e6).contains(&mbps)) {
        bad_input!(
            "--disk-latency-ms {ms} / --disk-mb-per-s {mbps}: need 0 ≤ latency ≤ 10000 ms and a rate of 0 \
             (no limit) or from 10^-6 (1 byte per second) to 10^6 MB/s"
        );
    }
    let throttle = Throttle { latency_s: ms * 1e-3, bytes_per_s: mbps * 1e6 };
    let Some(random) = &src.random else {
        let Some(dir) = &src.dir else { bad_input!("give --dir DIR (a stored image) or --random W H") };
        let meta = store::open(dir, &src.name)?;
        return Ok(Input { meta, image: None, dir: Some(dir.clone()), scratch: None, throttle, absent: None });
    };
    let (w, h) = (random[0], random[1]);
    if !(1..=MAX_SIDE).contains(&w) || !(1..=MAX_SIDE).contains(&h) {
        bad_input!("--random {w} {h}: each side must be between 1 and {MAX_SIDE}");
    }
    let tile = crate::run::default_tile(src.tiles, w, h);
    if let Err(why) = store::check_tile(tile, w, h) {
        bad_input!("--tiles: {why}");
    }
    let disks = src.disks.unwrap_or(threads);
    if disks == 0 || disks > 4096 {
        bad_input!("--disks {disks}: must be between 1 and 4096");
    }
    let (stride, _) = choose_stride(None, disks)?;
    let tiling = Tiling { width: w, height: h, tile, disks, stride };
    let meta = Meta::new(tiling, Depth::Bit8, RANDOM_IMAGE);
    if noalloc {
        return Ok(Input { meta, image: None, dir: None, scratch: None, throttle, absent: Some(src.storage) });
    }
    let pixels = (w * h) as u64;
    dps_harness::check_memory(&format!("a {w}x{h} image"), 6 * pixels, 3 * pixels)?;
    let image = Raster::random8(w, h, src.seed.seed);
    if src.storage == Storage::Preloaded {
        return Ok(Input { meta, image: Some(image), dir: None, scratch: None, throttle, absent: None });
    }
    // Every rank computes the same scratch path; rank 0 writes the store before any call.
    let base = src.scratch.clone().unwrap_or_else(std::env::temp_dir);
    if !base.is_dir() {
        bad_input!("--scratch {}: no such directory", base.display());
    }
    let job = std::env::var("PMIX_NAMESPACE").unwrap_or_else(|_| format!("pid{}", std::process::id()));
    let dir = base.join(format!("dps-filter-{job}"));
    if rank == 0 {
        for d in 0..disks {
            std::fs::create_dir_all(store::disk_dir(&dir, d))?;
        }
        store::write(&dir, &src.name, &image, tiling, RANDOM_IMAGE)?;
    }
    Ok(Input { meta, image: Some(image), dir: Some(dir.clone()), scratch: Some(dir), throttle, absent: None })
}

/// The generation of a random image's tiles: every rank makes the same metadata, and a
/// scratch store is new to each job, so a constant is unique in it.
const RANDOM_IMAGE: Generation = Generation(0);

/// The collections and graphs of a run.
struct Job {
    rt: Runtime,
    graphs: Graphs,
    threads: usize,
    window: usize,
}

/// What the simulator supports of `gather`: direct execution only.
const GATHER_SIMULATION: Support = Support {
    program: "dps-filter gather",
    modes: &[],
    why_not: "its linear filters have no cost table in the platform file",
    kernels: &[],
};

/// What the simulator supports of `median`: DE, PDEXEC with the median charged from the
/// platform's `median` table (the control flow never depends on the pixels), and NOALLOC
/// (PDEXEC with the image and every tile left out: only their sizes travel).
const MEDIAN_SIMULATION: Support = Support {
    program: "dps-filter median",
    modes: &[SimMode::Pdexec, SimMode::Noalloc],
    why_not: "",
    kernels: &["median"],
};

/// Starts the runtime, simulated under `--simulate` as `support` allows (`compare_serial`:
/// the option that times the serial kernel for real, which a simulated run refuses).
fn start(
    runtime: &dps::RuntimeArgs,
    sim: &Simulate,
    support: &Support,
    map: &str,
    compare_serial: bool,
) -> Result<(Runtime, usize)> {
    if let (Some(p), true) = (sim.simulate, compare_serial) {
        bad_input!("--simulate {p}: --compare-serial times the serial kernel for real, against a predicted time");
    }
    dps_harness::options::check_trace(runtime)?;
    let rt = sim.start(runtime, support)?;
    let threads = rt.threads_in(map)?;
    Ok((rt, threads))
}

fn build(rt: Runtime, map: &str, input: &Input, name: &str, out_name: &str, cache: usize) -> Result<Job> {
    let client = rt.collection("client", "0", |_| ())?;
    let compute = rt.collection("compute", map, |_| Compute)?;
    let threads = compute.len();
    let mapping = graph::disk_mapping(&compute, input.meta.disks);
    let disks = rt.collection("disks", &mapping, |k| match (&input.dir, &input.image, input.absent) {
        (Some(dir), _, _) => Disk::stored(k, input.meta.clone(), dir.clone(), (name, out_name), cache, input.throttle),
        (None, Some(image), _) => Disk::preloaded(k, input.meta.clone(), image),
        (None, None, Some(storage)) => {
            Disk::absent(k, input.meta.clone(), storage == Storage::Disk, cache, input.throttle)
        }
        (None, None, None) => unreachable!("an input is a store, an image or left out"),
    })?;
    let window = 2 * threads;
    let graphs = graph::build(&rt, &client, &compute, &disks, window)?;
    Ok(Job { rt, graphs, threads, window })
}

/// Ends the run on every rank: shuts the runtime down, removes a scratch store (rank 0).
fn end(job: Job, input: &Input, outcome: Result<()>) -> Result<()> {
    let root = job.rt.is_root();
    let shutdown = job.rt.shutdown();
    if let (true, Some(dir)) = (root, &input.scratch) {
        let _ = std::fs::remove_dir_all(dir);
    }
    outcome.and(shutdown.map_err(Into::into))
}

/// `median`.
///
/// # Errors
/// As [`crate::run::run`].
pub(crate) fn median(a: &MedianArgs) -> Result<()> {
    a.repeat.check()?;
    if a.source.random.is_none() && a.source.dir.is_none() {
        bad_input!("give --dir DIR (a stored image) or --random W H");
    }
    if a.variant == MedianVariant::Serial {
        if let Some(p) = a.sim.simulate {
            bad_input!("--simulate {p}: the serial variant runs no DPS graph to simulate");
        }
        return median_serial(a);
    }
    if a.sim.simulate.is_some() && a.sim.mode() != SimMode::De {
        let mode = a.sim.mode().name();
        if a.check.verify {
            bad_input!(
                "--verify: --sim-mode {mode} skips the medians, so there is no result to verify; use --sim-mode de"
            );
        }
        if a.source.dir.is_some() {
            bad_input!(
                "--dir: --sim-mode {mode} skips the medians and would store unfiltered tiles as the output; \
                 use --sim-mode de, or --random W H to size the run"
            );
        }
    }
    // Before the runtime starts: it writes --trace even when the run is refused.
    check_outputs_outside_store(a.source.dir.as_deref(), &[("--trace", a.runtime.trace.as_deref())])?;
    let out_name = a.out_name.clone().unwrap_or_else(|| format!("{}-median", a.source.name));
    check_name(&out_name, "--out-name")?;
    if out_name == a.source.name {
        bad_input!("--out-name {out_name:?} is the input's name: the input would be overwritten");
    }
    // The output's metadata file can be written (a probe, on rank 0), also before the start: a
    // refusal after it would wait 10 s for the other ranks' shutdown.
    if let (Some(dir), true) = (&a.source.dir, dps_harness::launch_rank().unwrap_or(0) == 0) {
        drop(OutputFile::create("--dir", &store::meta_path(dir, &out_name))?);
    }
    let (rt, threads) = start(&a.runtime, &a.sim, &MEDIAN_SIMULATION, &a.map.map, a.compare_serial)?;
    let input = dps_harness::input(prepare(&a.source, threads, rt.rank(), a.sim.noalloc()))?;
    check_depth(input.meta.depth(), "median", &[Depth::Bit8])?;
    if input.meta.tile < RADIUS {
        bad_input!("tile size {}: the 5×5 median needs tiles of at least {RADIUS} pixels", input.meta.tile);
    }
    let tiling = input.meta.tiling();
    if let (Some(dir), true, None) = (&input.dir, rt.is_root(), &input.scratch) {
        store::check_writable(dir, &out_name, &input.meta)?;
    }
    // The thesis asks for 3 rows of tiles; with the serpentine, the tiles of the row before
    // the last are touched last at the far end, and LRU would drop some of them just before
    // their last use: 4 rows keep every tile until it is no longer needed.
    let cache = a.cache.unwrap_or(4 * tiling.cols().div_ceil(tiling.disks) + 2);
    let job = build(rt, &a.map.map, &input, &a.source.name, &out_name, cache)?;
    let outcome = if job.rt.is_root() { drive_median(a, &job, &input, &out_name, cache) } else { Ok(()) };
    end(job, &input, outcome)
}

/// The timed runs of the median.
struct Runs {
    times: Vec<f64>,
    serial_times: Vec<f64>,
    first_call: Option<f64>,
    last: ExchangeReport,
}

fn drive_median(a: &MedianArgs, job: &Job, input: &Input, out_name: &str, cache: usize) -> Result<()> {
    let tiling = input.meta.tiling();
    let (rt, g) = (&job.rt, &job.graphs);
    // A stored output is committed by its metadata once every run is done: until then, and
    // whatever fails, readers see the older output of the name, if any.
    let generation = Generation::fresh();
    let stored = match (&input.dir, &input.scratch) {
        (Some(dir), None) => Some(dir),
        _ => None,
    };
    let runs = run_median(a, job, input, generation).and_then(|runs| {
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
    if a.check.verify {
        let got = rt.call(&g.collect, tiling)?;
        let source = input.whole(&a.source.name)?;
        let want = median::median_image(&source.data, tiling.width, tiling.height);
        outcome = verdict(&got, &want, tiling.width, &mut record);
    }
    let printed = dps_harness::print_record(&record, a.output.json);
    outcome.and(printed)
}

/// Runs the median `--warmup` + `--reps` times, each run's output in files of `generation`.
fn run_median(a: &MedianArgs, job: &Job, input: &Input, generation: Generation) -> Result<Runs> {
    let tiling = input.meta.tiling();
    let (rt, g) = (&job.rt, &job.graphs);
    let mut times = Vec::new();
    let mut serial_times = Vec::new();
    let (mut last, mut first_call) = (None, None);
    let serial_input = if a.compare_serial { Some(input.whole(&a.source.name)?) } else { None };
    for run in 0..a.repeat.runs() {
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
        if a.repeat.is_timed(run) {
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

/// Compares an output with its reference; a difference is the run's error.
fn verdict<T: PartialEq + Copy + std::fmt::Debug>(
    got: &[T],
    want: &[T],
    width: usize,
    record: &mut Record,
) -> Result<()> {
    let first = (0..want.len().max(got.len())).find(|&i| got.get(i) != want.get(i));
    record.common.verified = Some(first.is_none() && got.len() == want.len());
    match first {
        None if got.len() == want.len() => Ok(()),
        None => bail!("verification failed: {} values, expected {}", got.len(), want.len()),
        Some(i) => {
            let differ = got.iter().zip(want).filter(|(a, b)| a != b).count() + got.len().abs_diff(want.len());
            bail!(
                "verification failed: {differ} values differ from the serial reference, the first at ({}, {}): {:?} instead of {:?}",
                i % width,
                i / width,
                got.get(i),
                want.get(i)
            )
        }
    }
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
fn median_serial(a: &MedianArgs) -> Result<()> {
    let input = dps_harness::input(prepare(&Source { storage: Storage::Preloaded, ..a.source.clone() }, 1, 0, false))?;
    check_depth(input.meta.depth(), "median", &[Depth::Bit8])?;
    let image = input.whole(&a.source.name)?;
    let (w, h) = (image.width, image.height);
    let mut times = Vec::new();
    let mut out = Vec::new();
    for run in 0..a.repeat.runs() {
        let t = Instant::now();
        out = median::median_image(&image.data, w, h);
        if a.repeat.is_timed(run) {
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
    if a.check.verify {
        outcome = verdict(&out, &median::median_naive(&image.data, w, h), w, &mut record);
    }
    let printed = dps_harness::print_record(&record, a.output.json);
    outcome.and(printed)
}

/// `gather`.
///
/// # Errors
/// As [`crate::run::run`].
pub(crate) fn gather(a: &GatherArgs) -> Result<()> {
    a.repeat.check()?;
    if a.source.random.is_none() && a.source.dir.is_none() {
        bad_input!("give --dir DIR (a stored image) or --random W H");
    }
    let outputs = [("--out", a.out.as_deref()), ("--trace", a.runtime.trace.as_deref())];
    check_outputs_outside_store(a.source.dir.as_deref(), &outputs)?; // before the runtime, as median's
                                                                     // Opened before the runtime too: a bad path then ends the job at once, where after the
                                                                     // start rank 0 would wait for the other ranks' shutdown (10 s) before ending it.
    let out = match (&a.out, dps_harness::launch_rank().unwrap_or(0) == 0) {
        (Some(path), true) => Some(OutputFile::create("--out", path)?),
        _ => None,
    };
    let (rt, threads) = start(&a.runtime, &a.sim, &GATHER_SIMULATION, &a.map.map, false)?;
    let input = dps_harness::input(prepare(&a.source, threads, rt.rank(), false))?;
    check_depth(input.meta.depth(), "gather", &[Depth::Bit1, Depth::Bit8, Depth::Bit16])?;
    let (x, y, w, h) = check_window(a.window.as_deref(), input.meta.width, input.meta.height)?;
    let job = build(rt, &a.map.map, &input, &a.source.name, "unused", 0)?;
    let window = Area { x: x as i64, y: y as i64, w, h };
    let outcome = if job.rt.is_root() { drive_gather(a, &job, &input, window, out) } else { Ok(()) };
    end(job, &input, outcome)
}

fn drive_gather(a: &GatherArgs, job: &Job, input: &Input, window: Area, out: Option<OutputFile>) -> Result<()> {
    let tiling = input.meta.tiling();
    let request = GatherRequest { tiling, window, filter: a.filter };
    let (mut times, mut last) = (Vec::new(), None);
    for run in 0..a.repeat.runs() {
        let t = job.rt.stopwatch();
        let gathered = job.rt.call(&job.graphs.gather, request)?;
        if a.repeat.is_timed(run) {
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
        filter: Some(format!("{:?}", a.filter).to_lowercase()),
        ..Record::new(common, &tiling, input.label(), mpix_per_s, gathered.tiles)
    };
    let mut outcome = Ok(());
    if a.check.verify {
        let want = serial_window(input, &a.source.name, a.filter, window)?;
        outcome = verdict(&gathered.sums, &want, window.w, &mut record);
    }
    let outcome = match (out, outcome) {
        (Some(file), Ok(())) => write_filtered(file, &gathered.sums, window, a.filter, input.meta.depth()),
        (Some(file), Err(e)) => Err(anyhow::anyhow!("{e:#}; {} not written", file.path().display())),
        (None, outcome) => outcome,
    };
    let printed = dps_harness::print_record(&record, a.output.json);
    outcome.and(printed)
}

/// The serial reference of a window: the zero-padded convolution of the window's
/// neighbourhood (the window grown by the kernel's radius, cut by the image), which equals
/// the whole image's inside the window.
fn serial_window(input: &Input, name: &str, filter: linear::Filter, window: Area) -> Result<Vec<i32>> {
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

fn write_filtered(file: OutputFile, sums: &[i32], window: Area, filter: linear::Filter, depth: Depth) -> Result<()> {
    let divisor = filter.kernel().sum();
    let max = depth.max_grey().expect("a grey image (checked)");
    let levels: Vec<u16> = sums.iter().map(|&s| linear::normalise(s, divisor, max)).collect();
    Raster::from_grey(window.w, window.h, depth, &levels).write_png(file)
}
