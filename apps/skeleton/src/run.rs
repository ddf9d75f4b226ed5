//! Command-line options and the runner: checks the input, builds the cells and graphs, runs
//! the rounds from rank 0 (moving cells between them with `--variant migrate`), verifies
//! against the serial reference, writes the skeleton and reports.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::{Parser, ValueEnum};
use dps::{Collection, Runtime, RuntimeArgs};
use dps_harness::options::{Check, Output, Seed};
use dps_harness::simulate::{Simulate, Support};
use dps_harness::{bad_input, median, Common, OutputFile, Repeat};
use rand::{Rng, SeedableRng};

use crate::balance;
use crate::cells::{Cell, Grid};
use crate::graph::{self, Go, Graphs, Round, Shape, Stash};
use crate::images::{self, Generate};
use crate::kernel::{self, Plane};
use crate::master::Master;
use crate::record::{Compare, Record};

/// The largest `--depth`: a round's halo is `2·depth` pixels, read 64 at a time.
pub const MAX_DEPTH: usize = 32;

/// How cells are placed on ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Variant {
    /// Eq. (8-2) for the whole run.
    Static,
    /// Eq. (8-2) at first, then cells migrate from loaded ranks to idle ones between rounds
    /// (§8.4).
    Migrate,
    /// `static` and `migrate` in turn, in the same job: the gain of migration (the median
    /// times' ratio); `seconds` is migrate's.
    Compare,
}

/// `dps-skeleton`: skeletonization of a binary image (the thinning rule of the thesis's eq.
/// (8-1), repeated until nothing changes) as a cellular automaton over cells on DPS, with
/// dynamic load balancing by cell migration.
#[derive(Parser, Debug)]
#[command(name = "dps-skeleton", version, about)]
#[command(mut_arg("seed", |a| a.help("Seed of the generated image")))]
#[command(mut_arg("verify", |a| a.help("Compare the skeleton (and the number of passes) with the serial reference")))]
pub struct Args {
    /// A PNG image, thresholded to black and white (see --threshold).
    #[arg(long, value_name = "FILE", conflicts_with = "generate", required_unless_present = "generate")]
    pub input: Option<PathBuf>,
    /// A generated image: KIND is blobs, text, skewed (work only in even columns of cells)
    /// or mixed (every fourth column of cells empty).
    #[arg(long, num_args = 3, value_names = ["KIND", "W", "H"], allow_hyphen_values = true)]
    pub generate: Option<Vec<String>>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub seed: Seed<1>,
    /// --input: pixels whose luminance is at least this are foreground.
    #[arg(long, default_value_t = 128)]
    pub threshold: u8,
    /// --input: the foreground is dark (below --threshold) instead.
    #[arg(long)]
    pub dark_foreground: bool,
    /// Cell side in pixels (the thesis used 128; larger cells cost less bookkeeping). At most
    /// the image's larger side; the default is 256, or that side if smaller.
    #[arg(long)]
    pub cell: Option<usize>,
    /// Passes of the rule per round: a cell gets a halo of 2·depth pixels and advances this
    /// many passes before the next exchange (1 is the thesis's exchange per pass).
    #[arg(long, default_value_t = 8)]
    pub depth: usize,
    /// Cells a rank runs at once: 1 runs a rank's cells one after another, each with the
    /// core to itself, which measured fastest with one core per rank; more overlap the
    /// small gap between two cells.
    #[arg(long, default_value_t = 1)]
    pub in_flight: usize,
    /// Where cells run.
    #[arg(long, value_enum, default_value = "migrate")]
    pub variant: Variant,
    /// Also move this many randomly chosen cells (seeded by --seed) to random ranks before
    /// every round: a test of migration, not a balancing policy.
    #[arg(long, default_value_t = 0)]
    pub force_migrations: usize,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub repeat: Repeat,
    /// Write the skeleton to this PNG file (255 = foreground).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Only write the input image (generated or thresholded) to this PNG file, and stop:
    /// for other programs to run on the same image.
    #[arg(long, value_name = "FILE", conflicts_with = "out")]
    pub write_input: Option<PathBuf>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub check: Check,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub output: Output,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub runtime: RuntimeArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub sim: Simulate,
}

/// What the simulator supports of dps-skeleton: direct execution only.
const SIMULATION: Support = Support {
    program: "dps-skeleton",
    modes: &[],
    why_not: "its control flow depends on the data (the pixels decide how many thinning rounds run, which cells \
              live and how much each computes)",
    kernels: &[],
};

fn variant_name(v: Variant) -> String {
    v.to_possible_value().map(|p| p.get_name().to_string()).unwrap_or_default()
}

/// Cell side unless --cell says otherwise.
pub const DEFAULT_CELL: usize = 256;

/// The checked input: the image, its description, the cell side, the output file.
struct Input {
    image: Plane,
    cell: usize,
    what: String,
    out: Option<OutputFile>,
}

fn check(args: &Args) -> Result<Input> {
    args.repeat.check()?;
    if args.depth == 0 || args.depth > MAX_DEPTH {
        bad_input!("--depth {}: a round runs 1 to {MAX_DEPTH} passes", args.depth);
    }
    if args.in_flight == 0 || args.in_flight > dps::MAX_WINDOW {
        bad_input!("--in-flight {}: a rank runs 1 to {} cells at once", args.in_flight, dps::MAX_WINDOW);
    }
    if args.cell == Some(0) {
        bad_input!("--cell 0: a cell needs at least one pixel");
    }
    // The generated images align their empty columns of cells to the cells.
    let align = args.cell.unwrap_or(DEFAULT_CELL);
    let (image, what) = match (&args.input, &args.generate) {
        (Some(path), _) => (images::read_png(path, args.threshold, args.dark_foreground)?, path.display().to_string()),
        (None, Some(values)) => {
            let g: Generate = images::parse_generate(values).map_err(dps_harness::BadInput::new)?;
            let bytes = (g.width.div_ceil(64) * 8) as u64 * g.height as u64;
            // The image, the cells and rank 0's copies of them.
            dps_harness::check_memory("the image", 4 * bytes, 2 * bytes)?;
            let what = format!("{} {}x{} seed {}", values[0], g.width, g.height, args.seed.seed);
            (images::generate(g, args.seed.seed, align), what)
        }
        (None, None) => bad_input!("give an image: --input FILE or --generate KIND W H"),
    };
    let side = image.width.max(image.height);
    let cell = match args.cell {
        Some(c) if c > side => bad_input!("--cell {c}: larger than the {}x{} image", image.width, image.height),
        Some(c) => c,
        None => DEFAULT_CELL.min(side),
    };
    let out = args.out.as_deref().or(args.write_input.as_deref());
    let option = if args.out.is_some() { "--out" } else { "--write-input" };
    let out = out.map(|p| OutputFile::create(option, p)).transpose()?;
    Ok(Input { image, cell, what, out })
}

/// Runs the program.
///
/// # Errors
/// Bad options or input (a [`dps_harness::BadInput`], before any work), a failed call, a
/// failed output, or a failed verification.
pub fn run(args: &Args) -> Result<()> {
    let mut input = dps_harness::input(check(args))?;
    if args.write_input.is_some() {
        let out = input.out.take().expect("checked");
        return out.write_and_commit(&images::png_bytes(&input.image)?);
    }
    let rt = args.sim.start(&args.runtime, &SIMULATION)?;
    let out = input.out.take().filter(|_| rt.is_root());
    let image = Arc::new(input.image.clone());
    let grid = Grid::new(image.width, image.height, input.cell);
    let main = rt.collection("main", "0", |_| Stash::default())?;
    let nodes = rt.collection("nodes", "all", |_| ())?;
    let depth = args.depth;
    let cells =
        rt.movable_collection("cells", &grid.static_mapping(rt.ranks()), |i| Cell::new(&grid, i, &image, depth))?;
    let graphs = graph::build(&rt, &main, &nodes, &cells, Shape { grid, depth, in_flight: args.in_flight }, image)?;
    let outcome = if rt.is_root() { drive(args, &input, out, &rt, &graphs, &cells, grid) } else { Ok(()) };
    rt.shutdown()?;
    outcome
}

/// One skeletonization from the input image.
struct Pass {
    seconds: f64,
    master: Master,
    migrations: usize,
    migration_seconds: f64,
    bookkeeping_seconds: f64,
}

/// Rank 0: puts the cells back where eq. (8-2) deals them, with the input's pixels, then
/// runs rounds until the image stops changing, moving cells between rounds as `variant`
/// (and --force-migrations) says. Its time is the wall clock's; under simulation, the
/// simulated time of the rounds and moves plus rank 0's own work between them (measured:
/// the bookkeeping and the balancing plans, which a simulation runs outside any operation).
fn skeletonize(
    args: &Args,
    variant: Variant,
    rt: &Runtime,
    graphs: &Graphs,
    cells: &Collection<Cell>,
    grid: Grid,
    image: &Plane,
) -> Result<Pass> {
    let ranks = rt.ranks();
    rt.remap(cells, &grid.static_mapping(ranks))?;
    rt.call(&graphs.reset, ())?;
    let mut forced = rand_chacha::ChaCha8Rng::seed_from_u64(args.seed.seed ^ 0x5eed);
    let (start, clock) = (Instant::now(), rt.stopwatch());
    let mut master = Master::new(grid, args.depth, image);
    let (mut migrations, mut bookkeeping, mut moving, mut planning, mut moves_simulated) = (0, 0.0, 0.0, 0.0, 0.0);
    let mut speeds = balance::Speeds::new(ranks);
    let near: Vec<Vec<usize>> = (0..grid.cells()).map(|c| grid.reach(c, 2 * args.depth)).collect();
    loop {
        let t0 = Instant::now();
        let living = master.next_cells();
        bookkeeping += t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        if ranks > 1 {
            let mut moves = Vec::new();
            if variant == Variant::Migrate {
                let owner: Vec<usize> = (0..grid.cells()).map(|c| cells.rank_of(c)).collect();
                moves = balance::plan(&owner, &master.predicted_load(&living), speeds.cost(), &near);
            }
            for _ in 0..args.force_migrations {
                moves.push((forced.gen_range(0..grid.cells()), forced.gen_range(0..ranks)));
            }
            // The last move of a cell wins; cells already there stay.
            let mut target = std::collections::BTreeMap::new();
            target.extend(moves);
            let moves: Vec<(usize, usize)> = target.into_iter().filter(|&(c, to)| cells.rank_of(c) != to).collect();
            planning += t0.elapsed().as_secs_f64();
            let clock = rt.stopwatch();
            rt.migrate_each(cells, &moves)?;
            moves_simulated += clock.seconds();
            migrations += moves.len();
        }
        moving += t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        let mut senders: Vec<(usize, Vec<usize>)> = (0..ranks).map(|r| (r, Vec::new())).collect();
        for &cell in master.senders() {
            senders[cells.rank_of(cell)].1.push(cell);
        }
        senders.retain(|s| !s.1.is_empty());
        let mut shares: Vec<(usize, Vec<Go>)> = (0..ranks).map(|r| (r, Vec::new())).collect();
        for &cell in &living {
            shares[cells.rank_of(cell)].1.push(Go { cell, round: master.rounds, quiet: master.quiet(cell) });
        }
        shares.retain(|s| !s.1.is_empty());
        bookkeeping += t0.elapsed().as_secs_f64();
        let reports = rt.call(&graphs.round, Round { senders, shares })?;
        let t0 = Instant::now();
        let changed = master.absorb(&living, &reports);
        let (mut work, mut nanos) = (vec![0; ranks], vec![0; ranks]);
        for r in &reports {
            work[cells.rank_of(r.cell)] += r.work;
            nanos[cells.rank_of(r.cell)] += r.nanos;
        }
        speeds.observe(&work, &nanos);
        bookkeeping += t0.elapsed().as_secs_f64();
        if !changed {
            break;
        }
    }
    let seconds = match rt.simulation() {
        Some(_) => {
            moving = planning + moves_simulated;
            clock.seconds() + bookkeeping + planning
        }
        None => start.elapsed().as_secs_f64(),
    };
    Ok(Pass { seconds, master, migrations, migration_seconds: moving, bookkeeping_seconds: bookkeeping })
}

/// Rank 0: the runs (`compare`: static and migrate in turn), the gather, the check and the
/// report.
fn drive(
    args: &Args,
    input: &Input,
    out: Option<OutputFile>,
    rt: &Runtime,
    graphs: &Graphs,
    cells: &Collection<Cell>,
    grid: Grid,
) -> Result<()> {
    let image = &input.image;
    let ranks = rt.ranks();
    let variants: &[Variant] = match args.variant {
        Variant::Compare => &[Variant::Static, Variant::Migrate],
        Variant::Static => &[Variant::Static],
        Variant::Migrate => &[Variant::Migrate],
    };
    let (mut times, mut last, mut first_call) = (vec![Vec::new(); variants.len()], None, None);
    for run in 0..args.repeat.runs() {
        for (k, &v) in variants.iter().enumerate() {
            let pass = skeletonize(args, v, rt, graphs, cells, grid, image)?;
            if k + 1 == variants.len() {
                first_call = first_call.or(Some(pass.seconds));
            }
            if args.repeat.is_timed(run) {
                times[k].push(pass.seconds);
            }
            last = Some(pass);
        }
    }
    let pass = last.expect("at least one run");
    let seconds = median(times.last().expect("a variant"));
    let mut skeleton = Plane::new(image.width, image.height);
    let pieces = rt.call(&graphs.gather, ())?;
    if pieces.len() != grid.cells() {
        bail!("the gather returned {} cells of {}", pieces.len(), grid.cells());
    }
    for p in &pieces {
        let r = grid.rect(p.cell);
        skeleton.paste(&p.pixels, r.x as isize, r.y as isize);
    }
    let pixels = (image.width * image.height) as f64;
    let compare = (args.variant == Variant::Compare).then(|| {
        let (s, m) = (median(&times[0]), median(&times[1]));
        Compare { static_seconds: s, migrate_seconds: m, gain: s / m }
    });
    let mut record = Record {
        common: Common::new("skeleton", &variant_name(args.variant), ranks, grid.cells(), seconds, None).bound_by(rt),
        input: input.what.clone(),
        width: image.width,
        height: image.height,
        cell: input.cell,
        depth: args.depth,
        iterations: pass.master.passes(),
        rounds: pass.master.rounds,
        cell_rounds: pass.master.cell_rounds,
        migrations: pass.migrations,
        migration_seconds: pass.migration_seconds,
        first_call_s: first_call.unwrap_or(seconds),
        bookkeeping_seconds: pass.bookkeeping_seconds,
        mpix_per_s: pixels / seconds / 1e6,
        black_before: image.count(),
        black_after: skeleton.count(),
        compare,
        serial_seconds: None,
        serial_mpix_per_s: None,
    };
    let mut verdict = Ok(());
    if args.check.verify {
        let start = Instant::now();
        let (reference, passes) = kernel::skeletonize(image);
        let serial = start.elapsed().as_secs_f64();
        (record.serial_seconds, record.serial_mpix_per_s) = (Some(serial), Some(pixels / serial / 1e6));
        verdict = if reference != skeleton {
            let wrong = reference.bits.iter().zip(skeleton.bits.iter()).map(|(a, b)| (a ^ b).count_ones()).sum::<u32>();
            Err(format!("{wrong} pixels differ from the serial reference"))
        } else if passes != pass.master.passes() {
            Err(format!("the serial reference took {passes} passes, the cells {}", pass.master.passes()))
        } else {
            Ok(())
        };
        record.common.verified = Some(verdict.is_ok());
    }
    if let Some(out) = out {
        out.write_and_commit(&images::png_bytes(&skeleton)?)?;
    }
    dps_harness::print_record(&record, args.output.json)?;
    verdict.map_err(|why| anyhow::anyhow!("verification failed: {why}"))
}
