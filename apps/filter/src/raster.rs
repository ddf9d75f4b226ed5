//! Images in memory: 1-, 8-, 16- and 24-bit pixels (the thesis's depths), PNG in and out
//! through the `image` crate, random images, windows.

use std::path::Path;

use anyhow::{Context, Result};
use dps_harness::{bad_input, BadInput, OutputFile};
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// Bits per pixel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Depth {
    /// Black and white, one byte per pixel holding 0 or 1 (1 is white in PNG).
    Bit1,
    /// Grey level, one byte.
    Bit8,
    /// Grey level, two bytes, little-endian.
    Bit16,
    /// RGB, three bytes.
    Bit24,
}

impl Depth {
    /// From a bit count.
    pub fn from_bits(bits: u32) -> Option<Depth> {
        match bits {
            1 => Some(Depth::Bit1),
            8 => Some(Depth::Bit8),
            16 => Some(Depth::Bit16),
            24 => Some(Depth::Bit24),
            _ => None,
        }
    }

    /// The bit count.
    pub fn bits(self) -> u32 {
        match self {
            Depth::Bit1 => 1,
            Depth::Bit8 => 8,
            Depth::Bit16 => 16,
            Depth::Bit24 => 24,
        }
    }

    /// Bytes a pixel takes in memory and in a tile file.
    pub fn bytes(self) -> usize {
        match self {
            Depth::Bit1 | Depth::Bit8 => 1,
            Depth::Bit16 => 2,
            Depth::Bit24 => 3,
        }
    }

    /// The largest value of a grey-level pixel (None for RGB).
    pub fn max_grey(self) -> Option<u16> {
        match self {
            Depth::Bit1 => Some(1),
            Depth::Bit8 => Some(255),
            Depth::Bit16 => Some(u16::MAX),
            Depth::Bit24 => None,
        }
    }
}

/// A `width × height` image, rows top to bottom, `depth.bytes()` bytes per pixel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Raster {
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Pixel depth.
    pub depth: Depth,
    /// The pixels.
    pub data: Vec<u8>,
}

impl Raster {
    /// A random 8-bit image, the same for a seed on every rank.
    pub fn random8(width: usize, height: usize, seed: u64) -> Raster {
        let mut data = vec![0u8; width * height];
        rand_chacha::ChaCha8Rng::seed_from_u64(seed).fill(&mut data[..]);
        Raster { width, height, depth: Depth::Bit8, data }
    }

    /// Bytes per row.
    pub fn row_bytes(&self) -> usize {
        self.width * self.depth.bytes()
    }

    /// The pixels of the rectangle `(x, y, w, h)`, which must lie inside the image.
    pub fn crop(&self, x: usize, y: usize, w: usize, h: usize) -> Raster {
        let (b, rb) = (self.depth.bytes(), self.row_bytes());
        let data = (y..y + h).flat_map(|row| self.data[row * rb + x * b..][..w * b].to_vec()).collect();
        Raster { width: w, height: h, depth: self.depth, data }
    }

    /// Grey levels as `u16` (None for RGB).
    pub fn grey(&self) -> Option<Vec<u16>> {
        match self.depth {
            Depth::Bit1 | Depth::Bit8 => Some(self.data.iter().map(|&p| u16::from(p)).collect()),
            Depth::Bit16 => Some(self.data.chunks_exact(2).map(|p| u16::from_le_bytes([p[0], p[1]])).collect()),
            Depth::Bit24 => None,
        }
    }

    /// A grey-level image from `u16` levels of `depth`.
    pub fn from_grey(width: usize, height: usize, depth: Depth, levels: &[u16]) -> Raster {
        let data = match depth {
            Depth::Bit16 => levels.iter().flat_map(|v| v.to_le_bytes()).collect(),
            _ => levels.iter().map(|&v| v as u8).collect(),
        };
        Raster { width, height, depth, data }
    }

    /// Reads a PNG (or any format the `image` crate was built with): 8-bit grey, 16-bit
    /// grey or 8-bit RGB. `one_bit` turns an 8-bit grey image into a 1-bit one (levels of
    /// 128 and above are 1).
    ///
    /// # Errors
    /// A [`BadInput`] naming the file: missing, unreadable, not an image, truncated, or
    /// of another colour type.
    pub fn read_png(path: &Path, one_bit: bool) -> Result<Raster> {
        let fail = |why: String| anyhow::Error::new(BadInput::new(format!("{}: {why}", path.display())));
        let reader = image::ImageReader::open(path).map_err(|e| fail(e.to_string()))?;
        let reader = reader.with_guessed_format().map_err(|e| fail(e.to_string()))?;
        let img = reader.decode().map_err(|e| fail(format!("not a readable image: {e}")))?;
        let (width, height) = (img.width() as usize, img.height() as usize);
        let raster = match img {
            image::DynamicImage::ImageLuma8(g) => Raster { width, height, depth: Depth::Bit8, data: g.into_raw() },
            image::DynamicImage::ImageLuma16(g) => Raster::from_grey(width, height, Depth::Bit16, &g.into_raw()),
            image::DynamicImage::ImageRgb8(g) => Raster { width, height, depth: Depth::Bit24, data: g.into_raw() },
            other => {
                return Err(fail(format!(
                    "colour type {:?} is not supported: use 8- or 16-bit grey, or 8-bit RGB without alpha",
                    other.color()
                )))
            }
        };
        if one_bit {
            if raster.depth != Depth::Bit8 {
                bad_input!("{}: --bits 1 needs an 8-bit grey image", path.display());
            }
            let data = raster.data.iter().map(|&p| u8::from(p >= 128)).collect();
            return Ok(Raster { depth: Depth::Bit1, data, ..raster });
        }
        Ok(raster)
    }

    /// Writes the image as PNG (1-bit as 8-bit black and white) and commits the file.
    ///
    /// # Errors
    /// If encoding or writing fails.
    pub fn write_png(&self, out: OutputFile) -> Result<()> {
        let (w, h) = (self.width as u32, self.height as u32);
        let image = match self.depth {
            Depth::Bit1 => image::DynamicImage::ImageLuma8(
                image::GrayImage::from_raw(w, h, self.data.iter().map(|&p| if p != 0 { 255 } else { 0 }).collect())
                    .context("image size")?,
            ),
            Depth::Bit8 => image::DynamicImage::ImageLuma8(
                image::GrayImage::from_raw(w, h, self.data.clone()).context("image size")?,
            ),
            Depth::Bit16 => image::DynamicImage::ImageLuma16(
                image::ImageBuffer::from_raw(w, h, self.grey().unwrap_or_default()).context("image size")?,
            ),
            Depth::Bit24 => image::DynamicImage::ImageRgb8(
                image::RgbImage::from_raw(w, h, self.data.clone()).context("image size")?,
            ),
        };
        let mut bytes = std::io::Cursor::new(Vec::new());
        image.write_to(&mut bytes, image::ImageFormat::Png).context("cannot encode the PNG")?;
        out.write_and_commit(&bytes.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_round_trips_every_depth() {
        let dir = tempfile::tempdir().unwrap();
        let levels: Vec<u16> = (0..35u16).map(|i| i * 1871).collect();
        for depth in [Depth::Bit8, Depth::Bit16, Depth::Bit24] {
            let (w, h) = (7, 5);
            let r = match depth {
                Depth::Bit24 => Raster { width: w, height: h, depth, data: (0..105).map(|i| (i * 7) as u8).collect() },
                _ => Raster::from_grey(
                    w,
                    h,
                    depth,
                    &levels.iter().map(|&v| if depth == Depth::Bit8 { v % 256 } else { v }).collect::<Vec<_>>(),
                ),
            };
            let path = dir.path().join(format!("{depth:?}.png"));
            r.write_png(OutputFile::create("-o", &path).unwrap()).unwrap();
            assert_eq!(Raster::read_png(&path, false).unwrap(), r, "{depth:?}");
        }
        let bw = Raster { width: 3, height: 1, depth: Depth::Bit1, data: vec![0, 1, 1] };
        let path = dir.path().join("bw.png");
        bw.write_png(OutputFile::create("-o", &path).unwrap()).unwrap();
        assert_eq!(Raster::read_png(&path, true).unwrap(), bw);
    }

    #[test]
    fn a_truncated_or_foreign_file_is_bad_input_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.png");
        Raster::random8(20, 20, 1).write_png(OutputFile::create("-o", &path).unwrap()).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let e = Raster::read_png(&path, false).unwrap_err();
        assert!(e.is::<BadInput>() && e.to_string().contains("x.png"), "{e}");
        std::fs::write(&path, b"hello, not an image").unwrap();
        assert!(Raster::read_png(&path, false).unwrap_err().is::<BadInput>());
    }
}
