//! Command-line options and the runner: checks the input, builds the bands and graphs, runs
//! the generations from rank 0, measures, verifies against the serial reference, writes
//! PNG/RLE output and reports.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use clap::{Parser, ValueEnum};
use dps::{Runtime, RuntimeArgs, SimMode};
use dps_harness::options::{Check, Output, Seed};
use dps_harness::simulate::{Simulate, Support};
use dps_harness::{bad_input, median, Common, OutputFile};

use crate::graph::{self, Band, Graphs, Layout, Rect, RegionRequest, Schedule, Step};
use crate::input::{self, Input};
use crate::kernel;
use crate::output::{self, Format};
use crate::record::{AgainstSerial, Compare, Record, View};
use crate::report::{progress_bar, verify, Observed};
use crate::schedule::{self, Plan};
use crate::view::{self, Requests, Signal};
use crate::world::World;

/// --compare-serial: parallel calls and serial steps alternate in blocks of at least this
/// many generations (shorter ones would leave the other ranks idle, and cold, for most of
/// each parallel call).
const SERIAL_BLOCK: u64 = 64;

/// `--bind`'s help: Life's default differs from the runtime's (see [`runtime_args`]).
const BIND_HELP: &str = "Pin each rank's workers and progress thread to its share of the node's cores (`cores`, \
     the default, unless --view or DPS_BIND says otherwise), or leave them to the OS (`none`)";

/// Which schedule runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Variant {
    /// Exchange borders, synchronise, compute (the paper's Figure 7).
    Simple,
    /// Compute the interior while the borders travel (Figure 8).
    Overlap,
    /// `simple` and `overlap` generations in turn, in the same job: the Figure 9 ratio.
    Compare,
    /// The bit kernel on one core, without DPS or MPI (cell updates per second).
    Serial,
}

/// `dps-life`: Conway's Game of Life (B3/S23) on DPS, the world cut into horizontal bands.
#[derive(Parser, Debug)]
#[command(name = "dps-life", version, about)]
#[command(mut_arg("seed", |a| a.help("Seed of the random world (and of the viewer's block positions)")))]
#[command(mut_arg("verify", |a| a.help("Compare the final world with the serial reference")))]
#[command(mut_arg("bind", |a| a.help(BIND_HELP)))]
pub struct Args {
    /// Schedule.
    #[arg(long, value_enum, default_value = "overlap")]
    pub variant: Variant,
    /// A random world of W × H cells (the default, 1024 × 1024).
    #[arg(long, num_args = 2, value_names = ["W", "H"], conflicts_with = "rle")]
    pub random: Option<Vec<usize>>,
    /// Probability that a cell of the random world is alive.
    #[arg(long, default_value_t = 0.5)]
    pub density: f64,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub seed: Seed<1>,
    /// A pattern in RLE format (`x = .., y = .., rule = B3/S23`).
    #[arg(long, value_name = "FILE")]
    pub rle: Option<PathBuf>,
    /// World size for --rle (default: the pattern's size).
    #[arg(long, num_args = 2, value_names = ["W", "H"], requires = "rle")]
    pub size: Option<Vec<usize>>,
    /// Where the pattern's top-left cell goes (default: centred).
    #[arg(long, num_args = 2, value_names = ["X", "Y"], requires = "rle")]
    pub at: Option<Vec<usize>>,
    /// The world is a torus (edges wrap around); otherwise cells beyond the edges are dead.
    #[arg(long)]
    pub wrap: bool,
    /// Timed generations.
    #[arg(long, default_value_t = 100)]
    pub generations: u64,
    // Generations, not the runs of `dps_harness::Repeat`.
    /// Untimed generations before the timed ones.
    #[arg(long, default_value_t = 0)]
    pub warmup: u64,
    /// Generations per step: each call of the generation graph exchanges this many border
    /// rows with each neighbour and computes this many generations in one pass over the band
    /// (temporal blocking, which divides memory traffic and messages by it). 1 is the
    /// paper's schedule, one exchange per generation. At most the rows of the thinnest band;
    /// the default is 8 (or the thinnest band's rows if fewer), or the depth from 7 down to
    /// 4 that divides --generations when 8 does not.
    #[arg(long)]
    pub depth: Option<usize>,
    /// Steps per call of the `overlap` graph: within a call a band starts its next step as
    /// soon as it has its neighbours' border rows, without waiting for the other bands
    /// (`simple` and `compare` make one step per call). Default: up to 8, as many as make
    /// every timed call the same length.
    #[arg(long)]
    pub steps_per_call: Option<usize>,
    // Not `dps_harness::options::Map`: the default depends on --view.
    /// Mapping of the band collection (default: one band per rank, the viewer rank excluded).
    #[arg(long)]
    pub map: Option<String>,
    /// Write the final world (or --region) to this file: `.png` or `.rle`.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The rectangle of the world --out and --snapshot-every write.
    #[arg(long, num_args = 4, value_names = ["X", "Y", "W", "H"])]
    pub region: Option<Vec<usize>>,
    /// Write a PNG every K generations, named after --out (default `life.png`): `life-000010.png`.
    #[arg(long, value_name = "K")]
    pub snapshot_every: Option<u64>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub check: Check,
    /// Time the serial kernel on a copy of the world on rank 0, in blocks of generations
    /// alternating with the parallel ones, and report the parallel efficiency against it.
    #[arg(long)]
    pub compare_serial: bool,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub output: Output,
    /// Region-service client: the last rank hosts no band and requests random WxH blocks
    /// while the simulation runs (the paper's Table 2). Runs --generations without calls,
    /// then --generations with calls.
    #[arg(long, value_name = "WxH")]
    pub view: Option<String>,
    /// Pause of the client between two calls.
    #[arg(long, default_value_t = 10)]
    pub view_period_ms: u64,
    /// Directory where the client writes each block as PNG.
    #[arg(long, value_name = "DIR", requires = "view")]
    pub view_png: Option<PathBuf>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub runtime: RuntimeArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub sim: Simulate,
}

/// What the simulator supports of dps-life: direct execution, PDEXEC (the band kernel
/// skipped and charged from the platform's `life` table; the cost of a Life step does not
/// depend on the cells, so the control flow is the same) and NOALLOC (PDEXEC with the
/// bands' cells and the ghost rows left out: only their sizes travel, so the simulator's
/// memory does not grow with the world).
const SIMULATION: Support =
    Support { program: "dps-life", modes: &[SimMode::Pdexec, SimMode::Noalloc], why_not: "", kernels: &["life"] };

/// The cells never change (PDEXEC) or are not there (NOALLOC): a simulation in which the
/// world cannot be read, counted or checked.
fn cells_skipped(args: &Args) -> Option<&'static str> {
    match args.sim.simulate.map(|_| args.sim.mode()) {
        Some(SimMode::Pdexec) => Some("the kernel is skipped, so the cells never change"),
        Some(SimMode::Noalloc) => Some("the cells are left out"),
        _ => None,
    }
}

/// The options a simulated run cannot have, refused before any work.
fn check_simulation(args: &Args) -> Result<()> {
    let Some(p) = args.sim.simulate else { return Ok(()) };
    if args.variant == Variant::Serial {
        bad_input!("--simulate {p}: the serial variant runs no DPS graph to simulate");
    }
    if args.view.is_some() {
        bad_input!("--simulate {p}: --view runs a client program on the last rank, which the simulator does not run");
    }
    if args.compare_serial {
        bad_input!("--simulate {p}: --compare-serial times the serial kernel for real, against a predicted time");
    }
    if let Some(skipped) = cells_skipped(args) {
        let mode = args.sim.mode().name();
        if args.check.verify {
            bad_input!("--verify with --sim-mode {mode}: {skipped}; verify with --sim-mode de");
        }
        if args.out.is_some() || args.snapshot_every.is_some() {
            bad_input!("--out/--snapshot-every with --sim-mode {mode}: {skipped}; write the world with --sim-mode de");
        }
    }
    Ok(())
}

fn variant_name(v: Variant) -> String {
    v.to_possible_value().map(|p| p.get_name().to_string()).unwrap_or_default()
}

/// The generations per step: --depth, or [`schedule::DEFAULT_DEPTH`] if `rows` (the rows of
/// `what`) allow it, else `rows`.
fn step_depth(args: &Args, rows: usize, what: &str) -> Result<usize> {
    match args.depth {
        Some(d) if d > rows => bad_input!(
            "--depth {d}: {what} has {rows} rows, and a step exchanges --depth rows with each neighbour, \
             so --depth can be at most {rows}"
        ),
        Some(d) => Ok(d),
        None => Ok(schedule::DEFAULT_DEPTH.min(rows)),
    }
}

/// Runs the program.
///
/// # Errors
/// Bad options or input (a [`dps_harness::BadInput`], before any work), a failed call, a
/// failed output, or a failed verification.
pub fn run(args: &Args) -> Result<()> {
    check_simulation(args)?;
    let mut input = dps_harness::input(input::check(args))?;
    if args.variant == Variant::Serial {
        return run_serial(args, input);
    }
    let rt = args.sim.start(&runtime_args(args), &SIMULATION)?;
    // Every rank opened --out to check it; rank 0 writes it.
    let out = input.out.take().filter(|_| rt.is_root());
    let ranks = rt.ranks();
    let viewer = match input.view {
        Some(_) if ranks < 2 => bad_input!("--view needs at least 2 ranks: the last one is the client"),
        Some(_) => Some(ranks - 1),
        None => None,
    };
    let map = match (&args.map, viewer) {
        (Some(m), _) => m.clone(),
        (None, Some(v)) => (0..v).map(|r| r.to_string()).collect::<Vec<_>>().join(" "),
        (None, None) => "all".to_string(),
    };
    let (width, height) = (input.source.width(), input.source.height());
    let bands_n = rt.threads_in(&map)?;
    if bands_n == 0 || bands_n > height {
        bad_input!("--map {map:?}: {bands_n} bands for {height} rows: every band needs at least one row");
    }
    // The bands' rows are `height * b / bands`: the product must not wrap.
    if height.checked_mul(bands_n).is_none() {
        bad_input!("--map {map:?}: {bands_n} bands of a world {height} rows high are too many");
    }
    let layout = Layout { width, height, bands: bands_n, wrap: args.wrap };
    let thinnest = (0..bands_n).map(|b| layout.rows(b).len()).min().unwrap_or(0);
    let given = args.depth.map(|_| step_depth(args, thinnest, &format!("the thinnest of the {bands_n} bands")));
    let plan = schedule::choose(args.generations, thinnest, given.transpose()?, args.steps_per_call);
    let depth = plan.depth;
    if !args.sim.noalloc() {
        dps_harness::input(input.check_memory(args, ranks, bands_n, depth))?;
    }
    // Rank 0's serial copy is made before the collections and graphs: the ranks then go from
    // building them (collective) into the first call together. Made after, it kept the other
    // ranks idle while rank 0 filled it, and they started the first call 0.8-2.6 ms late.
    let serial = (args.compare_serial && rt.is_root()).then(|| World::new(&input.source, args.wrap, depth));
    let main = rt.collection("main", "0", |_| ())?;
    let source = &input.source;
    let bands = rt.collection("bands", &map, |i| Band::new(&layout, i, source, depth))?;
    let portal = rt.collection("portal", "all", |_| ())?;
    let graphs = graph::build(&rt, layout, &main, &bands, &portal, plan.steps_per_call)?;
    let client = viewer.map(|v| view::build(&rt, v)).transpose()?;

    let mut outcome = Ok(());
    if rt.is_root() {
        outcome = drive(args, &input, out, &rt, &graphs, client.as_ref(), bands_n, &plan, serial);
        if let (Err(_), Some(client)) = (&outcome, &client) {
            // The client waits for a signal: without it, it would wait forever.
            let _ = rt.call(&client.signal, Signal::Stop);
        }
    } else if let (Some(client), Some((bw, bh))) = (&client, input.view) {
        if rt.rank() == client.rank {
            let req = Requests {
                world: (width, height),
                block: (bw, bh),
                period: Duration::from_millis(args.view_period_ms),
                png_dir: args.view_png.clone(),
                seed: args.seed.seed,
            };
            outcome = client.run(&rt, &graphs, &req);
        }
    }
    rt.shutdown()?;
    outcome
}

/// The runtime's options, with Life's default binding: `cores` unless `--bind` or `DPS_BIND`
/// says otherwise, or `--view` runs (its client rank would take a core share of its own, and
/// on 2 cores the two band ranks would share the other). Left to the OS, a band's worker,
/// which yields its core every ~100 µs, often shared a core with the other rank's band
/// while the other core idled for whole calls (the scheduler does not move a thread that ran
/// that recently): for most of 4 calls of 12 traced and part of 2 more (8192², 2 ranks, 2
/// cores).
fn runtime_args(args: &Args) -> RuntimeArgs {
    let mut runtime = args.runtime.clone();
    if runtime.bind.is_none() && std::env::var_os("DPS_BIND").is_none() && args.view.is_none() {
        runtime.bind = Some(dps::Bind::Cores);
    }
    runtime
}

/// Rank 0: runs the generations and reports.
#[allow(clippy::too_many_arguments)]
fn drive(
    args: &Args,
    input: &Input,
    out: Option<(OutputFile, Format)>,
    rt: &Runtime,
    graphs: &Graphs,
    client: Option<&view::Client>,
    bands: usize,
    plan: &Plan,
    mut serial: Option<World>,
) -> Result<()> {
    let depth = plan.depth;
    let (width, height) = (input.source.width(), input.source.height());
    let cells = width as f64 * height as f64;
    let g = args.generations;
    let steps_per_call = if args.variant == Variant::Overlap { plan.steps_per_call } else { 1 };
    if args.check.verify {
        // The bands' initial world against the input, counted without them: a pattern
        // that did not make it into the bands fails here, even if the reference lost it too.
        let (bands_hold, input_has) = (rt.call(&graphs.population, ())?, input.source.population());
        if bands_hold != input_has {
            bail!("verification failed: the bands start with {bands_hold} live cells, the input has {input_has}");
        }
    }
    // Every generation the calls run: the warm-up, the timed ones (twice with `compare`,
    // whose `simple` calls count too) and those with the viewer's calls.
    let phases = 1 + u64::from(args.variant == Variant::Compare) + u64::from(client.is_some() && input.view.is_some());
    let progress = progress_bar(args.warmup.saturating_add(g.saturating_mul(phases)), args.output.json);
    let mut sim = Sim { rt, graphs, args, input, depth, steps_per_call, done: 0, progress, first: None };
    let main = if args.variant == Variant::Simple { Schedule::Simple } else { Schedule::Overlap };
    sim.generations(main, args.warmup)?;
    // The timed generations, call by call. `compare` runs a `simple` call before each
    // `overlap` one, and --compare-serial alternates blocks of parallel calls (at least
    // SERIAL_BLOCK generations) with the serial world stepped on rank 0 through as many: on a
    // shared machine a change of load then hits both sides of the ratio, and the ratio is of
    // per-generation medians, which ignore the odd descheduled call or block.
    // Per-generation times of each call (its time over its generations), and the total.
    let (mut times, mut simple_times) = (vec![], vec![]);
    let (mut block_times, mut serial_times) = (vec![], vec![]);
    let (mut done, mut seconds) = (0, 0.0);
    let mut block = (0, 0.0);
    // `compare` runs --generations of each schedule (snapshots may cut their calls apart).
    let mut simple_done = if args.variant == Variant::Compare { 0 } else { g };
    while done < g || simple_done < g {
        if simple_done < g {
            let (generations, t) = sim.call(Schedule::Simple, g - simple_done)?;
            simple_done += generations;
            simple_times.push(t);
        }
        if done == g {
            continue;
        }
        let (generations, t) = sim.call(main, g - done)?;
        (done, seconds) = (done + generations, seconds + t * generations as f64);
        times.push(t);
        block = (block.0 + generations, block.1 + t * generations as f64);
        if let Some(world) = serial.as_mut().filter(|_| block.0 >= SERIAL_BLOCK || done == g) {
            let start = Instant::now();
            world.advance(block.0);
            serial_times.push(start.elapsed().as_secs_f64() / block.0 as f64);
            block_times.push(block.1 / block.0 as f64);
            block = (0, 0.0);
        }
    }
    let compare = (args.variant == Variant::Compare).then(|| Compare {
        simple_iteration_median_s: median(&simple_times),
        overlap_iteration_median_s: median(&times),
        simple_cups: cells / median(&simple_times),
        overlap_cups: cells / median(&times),
        speedup: median(&simple_times) / median(&times),
    });
    let serial = args.compare_serial.then(|| {
        let ranks_used = rt.ranks() - usize::from(client.is_some());
        AgainstSerial {
            serial_iteration_median_s: median(&serial_times),
            serial_cups: cells / median(&serial_times),
            parallel_iteration_median_s: median(&block_times),
            efficiency: median(&serial_times) / median(&block_times) / ranks_used as f64,
        }
    });
    let mut view = None;
    if let (Some(client), Some((bw, bh))) = (client, input.view) {
        rt.call(&client.signal, Signal::Start)?;
        let with = sim.generations(main, g)?;
        let report = rt.call(&client.signal, Signal::Stop)?;
        view = Some(View {
            view_block: format!("{bw}x{bh}"),
            view_calls: report.call_seconds.len(),
            view_call_median_s: median(&report.call_seconds),
            view_read_median_s: median(&report.read_seconds),
            view_straddling_calls: report.straddling,
            iteration_without_calls_s: median(&times),
            iteration_with_calls_s: median(&with),
        });
    }
    sim.progress.finish_and_clear();
    // Not counted where the cells are skipped or left out: it would not be the world's.
    let population = if cells_skipped(args).is_some() { None } else { Some(rt.call(&graphs.population, ())?) };
    let mut record = Record {
        common: Common::new("life", &variant_name(args.variant), rt.ranks(), bands, seconds, None).bound_by(rt),
        width,
        height,
        wrap: args.wrap,
        generations: g,
        depth,
        steps_per_call: Some(steps_per_call),
        schedule_reason: Some(plan.reason.clone()),
        cups: cells * g as f64 / seconds,
        iteration_median_s: Some(median(&times)),
        first_iteration_s: sim.first,
        compare,
        serial,
        view,
        generations_run: Some(sim.done),
        population,
        reference: None,
    };
    let mut outcome = Ok(());
    if args.check.verify {
        let whole = Rect { x: 0, y: 0, width, height };
        let got = rt.call(&graphs.region, RegionRequest { from: 0, rect: whole })?;
        let observed = Observed {
            generations: got.generations,
            width: got.rect.width,
            height: got.rect.height,
            cells: &got.cells,
            population: population.expect("counted: --verify is refused where the cells are skipped"),
        };
        // Against the generations asked for, not those counted on the way: a run that
        // skipped some cannot agree with a reference that skipped as many.
        outcome = record_verdict(verify(&input.source, args.wrap, input.total_generations, &observed), &mut record);
    }
    let outcome = match (out, outcome) {
        (Some((file, format)), Ok(())) => sim.write(file, format),
        // A world that failed verification is not written as if it were the result.
        (Some((file, _)), Err(e)) => Err(anyhow::anyhow!("{e:#}; {} not written", file.path().display())),
        (None, outcome) => outcome,
    };
    // The record is printed unless the output failed.
    if outcome.is_ok() || record.common.verified == Some(false) {
        let printed = dps_harness::print_record(&record, args.output.json);
        return outcome.and(printed);
    }
    outcome
}

/// Rank 0's view of the running simulation.
struct Sim<'a> {
    rt: &'a Runtime,
    graphs: &'a Graphs,
    args: &'a Args,
    input: &'a Input,
    /// Generations run so far.
    done: u64,
    progress: indicatif::ProgressBar,
    /// Generations per step.
    depth: usize,
    /// Steps per call of `overlap`.
    steps_per_call: usize,
    /// The time per generation of the job's first call (warm-up or not).
    first: Option<f64>,
}

impl Sim<'_> {
    /// Runs `count` generations; returns each call's time per generation.
    fn generations(&mut self, schedule: Schedule, count: u64) -> Result<Vec<f64>> {
        let mut times = Vec::new();
        let mut left = count;
        while left > 0 {
            let (generations, t) = self.call(schedule, left)?;
            left -= generations;
            times.push(t);
        }
        Ok(times)
    }

    /// One call of the generation graph: at most `limit` generations, and none past the next
    /// snapshot, in steps of --depth (`overlap`: up to --steps-per-call steps). Returns the
    /// generations run and the time per generation.
    fn call(&mut self, schedule: Schedule, limit: u64) -> Result<(u64, f64)> {
        let snapshot = self.args.snapshot_every;
        let budget = limit.min(snapshot.map_or(u64::MAX, |k| k - self.done % k));
        let depth = (self.depth as u64).min(budget);
        let steps = if schedule == Schedule::Overlap { (self.steps_per_call as u64).min(budget / depth) } else { 1 };
        let step = Step { generation: self.done, depth: depth as usize, end: self.done + steps * depth };
        let start = self.rt.stopwatch();
        self.rt.call(self.graphs.generation(schedule), step)?;
        let generations = steps * depth;
        let per_generation = start.seconds() / generations as f64;
        self.first.get_or_insert(per_generation);
        self.done += generations;
        self.progress.set_position(self.done);
        if snapshot.is_some_and(|k| self.done.is_multiple_of(k)) {
            let path = input::snapshot_path(self.args, self.done);
            // Its directory was checked before the run; failing now is a failure of the
            // run (the disk filled, the directory went), not bad input.
            let file = OutputFile::create("--snapshot-every", &path).map_err(|e| anyhow::anyhow!("{e:#}"))?;
            self.write(file, Format::Png)?;
        }
        Ok((generations, per_generation))
    }

    /// Writes the world (or --region) gathered through the region service.
    fn write(&self, file: OutputFile, format: Format) -> Result<()> {
        let rect = self.input.rect;
        let region = self.rt.call(&self.graphs.region, RegionRequest { from: 0, rect })?;
        output::write(file, format, rect.width, rect.height, &region.cells)
    }
}

/// The bit kernel alone on this thread.
fn run_serial(args: &Args, mut input: Input) -> Result<()> {
    let (w, h) = (input.source.width(), input.source.height());
    let depth = step_depth(args, h, "the world")?;
    dps_harness::input(input.check_serial_memory(args, depth))?;
    let mut world = World::new(&input.source, args.wrap, depth);
    world.advance(args.warmup);
    let start = Instant::now();
    world.advance(args.generations);
    let seconds = start.elapsed().as_secs_f64();
    let population = world.slab.population();
    let mut record = Record {
        common: Common::new("life", "serial", 1, 1, seconds, None),
        width: w,
        height: h,
        wrap: args.wrap,
        generations: args.generations,
        depth,
        steps_per_call: None,
        schedule_reason: None,
        cups: w as f64 * h as f64 * args.generations as f64 / seconds,
        iteration_median_s: None,
        first_iteration_s: None,
        compare: None,
        serial: None,
        view: None,
        generations_run: None,
        population: Some(population),
        reference: None,
    };
    let mut outcome = Ok(());
    if args.check.verify {
        let observed = Observed {
            generations: (input.total_generations, input.total_generations),
            width: w,
            height: h,
            cells: world.slab.rows(),
            population,
        };
        outcome = record_verdict(verify(&input.source, args.wrap, input.total_generations, &observed), &mut record);
    }
    if let (Some((file, format)), Ok(())) = (input.out.take(), &outcome) {
        let rect = input.rect;
        let words = rect.width.div_ceil(64);
        let mut cells = vec![0u64; words * rect.height];
        for (y, out) in (rect.y..rect.y + rect.height).zip(cells.chunks_mut(words)) {
            kernel::extract(world.slab.row(y), rect.x, rect.width, out);
        }
        output::write(file, format, rect.width, rect.height, &cells)?;
    }
    let printed = dps_harness::print_record(&record, args.output.json);
    outcome.and(printed)
}

/// Puts a verification's verdict in the record; a failed one becomes the run's error.
fn record_verdict(verdict: Result<&'static str, String>, record: &mut Record) -> Result<()> {
    record.common.verified = Some(verdict.is_ok());
    match verdict {
        Ok(reference) => {
            record.reference = Some(reference.into());
            Ok(())
        }
        Err(why) => Err(anyhow::anyhow!("verification failed: {why}")),
    }
}
