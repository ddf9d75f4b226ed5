//! The input of `gather` and `median`: a stored image, or a random one made in memory;
//! its options, and their checks once the runtime has said how many compute threads there
//! are.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args as ClapArgs, ValueEnum};
use dps_harness::bad_input;
use dps_harness::options::Seed;

use super::{check_name, choose_stride, default_random_tile};
use crate::disk::Throttle;
use crate::layout::Tiling;
use crate::raster::Depth;
use crate::store::{self, Generation, Meta, MAX_SIDE};

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
    /// `--seed` of the random image.
    #[command(flatten)]
    pub seed: Seed<1>,
    /// Tile side of the random image (default: the largest of 2048, 1024 and 512 that leaves
    /// each compute thread 8 tiles; 512, or the image's larger side if smaller, for small images).
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

/// The input as the options name it: a stored image or a random one. Its checks need the
/// compute threads (the default disk count), so they wait for the runtime:
/// [`SourcePlan::check`].
#[derive(Debug, Clone)]
pub struct SourcePlan {
    /// The stored image's name.
    pub name: String,
    /// A stored image's directory.
    pub dir: Option<PathBuf>,
    /// A random image's width and height.
    pub random: Option<(usize, usize)>,
    /// The random image's seed.
    pub seed: u64,
    /// The random image's tile side.
    pub tiles: Option<usize>,
    /// The random image's disks.
    pub disks: Option<usize>,
    /// Where the random image's tiles are.
    pub storage: Storage,
    /// The emulated disks' latency, ms (checked with the input).
    pub disk_latency_ms: f64,
    /// The emulated disks' rate, MB/s (checked with the input).
    pub disk_mb_per_s: f64,
    /// The base directory of `--storage disk`'s scratch store.
    pub scratch: Option<PathBuf>,
}

/// Where a checked input's tiles come from.
#[derive(Debug, Clone)]
pub enum Origin {
    /// A stored image, opened (every tile file checked), in this directory.
    Stored(PathBuf),
    /// A random 8-bit image of this seed, its tiles in the disk threads' memory or, with
    /// `Storage::Disk`, in a scratch store under `scratch` (the directory exists).
    Random {
        /// Its seed.
        seed: u64,
        /// Where its tiles are.
        storage: Storage,
        /// The base directory of the scratch store.
        scratch: PathBuf,
    },
}

/// The input, checked: its geometry, where its tiles are, the emulated disks' speed.
#[derive(Debug, Clone)]
pub struct CheckedSource {
    /// The stored image's metadata, or the random image's.
    pub meta: Meta,
    /// Where its tiles come from.
    pub origin: Origin,
    /// The emulated disks' speed.
    pub throttle: Throttle,
}

/// The generation of a random image's tiles: every rank makes the same metadata, and a
/// scratch store is new to each job, so a constant is unique in it.
pub const RANDOM_IMAGE: Generation = Generation(0);

impl Source {
    /// The input as the options name it.
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`] if neither `--dir` nor `--random` is given.
    pub fn plan(&self) -> Result<SourcePlan> {
        if self.random.is_none() && self.dir.is_none() {
            bad_input!("give --dir DIR (a stored image) or --random W H");
        }
        Ok(SourcePlan {
            name: self.name.clone(),
            dir: self.dir.clone(),
            random: self.random.as_deref().map(|r| (r[0], r[1])),
            seed: self.seed.seed,
            tiles: self.tiles,
            disks: self.disks,
            storage: self.storage,
            disk_latency_ms: self.disk_latency_ms,
            disk_mb_per_s: self.disk_mb_per_s,
            scratch: self.scratch.clone(),
        })
    }
}

impl SourcePlan {
    /// Checks the input on this rank (`threads`: compute threads, the default disk count of
    /// a random image; `noalloc`: a NOALLOC simulation, which makes no image and so needs
    /// no memory for it nor a scratch directory).
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`]: a bad name or disk speed, a missing or damaged store, a
    /// random image's size, tile side or disk count out of range, a missing scratch
    /// directory. (The memory a run needs is checked with its [`Footprint`](super::memory::Footprint).)
    pub fn check(&self, threads: usize, noalloc: bool) -> Result<CheckedSource> {
        check_name(&self.name, "--name")?;
        let (ms, mbps) = (self.disk_latency_ms, self.disk_mb_per_s);
        // A rate under a byte a second would make a tile's wait years (and past the simulated
        // clock's range, or a Duration's): the same floor as a platform file's bandwidth.
        if !(0.0..=10_000.0).contains(&ms) || !(mbps == 0.0 || (1e-6..=1e6).contains(&mbps)) {
            bad_input!(
                "--disk-latency-ms {ms} / --disk-mb-per-s {mbps}: need 0 ≤ latency ≤ 10000 ms and a rate of 0 \
                 (no limit) or from 10^-6 (1 byte per second) to 10^6 MB/s"
            );
        }
        let throttle = Throttle { latency_s: ms * 1e-3, bytes_per_s: mbps * 1e6 };
        let Some((w, h)) = self.random else {
            let Some(dir) = &self.dir else { bad_input!("give --dir DIR (a stored image) or --random W H") };
            let meta = store::open(dir, &self.name)?;
            return Ok(CheckedSource { meta, origin: Origin::Stored(dir.clone()), throttle });
        };
        if !(1..=MAX_SIDE).contains(&w) || !(1..=MAX_SIDE).contains(&h) {
            bad_input!("--random {w} {h}: each side must be between 1 and {MAX_SIDE}");
        }
        let tile = default_random_tile(self.tiles, w, h, threads);
        if let Err(why) = store::check_tile(tile, w, h) {
            bad_input!("--tiles: {why}");
        }
        let disks = self.disks.unwrap_or(threads);
        if disks == 0 || disks > 4096 {
            bad_input!("--disks {disks}: must be between 1 and 4096");
        }
        let (stride, _) = choose_stride(None, disks)?;
        let tiling = Tiling { width: w, height: h, tile, disks, stride };
        let meta = Meta::new(tiling, Depth::Bit8, RANDOM_IMAGE);
        let scratch = self.scratch.clone().unwrap_or_else(std::env::temp_dir);
        let origin = Origin::Random { seed: self.seed, storage: self.storage, scratch: scratch.clone() };
        if noalloc {
            return Ok(CheckedSource { meta, origin, throttle });
        }
        if self.storage == Storage::Disk && !scratch.is_dir() {
            bad_input!("--scratch {}: no such directory", scratch.display());
        }
        Ok(CheckedSource { meta, origin, throttle })
    }
}
