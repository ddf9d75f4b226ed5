//! Input and output images: PNG files (thresholded to black and white), the generated test
//! images, and the `--generate KIND W H` parser.
//!
//! Foreground (1) is a bright pixel (at least the threshold), as in the thesis's synthetic
//! images stored 0/255; the skeleton is written the same way (255 = foreground).

use std::path::Path;

use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::kernel::Plane;

/// The generated images.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Discs, rectangles and thick strokes all over the image: an even load.
    Blobs,
    /// Lines of thick block letters.
    Text,
    /// Blobs only in the cells of even column index: under eq. (8-2) with an even number of
    /// cell columns and of ranks, the odd ranks get only empty cells (the thesis's "highly
    /// unbalanced" image, Fig. 8.9).
    Skewed,
    /// Blobs, but every fourth column of cells empty (the thesis's "slightly unbalanced"
    /// image, Fig. 8.10: its ceiling for the gain of migration is 4/3 on 4 nodes).
    Mixed,
}

/// What `--generate` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Generate {
    /// The kind of image.
    pub kind: Kind,
    /// Width.
    pub width: usize,
    /// Height.
    pub height: usize,
}

/// The largest side of a generated image (2³⁰ pixels a side would already need 128 MiB a
/// row of cells... and far more time than anyone has).
pub const MAX_SIDE: usize = 1 << 20;

/// Parses the three values of `--generate KIND W H`.
///
/// # Errors
/// A message naming the value that is wrong.
pub fn parse_generate(values: &[String]) -> Result<Generate, String> {
    let [kind, w, h] = values else {
        return Err(format!("--generate takes KIND W H, got {} value(s)", values.len()));
    };
    let kind = match kind.as_str() {
        "blobs" => Kind::Blobs,
        "text" => Kind::Text,
        "skewed" => Kind::Skewed,
        "mixed" => Kind::Mixed,
        other => return Err(format!("--generate {other:?}: the kinds are blobs, text, skewed and mixed")),
    };
    let side = |what: &str, v: &str| -> Result<usize, String> {
        match v.parse::<usize>() {
            Ok(0) => Err(format!("--generate: {what} 0: an image needs at least one pixel")),
            Ok(n) if n > MAX_SIDE => Err(format!("--generate: {what} {n} is more than {MAX_SIDE} pixels")),
            Ok(n) => Ok(n),
            Err(_) => Err(format!("--generate: {what} {v:?} is not a number of pixels")),
        }
    };
    Ok(Generate { kind, width: side("width", w)?, height: side("height", h)? })
}

/// Generates the image `g` with `seed`; `cell` is the cell side, which the skewed and mixed
/// images align their empty columns of cells to.
pub fn generate(g: Generate, seed: u64, cell: usize) -> Plane {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut p = Plane::new(g.width, g.height);
    match g.kind {
        Kind::Text => text(&mut p, &mut rng),
        _ => blobs(&mut p, &mut rng),
    }
    let empty_column: fn(usize) -> bool = match g.kind {
        Kind::Skewed => |c| c % 2 == 1,
        Kind::Mixed => |c| c % 4 == 3,
        _ => |_| false,
    };
    for c in (0..g.width.div_ceil(cell)).filter(|&c| empty_column(c)) {
        for y in 0..g.height {
            for x in c * cell..((c + 1) * cell).min(g.width) {
                p.set(x, y, false);
            }
        }
    }
    p
}

fn fill(p: &mut Plane, x0: isize, y0: isize, x1: isize, y1: isize, inside: impl Fn(isize, isize) -> bool) {
    for y in y0.max(0)..y1.min(p.height as isize) {
        for x in x0.max(0)..x1.min(p.width as isize) {
            if inside(x, y) {
                p.set(x as usize, y as usize, true);
            }
        }
    }
}

/// About one shape per 6000 pixels: discs of radius 4 to 60, rectangles of 4 to 120
/// pixels a side and thick strokes, so that cells stay alive for tens of passes (as the
/// thesis's images did).
fn blobs(p: &mut Plane, rng: &mut ChaCha8Rng) {
    let (w, h) = (p.width as isize, p.height as isize);
    for _ in 0..(p.width * p.height / 6000).max(1) {
        let (cx, cy) = (rng.gen_range(0..w), rng.gen_range(0..h));
        match rng.gen_range(0..3) {
            0 => {
                let r = rng.gen_range(4..60isize);
                fill(p, cx - r, cy - r, cx + r + 1, cy + r + 1, |x, y| (x - cx).pow(2) + (y - cy).pow(2) <= r * r);
            }
            1 => {
                let (rw, rh) = (rng.gen_range(4..120isize), rng.gen_range(4..120isize));
                fill(p, cx, cy, cx + rw, cy + rh, |_, _| true);
            }
            _ => {
                let (len, thick) = (rng.gen_range(20..160isize), rng.gen_range(3..30isize));
                let (dx, dy) = (rng.gen_range(-1..=1isize), rng.gen_range(-1..=1isize));
                for s in 0..len {
                    let (x, y) = (cx + dx * s, cy + dy * s);
                    fill(p, x, y, x + thick, y + thick, |_, _| true);
                }
            }
        }
    }
}

/// Lines of block letters: each glyph 24 × 32 pixels, made of random thick strokes.
fn text(p: &mut Plane, rng: &mut ChaCha8Rng) {
    let (gw, gh) = (24isize, 32isize);
    let mut y = 8isize;
    while y + gh <= p.height as isize {
        let mut x = 8isize;
        while x + gw <= p.width as isize {
            if rng.gen_range(0..6) != 0 {
                let t = rng.gen_range(4..7isize);
                for _ in 0..rng.gen_range(2..5) {
                    match rng.gen_range(0..4) {
                        0 => fill(p, x, y, x + t, y + gh, |_, _| true),
                        1 => fill(p, x + gw - t, y, x + gw, y + gh, |_, _| true),
                        2 => {
                            let yy = y + rng.gen_range(0..gh - t);
                            fill(p, x, yy, x + gw, yy + t, |_, _| true);
                        }
                        _ => fill(p, x, y, x + gw, y + gh, |a, b| ((a - x) * gh - (b - y) * gw).abs() <= t * gh),
                    }
                }
            }
            x += gw + 6;
        }
        y += gh + 12;
    }
}

/// Reads a PNG (any pixel format) as black and white: foreground where the luminance is at
/// least `threshold`, or below it with `dark_foreground`.
///
/// # Errors
/// If the file cannot be read or decoded, or the image is empty.
pub fn read_png(path: &Path, threshold: u8, dark_foreground: bool) -> Result<Plane> {
    let img = image::open(path).with_context(|| format!("--input {}: cannot read the image", path.display()))?;
    let gray = img.to_luma8();
    let (w, h) = (gray.width() as usize, gray.height() as usize);
    if w == 0 || h == 0 {
        bail!("--input {}: the image is empty ({w}x{h})", path.display());
    }
    let mut p = Plane::new(w, h);
    for (x, y, px) in gray.enumerate_pixels() {
        if (px.0[0] >= threshold) != dark_foreground {
            p.set(x as usize, y as usize, true);
        }
    }
    Ok(p)
}

/// The image as an 8-bit PNG, 255 = foreground.
///
/// # Errors
/// If encoding fails.
pub fn png_bytes(p: &Plane) -> Result<Vec<u8>> {
    let mut buf = image::GrayImage::new(p.width as u32, p.height as u32);
    for (x, y, px) in buf.enumerate_pixels_mut() {
        px.0[0] = if p.get(x as isize, y as isize) { 255 } else { 0 };
    }
    let mut out = Vec::new();
    image::DynamicImage::ImageLuma8(buf)
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .context("encoding the PNG")?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn generate_values_are_checked() {
        assert_eq!(
            parse_generate(&strings(&["skewed", "64", "32"])),
            Ok(Generate { kind: Kind::Skewed, width: 64, height: 32 })
        );
        assert!(parse_generate(&strings(&["blob", "6", "3"])).unwrap_err().contains("kinds are"));
        assert!(parse_generate(&strings(&["text", "0", "3"])).unwrap_err().contains("width 0"));
        assert!(parse_generate(&strings(&["text", "4", "-3"])).unwrap_err().contains("height \"-3\""));
    }

    #[test]
    fn skewed_images_leave_odd_cell_columns_empty() {
        let p = generate(Generate { kind: Kind::Skewed, width: 256, height: 128 }, 1, 32);
        for y in 0..128 {
            for x in 0..256 {
                if (x / 32) % 2 == 1 {
                    assert!(!p.get(x, y));
                }
            }
        }
        assert!(p.count() > 1000);
    }

    #[test]
    fn png_round_trip() {
        let p = generate(Generate { kind: Kind::Text, width: 100, height: 60 }, 2, 16);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.png");
        std::fs::write(&path, png_bytes(&p).unwrap()).unwrap();
        assert_eq!(read_png(&path, 128, false).unwrap(), p);
    }

    proptest! {
        #[test]
        fn the_generate_parser_never_panics(kind in "[a-z]{0,7}", w in ".{0,8}", h in "[0-9-]{0,9}") {
            let values = vec![kind.clone(), w.clone(), h.clone()];
            match parse_generate(&values) {
                Ok(g) => {
                    prop_assert_eq!(w.parse::<usize>().ok(), Some(g.width));
                    prop_assert_eq!(h.parse::<usize>().ok(), Some(g.height));
                    prop_assert!(g.width > 0 && g.height > 0);
                }
                Err(e) => prop_assert!(e.starts_with("--generate")),
            }
        }
    }
}
