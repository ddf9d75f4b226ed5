//! The runner: executes a checked [`Plan`]: builds the cells and graphs, runs the rounds from
//! rank 0 (moving cells between them with `--variant migrate`), verifies against the serial
//! reference, writes the skeleton and prints the record.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Result};
use dps::{Collection, Runtime};
use dps_harness::simulate::Support;
use dps_harness::{median, Common, OutputFile};
use rand::{Rng, SeedableRng};

use crate::balance;
use crate::cells::{Cell, Grid};
use crate::cli::{Args, Output, Plan, Variant};
use crate::graph::{self, Go, Graphs, Round, Shape, Stash};
use crate::images;
use crate::kernel::{self, Plane};
use crate::master::Master;
use crate::record::{Compare, Record};

/// What the simulator supports of dps-skeleton: direct execution only.
const SIMULATION: Support = Support {
    program: "dps-skeleton",
    modes: &[],
    why_not: "its control flow depends on the data (the pixels decide how many thinning rounds run, which cells \
              live and how much each computes)",
    kernels: &[],
};

/// The program: checks the options into a plan, then executes it.
///
/// # Errors
/// Bad options or input (a [`dps_harness::BadInput`], before any work), a failed call, a
/// failed output, or a failed verification.
pub fn run(args: &Args) -> Result<()> {
    execute(args.plan()?)
}

/// Executes a plan: writes the input image (--write-input), or skeletonizes it on the DPS
/// runtime. The plan is taken whole: it holds the output file its check opened, which the
/// run writes.
///
/// # Errors
/// A failed call, a failed output, or a failed verification.
pub fn execute(mut plan: Plan) -> Result<()> {
    let out = match std::mem::replace(&mut plan.output, Output::Record) {
        Output::Input(file) => return file.write_and_commit(&images::png_bytes(&plan.image)?),
        Output::Skeleton(file) => Some(file),
        Output::Record => None,
    };
    let standard = &plan.standard;
    let rt = standard.sim.start(&standard.runtime, &SIMULATION)?;
    let out = out.filter(|_| rt.is_root());
    let image = Arc::new(plan.image.clone());
    let grid = Grid::new(image.width, image.height, plan.cell);
    let main = rt.collection("main", "0", |_| Stash::default())?;
    let nodes = rt.collection("nodes", "all", |_| ())?;
    let depth = plan.depth;
    let cells =
        rt.movable_collection("cells", &grid.static_mapping(rt.ranks()), |i| Cell::new(&grid, i, &image, depth))?;
    let graphs = graph::build(&rt, &main, &nodes, &cells, Shape { grid, depth, in_flight: plan.in_flight }, image)?;
    let outcome = if rt.is_root() { drive(&plan, out, &rt, &graphs, &cells, grid) } else { Ok(()) };
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
    plan: &Plan,
    variant: Variant,
    rt: &Runtime,
    graphs: &Graphs,
    cells: &Collection<Cell>,
    grid: Grid,
) -> Result<Pass> {
    let ranks = rt.ranks();
    rt.remap(cells, &grid.static_mapping(ranks))?;
    rt.call(&graphs.reset, ())?;
    let mut forced = rand_chacha::ChaCha8Rng::seed_from_u64(plan.seed ^ 0x5eed);
    let (start, clock) = (Instant::now(), rt.stopwatch());
    let mut master = Master::new(grid, plan.depth, &plan.image);
    let (mut migrations, mut bookkeeping, mut moving, mut planning, mut moves_simulated) = (0, 0.0, 0.0, 0.0, 0.0);
    let mut speeds = balance::Speeds::new(ranks);
    let near: Vec<Vec<usize>> = (0..grid.cells()).map(|c| grid.reach(c, 2 * plan.depth)).collect();
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
            for _ in 0..plan.force_migrations {
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
    plan: &Plan,
    out: Option<OutputFile>,
    rt: &Runtime,
    graphs: &Graphs,
    cells: &Collection<Cell>,
    grid: Grid,
) -> Result<()> {
    let image = &plan.image;
    let ranks = rt.ranks();
    let variants: &[Variant] = match plan.variant {
        Variant::Compare => &[Variant::Static, Variant::Migrate],
        Variant::Static => &[Variant::Static],
        Variant::Migrate => &[Variant::Migrate],
    };
    let (mut times, mut last, mut first_call) = (vec![Vec::new(); variants.len()], None, None);
    for run in 0..plan.repeat.runs() {
        for (k, &v) in variants.iter().enumerate() {
            let pass = skeletonize(plan, v, rt, graphs, cells, grid)?;
            if k + 1 == variants.len() {
                first_call = first_call.or(Some(pass.seconds));
            }
            if plan.repeat.is_timed(run) {
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
    let compare = (plan.variant == Variant::Compare).then(|| {
        let (s, m) = (median(&times[0]), median(&times[1]));
        Compare { static_seconds: s, migrate_seconds: m, gain: s / m }
    });
    let mut record = Record {
        common: Common::new("skeleton", &plan.variant.name(), ranks, grid.cells(), seconds, None).bound_by(rt),
        input: plan.what.clone(),
        width: image.width,
        height: image.height,
        cell: plan.cell,
        depth: plan.depth,
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
    if plan.standard.verify() {
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
    dps_harness::print_record(&record, plan.standard.json())?;
    verdict.map_err(|why| anyhow::anyhow!("verification failed: {why}"))
}
