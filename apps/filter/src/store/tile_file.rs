//! A disk's tile file, read and written a tile at a time, and a tile's slot cut from an
//! image or placed into one.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use dps::Bulk;
use dps_harness::OutputFile;

use super::format::{Meta, TileHeader, HEADER};
use crate::layout::{TileId, Tiling};
use crate::raster::Raster;

/// A disk's tile file, open for reading.
#[derive(Debug)]
pub struct DiskReader {
    file: File,
    tile_bytes: usize,
    path: PathBuf,
}

impl DiskReader {
    /// Opens disk `disk`'s file of the stored image `name`.
    ///
    /// # Errors
    /// If it cannot be opened.
    pub fn open(dir: &Path, name: &str, meta: &Meta, disk: usize) -> Result<DiskReader> {
        let path = meta.tile_path(dir, name, disk);
        let file = File::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
        Ok(DiskReader { file, tile_bytes: meta.tile_bytes(), path })
    }

    /// Reads the tile of local index `local`.
    ///
    /// # Errors
    /// If the read fails.
    pub fn read(&self, local: usize) -> Result<Bulk<u8>> {
        // A recycled buffer: a fresh one would be zeroed and page-faulted on every read,
        // a fifth of a run's CPU time on tile files.
        let mut slot = Bulk::recycled(self.tile_bytes);
        self.file
            .read_exact_at(&mut slot, (HEADER + local * self.tile_bytes) as u64)
            .with_context(|| format!("cannot read tile {local} of {}", self.path.display()))?;
        Ok(slot)
    }
}

/// A disk's tile file being written (to a temporary name until [`commit`](Self::commit)).
#[derive(Debug)]
pub struct DiskWriter {
    out: OutputFile,
    tile_bytes: usize,
}

impl DiskWriter {
    /// Starts disk `disk`'s file of image `name` (of `meta`'s generation): writes the header
    /// and sizes the file.
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`] if the disk directory is missing or cannot be written; a failed write.
    pub fn create(dir: &Path, name: &str, meta: &Meta, disk: usize) -> Result<DiskWriter> {
        let path = meta.tile_path(dir, name, disk);
        let mut out = OutputFile::create("disk directory", &path)?;
        let header = TileHeader::expected(meta, disk);
        let file = out.file();
        file.write_all(&header.encode()).with_context(|| format!("cannot write {}", path.display()))?;
        file.set_len((HEADER + header.tiles as usize * meta.tile_bytes()) as u64)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(DiskWriter { out, tile_bytes: meta.tile_bytes() })
    }

    /// Writes the tile of local index `local`.
    ///
    /// # Errors
    /// A failed write.
    pub fn write(&mut self, local: usize, slot: &[u8]) -> Result<()> {
        assert_eq!(slot.len(), self.tile_bytes, "a tile slot");
        let at = (HEADER + local * self.tile_bytes) as u64;
        let path = self.out.path().display().to_string();
        self.out.file().write_all_at(slot, at).with_context(|| format!("cannot write {path}"))
    }

    /// Renames the complete file into place.
    ///
    /// # Errors
    /// A failed flush, sync or rename.
    pub fn commit(self) -> Result<()> {
        self.out.commit()
    }
}

/// Tile `id`'s full slot cut from `image` (padded with 0 beyond the image).
pub fn cut_tile(image: &Raster, tiling: &Tiling, id: TileId) -> Vec<u8> {
    let b = image.depth.bytes();
    let (x, y, w, h) = tiling.rect(id);
    let mut slot = vec![0u8; tiling.tile * tiling.tile * b];
    for row in 0..h {
        slot[row * tiling.tile * b..][..w * b]
            .copy_from_slice(&image.data[((y + row) * image.width + x) * b..][..w * b]);
    }
    slot
}

/// Copies tile `id`'s slot into `image` (the part inside the image).
pub fn place_tile(image: &mut Raster, tiling: &Tiling, id: TileId, slot: &[u8]) {
    let b = image.depth.bytes();
    let (x, y, w, h) = tiling.rect(id);
    for row in 0..h {
        image.data[((y + row) * image.width + x) * b..][..w * b]
            .copy_from_slice(&slot[row * tiling.tile * b..][..w * b]);
    }
}
