//! The command line: the options, parsed and checked into a [`Plan`] before any work (bad
//! input exits 2 here), and the checks that need the job's size ([`Plan::job`], once the
//! runtime has started); nothing past this module sees the raw options.
//!
//! Every rank runs the same checks on the same input and reaches the same verdict, so a
//! refused run ends on every rank before the runtime starts (or, for the checks that need
//! the job's size, all together).

mod input;
mod job;
pub mod viewer;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::{Parser, ValueEnum};
use dps::SimMode;
use dps_harness::options::{Seed, Standard};
use dps_harness::simulate::Simulate;
use dps_harness::{bad_input, OutputFile};

pub use job::Job;

use crate::layout::Rect;
use crate::output::{Format, Snapshots};
use crate::world::Source;

/// `--bind`'s help: Life's default differs from the runtime's (see [`Args::runtime`]).
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

impl Variant {
    /// The variant's name in records.
    pub fn name(self) -> String {
        self.to_possible_value().map(|p| p.get_name().to_string()).unwrap_or_default()
    }
}

/// `dps-life`: Conway's Game of Life (B3/S23) on DPS, the world cut into horizontal bands.
// `--verify` and `--json` keep their places in the help, among Life's own options: an
// option's place is its order of declaration, and options of the same place are listed by
// name (`--snapshot-every`, `--verify`; `--compare-serial`, `--json`).
#[derive(Parser, Debug)]
#[command(name = "dps-life", version, about)]
#[command(mut_arg("seed", |a| a.help("Seed of the random world (and of the viewer's block positions)")))]
#[command(mut_arg("verify", |a| a.help("Compare the final world with the serial reference").display_order(15)))]
#[command(mut_arg("json", |a| a.display_order(16)))]
#[command(mut_arg("bind", |a| a.help(BIND_HELP)))]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// `dps-life view`: a separately started viewer of a running `dps-life --export-region`.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Schedule.
    #[arg(long, value_enum, default_value = "overlap")]
    pub variant: Variant,
    /// A random world of W × H cells (the default, 1024 × 1024).
    #[arg(long, num_args = 2, value_names = ["W", "H"], conflicts_with = "rle")]
    pub random: Option<Vec<usize>>,
    /// Probability that a cell of the random world is alive.
    #[arg(long, default_value_t = 0.5)]
    pub density: f64,
    /// `--seed`.
    #[command(flatten)]
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
    /// Time the serial kernel on a copy of the world on rank 0, in blocks of generations
    /// alternating with the parallel ones, and report the parallel efficiency against it.
    #[arg(long)]
    pub compare_serial: bool,
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
    /// The --view client is a separately started process (`dps-life view`, spawned by rank 0
    /// once the generations without calls are done), calling the exported region service,
    /// instead of the last rank of this job; every rank then holds a band. Implies
    /// --export-region.
    #[arg(long, requires = "view")]
    pub view_process: bool,
    /// Calls the --view-process client keeps in flight (its `--fan`).
    #[arg(long, value_name = "K", default_value_t = 1, requires = "view_process")]
    pub view_fan: usize,
    /// Export the region service as `life.region` (and the world's size as `life.world`)
    /// while the generations run, for viewers started separately (`dps-life view`); withdrawn
    /// when the run ends. The registry is the directory DPS_SERVICES names.
    #[arg(long)]
    pub export_region: bool,
    /// With --export-region: after the timed generations, keep running (untimed) generations
    /// until this many seconds after the export, so that viewers have a world to watch.
    #[arg(long, value_name = "S", requires = "export_region")]
    pub serve_seconds: Option<f64>,
    /// `--verify`, `--json`, the runtime's and the simulator's options.
    #[command(flatten)]
    pub standard: Standard,
}

/// The subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// A viewer started on its own (a plain process or its own mpirun): imports the region
    /// service a running `dps-life --export-region` exports and requests random blocks.
    View(viewer::ViewArgs),
}

/// The viewer of `--view`: the region service's client on the last rank, or a process of
/// its own (`--view-process`).
#[derive(Clone, Debug)]
pub struct Viewer {
    /// The block it asks for, W × H.
    pub block: (usize, usize),
    /// Its pause between two calls.
    pub period: Duration,
    /// Where it writes each block as PNG, if anywhere (a directory checked writable).
    pub png_dir: Option<PathBuf>,
    /// `--view-process`: the calls it keeps in flight (`None`: the last rank of this job).
    pub process_fan: Option<usize>,
}

/// `--export-region`: what the run exports and for how long.
#[derive(Clone, Copy, Debug)]
pub struct Export {
    /// --serve-seconds: run generations until this long after the export.
    pub serve: Option<Duration>,
}

/// A checked run: the world read, every option validated, the output files opened. What
/// depends on the job's size (the bands, their depth, the memory) is checked by
/// [`Plan::job`] once the runtime has started.
#[derive(Debug)]
pub struct Plan {
    /// The schedule.
    pub variant: Variant,
    /// The initial world.
    pub source: Source,
    /// The options that set the world's size, for messages: `--random 100 100`.
    pub size_from: String,
    /// The world is a torus.
    pub wrap: bool,
    /// Timed generations.
    pub generations: u64,
    /// Untimed generations before the timed ones.
    pub warmup: u64,
    /// Generations the world runs in all: the warm-up, the timed ones (twice with
    /// `compare`), and the timed ones again with --view.
    pub total_generations: u64,
    /// --depth, at least 1 (checked against the bands by [`Plan::job`]).
    pub depth: Option<usize>,
    /// The serial variant's generations per step, checked against the world's height
    /// (`None` for the parallel variants: theirs depends on the bands).
    pub serial_depth: Option<usize>,
    /// --steps-per-call, between 1 and [`MAX_STEPS_PER_CALL`].
    pub steps_per_call: Option<usize>,
    /// --map (`None`: one band per rank, the viewer's excluded).
    pub map: Option<String>,
    /// What --out and the snapshots write (--region, else the whole world).
    pub rect: Rect,
    /// --out, open; rank 0 writes it, the other ranks drop theirs.
    pub out: Option<(OutputFile, Format)>,
    /// --snapshot-every.
    pub snapshots: Option<Snapshots>,
    /// --compare-serial.
    pub compare_serial: bool,
    /// --view.
    pub viewer: Option<Viewer>,
    /// --export-region (or --view-process).
    pub export: Option<Export>,
    /// Seed of the random world and of the viewer's block positions.
    pub seed: u64,
    /// `--verify`, `--json`, the simulator's options, and the runtime's with Life's default
    /// binding (`cores` unless --bind, `DPS_BIND` or --view say otherwise).
    pub standard: Standard,
}

/// Most steps in a call of `overlap`: its graph has a node per step.
pub const MAX_STEPS_PER_CALL: usize = 1024;

impl Args {
    /// Checks every option and reads the world (bad input, before any work): what a
    /// simulation cannot do, the world and where it comes from, the region, the counts, the
    /// viewer's block, the output files; for the serial variant, its depth and memory.
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`] naming the option (and the file and line).
    pub fn plan(&self) -> Result<Plan> {
        self.check_simulation()?;
        let mut plan = dps_harness::input(input::read(self))?;
        if plan.variant == Variant::Serial {
            let height = plan.source.height();
            let depth = job::step_depth(plan.depth, height, "the world")?;
            dps_harness::input(plan.check_serial_memory(depth))?;
            plan.serial_depth = Some(depth);
        }
        Ok(plan)
    }

    /// The options a simulated run cannot have, refused before any work.
    fn check_simulation(&self) -> Result<()> {
        let Some(p) = self.standard.simulated_ranks() else { return Ok(()) };
        if self.variant == Variant::Serial {
            bad_input!("--simulate {p}: the serial variant runs no DPS graph to simulate");
        }
        if self.view.is_some() {
            bad_input!(
                "--simulate {p}: --view runs a client program on the last rank, which the simulator does not run"
            );
        }
        if self.export_region {
            bad_input!("--simulate {p}: --export-region serves other programs, which a simulated run cannot");
        }
        if self.compare_serial {
            bad_input!("--simulate {p}: --compare-serial times the serial kernel for real, against a predicted time");
        }
        if let Some(skipped) = cells_skipped(&self.standard.sim) {
            let mode = self.standard.sim.mode().name();
            if self.standard.verify() {
                bad_input!("--verify with --sim-mode {mode}: {skipped}; verify with --sim-mode de");
            }
            if self.out.is_some() || self.snapshot_every.is_some() {
                bad_input!(
                    "--out/--snapshot-every with --sim-mode {mode}: {skipped}; write the world with --sim-mode de"
                );
            }
        }
        Ok(())
    }

    /// The runtime's options, with Life's default binding: `cores` unless `--bind` or
    /// `DPS_BIND` says otherwise, or `--view` runs (its client rank would take a core share of
    /// its own, and on 2 cores the two band ranks would share the other). Left to the OS, a
    /// band's worker, which yields its core every ~100 µs, often shared a core with the other
    /// rank's band while the other core idled for whole calls (the scheduler does not move a
    /// thread that ran that recently): for most of 4 calls of 12 traced and part of 2 more
    /// (8192², 2 ranks, 2 cores).
    fn runtime(&self) -> dps::RuntimeArgs {
        let mut runtime = self.standard.runtime.clone();
        if runtime.bind.is_none() && std::env::var_os("DPS_BIND").is_none() && self.view.is_none() {
            runtime.bind = Some(dps::Bind::Cores);
        }
        runtime
    }
}

impl Plan {
    /// Why the world cannot be read, counted or checked in this run: the cells never change
    /// (PDEXEC) or are not there (NOALLOC). `None` for a run that has them.
    pub fn cells_skipped(&self) -> Option<&'static str> {
        cells_skipped(&self.standard.sim)
    }
}

/// See [`Plan::cells_skipped`].
fn cells_skipped(sim: &Simulate) -> Option<&'static str> {
    match sim.simulate.map(|_| sim.mode()) {
        Some(SimMode::Pdexec) => Some("the kernel is skipped, so the cells never change"),
        Some(SimMode::Noalloc) => Some("the cells are left out"),
        _ => None,
    }
}
