//! `median`: the variant, the output's name and the tile cache, checked.

use anyhow::Result;
use clap::{Args as ClapArgs, ValueEnum};
use dps::{Bind, SimMode};
use dps_harness::options::{Map, Repeat, Standard};
use dps_harness::{bad_input, OutputFile};

use super::memory::{default_cache, Footprint};
use super::source::{CheckedSource, Origin, Source, SourcePlan};
use super::{check_depth, check_name, MAP_HELP};
use crate::kernel::median::RADIUS;
use crate::output_path::check_outputs_outside_store;
use crate::raster::Depth;
use crate::store;

/// From this many tiles (and tiles under 64 pixels), `median` warns that their count sets
/// the time (measured: 0.4 s for 2¹⁴ tiles of 2 × 2, 64 s for 2²⁰, on one rank).
const SLOW_TILES: usize = 1 << 18;

/// `--in-flight`'s default: tiles in flight per compute thread.
pub const DEFAULT_IN_FLIGHT: usize = 8;
/// `--in-flight`'s largest value: a window beyond it buys nothing and costs each tile's
/// buffers (2 tiles' worth) per token.
const MAX_IN_FLIGHT: usize = 1024;

/// Which median runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MedianVariant {
    /// Exchange-process-and-store on DPS.
    Exchange,
    /// The whole-image median on one core (the baseline; no DPS, no MPI).
    Serial,
}

/// `median`.
#[derive(ClapArgs, Debug)]
#[command(mut_arg("verify", |a| a.help("Compare the output with the serial whole-image median (clamp to edge)")))]
#[command(mut_arg("map", |a| a.help(MAP_HELP)))]
#[command(after_help = "median defaults to --bind auto: each rank's threads on a core of its own where the \
                        node's ranks match its cores one to one and no CPU quota applies (else unbound)")]
pub struct MedianArgs {
    /// The input.
    #[command(flatten)]
    pub source: Source,
    /// Variant.
    #[arg(long, value_enum, default_value = "exchange")]
    pub variant: MedianVariant,
    /// The output image's name in the store of --dir (default NAME-median).
    #[arg(long)]
    pub out_name: Option<String>,
    /// After each timed run, time the serial whole-image median on rank 0 (the same
    /// kernel on one core) and report its rate beside the parallel one.
    #[arg(long)]
    pub compare_serial: bool,
    /// Tiles in flight per compute thread (the thesis's flow control has 2). While a tile's
    /// border waits for its neighbours' strips, the others' interiors keep the thread busy:
    /// on 2 ranks of 2 cores, 4096² and 8192², 8 made 1.04-1.15× the rate of 2.
    #[arg(long, default_value_t = DEFAULT_IN_FLIGHT)]
    pub in_flight: usize,
    /// Tile cache per disk thread, tiles, for file-backed input (0: off; default: 4 rows
    /// of tiles shared among the disks, plus 2, and a row for each row the tiles in flight
    /// span; the thesis says 3 rows hold most tiles).
    #[arg(long)]
    pub cache: Option<usize>,
    /// `--map` of the compute threads.
    #[command(flatten)]
    pub map: Map,
    /// `--reps`, `--warmup`.
    #[command(flatten)]
    pub repeat: Repeat,
    /// `--verify`, `--json`, the runtime's and the simulator's options.
    #[command(flatten)]
    pub standard: Standard,
}

/// A checked `median` (the input is checked against it with [`MedianPlan::check_input`]).
#[derive(Debug, Clone)]
pub struct MedianPlan {
    /// The input.
    pub source: SourcePlan,
    /// The variant.
    pub variant: MedianVariant,
    /// The output image's name in the input's store (a plain file name, not the input's).
    pub out_name: String,
    /// Time the serial median after each timed run.
    pub compare_serial: bool,
    /// `--cache`, tiles per disk thread (`None`: chosen from the input's tiling).
    pub cache: Option<usize>,
    /// `--in-flight`, tiles per compute thread.
    pub in_flight: usize,
    /// Mapping of the compute threads.
    pub map: String,
    /// Timed runs after the warm-up.
    pub repeat: Repeat,
    /// `--verify`, `--json`, the runtime's and the simulator's options.
    pub standard: Standard,
}

impl MedianArgs {
    /// Checks the options (on every rank, before the runtime starts).
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`]: a run count out of range, no input, a simulation of the
    /// serial variant or of what a simulation mode cannot give, an output inside the store,
    /// a bad output name, an output that cannot be written.
    pub fn plan(&self) -> Result<MedianPlan> {
        self.repeat.check()?;
        if !(1..=MAX_IN_FLIGHT).contains(&self.in_flight) {
            bad_input!(
                "--in-flight {}: tiles in flight per compute thread must be 1 to {MAX_IN_FLIGHT}",
                self.in_flight
            );
        }
        let source = self.source.plan()?;
        // Bound where each rank has a core of its own (`--bind auto`): the rank's disk and
        // progress threads then preempt only its own compute thread, which waits for them,
        // not the other rank's (8192² on 2 ranks of 2 cores: 1.36 against 1.01 of OpenCV).
        let standard =
            &Standard { runtime: self.standard.runtime.with_default_bind(Bind::Auto), ..self.standard.clone() };
        let plan = |out_name: String| MedianPlan {
            source: source.clone(),
            variant: self.variant,
            out_name,
            compare_serial: self.compare_serial,
            cache: self.cache,
            in_flight: self.in_flight,
            map: self.map.map.clone(),
            repeat: self.repeat.clone(),
            standard: standard.clone(),
        };
        if self.variant == MedianVariant::Serial {
            if let Some(p) = standard.simulated_ranks() {
                bad_input!("--simulate {p}: the serial variant runs no DPS graph to simulate");
            }
            return Ok(plan(String::new()));
        }
        if standard.simulated_ranks().is_some() && standard.sim.mode() != SimMode::De {
            let mode = standard.sim.mode().name();
            if standard.verify() {
                bad_input!(
                    "--verify: --sim-mode {mode} skips the medians, so there is no result to verify; use --sim-mode de"
                );
            }
            if source.dir.is_some() {
                bad_input!(
                    "--dir: --sim-mode {mode} skips the medians and would store unfiltered tiles as the output; \
                     use --sim-mode de, or --random W H to size the run"
                );
            }
        }
        // Before the runtime starts: it writes --trace even when the run is refused.
        check_outputs_outside_store(source.dir.as_deref(), &[("--trace", standard.runtime.trace.as_deref())])?;
        let out_name = self.out_name.clone().unwrap_or_else(|| format!("{}-median", source.name));
        check_name(&out_name, "--out-name")?;
        if out_name == source.name {
            bad_input!("--out-name {out_name:?} is the input's name: the input would be overwritten");
        }
        // The output's metadata file can be written (a probe, on rank 0), also before the start: a
        // refusal after it would wait 10 s for the other ranks' shutdown.
        if let (Some(dir), true) = (&source.dir, dps_harness::launch_rank().unwrap_or(0) == 0) {
            drop(OutputFile::create("--dir", &store::meta_path(dir, &out_name))?);
        }
        if let (Some(p), true) = (standard.simulated_ranks(), self.compare_serial) {
            bad_input!("--simulate {p}: --compare-serial times the serial kernel for real, against a predicted time");
        }
        standard.check()?;
        Ok(plan(out_name))
    }
}

impl MedianPlan {
    /// Checks the input against the median (`root`: on rank 0, which checks that the output
    /// can be stored beside a stored input).
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`]: not 8-bit grey, tiles smaller than the median's radius,
    /// a store that cannot hold the output.
    pub fn check_input(&self, input: &CheckedSource, root: bool) -> Result<()> {
        check_depth(input.meta.depth(), "median", &[Depth::Bit8])?;
        if self.variant == MedianVariant::Serial {
            return Ok(());
        }
        if input.meta.tile < RADIUS {
            bad_input!("tile size {}: the 5×5 median needs tiles of at least {RADIUS} pixels", input.meta.tile);
        }
        if let (Origin::Stored(dir), true) = (&input.origin, root) {
            store::check_writable(dir, &self.out_name, &input.meta)?;
        }
        Ok(())
    }

    /// A note when the tiles are so small and so many that their count, not their pixels,
    /// sets the time: each tile costs about ten messages (its strips, its write, its
    /// count), tens of µs, against the fraction of a µs its median takes.
    pub fn tile_count_note(&self, input: &CheckedSource) -> Option<String> {
        let t = input.meta.tiling();
        (t.count() >= SLOW_TILES && t.tile < 64).then(|| {
            format!(
                "{} tiles of {}x{} pixels: each tile costs about ten messages (tens of µs), far more than its \
                 median, so this run takes about a minute per million tiles; --tiles 64 or more keeps that small",
                t.count(),
                t.tile,
                t.tile
            )
        })
    }

    /// The tile cache per disk thread: `--cache`, or [`default_cache`] for `threads`
    /// compute threads.
    pub fn cache(&self, input: &CheckedSource, threads: usize) -> usize {
        self.cache.unwrap_or_else(|| default_cache(&input.meta.tiling(), self.in_flight * threads))
    }

    /// What the run keeps in memory, on `ranks` ranks with `threads` compute threads.
    pub fn footprint(&self, ranks: usize, threads: usize) -> Footprint {
        let verify = self.standard.verify();
        if self.variant == MedianVariant::Serial {
            // The input, its copy and the output; the per-pixel reference.
            let rank0_images = 2 + u64::from(verify);
            return Footprint {
                ranks: 1,
                threads: 1,
                disks: false,
                outputs: false,
                cache: None,
                in_flight: 1,
                rank0_images,
                rank0_per_tile: 0,
            };
        }
        Footprint {
            ranks,
            threads,
            disks: true,
            outputs: true,
            cache: self.cache,
            in_flight: self.in_flight,
            // Verification: the output collected (and its copy in transit), the input and
            // the reference; --compare-serial: the input and the output.
            rank0_images: 4 * u64::from(verify) + 2 * u64::from(self.compare_serial),
            // The report's two times per tile (vectors grown by doubling) and their copies
            // when their medians are taken; verification's tokens, one per tile.
            rank0_per_tile: 64 + 128 * u64::from(verify),
        }
    }
}
