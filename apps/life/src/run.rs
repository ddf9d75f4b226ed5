//! Command-line options and the runner: checks the input, builds the bands and graphs, runs
//! the generations from rank 0, measures, verifies against the serial reference, writes
//! PNG/RLE output and reports.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::report::{print_record, verify, Progress};

use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};
use dps::{Runtime, RuntimeArgs};
use serde_json::{json, Value};

use crate::graph::{self, Band, Graphs, Layout, Rect, RegionRequest, Schedule, Step};
use crate::kernel;
use crate::rle::{self, Pattern};
use crate::view::{self, Requests, Signal};
use crate::world::{self, Source, World};

/// --compare-serial: parallel calls and serial steps alternate in blocks of at least this
/// many generations (shorter ones would leave the other ranks idle, and cold, for most of
/// each parallel call).
const SERIAL_BLOCK: u64 = 64;

/// Generations per step unless --depth says otherwise: past 8, the memory traffic saved
/// is small next to the computation (16384² on one core: 5.0e10 cell updates/s at depth 1,
/// 7.0e10 at 4, 7.1e10 at 8, 7.4e10 at 16).
const DEFAULT_DEPTH: usize = 8;

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
    /// Seed of the random world (and of the viewer's block positions).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
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
    /// Untimed generations before the timed ones.
    #[arg(long, default_value_t = 0)]
    pub warmup: u64,
    /// Generations per step: each call of the generation graph exchanges this many border
    /// rows with each neighbour and computes this many generations in one pass over the band
    /// (temporal blocking, which divides memory traffic and messages by it). 1 is the
    /// paper's schedule, one exchange per generation. At most the rows of the thinnest band;
    /// the default is 8, or the thinnest band's rows if fewer.
    #[arg(long)]
    pub depth: Option<usize>,
    /// Steps per call of the `overlap` graph: within a call a band starts its next step as
    /// soon as it has its neighbours' border rows, without waiting for the other bands
    /// (`simple` and `compare` make one step per call).
    #[arg(long, default_value_t = 8)]
    pub steps_per_call: usize,
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
    /// Compare the final world with the serial reference.
    #[arg(long)]
    pub verify: bool,
    /// Time the serial kernel on a copy of the world on rank 0, in blocks of generations
    /// alternating with the parallel ones, and report the parallel efficiency against it.
    #[arg(long)]
    pub compare_serial: bool,
    /// Print one JSON object instead of the human-readable line.
    #[arg(long)]
    pub json: bool,
    /// Region-service client: the last rank hosts no band and requests random WxH blocks
    /// while the simulation runs (the paper's Table 2). Runs --generations without calls,
    /// then --generations with calls.
    #[arg(long, value_name = "WxH")]
    pub view: Option<String>,
    /// Pause of the client between two calls.
    #[arg(long, default_value_t = 10)]
    pub view_period_ms: u64,
    /// Directory where the client writes each block as PNG.
    #[arg(long, value_name = "DIR")]
    pub view_png: Option<PathBuf>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub runtime: RuntimeArgs,
}

/// The checked input.
struct Input {
    source: Source,
    region: Option<Rect>,
    view: Option<(usize, usize)>,
}

fn pair(v: &Option<Vec<usize>>) -> Option<(usize, usize)> {
    v.as_ref().map(|v| (v[0], v[1]))
}

/// Reads and checks everything before any work.
fn input(args: &Args) -> Result<Input> {
    let source = match &args.rle {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
            let (pattern, line) = rle::parse(&text).map_err(|e| anyhow::anyhow!("{}:{e}", path.display()))?;
            let (width, height) = pair(&args.size).unwrap_or((pattern.width.max(1), pattern.height.max(1)));
            let at = pair(&args.at)
                .unwrap_or((width.saturating_sub(pattern.width) / 2, height.saturating_sub(pattern.height) / 2));
            if at.0 + pattern.width > width || at.1 + pattern.height > height {
                bail!(
                    "{}:line {line}: the {}x{} pattern at ({}, {}) does not fit in the {width}x{height} world",
                    path.display(),
                    pattern.width,
                    pattern.height,
                    at.0,
                    at.1
                );
            }
            Source::Pattern { width, height, pattern: Arc::new(pattern), at }
        }
        None => {
            let (width, height) = pair(&args.random).unwrap_or((1024, 1024));
            if !(0.0..=1.0).contains(&args.density) {
                bail!("--density {} must be between 0 and 1", args.density);
            }
            Source::Random { width, height, density: args.density, seed: args.seed }
        }
    };
    let (w, h) = (source.width(), source.height());
    if w == 0 || h == 0 {
        bail!("the world must have at least one cell ({w}x{h})");
    }
    let fits = |r: &Rect| r.width > 0 && r.height > 0 && r.x + r.width <= w && r.y + r.height <= h;
    let region = args.region.as_ref().map(|v| Rect { x: v[0], y: v[1], width: v[2], height: v[3] });
    if let Some(r) = region.filter(|r| !fits(r)) {
        bail!("--region {} {} {} {} is not inside the {w}x{h} world", r.x, r.y, r.width, r.height);
    }
    if args.steps_per_call == 0 {
        bail!("--steps-per-call must be at least 1");
    }
    if args.depth == Some(0) {
        bail!("--depth must be at least 1");
    }
    if args.snapshot_every == Some(0) {
        bail!("--snapshot-every must be at least 1");
    }
    if let Some(out) = &args.out {
        output_kind(out)?;
    }
    let view = match &args.view {
        None => None,
        Some(s) => {
            let parsed = s.split_once('x').and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
            let Some((bw, bh)) = parsed.filter(|&(bw, bh): &(usize, usize)| bw > 0 && bh > 0) else {
                bail!("--view {s:?}: expected a block size such as 400x2400");
            };
            if bw > w || bh > h {
                bail!("--view {bw}x{bh}: the block is larger than the {w}x{h} world");
            }
            Some((bw, bh))
        }
    };
    Ok(Input { source, region, view })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum OutputKind {
    Png,
    Rle,
}

fn output_kind(path: &Path) -> Result<OutputKind> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("png") => Ok(OutputKind::Png),
        Some("rle") => Ok(OutputKind::Rle),
        _ => bail!("--out {}: the file name must end in .png or .rle", path.display()),
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn variant_name(v: Variant) -> String {
    v.to_possible_value().map(|p| p.get_name().to_string()).unwrap_or_default()
}

/// The generations per step: --depth, or [`DEFAULT_DEPTH`] if `rows` (the rows of `what`)
/// allow it, else `rows`.
fn step_depth(args: &Args, rows: usize, what: &str) -> Result<usize> {
    match args.depth {
        Some(d) if d > rows => bail!(
            "--depth {d}: {what} has {rows} rows, and a step exchanges --depth rows with each neighbour, \
             so --depth can be at most {rows}"
        ),
        Some(d) => Ok(d),
        None => Ok(DEFAULT_DEPTH.min(rows)),
    }
}

/// Runs the program.
///
/// # Errors
/// Bad options or input (before any work), a failed call, or a failed verification.
pub fn run(args: &Args) -> Result<()> {
    let input = input(args)?;
    if args.variant == Variant::Serial {
        return run_serial(args, &input);
    }
    let rt = args.runtime.start()?;
    let ranks = rt.ranks();
    let viewer = match input.view {
        Some(_) if ranks < 2 => bail!("--view needs at least 2 ranks: the last one is the client"),
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
    if bands_n > height {
        bail!("{bands_n} bands for {height} rows: every band needs at least one row");
    }
    let layout = Layout { width, height, bands: bands_n, wrap: args.wrap };
    let thinnest = (0..bands_n).map(|b| layout.rows(b).len()).min().unwrap_or(0);
    let depth = step_depth(args, thinnest, &format!("the thinnest of the {bands_n} bands"))?;
    let main = rt.collection("main", "0", |_| ())?;
    let source = &input.source;
    let bands = rt.collection("bands", &map, |i| Band::new(&layout, i, source, depth))?;
    let portal = rt.collection("portal", "all", |_| ())?;
    let graphs = graph::build(&rt, layout, &main, &bands, &portal, args.steps_per_call)?;
    let client = viewer.map(|v| view::build(&rt, v)).transpose()?;

    let mut outcome = Ok(());
    if rt.is_root() {
        outcome = drive(args, &input, &rt, &graphs, client.as_ref(), bands_n, depth);
    } else if let (Some(client), Some((bw, bh))) = (&client, input.view) {
        if rt.rank() == client.rank {
            let req = Requests {
                world: (width, height),
                block: (bw, bh),
                period: Duration::from_millis(args.view_period_ms),
                png_dir: args.view_png.clone(),
                seed: args.seed,
            };
            outcome = client.run(&rt, &graphs, &req);
        }
    }
    rt.shutdown()?;
    outcome
}

/// Rank 0: runs the generations and reports.
fn drive(
    args: &Args,
    input: &Input,
    rt: &Runtime,
    graphs: &Graphs,
    client: Option<&view::Client>,
    bands: usize,
    depth: usize,
) -> Result<()> {
    let (width, height) = (input.source.width(), input.source.height());
    let cells = (width * height) as f64;
    let g = args.generations;
    let steps_per_call = if args.variant == Variant::Overlap { args.steps_per_call } else { 1 };
    let mut record = json!({
        "app": "life", "variant": variant_name(args.variant), "ranks": rt.ranks(), "threads": bands,
        "width": width, "height": height, "wrap": args.wrap, "generations": g, "depth": depth,
        "steps_per_call": steps_per_call,
    });
    let mut sim = Sim { rt, graphs, args, input, depth, steps_per_call, done: 0, progress: Progress::new(g) };
    let main = if args.variant == Variant::Simple { Schedule::Simple } else { Schedule::Overlap };
    sim.generations(main, args.warmup)?;
    // The timed generations, call by call. `compare` runs a `simple` call before each
    // `overlap` one, and --compare-serial alternates blocks of parallel calls (at least
    // SERIAL_BLOCK generations) with the serial world stepped on rank 0 through as many: on a
    // shared machine a change of load then hits both sides of the ratio, and the ratio is of
    // per-generation medians, which ignore the odd descheduled call or block.
    let mut serial = args.compare_serial.then(|| World::new(&input.source, args.wrap, depth));
    // Per-generation times of each call (its time over its generations), and the total.
    let (mut times, mut simple_times) = (vec![], vec![]);
    let (mut block_times, mut serial_times) = (vec![], vec![]);
    let (mut done, mut seconds) = (0, 0.0);
    let mut block = (0, 0.0);
    while done < g {
        if args.variant == Variant::Compare {
            simple_times.push(sim.call(Schedule::Simple, g - done)?.1);
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
    record["seconds"] = json!(seconds);
    record["cups"] = json!(cells * g as f64 / seconds);
    record["iteration_median_s"] = json!(median(&times));
    if args.variant == Variant::Compare {
        record["simple_iteration_median_s"] = json!(median(&simple_times));
        record["overlap_iteration_median_s"] = json!(median(&times));
        record["simple_cups"] = json!(cells / median(&simple_times));
        record["overlap_cups"] = json!(cells / median(&times));
        record["speedup"] = json!(median(&simple_times) / median(&times));
    }
    if args.compare_serial {
        let ranks_used = rt.ranks() - usize::from(client.is_some());
        record["serial_iteration_median_s"] = json!(median(&serial_times));
        record["serial_cups"] = json!(cells / median(&serial_times));
        record["parallel_iteration_median_s"] = json!(median(&block_times));
        record["efficiency"] = json!(median(&serial_times) / median(&block_times) / ranks_used as f64);
    }
    if let (Some(client), Some((bw, bh))) = (client, input.view) {
        rt.call(&client.signal, Signal::Start)?;
        let with = sim.generations(main, g)?;
        let report = rt.call(&client.signal, Signal::Stop)?;
        record["view_block"] = json!(format!("{bw}x{bh}"));
        record["view_calls"] = json!(report.call_seconds.len());
        record["view_call_median_s"] = json!(median(&report.call_seconds));
        record["view_read_median_s"] = json!(median(&report.read_seconds));
        record["view_straddling_calls"] = json!(report.straddling);
        record["iteration_without_calls_s"] = json!(median(&times));
        record["iteration_with_calls_s"] = json!(median(&with));
    }
    sim.progress.clear();
    record["generations_run"] = json!(sim.done);
    record["population"] = json!(rt.call(&graphs.population, ())?);
    record["verified"] = Value::Null;
    let mut outcome = Ok(());
    if args.verify {
        let whole = Rect { x: 0, y: 0, width, height };
        let got = rt.call(&graphs.region, RegionRequest { from: 0, rect: whole })?;
        let (same, reference) = verify(&input.source, args.wrap, sim.done, &got.cells);
        record["verified"] = json!(same);
        record["reference"] = json!(reference);
        if !same {
            outcome = Err(anyhow::anyhow!(
                "verification failed: the world after {} generations differs from the {reference} reference",
                sim.done
            ));
        }
    }
    if let Some(out) = &args.out {
        sim.write(out, None)?;
    }
    print_record(args.json, &record);
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
    progress: Progress,
    /// Generations per step.
    depth: usize,
    /// Steps per call of `overlap`.
    steps_per_call: usize,
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
        let start = Instant::now();
        self.rt.call(self.graphs.generation(schedule), step)?;
        let generations = steps * depth;
        let per_generation = start.elapsed().as_secs_f64() / generations as f64;
        self.done += generations;
        self.progress.tick(self.done);
        if snapshot.is_some_and(|k| self.done.is_multiple_of(k)) {
            let base = self.args.out.clone().unwrap_or_else(|| PathBuf::from("life.png"));
            let stem = base.with_extension("");
            let path = PathBuf::from(format!("{}-{:06}.png", stem.display(), self.done));
            self.write(&path, Some(OutputKind::Png))?;
        }
        Ok((generations, per_generation))
    }

    /// Writes the world (or --region) gathered through the region service.
    fn write(&self, path: &Path, kind: Option<OutputKind>) -> Result<()> {
        let (w, h) = (self.input.source.width(), self.input.source.height());
        let rect = self.input.region.unwrap_or(Rect { x: 0, y: 0, width: w, height: h });
        let region = self.rt.call(&self.graphs.region, RegionRequest { from: 0, rect })?;
        match kind.map_or_else(|| output_kind(path), Ok)? {
            OutputKind::Png => world::write_png(path, rect.width, rect.height, &region.cells),
            OutputKind::Rle => {
                let words = rect.width.div_ceil(64);
                let rows: Vec<String> = (0..rect.height)
                    .map(|y| {
                        let row = &region.cells[y * words..(y + 1) * words];
                        (0..rect.width).map(|x| if kernel::get(row, x) { 'o' } else { '.' }).collect()
                    })
                    .collect();
                let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
                let mut pattern = Pattern::from_rows(&rows);
                pattern.width = rect.width;
                std::fs::write(path, rle::to_rle(&pattern)).with_context(|| format!("cannot write {}", path.display()))
            }
        }
    }
}

/// The bit kernel alone on this thread.
fn run_serial(args: &Args, input: &Input) -> Result<()> {
    let (w, h) = (input.source.width(), input.source.height());
    let depth = step_depth(args, h, "the world")?;
    let mut world = World::new(&input.source, args.wrap, depth);
    world.advance(args.warmup);
    let start = Instant::now();
    world.advance(args.generations);
    let seconds = start.elapsed().as_secs_f64();
    let record = json!({
        "app": "life", "variant": "serial", "ranks": 1, "threads": 1, "width": w, "height": h, "wrap": args.wrap,
        "generations": args.generations, "depth": depth, "seconds": seconds,
        "cups": (w * h) as f64 * args.generations as f64 / seconds,
        "population": world.slab.population(), "verified": Value::Null,
    });
    if let Some(out) = &args.out {
        if output_kind(out)? != OutputKind::Png {
            bail!("--variant serial writes PNG only");
        }
        world::write_png(out, w, h, world.slab.rows())?;
    }
    print_record(args.json, &record);
    Ok(())
}
