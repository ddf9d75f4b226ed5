//! The command line: `store`, `load` (serial, one process), `gather` and `median` (DPS,
//! any number of ranks), and the checks of their input.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args as ClapArgs, Parser, Subcommand, ValueEnum};
use dps::RuntimeArgs;
use dps_harness::options::{Check, Map, Output, Repeat, Seed};
use dps_harness::simulate::Simulate;
use dps_harness::{bad_input, OutputFile};

use crate::generation::Generation;
use crate::layout::{self, StrideQuality, Tiling};
use crate::linear::Filter;
use crate::raster::{Depth, Raster};
use crate::store;

/// `dps-filter`: parallel imaging on DPS (thesis ch. 7). Images are stored as square tiles
/// striped over D disks (directories `DIR/disk0` … `DIR/disk<D-1>`) by the rule
/// disk(r, c) = (c + r·s) mod D; `gather` runs a linear filter where the tiles are and
/// adds the results up on rank 0 (process-and-gather); `median` runs the 5×5 median
/// with the tiles' borders exchanged between the ranks and writes the result striped like
/// the input (exchange-process-and-store).
#[derive(Parser, Debug)]
#[command(name = "dps-filter", version, about, long_about, after_long_help = EXAMPLES)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub mode: Mode,
}

const EXAMPLES: &str = "Examples:
  dps-filter store in.png --tiles 512 --disks 8 --dir store     (s = 5: all 8 neighbours on other disks)
  dps-filter load store --window 100 200 640 480 -o part.png
  mpirun -n 4 dps-filter gather --dir store --filter gauss5 --window 100 200 640 480 -o blurred.png --verify
  mpirun -n 4 dps-filter median --dir store --verify          (writes image-median, striped like image)
  mpirun -n 2 dps-filter median --random 8192 8192 --seed 1 --tiles 512 --verify --json
  mpirun -n 4 dps-filter median --random 4096 4096 --storage disk --cache 0 --json
  dps-filter median --variant serial --random 8192 8192

The 5x5 median clamps at the image's edges (a pixel outside takes the nearest pixel's value);
linear filters take the image as 0 outside (the thesis's rule). Bad input (a missing, truncated
or foreign file, a window outside the image, a tile size of 0 or larger than the image, a
missing disk directory or a tile file of the wrong size, a stride the rule does not allow) is
refused with one line and exit code 2 before any work; no partial file is left.";

/// The modes.
#[derive(Subcommand, Debug)]
pub enum Mode {
    /// Store a PNG as striped tiles: DIR/NAME.json and DIR/disk<k>/NAME.<generation>.tiles
    /// (one process); an image of the same name is replaced atomically.
    Store(StoreArgs),
    /// Read a window of a stored image back into a PNG (one process).
    Load(LoadArgs),
    /// Process-and-gather: a linear filter over a window, tiles filtered where they are
    /// stored and added up on rank 0 (overlap-add).
    Gather(GatherArgs),
    /// Exchange-process-and-store: the 5×5 median of a whole 8-bit image, each tile with
    /// its neighbours' borders, written back striped like the input.
    Median(MedianArgs),
}

/// `store`.
#[derive(ClapArgs, Debug)]
pub struct StoreArgs {
    /// The image: 8- or 16-bit grey, or 8-bit RGB (24 bits) PNG.
    #[arg(value_name = "IN.png")]
    pub input: PathBuf,
    /// Tile side, pixels (default 512, or the image's larger side if smaller).
    #[arg(long)]
    pub tiles: Option<usize>,
    /// Disks to stripe the tiles over.
    #[arg(long, default_value_t = 1)]
    pub disks: usize,
    /// The store's directory (it must exist; its disk<k> subdirectories are created).
    #[arg(long)]
    pub dir: PathBuf,
    /// The stored image's name.
    #[arg(long, default_value = "image")]
    pub name: String,
    /// The allocation rule's stride s (coprime to D, not 1 or D−1; default: the valid s
    /// closest to D/2, e.g. 5 for 8 disks).
    #[arg(long)]
    pub stride: Option<usize>,
    /// Store 1-bit pixels (levels ≥ 128 of an 8-bit grey image are 1).
    #[arg(long, value_parser = ["1"])]
    pub bits: Option<String>,
}

/// `load`.
#[derive(ClapArgs, Debug)]
pub struct LoadArgs {
    /// The store's directory.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The stored image's name.
    #[arg(long, default_value = "image")]
    pub name: String,
    /// The window to read (default: the whole image).
    #[arg(long, num_args = 4, value_names = ["X", "Y", "W", "H"])]
    pub window: Option<Vec<usize>>,
    /// The PNG to write (outside the store).
    #[arg(short = 'o', long = "out", value_name = "OUT.png")]
    pub out: PathBuf,
}

const MAP_HELP: &str = "Mapping of the compute threads (one per rank by default); disk k is served on the rank of compute thread k mod S, which also processes its tiles";

/// The input of `gather` and `median`: a stored image, or a random one in memory.
#[derive(ClapArgs, Debug, Clone)]
pub struct Source {
    /// A stored image's directory.
    #[arg(long, conflicts_with = "random")]
    pub dir: Option<PathBuf>,
    /// The stored image's name.
    #[arg(long, default_value = "image")]
    pub name: String,
    /// A random 8-bit image of W × H pixels, made on every rank (preloaded: its tiles are in
    /// the disk threads' memory).
    #[arg(long, num_args = 2, value_names = ["W", "H"])]
    pub random: Option<Vec<usize>>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub seed: Seed<1>,
    /// Tile side of the random image (default 512, or the image's larger side if smaller).
    #[arg(long, requires = "random")]
    pub tiles: Option<usize>,
    /// Disks of the random image (default: one per compute thread).
    #[arg(long, requires = "random")]
    pub disks: Option<usize>,
    /// With --random: `preloaded` keeps the tiles in the disk threads' memory; `disk`
    /// stores the image in a scratch directory first (untimed) and runs from its tile files.
    #[arg(long, value_enum, default_value = "preloaded", requires = "random")]
    pub storage: Storage,
    /// Emulate slow disks: every tile read from or written to a tile file also waits this
    /// long (the thesis's disks: 18.5 ms). Counted in t_dr and t_dw.
    #[arg(long, default_value_t = 0.0, value_name = "MS", allow_negative_numbers = true)]
    pub disk_latency_ms: f64,
    /// Emulate slow disks: every tile read or written also waits its size over this rate
    /// (the thesis's disks: 3.3 MB/s; 0: no limit; else from 10^-6, a byte a second, to
    /// 10^6).
    #[arg(long, default_value_t = 0.0, value_name = "MB/S", allow_negative_numbers = true)]
    pub disk_mb_per_s: f64,
    /// Where `--storage disk` makes its scratch store (removed at the end; default: the
    /// system's temporary directory).
    #[arg(long, value_name = "DIR", requires = "random")]
    pub scratch: Option<PathBuf>,
}

/// Where the tiles of a random image are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Storage {
    /// In the disk threads' memory.
    Preloaded,
    /// In tile files of a scratch store.
    Disk,
}

/// `gather`.
#[derive(ClapArgs, Debug)]
#[command(mut_arg("verify", |a| a.help("Compare the window with the serial zero-padded convolution of the image")))]
#[command(mut_arg("map", |a| a.help(MAP_HELP)))]
pub struct GatherArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub source: Source,
    /// The filter (integer kernel; the output PNG is divided by the kernel's sum).
    #[arg(long, value_enum, default_value = "gauss5")]
    pub filter: Filter,
    /// The window (default: the whole image).
    #[arg(long, num_args = 4, value_names = ["X", "Y", "W", "H"])]
    pub window: Option<Vec<usize>>,
    /// Write the filtered window as PNG (normalised by the kernel's sum; outside the store).
    #[arg(short = 'o', long = "out", value_name = "OUT.png")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub map: Map,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub repeat: Repeat,
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
pub struct MedianArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
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
    /// Tile cache per disk thread, tiles, for file-backed input (0: off; default: 4 rows
    /// of tiles shared among the disks, plus 2; the thesis says 3 rows hold most tiles).
    #[arg(long)]
    pub cache: Option<usize>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub map: Map,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub repeat: Repeat,
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

/// Runs the program.
///
/// # Errors
/// Bad options or input (a [`dps_harness::BadInput`], before any work), a failed run or
/// output, a failed verification.
pub fn run(args: &Args) -> Result<()> {
    match &args.mode {
        Mode::Store(a) => run_store(a),
        Mode::Load(a) => run_load(a),
        Mode::Gather(a) => crate::parallel::gather(a),
        Mode::Median(a) => crate::parallel::median(a),
    }
}

/// The default tile side: 512, or the image's larger side if that is smaller.
pub fn default_tile(tiles: Option<usize>, width: usize, height: usize) -> usize {
    tiles.unwrap_or(512.min(width.max(height)))
}

/// The stride for `disks` disks: `--stride`, checked, or the default, with a note when D has
/// no stride that keeps all 8 neighbours of a tile off its disk (D = 2, 3, 4, 6).
///
/// # Errors
/// A [`dps_harness::BadInput`] for a stride the rule does not allow.
pub fn choose_stride(stride: Option<usize>, disks: usize) -> Result<(usize, Option<String>)> {
    let (default, quality) = layout::default_stride(disks);
    match stride {
        Some(s) if s == default || layout::is_valid_stride(s, disks) => Ok((s, None)),
        Some(s) => bad_input!(
            "--stride {s}: the rule needs s coprime to --disks {disks} and s ∉ {{1, D−1}}{}",
            if quality == StrideQuality::Spec {
                format!(" (for example {default})")
            } else {
                format!("; none exists for D = {disks}, the closest rule is s = {default}")
            }
        ),
        None => {
            let note = match quality {
                StrideQuality::Spec => None,
                StrideQuality::NotCoprime => Some(format!(
                    "no stride is coprime to {disks} disks and ∉ {{1, {}}}; used s = {default}, which still puts all 8 neighbours of a tile on other disks",
                    disks - 1
                )),
                StrideQuality::Partial if disks > 1 => Some(format!(
                    "with {disks} disks no stride puts all 8 neighbours of a tile on other disks; used s = {default} (diagonal neighbours may share a disk)"
                )),
                StrideQuality::Partial => None,
            };
            Ok((default, note))
        }
    }
}

fn run_store(a: &StoreArgs) -> Result<()> {
    if !a.dir.is_dir() {
        bad_input!("--dir {}: no such directory", a.dir.display());
    }
    if a.disks == 0 || a.disks > 4096 {
        bad_input!("--disks {}: must be between 1 and 4096", a.disks);
    }
    check_name(&a.name, "--name")?;
    let (stride, note) = choose_stride(a.stride, a.disks)?;
    let image = Raster::read_png(&a.input, a.bits.is_some())?;
    let tile = default_tile(a.tiles, image.width, image.height);
    if let Err(why) = store::check_tile(tile, image.width, image.height) {
        bad_input!("--tiles: {why}");
    }
    for d in 0..a.disks {
        let disk = store::disk_dir(&a.dir, d);
        if !disk.exists() {
            std::fs::create_dir(&disk).map_err(|e| {
                dps_harness::BadInput::new(format!("cannot create disk directory {}: {e}", disk.display()))
            })?;
        }
    }
    let tiling = Tiling { width: image.width, height: image.height, tile, disks: a.disks, stride };
    let generation = Generation::fresh();
    store::check_writable(&a.dir, &a.name, &store::Meta::new(tiling, image.depth, generation))?;
    store::write(&a.dir, &a.name, &image, tiling, generation)?;
    println!(
        "stored {} ({}x{}, {} bits) as {} tiles of {} on {} disks (s = {}) in {}",
        a.input.display(),
        image.width,
        image.height,
        image.depth.bits(),
        tiling.count(),
        tile,
        a.disks,
        stride,
        a.dir.display()
    );
    if let Some(note) = note {
        eprintln!("dps-filter: note: {note}");
    }
    Ok(())
}

fn run_load(a: &LoadArgs) -> Result<()> {
    check_name(&a.name, "--name")?;
    let meta = store::open(&a.dir, &a.name)?;
    let window = check_window(a.window.as_deref(), meta.width, meta.height)?;
    crate::output_path::check_outside_store("--out", &a.out, &a.dir)?;
    let out = OutputFile::create("--out", &a.out)?;
    let image = store::read_window(&a.dir, &a.name, &meta, window)?;
    image.write_png(out)
}

/// A stored image's name: a plain file name.
///
/// # Errors
/// A [`dps_harness::BadInput`] for an empty name or one with a path separator.
pub fn check_name(name: &str, option: &str) -> Result<()> {
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        bad_input!("{option} {name:?}: must be a plain file name (no '/', not starting with '.')");
    }
    Ok(())
}

/// `--window X Y W H` (default: the whole image), checked against the image.
///
/// # Errors
/// A [`dps_harness::BadInput`] for an empty window or one reaching outside the image.
pub fn check_window(window: Option<&[usize]>, width: usize, height: usize) -> Result<(usize, usize, usize, usize)> {
    let Some(&[x, y, w, h]) = window else { return Ok((0, 0, width, height)) };
    if w == 0 || h == 0 {
        bad_input!("--window {x} {y} {w} {h}: the window is empty");
    }
    if x.checked_add(w).is_none_or(|e| e > width) || y.checked_add(h).is_none_or(|e| e > height) {
        bad_input!("--window {x} {y} {w} {h}: outside the {width}x{height} image");
    }
    Ok((x, y, w, h))
}

/// The depth a mode needs.
///
/// # Errors
/// A [`dps_harness::BadInput`] naming the mode and the image's depth.
pub fn check_depth(depth: Depth, mode: &str, ok: &[Depth]) -> Result<()> {
    if !ok.contains(&depth) {
        let bits: Vec<String> = ok.iter().map(|d| d.bits().to_string()).collect();
        bad_input!("{mode} needs {}-bit grey pixels; the image has {} bits", bits.join("- or "), depth.bits());
    }
    Ok(())
}
