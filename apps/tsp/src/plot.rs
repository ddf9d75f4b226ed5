//! `--plot`: the cities and the tour as a PNG (lines drawn with Bresenham's algorithm).

use std::io::Cursor;

use image::{ImageFormat, Rgb, RgbImage};

/// Image width and height in pixels.
const SIZE: u32 = 800;
/// Blank border in pixels.
const MARGIN: f64 = 20.0;

/// Draws `tour` over `coords` and encodes the image as PNG (the caller writes the bytes,
/// through an output file that is renamed into place only when complete).
///
/// # Errors
/// If the image cannot be encoded.
pub fn png(coords: &[[f64; 2]], tour: &[usize]) -> Result<Vec<u8>, image::ImageError> {
    let mut img = RgbImage::from_pixel(SIZE, SIZE, Rgb([255, 255, 255]));
    let pixels = to_pixels(coords);
    for k in 0..tour.len() {
        let (a, b) = (pixels[tour[k]], pixels[tour[(k + 1) % tour.len()]]);
        line(&mut img, a, b, Rgb([40, 90, 200]));
    }
    for &(x, y) in &pixels {
        for dx in -2..=2 {
            for dy in -2..=2 {
                put(&mut img, x + dx, y + dy, Rgb([200, 30, 30]));
            }
        }
    }
    let mut bytes = Vec::new();
    img.write_to(&mut Cursor::new(&mut bytes), ImageFormat::Png)?;
    Ok(bytes)
}

/// Scales coordinates into the image, keeping the aspect ratio, y up.
fn to_pixels(coords: &[[f64; 2]]) -> Vec<(i64, i64)> {
    let (mut lo, mut hi) = ([f64::MAX; 2], [f64::MIN; 2]);
    for p in coords {
        for a in 0..2 {
            lo[a] = lo[a].min(p[a]);
            hi[a] = hi[a].max(p[a]);
        }
    }
    let span = (hi[0] - lo[0]).max(hi[1] - lo[1]).max(1e-9);
    let scale = (SIZE as f64 - 2.0 * MARGIN) / span;
    coords
        .iter()
        .map(|p| {
            let x = MARGIN + (p[0] - lo[0]) * scale;
            let y = SIZE as f64 - MARGIN - (p[1] - lo[1]) * scale;
            (x.round() as i64, y.round() as i64)
        })
        .collect()
}

fn put(img: &mut RgbImage, x: i64, y: i64, c: Rgb<u8>) {
    if (0..SIZE as i64).contains(&x) && (0..SIZE as i64).contains(&y) {
        img.put_pixel(x as u32, y as u32, c);
    }
}

/// Bresenham's line from `a` to `b`, both ends included.
fn line(img: &mut RgbImage, a: (i64, i64), b: (i64, i64), c: Rgb<u8>) {
    let (mut x, mut y) = a;
    let (dx, dy) = ((b.0 - x).abs(), -(b.1 - y).abs());
    let (sx, sy) = (if x < b.0 { 1 } else { -1 }, if y < b.1 { 1 } else { -1 });
    let mut err = dx + dy;
    loop {
        put(img, x, y, c);
        if (x, y) == b {
            break;
        }
        let e2 = 2 * err;
        if e2 >= dy {
            err += dy;
            x += sx;
        }
        if e2 <= dx {
            err += dx;
            y += sy;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bresenham_reaches_both_ends_and_is_connected() {
        let mut img = RgbImage::new(SIZE, SIZE);
        let red = Rgb([255, 0, 0]);
        line(&mut img, (10, 10), (50, 27), red);
        assert_eq!(*img.get_pixel(10, 10), red);
        assert_eq!(*img.get_pixel(50, 27), red);
        let lit = img.pixels().filter(|p| **p == red).count();
        assert_eq!(lit, 41, "one pixel per column along the major axis");
    }
}
