//! The command line: the options, parsed and checked once into a [`Plan`] before any work
//! (bad input exits 2 here): the image read or generated, the cell side chosen, the output
//! file opened. Nothing past this module sees the raw options.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, ValueEnum};
use dps_harness::options::{Seed, Standard};
use dps_harness::{bad_input, OutputFile, Repeat};

use crate::cells::Grid;
use crate::footprint;
use crate::images::{self, Generate};
use crate::kernel::Plane;

/// The largest `--depth`: a round's halo is `2·depth` pixels, read 64 at a time.
pub const MAX_DEPTH: usize = 32;

/// Cell side unless --cell says otherwise.
pub const DEFAULT_CELL: usize = 256;

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

impl Variant {
    /// The variant's name in records.
    pub fn name(self) -> String {
        self.to_possible_value().map(|p| p.get_name().to_string()).unwrap_or_default()
    }
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
    /// `--seed`.
    #[command(flatten)]
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
    /// `--reps`, `--warmup`.
    #[command(flatten)]
    pub repeat: Repeat,
    /// Write the skeleton to this PNG file (255 = foreground).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Only write the input image (generated or thresholded) to this PNG file, and stop:
    /// for other programs to run on the same image.
    #[arg(long, value_name = "FILE", conflicts_with = "out")]
    pub write_input: Option<PathBuf>,
    /// `--verify`, `--json`, the runtime's and the simulator's options.
    #[command(flatten)]
    pub standard: Standard,
}

/// What the run writes.
#[derive(Debug)]
pub enum Output {
    /// Nothing: the record alone.
    Record,
    /// The skeleton, to --out (open); rank 0 writes it, the other ranks drop theirs.
    Skeleton(OutputFile),
    /// The input image only, to --write-input (open), and no run.
    Input(OutputFile),
}

/// A checked run: every option validated, the image read or generated, the output opened.
#[derive(Debug)]
pub struct Plan {
    /// Where cells run.
    pub variant: Variant,
    /// The image, one bit per pixel.
    pub image: Plane,
    /// Where it came from, for the record: a file, or `KIND WxH seed S`.
    pub what: String,
    /// Cell side, pixels.
    pub cell: usize,
    /// Passes of the rule per round, 1 to [`MAX_DEPTH`].
    pub depth: usize,
    /// Cells a rank runs at once, 1 to `dps::MAX_WINDOW`.
    pub in_flight: usize,
    /// Cells moved at random before every round.
    pub force_migrations: usize,
    /// Seed of the generated image and of the forced migrations.
    pub seed: u64,
    /// Timed runs after the warm-up.
    pub repeat: Repeat,
    /// What the run writes.
    pub output: Output,
    /// `--verify`, `--json`, the runtime's and the simulator's options.
    pub standard: Standard,
}

impl Args {
    /// Checks every option and reads (or generates) the image, before any work.
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`] naming the option: a run count, --depth, --in-flight or
    /// --cell out of range, an image that cannot be read or generated or does not fit in
    /// memory, an output file that cannot be written.
    pub fn plan(&self) -> Result<Plan> {
        dps_harness::input(self.checked())
    }

    fn checked(&self) -> Result<Plan> {
        self.repeat.check()?;
        if self.depth == 0 || self.depth > MAX_DEPTH {
            bad_input!("--depth {}: a round runs 1 to {MAX_DEPTH} passes", self.depth);
        }
        if self.in_flight == 0 || self.in_flight > dps::MAX_WINDOW {
            bad_input!("--in-flight {}: a rank runs 1 to {} cells at once", self.in_flight, dps::MAX_WINDOW);
        }
        if self.cell == Some(0) {
            bad_input!("--cell 0: a cell needs at least one pixel");
        }
        let seed = self.seed.seed;
        // The generated images align their empty columns of cells to the cells.
        let align = self.cell.unwrap_or(DEFAULT_CELL);
        let (image, what, cell) = match (&self.input, &self.generate) {
            (Some(path), _) => {
                let image = images::read_png(path, self.threshold, self.dark_foreground)?;
                let cell = self.cell_side(image.width, image.height)?;
                self.check_memory(image.width, image.height, cell)?;
                (image, path.display().to_string(), cell)
            }
            (None, Some(values)) => {
                let g: Generate = images::parse_generate(values).map_err(dps_harness::BadInput::new)?;
                let cell = self.cell_side(g.width, g.height)?;
                self.check_memory(g.width, g.height, cell)?;
                let what = format!("{} {}x{} seed {seed}", values[0], g.width, g.height);
                (images::generate(g, seed, align), what, cell)
            }
            (None, None) => bad_input!("give an image: --input FILE or --generate KIND W H"),
        };
        let output = match (&self.out, &self.write_input) {
            (Some(path), _) => Output::Skeleton(OutputFile::create("--out", path)?),
            (None, Some(path)) => Output::Input(OutputFile::create("--write-input", path)?),
            (None, None) => Output::Record,
        };
        Ok(Plan {
            variant: self.variant,
            image,
            what,
            cell,
            depth: self.depth,
            in_flight: self.in_flight,
            force_migrations: self.force_migrations,
            seed,
            repeat: self.repeat.clone(),
            output,
            standard: self.standard.clone(),
        })
    }

    /// The cell side for a `width × height` image: --cell, at most the image's larger side,
    /// else [`DEFAULT_CELL`] or that side if smaller.
    fn cell_side(&self, width: usize, height: usize) -> Result<usize> {
        let side = width.max(height);
        match self.cell {
            Some(c) if c > side => bad_input!("--cell {c}: larger than the {width}x{height} image"),
            Some(c) => Ok(c),
            None => Ok(DEFAULT_CELL.min(side)),
        }
    }

    /// Refuses a run whose image and cells (`footprint`) do not fit in this node's memory,
    /// with the figure; with --write-input, the image and its PNG only.
    fn check_memory(&self, width: usize, height: usize, cell: usize) -> Result<()> {
        let image = footprint::plane(width, height);
        if self.write_input.is_some() {
            return dps_harness::check_memory("the image", 4 * image, 2 * image);
        }
        let grid = Grid::new(width, height, cell);
        let what = format!("a {width}x{height} image in {} cells of {cell}", grid.cells());
        let verify = self.standard.verify();
        match self.standard.simulated_ranks() {
            // Every virtual rank lives in this process.
            Some(p) => dps_harness::check_memory(
                &format!("{what} on {p} virtual ranks"),
                footprint::simulated(&grid, self.depth, p, verify),
                0,
            ),
            None => {
                let (rank0, other) = footprint::need(&grid, self.depth, dps_harness::launch_size(), verify);
                dps_harness::check_memory(&what, rank0, other)
            }
        }
    }
}
