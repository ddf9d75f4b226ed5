//! Writing the world: PNG (live cells black) or RLE, always through a
//! [`dps_harness::OutputFile`], which was opened before the run (so a missing or read-only
//! directory is refused before any work) and is renamed over its path only once every byte
//! is written and flushed: a full disk leaves no partial file, and is an error naming it.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use dps_harness::{bad_input, OutputFile};
use image::ImageEncoder;

use crate::kernel;

/// The largest width or height of a PNG (its header holds 31-bit sizes).
pub const PNG_MAX_SIDE: usize = (1 << 31) - 1;

/// What an output file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A grayscale PNG.
    Png,
    /// An RLE pattern.
    Rle,
}

impl Format {
    /// The format `option`'s `path` names by its extension.
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`] if it ends in neither `.png` nor `.rle`.
    pub fn of(option: &str, path: &Path) -> Result<Format> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("png") => Ok(Format::Png),
            Some("rle") => Ok(Format::Rle),
            _ => bad_input!("{option} {}: the file name must end in .png or .rle", path.display()),
        }
    }

    /// Refuses a `width × height` image this format cannot hold; `what` names the options
    /// that set its size.
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`] for a PNG wider or taller than [`PNG_MAX_SIDE`].
    pub fn check_size(self, what: &str, width: usize, height: usize) -> Result<()> {
        if self == Format::Png && (width > PNG_MAX_SIDE || height > PNG_MAX_SIDE) {
            bad_input!("{what}: a {width}x{height} PNG is too large (at most {PNG_MAX_SIDE} pixels a side)");
        }
        Ok(())
    }
}

/// The PNG snapshots of --snapshot-every: one every `every` generations, named after --out
/// (default `life.png`).
#[derive(Clone, Debug)]
pub struct Snapshots {
    /// Generations between two snapshots.
    pub every: u64,
    /// The path they are named after.
    pub base: PathBuf,
}

impl Snapshots {
    /// The path of the snapshot after `generation` generations: `life-000010.png`.
    pub fn path(&self, generation: u64) -> PathBuf {
        PathBuf::from(format!("{}-{generation:06}.png", self.base.with_extension("").display()))
    }
}

/// The path of the viewer's `n`th block, of generation `generation`, in `dir`.
pub fn block_path(dir: &Path, n: usize, generation: u64) -> PathBuf {
    dir.join(format!("block-{n:05}-gen{generation}.png"))
}

/// The file of the `n`-th block `dps-life view` received: its place, and the generations its
/// rows come from (`gen96`, or `gen96-104` when they straddle two).
pub fn view_block_path(dir: &Path, n: usize, x: usize, y: usize, generations: (u64, u64)) -> PathBuf {
    let (lo, hi) = generations;
    let gen = if lo == hi { format!("{lo}") } else { format!("{lo}-{hi}") };
    dir.join(format!("block-{n:05}-x{x}-y{y}-gen{gen}.png"))
}

/// Writes `height` packed rows of `width` cells (`ceil(width / 64)` words each) to `out`
/// and commits it.
///
/// # Errors
/// A failed write, flush, sync or rename, naming the path; the file is then left as it was.
pub fn write(mut out: OutputFile, format: Format, width: usize, height: usize, cells: &[u64]) -> Result<()> {
    let path = out.path().to_path_buf();
    let context = || format!("cannot write {}", path.display());
    let mut writer = BufWriter::new(out.file());
    match format {
        Format::Png => write_png(&mut writer, width, height, cells).with_context(context)?,
        Format::Rle => crate::rle::write_packed(&mut writer, width, height, cells).with_context(context)?,
    }
    // The last bytes of a small file leave the buffer only here: a full disk shows here.
    writer.flush().with_context(context)?;
    drop(writer);
    out.commit()
}

fn write_png(out: &mut dyn Write, width: usize, height: usize, cells: &[u64]) -> Result<()> {
    let words = width.div_ceil(64);
    let mut pixels = vec![255u8; width * height];
    for (y, line) in pixels.chunks_mut(width.max(1)).enumerate() {
        let row = &cells[y * words..(y + 1) * words];
        for (x, p) in line.iter_mut().enumerate() {
            if kernel::get(row, x) {
                *p = 0;
            }
        }
    }
    let (w, h) = (u32::try_from(width)?, u32::try_from(height)?);
    image::codecs::png::PngEncoder::new(out).write_image(&pixels, w, h, image::ExtendedColorType::L8)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_png_and_rle_and_leaves_nothing_on_a_full_device() {
        let dir = tempfile::tempdir().unwrap();
        // A 70x2 world: a glider's top rows and a cell in the second word.
        let cells = [0b010, 0, 0b100 | 1 << 5, 1];
        let png = dir.path().join("w.png");
        write(OutputFile::create("--out", &png).unwrap(), Format::Png, 70, 2, &cells).unwrap();
        let img = image::open(&png).unwrap().to_luma8();
        assert_eq!((img.width(), img.height()), (70, 2));
        assert_eq!((img.get_pixel(1, 0).0, img.get_pixel(0, 0).0, img.get_pixel(64, 1).0), ([0], [255], [0]));
        let rle = dir.path().join("w.rle");
        write(OutputFile::create("--out", &rle).unwrap(), Format::Rle, 70, 2, &cells).unwrap();
        let (p, _) = crate::rle::parse(&std::fs::read_to_string(&rle).unwrap()).unwrap();
        assert_eq!((p.width, p.height, p.population()), (70, 2, 4));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "temporary files left behind");
        let full = Path::new("/dev/full");
        if full.exists() {
            for format in [Format::Png, Format::Rle] {
                let e = write(OutputFile::create("--out", full).unwrap(), format, 70, 2, &cells).unwrap_err();
                assert!(format!("{e:#}").contains("cannot write /dev/full"), "{e:#}");
            }
        }
    }

    #[test]
    fn formats_by_extension_and_png_size() {
        assert_eq!(Format::of("--out", Path::new("a/b.rle")).unwrap(), Format::Rle);
        let e = Format::of("--out", Path::new("x.gif")).unwrap_err();
        assert!(e.is::<dps_harness::BadInput>() && e.to_string().contains("--out x.gif"), "{e}");
        assert!(Format::Png.check_size("--region", PNG_MAX_SIDE + 1, 1).is_err());
        Format::Rle.check_size("--region", PNG_MAX_SIDE + 1, 1).unwrap();
    }
}
