//! The input of `gather` and `median` as every rank holds it: a stored image's directory,
//! or a random image made in memory (and, with `--storage disk`, stored in a scratch store
//! first), or, in a NOALLOC simulation, only the geometry.

use std::path::PathBuf;

use anyhow::{bail, Result};

use super::scratch::{self, Scratch};
use crate::cli::memory::Footprint;
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
    /// The scratch store, removed when the input is dropped (rank 0).
    pub(super) scratch: Option<Scratch>,
    /// The emulated disks' speed.
    pub(super) throttle: Throttle,
    /// A NOALLOC simulation of a random image: neither image nor store is made, and this
    /// is where the tiles would be.
    pub(super) absent: Option<Storage>,
}

impl Input {
    /// Checks the input on this rank ([`SourcePlan::check`]) and the memory the run takes
    /// (`footprint`, with `footprint.threads` compute threads), and makes the input
    /// (`noalloc`: a NOALLOC simulation, which makes no image and takes no memory for it).
    /// Every failure is bad input: the input could not be had.
    pub(super) fn prepare(
        source: &SourcePlan,
        footprint: &Footprint,
        rank: usize,
        noalloc: bool,
    ) -> Result<(CheckedSource, Input)> {
        let checked = source.check(footprint.threads, noalloc);
        let checked = checked.and_then(|c| if noalloc { Ok(c) } else { footprint.check(&c).map(|()| c) });
        dps_harness::input(checked.and_then(|checked| {
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
        // Every rank computes the same scratch path; rank 0 writes the store before any call
        // (and removes it if that fails: the Scratch is dropped).
        let dir = scratch::path(&base);
        let mut scratch = None;
        if rank == 0 {
            let made = Scratch::create(&dir)?;
            for d in 0..tiling.disks {
                std::fs::create_dir_all(store::disk_dir(&dir, d))?;
            }
            // A scratch disk too small is refused with the figures before anything is written.
            store::check_writable(&dir, name, &nothing.meta)?;
            store::write(&dir, name, &image, tiling, RANDOM_IMAGE)?;
            scratch = Some(made);
        }
        Ok(Input { image: Some(image), dir: Some(dir), scratch, ..nothing })
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
