//! The input of `gather` and `median` as every rank holds it: a stored image's directory,
//! or a random image made in memory (and, with `--storage disk`, stored in a scratch store
//! first), or, in a NOALLOC simulation, only the geometry.

use std::path::PathBuf;

use anyhow::{bail, Result};

use crate::cli::source::{CheckedSource, Origin, SourcePlan, Storage, RANDOM_IMAGE};
use crate::disk::Throttle;
use crate::raster::Raster;
use crate::store::{self, Meta};

/// The input, as every rank sees it.
pub(super) struct Input {
    /// The image's geometry (a stored image's metadata, or a random image's).
    pub(super) meta: Meta,
    /// The whole image, on every rank (random images only).
    pub(super) image: Option<Raster>,
    /// The store's directory (stored images, and random ones with --storage disk).
    pub(super) dir: Option<PathBuf>,
    /// A scratch store to remove at the end (rank 0).
    pub(super) scratch: Option<PathBuf>,
    /// The emulated disks' speed.
    pub(super) throttle: Throttle,
    /// A NOALLOC simulation of a random image: neither image nor store is made, and this
    /// is where the tiles would be.
    pub(super) absent: Option<Storage>,
}

impl Input {
    /// Checks the input on this rank ([`SourcePlan::check`]) and makes it (`threads`:
    /// compute threads; `noalloc`: a NOALLOC simulation, which makes no image). Every
    /// failure is bad input: the input could not be had.
    pub(super) fn prepare(
        source: &SourcePlan,
        threads: usize,
        rank: usize,
        noalloc: bool,
    ) -> Result<(CheckedSource, Input)> {
        dps_harness::input(source.check(threads, noalloc).and_then(|checked| {
            let input = Input::make(&checked, &source.name, rank, noalloc)?;
            Ok((checked, input))
        }))
    }

    /// Makes a checked input: a random image on every rank, stored by rank 0 in a scratch
    /// store with `--storage disk`.
    fn make(checked: &CheckedSource, name: &str, rank: usize, noalloc: bool) -> Result<Input> {
        let CheckedSource { meta, origin, throttle } = checked.clone();
        let nothing = Input { meta, image: None, dir: None, scratch: None, throttle, absent: None };
        let (seed, storage, base) = match origin {
            Origin::Stored(dir) => return Ok(Input { dir: Some(dir), ..nothing }),
            Origin::Random { seed, storage, scratch } => (seed, storage, scratch),
        };
        if noalloc {
            return Ok(Input { absent: Some(storage), ..nothing });
        }
        let tiling = nothing.meta.tiling();
        let image = Raster::random8(tiling.width, tiling.height, seed);
        if storage == Storage::Preloaded {
            return Ok(Input { image: Some(image), ..nothing });
        }
        // Every rank computes the same scratch path; rank 0 writes the store before any call.
        let job = std::env::var("PMIX_NAMESPACE").unwrap_or_else(|_| format!("pid{}", std::process::id()));
        let dir = base.join(format!("dps-filter-{job}"));
        if rank == 0 {
            for d in 0..tiling.disks {
                std::fs::create_dir_all(store::disk_dir(&dir, d))?;
            }
            store::write(&dir, name, &image, tiling, RANDOM_IMAGE)?;
        }
        Ok(Input { image: Some(image), dir: Some(dir.clone()), scratch: Some(dir), ..nothing })
    }

    /// `disk` or `preloaded`: where the tiles are, for the record.
    pub(super) fn label(&self) -> &'static str {
        if self.dir.is_some() || self.absent == Some(Storage::Disk) {
            "disk"
        } else {
            "preloaded"
        }
    }

    /// The whole input image (rank 0, for verification and the serial variant).
    pub(super) fn whole(&self, name: &str) -> Result<Raster> {
        match (&self.image, &self.dir) {
            (Some(image), _) => Ok(image.clone()),
            (None, Some(dir)) => store::read_window(dir, name, &self.meta, (0, 0, self.meta.width, self.meta.height)),
            (None, None) => bail!("no input"),
        }
    }
}
