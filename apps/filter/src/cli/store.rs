//! `store`: a PNG and where to store it, checked (the image read, the tiling chosen).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args as ClapArgs;
use dps_harness::bad_input;

use super::{check_name, choose_stride, default_tile};
use crate::layout::Tiling;
use crate::raster::Raster;
use crate::store;

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

/// A checked `store`: the image, read, and its tiling. The run makes the disk directories
/// and checks that they can hold the tile files (bad input too, before any file is written).
#[derive(Debug)]
pub struct StorePlan {
    /// The PNG read (for the message).
    pub input: PathBuf,
    /// Its pixels.
    pub image: Raster,
    /// The store's directory (it exists).
    pub dir: PathBuf,
    /// The stored image's name (a plain file name).
    pub name: String,
    /// The tiles and their disks.
    pub tiling: Tiling,
    /// What to say about a default stride that cannot keep every neighbour off a tile's disk.
    pub note: Option<String>,
}

impl StoreArgs {
    /// Checks the options and reads the image.
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`]: no such directory, a disk count out of range, a bad name
    /// or stride, an unreadable image, a tile size of 0 or larger than the image.
    pub fn plan(&self) -> Result<StorePlan> {
        if !self.dir.is_dir() {
            bad_input!("--dir {}: no such directory", self.dir.display());
        }
        if self.disks == 0 || self.disks > 4096 {
            bad_input!("--disks {}: must be between 1 and 4096", self.disks);
        }
        check_name(&self.name, "--name")?;
        let (stride, note) = choose_stride(self.stride, self.disks)?;
        let image = Raster::read_png(&self.input, self.bits.is_some())?;
        let tile = default_tile(self.tiles, image.width, image.height);
        if let Err(why) = store::check_tile(tile, image.width, image.height) {
            bad_input!("--tiles: {why}");
        }
        let tiling = Tiling { width: image.width, height: image.height, tile, disks: self.disks, stride };
        Ok(StorePlan { input: self.input.clone(), image, dir: self.dir.clone(), name: self.name.clone(), tiling, note })
    }
}
