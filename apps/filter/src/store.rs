//! The striped tile store on disk (thesis §7.2; the byte layout is ours, the thesis gives
//! none). A stored image `NAME` in directory `DIR` is:
//! - `DIR/NAME.json`, the metadata: size, tile side, bits per pixel, disks D, stride s, and
//!   the generation of the tile files (see [`crate::generation`]: replacing an image is
//!   atomic, the metadata's rename is the commit);
//! - `DIR/disk<k>/NAME.<generation>.tiles` for each disk k < D (a disk is a directory;
//!   format version 1, which has no generation, named it `NAME.tiles`): a 32-byte header
//!   (magic `DPSTILE1`, then little-endian u32s: disk, disks, tiles on the disk, tile side,
//!   bytes per pixel, 0), then the disk's tiles in local-index order, each a full
//!   `tile × tile` slot of pixels row by row (edge tiles padded with 0).
//!
//! Every file is written to a temporary name and renamed when complete ([`OutputFile`]), the
//! tile files first, the metadata last.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use dps_harness::{bad_input, BadInput, OutputFile};
use serde::{Deserialize, Serialize};

use crate::generation::{self, tile_file_name, Generation};
use crate::layout::{TileId, Tiling};
use crate::raster::{Depth, Raster};

/// The first bytes of a tile file.
pub const MAGIC: &[u8; 8] = b"DPSTILE1";
/// Bytes of a tile file's header.
pub const HEADER: usize = 32;
/// The metadata's `format` field.
pub const FORMAT: &str = "dps-filter tiled image";
/// The format version written: 2, the tile files named by generation.
pub const VERSION: u32 = 2;
/// The largest image side accepted (pixels).
pub const MAX_SIDE: usize = 1 << 20;
/// The largest image accepted (bytes).
pub const MAX_BYTES: usize = 1 << 40;

/// A stored image's metadata (`NAME.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// Always [`FORMAT`].
    pub format: String,
    /// Format version: 1 (tile files `NAME.tiles`, still read) or 2 (with `generation`).
    pub version: u32,
    /// Image width, pixels.
    pub width: usize,
    /// Image height, pixels.
    pub height: usize,
    /// Tile side, pixels.
    pub tile: usize,
    /// Bits per pixel: 1, 8, 16 or 24.
    pub bits: u32,
    /// Disks the tiles are striped over.
    pub disks: usize,
    /// The allocation rule's row offset s.
    pub stride: usize,
    /// The generation of the tile files (version 2; version 1 has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<Generation>,
}

impl Meta {
    /// The metadata of an image with this geometry, its tiles in files of `generation`.
    pub fn new(tiling: Tiling, depth: Depth, generation: Generation) -> Meta {
        let Tiling { width, height, tile, disks, stride } = tiling;
        let bits = depth.bits();
        let generation = Some(generation);
        Meta { format: FORMAT.into(), version: VERSION, width, height, tile, bits, disks, stride, generation }
    }

    /// The same image in tile files of `generation` (a replacement, or a filter's output).
    pub fn with_generation(&self, generation: Generation) -> Meta {
        Meta { version: VERSION, generation: Some(generation), ..self.clone() }
    }

    /// `DIR/disk<k>/NAME.<generation>.tiles` (version 1: `NAME.tiles`).
    pub fn tile_path(&self, dir: &Path, name: &str, disk: usize) -> PathBuf {
        disk_dir(dir, disk).join(tile_file_name(name, self.generation))
    }

    /// The tiling it describes.
    pub fn tiling(&self) -> Tiling {
        Tiling { width: self.width, height: self.height, tile: self.tile, disks: self.disks, stride: self.stride }
    }

    /// Its pixel depth.
    pub fn depth(&self) -> Depth {
        Depth::from_bits(self.bits).expect("checked when parsed")
    }

    /// Bytes of one tile slot.
    pub fn tile_bytes(&self) -> usize {
        self.tile * self.tile * self.depth().bytes()
    }

    /// Parses and checks the metadata's text.
    ///
    /// # Errors
    /// What is wrong, in words: not JSON, a missing or unknown field, a value out of range.
    pub fn parse(text: &str) -> Result<Meta, String> {
        let meta: Meta = serde_json::from_str(text).map_err(|e| e.to_string())?;
        meta.check()?;
        Ok(meta)
    }

    /// Checks the values.
    ///
    /// # Errors
    /// The first value out of range, named.
    pub fn check(&self) -> Result<(), String> {
        if self.format != FORMAT || !(1..=VERSION).contains(&self.version) {
            return Err(format!(
                "format {:?} version {}: expected {FORMAT:?} version 1 or {VERSION} (a newer dps-filter wrote it?)",
                self.format, self.version
            ));
        }
        match (self.version, self.generation) {
            (1, Some(_)) => return Err("version 1 has no \"generation\" field".into()),
            (2, None) => return Err("missing field `generation` (version 2)".into()),
            _ => {}
        }
        if !(1..=MAX_SIDE).contains(&self.width) || !(1..=MAX_SIDE).contains(&self.height) {
            return Err(format!("size {}x{}: each side must be between 1 and {MAX_SIDE}", self.width, self.height));
        }
        let depth = Depth::from_bits(self.bits).ok_or(format!("bits {}: must be 1, 8, 16 or 24", self.bits))?;
        if self.width * self.height * depth.bytes() > MAX_BYTES {
            return Err(format!(
                "{}x{} pixels of {} bits is more than {MAX_BYTES} bytes",
                self.width, self.height, self.bits
            ));
        }
        check_tile(self.tile, self.width, self.height)?;
        if !(1..=u32::MAX as usize).contains(&self.disks) || self.stride >= self.disks.max(1) {
            return Err(format!("disks {} stride {}: need 1 ≤ disks and stride < disks", self.disks, self.stride));
        }
        Ok(())
    }
}

/// Checks a tile side against the image.
///
/// # Errors
/// A tile of 0, or larger than both sides of the image.
pub fn check_tile(tile: usize, width: usize, height: usize) -> Result<(), String> {
    if tile == 0 {
        return Err("tile size 0: must be at least 1".into());
    }
    if tile > width.max(height) {
        return Err(format!("tile size {tile} is larger than the {width}x{height} image"));
    }
    Ok(())
}

/// A tile file's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileHeader {
    /// The disk the file belongs to.
    pub disk: u32,
    /// Disks of the image.
    pub disks: u32,
    /// Tiles in the file.
    pub tiles: u32,
    /// Tile side.
    pub tile: u32,
    /// Bytes per pixel.
    pub bytes_per_pixel: u32,
}

impl TileHeader {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; HEADER] {
        let mut out = [0u8; HEADER];
        out[..8].copy_from_slice(MAGIC);
        for (i, v) in [self.disk, self.disks, self.tiles, self.tile, self.bytes_per_pixel].into_iter().enumerate() {
            out[8 + 4 * i..12 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// Parses the first [`HEADER`] bytes of a tile file.
    ///
    /// # Errors
    /// Too short, a wrong magic, or a reserved field that is not 0.
    pub fn parse(bytes: &[u8]) -> Result<TileHeader, String> {
        if bytes.len() < HEADER {
            return Err(format!("{} bytes: shorter than the {HEADER}-byte header", bytes.len()));
        }
        if &bytes[..8] != MAGIC {
            return Err("not a dps-filter tile file (wrong magic)".into());
        }
        let field = |i: usize| u32::from_le_bytes(bytes[8 + 4 * i..12 + 4 * i].try_into().expect("4 bytes"));
        if field(5) != 0 {
            return Err("reserved header field is not 0".into());
        }
        Ok(TileHeader { disk: field(0), disks: field(1), tiles: field(2), tile: field(3), bytes_per_pixel: field(4) })
    }

    /// The header disk `disk` of `meta` must have.
    pub fn expected(meta: &Meta, disk: usize) -> TileHeader {
        TileHeader {
            disk: disk as u32,
            disks: meta.disks as u32,
            tiles: meta.tiling().tiles_on(disk) as u32,
            tile: meta.tile as u32,
            bytes_per_pixel: meta.depth().bytes() as u32,
        }
    }
}

/// `DIR/NAME.json`.
pub fn meta_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.json"))
}

/// `DIR/disk<k>`.
pub fn disk_dir(dir: &Path, disk: usize) -> PathBuf {
    dir.join(format!("disk{disk}"))
}

/// The disk directories present in `dir` (`disk<k>`, whatever k: an earlier image of the
/// same name may have had more disks).
pub fn disk_dirs_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<(usize, PathBuf)> = entries
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let k: usize = name.strip_prefix("disk")?.parse().ok()?;
            (disk_dir(dir, k).is_dir()).then(|| (k, disk_dir(dir, k)))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, p)| p).collect()
}

/// Opens a stored image: reads its metadata and checks every disk's tile file (present,
/// header matching, size exact).
///
/// # Errors
/// A [`BadInput`] naming the file or directory that is missing or wrong.
pub fn open(dir: &Path, name: &str) -> Result<Meta> {
    if !dir.is_dir() {
        bad_input!("--dir {}: no such directory", dir.display());
    }
    let path = meta_path(dir, name);
    let text = std::fs::read_to_string(&path).map_err(|e| BadInput::new(format!("{}: {e}", path.display())))?;
    let meta = Meta::parse(&text).map_err(|e| BadInput::new(format!("{}: {e}", path.display())))?;
    for d in 0..meta.disks {
        let disk = disk_dir(dir, d);
        if !disk.is_dir() {
            bad_input!("disk directory {} is missing ({} has {} disks)", disk.display(), path.display(), meta.disks);
        }
        check_tile_file(&meta.tile_path(dir, name, d), &meta, d)?;
    }
    Ok(meta)
}

fn check_tile_file(path: &Path, meta: &Meta, disk: usize) -> Result<()> {
    let fail = |why: String| anyhow::Error::new(BadInput::new(format!("{}: {why}", path.display())));
    let file = File::open(path).map_err(|e| fail(e.to_string()))?;
    let len = file.metadata().map_err(|e| fail(e.to_string()))?.len();
    let mut head = [0u8; HEADER];
    file.read_exact_at(&mut head, 0).map_err(|_| fail(format!("{len} bytes: shorter than the header")))?;
    let header = TileHeader::parse(&head).map_err(fail)?;
    let want = TileHeader::expected(meta, disk);
    if header != want {
        return Err(fail(format!("header {header:?} does not match the metadata (expected {want:?})")));
    }
    let size = (HEADER + want.tiles as usize * meta.tile_bytes()) as u64;
    if len != size {
        return Err(fail(format!("{len} bytes, expected {size}: the tile file is truncated or not this image's")));
    }
    Ok(())
}

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
    pub fn read(&self, local: usize) -> Result<Vec<u8>> {
        let mut slot = vec![0u8; self.tile_bytes];
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
    /// A [`BadInput`] if the disk directory is missing or cannot be written; a failed write.
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

/// Checks that the directories of a store of `meta`'s disks in `dir` exist, can be written
/// and have room for a new generation of image `name` (written beside the old one, which
/// goes only after the commit: nothing it holds counts as free), before any work.
///
/// # Errors
/// A [`BadInput`] naming the directory, or the file system without room and both figures.
pub fn check_writable(dir: &Path, name: &str, meta: &Meta) -> Result<()> {
    drop(OutputFile::create("--dir", &meta_path(dir, name))?);
    let tiling = meta.tiling();
    // Bytes per file system (disk directories may share one): each disk's file is its header
    // and its tiles' slots.
    let mut need: Vec<(u64, PathBuf, u64)> = Vec::new();
    for d in 0..tiling.disks {
        let disk = disk_dir(dir, d);
        if !disk.is_dir() {
            bad_input!("disk directory {} is missing", disk.display());
        }
        // A probe: the unnamed file is never named.
        drop(OutputFile::create("disk directory", &disk.join(tile_file_name(name, None)))?);
        let bytes =
            (HEADER as u64).saturating_add((tiling.tiles_on(d) as u64).saturating_mul(meta.tile_bytes() as u64));
        let device = std::fs::metadata(&disk).map(|m| std::os::unix::fs::MetadataExt::dev(&m)).unwrap_or(d as u64);
        match need.iter_mut().find(|(dev, _, _)| *dev == device) {
            Some((_, _, total)) => *total = total.saturating_add(bytes),
            None => need.push((device, disk, bytes)),
        }
    }
    for (_, disk, bytes) in need {
        dps_harness::check_disk_space(&format!("the tile files of {name:?}"), &disk, bytes, 0)?;
    }
    Ok(())
}

/// Writes `image` as the stored image `name` (serially: the `store` mode), its tile files of
/// `generation`, and commits it: an image of that name already in `dir` stays whole until
/// the commit.
///
/// # Errors
/// A failed write, naming the file; the files written are removed.
pub fn write(dir: &Path, name: &str, image: &Raster, tiling: Tiling, generation: Generation) -> Result<()> {
    let meta = Meta::new(tiling, image.depth, generation);
    let written = write_tiles(dir, name, image, &meta);
    let outcome = written.and_then(|()| commit(dir, name, &meta));
    if outcome.is_err() {
        // Best effort: an uncommitted generation's files are never read, and the next
        // write of this name removes them anyway.
        let _ = generation::remove_generation(dir, name, generation);
    }
    outcome
}

fn write_tiles(dir: &Path, name: &str, image: &Raster, meta: &Meta) -> Result<()> {
    let tiling = meta.tiling();
    let mut writers = (0..tiling.disks).map(|d| DiskWriter::create(dir, name, meta, d)).collect::<Result<Vec<_>>>()?;
    for id in tiling.tiles() {
        writers[tiling.disk(id)].write(tiling.local(id), &cut_tile(image, &tiling, id))?;
    }
    writers.into_iter().try_for_each(DiskWriter::commit)
}

/// Commits image `name` once every tile file of `meta`'s generation is in place: replaces
/// the metadata (one rename: readers see the old image or the new one), then removes the
/// files of every other generation of the name (the old image's, a killed writer's). A
/// file that cannot be removed is a warning on standard error: the image is whole.
///
/// # Errors
/// The metadata could not be written (the old image, if any, is unchanged).
pub fn commit(dir: &Path, name: &str, meta: &Meta) -> Result<()> {
    let json = OutputFile::create("--dir", &meta_path(dir, name))?;
    json.write_and_commit(serde_json::to_string_pretty(meta)?.as_bytes())?;
    if let Err(why) = generation::remove_others(dir, name, meta.generation) {
        eprintln!("dps-filter: warning: {name} is stored, but its old files remain: {why}");
    }
    Ok(())
}

/// Reads the window `(x, y, w, h)` of a stored image (serially: the `load` mode), reading
/// only the tiles it touches.
///
/// # Errors
/// A failed read.
pub fn read_window(dir: &Path, name: &str, meta: &Meta, window: (usize, usize, usize, usize)) -> Result<Raster> {
    let (x, y, w, h) = window;
    let tiling = meta.tiling();
    let readers = (0..meta.disks).map(|d| DiskReader::open(dir, name, meta, d)).collect::<Result<Vec<_>>>()?;
    let depth = meta.depth();
    let b = depth.bytes();
    let mut out = Raster { width: w, height: h, depth, data: vec![0u8; w * h * b] };
    let (first, last) = (tiling.tile_at(x, y), tiling.tile_at(x + w - 1, y + h - 1));
    for r in first.r..=last.r {
        for c in first.c..=last.c {
            let id = TileId { r, c };
            let slot = readers[tiling.disk(id)].read(tiling.local(id))?;
            let (tx, ty, tw, th) = tiling.rect(id);
            let (x0, x1) = (tx.max(x), (tx + tw).min(x + w));
            for yy in ty.max(y)..(ty + th).min(y + h) {
                let src = &slot[((yy - ty) * tiling.tile + x0 - tx) * b..][..(x1 - x0) * b];
                out.data[((yy - y) * w + x0 - x) * b..][..(x1 - x0) * b].copy_from_slice(src);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn tiling(width: usize, height: usize, tile: usize, disks: usize) -> Tiling {
        Tiling { width, height, tile, disks, stride: crate::layout::default_stride(disks).0 }
    }

    fn make_disks(dir: &Path, disks: usize) {
        for d in 0..disks {
            std::fs::create_dir_all(disk_dir(dir, d)).unwrap();
        }
    }

    #[test]
    fn store_then_load_round_trips_windows_for_every_depth_and_disk_count() {
        for (depth, disks) in
            [(Depth::Bit8, 1), (Depth::Bit8, 8), (Depth::Bit16, 3), (Depth::Bit24, 5), (Depth::Bit1, 10)]
        {
            let dir = tempfile::tempdir().unwrap();
            make_disks(dir.path(), disks);
            let (w, h) = (61, 45);
            let data: Vec<u8> = (0..w * h * depth.bytes())
                .map(|i| (i * 37 % 251) as u8 % if depth == Depth::Bit1 { 2 } else { 255 })
                .collect();
            let image = Raster { width: w, height: h, depth, data };
            let t = tiling(w, h, 16, disks);
            write(dir.path(), "img", &image, t, Generation::fresh()).unwrap();
            let meta = open(dir.path(), "img").unwrap();
            assert_eq!(meta.tiling(), t);
            assert_eq!(read_window(dir.path(), "img", &meta, (0, 0, w, h)).unwrap(), image);
            assert_eq!(read_window(dir.path(), "img", &meta, (5, 17, 40, 11)).unwrap(), image.crop(5, 17, 40, 11));
            // Nothing but the store's own files.
            assert_eq!(std::fs::read_dir(disk_dir(dir.path(), 0)).unwrap().count(), 1);
        }
    }

    #[test]
    fn a_wrong_size_tile_file_or_a_missing_disk_is_bad_input_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        make_disks(dir.path(), 5);
        write(dir.path(), "img", &Raster::random8(40, 40, 1), tiling(40, 40, 8, 5), Generation::fresh()).unwrap();
        let path = open(dir.path(), "img").unwrap().tile_path(dir.path(), "img", 3);
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(f.metadata().unwrap().len() - 1).unwrap();
        let e = open(dir.path(), "img").unwrap_err();
        assert!(e.is::<BadInput>() && e.to_string().contains("disk3") && e.to_string().contains("truncated"), "{e}");
        std::fs::remove_dir_all(disk_dir(dir.path(), 2)).unwrap();
        let e = open(dir.path(), "img").unwrap_err();
        assert!(e.to_string().contains("disk2") && e.to_string().contains("missing"), "{e}");
    }

    fn files_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        names
    }

    fn whole(dir: &Path, name: &str) -> Raster {
        let meta = open(dir, name).unwrap();
        read_window(dir, name, &meta, (0, 0, meta.width, meta.height)).unwrap()
    }

    #[test]
    fn a_replaced_image_is_the_new_one_and_the_old_generation_s_files_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        make_disks(dir.path(), 8);
        let (old, new) = (Raster::random8(50, 40, 1), Raster::random8(50, 40, 2));
        write(dir.path(), "img", &old, tiling(50, 40, 8, 8), Generation(1)).unwrap();
        // A killed writer's files: a generation the metadata never named.
        let killed = Generation(7);
        std::fs::write(disk_dir(dir.path(), 2).join(tile_file_name("img", Some(killed))), b"half a file").unwrap();
        assert_eq!(whole(dir.path(), "img"), old, "a killed writer's files are never read");
        // Fewer disks this time: the old image's files on disks 5-7 go too.
        write(dir.path(), "img", &new, tiling(50, 40, 8, 5), Generation(2)).unwrap();
        assert_eq!(whole(dir.path(), "img"), new);
        for d in 0..8 {
            let want: Vec<String> = if d < 5 { vec![tile_file_name("img", Some(Generation(2)))] } else { vec![] };
            assert_eq!(files_in(&disk_dir(dir.path(), d)), want, "disk {d}");
        }
    }

    #[test]
    fn a_write_that_fails_leaves_the_old_image_whole_and_no_new_file() {
        let dir = tempfile::tempdir().unwrap();
        make_disks(dir.path(), 4);
        let old = Raster::random8(40, 40, 1);
        write(dir.path(), "img", &old, tiling(40, 40, 8, 4), Generation(1)).unwrap();
        let before: Vec<Vec<String>> = (0..4).map(|d| files_in(&disk_dir(dir.path(), d))).collect();
        // Disk 3 is a file where a directory is expected: its tile file cannot be made.
        std::fs::rename(disk_dir(dir.path(), 3), dir.path().join("saved")).unwrap();
        std::fs::write(disk_dir(dir.path(), 3), b"not a directory").unwrap();
        let e = write(dir.path(), "img", &Raster::random8(40, 40, 2), tiling(40, 40, 8, 4), Generation(2)).unwrap_err();
        assert!(format!("{e:#}").contains("disk3"), "{e:#}");
        std::fs::remove_file(disk_dir(dir.path(), 3)).unwrap();
        std::fs::rename(dir.path().join("saved"), disk_dir(dir.path(), 3)).unwrap();
        assert_eq!(whole(dir.path(), "img"), old);
        let after: Vec<Vec<String>> = (0..4).map(|d| files_in(&disk_dir(dir.path(), d))).collect();
        assert_eq!(after, before);
    }

    #[test]
    fn a_version_1_store_still_loads_and_its_files_go_once_replaced() {
        let dir = tempfile::tempdir().unwrap();
        make_disks(dir.path(), 3);
        let (old, new) = (Raster::random8(30, 20, 1), Raster::random8(30, 20, 2));
        write(dir.path(), "img", &old, tiling(30, 20, 8, 3), Generation(1)).unwrap();
        // Rewrite it as version 1 wrote it: `img.tiles`, no generation.
        let mut meta = open(dir.path(), "img").unwrap();
        for d in 0..3 {
            std::fs::rename(meta.tile_path(dir.path(), "img", d), disk_dir(dir.path(), d).join("img.tiles")).unwrap();
        }
        meta.version = 1;
        meta.generation = None;
        let text = serde_json::to_string(&meta).unwrap();
        assert!(!text.contains("generation"), "{text}");
        std::fs::write(meta_path(dir.path(), "img"), text).unwrap();
        assert_eq!(whole(dir.path(), "img"), old);
        write(dir.path(), "img", &new, tiling(30, 20, 8, 3), Generation(2)).unwrap();
        assert_eq!(whole(dir.path(), "img"), new);
        assert_eq!(files_in(&disk_dir(dir.path(), 0)), [tile_file_name("img", Some(Generation(2)))]);
    }

    #[test]
    fn versions_and_generations_must_agree() {
        let meta = Meta::new(tiling(30, 20, 8, 3), Depth::Bit8, Generation(0xab));
        let text = serde_json::to_string(&meta).unwrap();
        assert!(text.contains("\"generation\":\"00000000000000ab\""), "{text}");
        assert_eq!(Meta::parse(&text), Ok(meta.clone()));
        let no_generation = text.replace(",\"generation\":\"00000000000000ab\"", "");
        assert!(Meta::parse(&no_generation).unwrap_err().contains("generation"));
        let v1_with_generation = text.replace("\"version\":2", "\"version\":1");
        assert!(Meta::parse(&v1_with_generation).unwrap_err().contains("version 1"));
        let v3 = text.replace("\"version\":2", "\"version\":3");
        assert!(Meta::parse(&v3).unwrap_err().contains("version 3"));
        let bad = text.replace("00000000000000ab", "../../etc");
        assert!(Meta::parse(&bad).unwrap_err().contains("16 lowercase hex"));
    }

    proptest! {
        #[test]
        fn metadata_parsing_never_panics(text in ".{0,200}") {
            let _ = Meta::parse(&text);
        }

        #[test]
        fn metadata_fields_are_checked(width in 0usize..5000, height in 0usize..5000, tile in 0usize..6000,
                                       bits in 0u32..30, disks in 0usize..20, stride in 0usize..25) {
            let meta = Meta { format: FORMAT.into(), version: 1, width, height, tile, bits, disks, stride, generation: None };
            let text = serde_json::to_string(&meta).unwrap();
            let ok = (1..=MAX_SIDE).contains(&width) && (1..=MAX_SIDE).contains(&height)
                && Depth::from_bits(bits).is_some() && tile >= 1 && tile <= width.max(height)
                && disks >= 1 && stride < disks;
            prop_assert_eq!(Meta::parse(&text).is_ok(), ok, "{}", text);
        }

        #[test]
        fn tile_headers_round_trip_and_garbage_is_refused(disk: u32, disks: u32, tiles: u32, tile: u32, bpp: u32,
                                                          garbage in proptest::collection::vec(any::<u8>(), 0..64)) {
            let h = TileHeader { disk, disks, tiles, tile, bytes_per_pixel: bpp };
            prop_assert_eq!(TileHeader::parse(&h.encode()), Ok(h));
            if garbage.len() < HEADER || &garbage[..8] != MAGIC {
                prop_assert!(TileHeader::parse(&garbage).is_err());
            }
        }
    }
}
