//! The striped tile store on disk (thesis §7.2; the byte layout is ours, the thesis gives
//! none). A stored image `NAME` in directory `DIR` is:
//! - `DIR/NAME.json`, the metadata: size, tile side, bits per pixel, disks D, stride s, the
//!   generation of the tile files (see [`generation`]: replacing an image is atomic, the
//!   metadata's rename is the commit), and a checksum over them all (format version 3);
//! - `DIR/disk<k>/NAME.<generation>.tiles` for each disk k < D (a disk is a directory;
//!   format version 1, which has no generation, named it `NAME.tiles`): a 32-byte header
//!   (magic `DPSTILE1`, then little-endian u32s: disk, disks, tiles on the disk, tile side,
//!   bytes per pixel, and the low 32 bits of the metadata's checksum, 0 before version 3),
//!   then the disk's tiles in local-index order, each a full
//!   `tile × tile` slot of pixels row by row (edge tiles padded with 0).
//!
//! Every file is written to a temporary name and renamed when complete ([`OutputFile`]), the
//! tile files first, the metadata last.

pub mod format;
pub mod generation;
pub mod tile_file;

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::Result;
use dps_harness::{bad_input, BadInput, OutputFile};

pub use format::{check_tile, disk_dir, disk_dirs_in, meta_path, Generation, Meta, MAX_SIDE};
use format::{tile_file_name, TileHeader, HEADER};
pub use tile_file::{cut_tile, DiskReader, DiskWriter};

use crate::layout::{TileId, Tiling};
use crate::raster::Raster;

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
    if let Some(why) = header.mismatch(&want) {
        return Err(fail(format!("{why} by its metadata: the file is another image's, or the metadata was changed")));
    }
    let size = (HEADER + want.tiles as usize * meta.tile_bytes()) as u64;
    if len != size {
        return Err(fail(format!("{len} bytes, expected {size}: the tile file is truncated or not this image's")));
    }
    Ok(())
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
    use super::*;
    use crate::raster::Depth;

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
        // Rewrite it as version 1 wrote it: `img.tiles`, no generation, no seal in the headers.
        let mut meta = open(dir.path(), "img").unwrap();
        for d in 0..3 {
            let v1 = disk_dir(dir.path(), d).join("img.tiles");
            std::fs::rename(meta.tile_path(dir.path(), "img", d), &v1).unwrap();
            std::fs::OpenOptions::new().write(true).open(&v1).unwrap().write_all_at(&[0; 4], 28).unwrap();
        }
        meta.version = 1;
        meta.generation = None;
        meta.checksum = None;
        let text = serde_json::to_string(&meta).unwrap();
        assert!(!text.contains("generation"), "{text}");
        std::fs::write(meta_path(dir.path(), "img"), text).unwrap();
        assert_eq!(whole(dir.path(), "img"), old);
        write(dir.path(), "img", &new, tiling(30, 20, 8, 3), Generation(2)).unwrap();
        assert_eq!(whole(dir.path(), "img"), new);
        assert_eq!(files_in(&disk_dir(dir.path(), 0)), [tile_file_name("img", Some(Generation(2)))]);
    }
}
