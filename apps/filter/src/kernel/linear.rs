//! Linear filters for process-and-gather (thesis §7.3): integer kernels, the tile filtered
//! as if the pixels beyond its border were 0 into an enlarged output, and the overlap-add
//! that makes the sum of the enlarged tiles equal the zero-padded convolution of the image.
//!
//! Sums are `i32` and the kernels integer, so the overlap-add is exact and the parallel result
//! equals the serial one bit for bit; the division by the kernel's sum (for an image to look
//! at) comes after the merge, since integer division does not distribute over the addition.

use serde::{Deserialize, Serialize};

/// The linear filters `gather` offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum Filter {
    /// 3×3 box (all ones).
    Box3,
    /// 5×5 box.
    Box5,
    /// 3×3 binomial Gaussian, [1 2 1] ⊗ [1 2 1].
    Gauss3,
    /// 5×5 binomial Gaussian, [1 4 6 4 1] ⊗ [1 4 6 4 1].
    Gauss5,
}

impl Filter {
    /// The filter's kernel.
    pub fn kernel(self) -> Kernel {
        let separable = |row: &[i32]| Kernel::outer(row, row);
        match self {
            Filter::Box3 => separable(&[1; 3]),
            Filter::Box5 => separable(&[1; 5]),
            Filter::Gauss3 => separable(&[1, 2, 1]),
            Filter::Gauss5 => separable(&[1, 4, 6, 4, 1]),
        }
    }
}

/// An integer convolution kernel of odd width and height, centred.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// Columns (odd).
    pub w: usize,
    /// Rows (odd).
    pub h: usize,
    /// `h` rows of `w` weights.
    pub weights: Vec<i32>,
}

impl Kernel {
    /// The kernel `column[y] · row[x]`.
    pub fn outer(row: &[i32], column: &[i32]) -> Kernel {
        assert!(row.len() % 2 == 1 && column.len() % 2 == 1, "a centred kernel has odd sides");
        let weights = column.iter().flat_map(|c| row.iter().map(move |r| c * r)).collect();
        Kernel { w: row.len(), h: column.len(), weights }
    }

    /// Horizontal radius.
    pub fn rx(&self) -> usize {
        self.w / 2
    }

    /// Vertical radius.
    pub fn ry(&self) -> usize {
        self.h / 2
    }

    /// The sum of the weights (what a flat image is multiplied by).
    pub fn sum(&self) -> i32 {
        self.weights.iter().sum()
    }
}

/// The zero-padded convolution of a `w × h` image, one `i32` sum per image pixel.
pub fn convolve_image(pixels: &[u16], w: usize, h: usize, k: &Kernel) -> Vec<i32> {
    let enlarged = convolve_enlarged(pixels, w, h, k);
    let (ew, rx, ry) = (w + 2 * k.rx(), k.rx(), k.ry());
    (0..h).flat_map(|y| enlarged[(y + ry) * ew + rx..][..w].to_vec()).collect()
}

/// The convolution of a `w × h` tile taken as 0 beyond its border, over the tile enlarged by
/// the kernel's radius on every side: `(w + 2·rx) × (h + 2·ry)` sums, the first at tile
/// position (−rx, −ry). Every output pixel the tile contributes to is there.
pub fn convolve_enlarged(pixels: &[u16], w: usize, h: usize, k: &Kernel) -> Vec<i32> {
    let (rx, ry) = (k.rx(), k.ry());
    let (ew, eh) = (w + 2 * rx, h + 2 * ry);
    let mut out = vec![0i32; ew * eh];
    // Scatter, a row of weights at a time (the inner loop runs over a whole tile row and
    // vectorises): input (x, y) adds k[ky][kx]·p to output (x + kx − rx, y + ky − ry), which
    // is (x + kx, y + ky) in enlarged coordinates.
    for y in 0..h {
        for ky in 0..k.h {
            let out_row = &mut out[(y + ky) * ew..][..ew];
            for kx in 0..k.w {
                let wgt = k.weights[ky * k.w + kx];
                let ox0 = kx;
                for (o, &p) in out_row[ox0..ox0 + w].iter_mut().zip(&pixels[y * w..][..w]) {
                    *o += wgt * i32::from(p);
                }
            }
        }
    }
    out
}

/// A rectangle in image coordinates (may start left of or above the image: a tile's
/// enlarged output does at the image's edge).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Area {
    /// Left column.
    pub x: i64,
    /// Top row.
    pub y: i64,
    /// Columns.
    pub w: usize,
    /// Rows.
    pub h: usize,
}

/// Adds `part` (covering `at`) into `window` (covering `win`), where they overlap: the
/// thesis's MergeAndAddTile.
pub fn overlap_add(window: &mut [i32], win: Area, part: &[i32], at: Area) {
    let x0 = win.x.max(at.x);
    let x1 = (win.x + win.w as i64).min(at.x + at.w as i64);
    let y0 = win.y.max(at.y);
    let y1 = (win.y + win.h as i64).min(at.y + at.h as i64);
    if x0 >= x1 || y0 >= y1 {
        return;
    }
    let n = (x1 - x0) as usize;
    for y in y0..y1 {
        let dst = &mut window[(y - win.y) as usize * win.w + (x0 - win.x) as usize..][..n];
        let src = &part[(y - at.y) as usize * at.w + (x0 - at.x) as usize..][..n];
        for (d, s) in dst.iter_mut().zip(src) {
            *d += s;
        }
    }
}

/// `sum / divisor` rounded to nearest (halves away from zero), clamped to `0..=max`.
pub fn normalise(sum: i32, divisor: i32, max: u16) -> u16 {
    let q = (2 * i64::from(sum) + i64::from(divisor)).div_euclid(2 * i64::from(divisor));
    q.clamp(0, i64::from(max)) as u16
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    use super::*;

    /// The textbook definition, pixel by pixel: the reference for the scatter form.
    fn convolve_naive(pixels: &[u16], w: usize, h: usize, k: &Kernel) -> Vec<i32> {
        let (rx, ry) = (k.rx() as i64, k.ry() as i64);
        let mut out = vec![0; w * h];
        for y in 0..h as i64 {
            for x in 0..w as i64 {
                let mut s = 0;
                for dy in -ry..=ry {
                    for dx in -rx..=rx {
                        let (sx, sy) = (x - dx, y - dy);
                        if (0..w as i64).contains(&sx) && (0..h as i64).contains(&sy) {
                            let wgt = k.weights[((dy + ry) * k.w as i64 + dx + rx) as usize];
                            s += wgt * i32::from(pixels[(sy * w as i64 + sx) as usize]);
                        }
                    }
                }
                out[(y * w as i64 + x) as usize] = s;
            }
        }
        out
    }

    #[test]
    fn figure_7_5_two_slices_overlap_added_equal_the_direct_filtering() {
        // 8 samples, a 3×1 averaging kernel (1/3 applied after the sum), 2 tiles of 4.
        let signal: [u16; 8] = [10, 20, 30, 40, 50, 60, 70, 80];
        let k = Kernel::outer(&[1, 1, 1], &[1]);
        let direct = convolve_image(&signal, 8, 1, &k);
        assert_eq!(direct, [30, 60, 90, 120, 150, 180, 210, 150]);
        let mut merged = vec![0; 8];
        let whole = Area { x: 0, y: 0, w: 8, h: 1 };
        for start in [0usize, 4] {
            let slice = convolve_enlarged(&signal[start..start + 4], 4, 1, &k);
            assert_eq!(slice.len(), 6, "both slices grow to 6 elements");
            overlap_add(&mut merged, whole, &slice, Area { x: start as i64 - 1, y: 0, w: 6, h: 1 });
        }
        assert_eq!(merged, direct);
        let averaged: Vec<u16> = merged.iter().map(|&s| normalise(s, 3, u16::MAX)).collect();
        assert_eq!(averaged, [10, 20, 30, 40, 50, 60, 70, 50]);
    }

    #[test]
    fn tiles_overlap_added_equal_the_zero_padded_convolution_of_any_window() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let filters = [Filter::Box3, Filter::Box5, Filter::Gauss3, Filter::Gauss5].map(|f| f.kernel());
        // An asymmetric kernel tells convolution from correlation.
        for k in filters.into_iter().chain([Kernel::outer(&[1, 2, 3], &[4, 5, 6, 7, 9])]) {
            let filter = (k.w, k.h);
            let (w, h, t) = (23, 17, 6);
            let img: Vec<u16> = (0..w * h).map(|_| rng.gen()).collect();
            let full = convolve_image(&img, w, h, &k);
            assert_eq!(full, convolve_naive(&img, w, h, &k), "{filter:?}");
            let win = Area { x: 3, y: 5, w: 15, h: 9 };
            let mut window = vec![0; win.w * win.h];
            for ty in (0..h).step_by(t) {
                for tx in (0..w).step_by(t) {
                    let (tw, th) = (t.min(w - tx), t.min(h - ty));
                    let tile: Vec<u16> = (0..th).flat_map(|y| img[(ty + y) * w + tx..][..tw].to_vec()).collect();
                    let out = convolve_enlarged(&tile, tw, th, &k);
                    let at = Area {
                        x: tx as i64 - k.rx() as i64,
                        y: ty as i64 - k.ry() as i64,
                        w: tw + 2 * k.rx(),
                        h: th + 2 * k.ry(),
                    };
                    overlap_add(&mut window, win, &out, at);
                }
            }
            for y in 0..win.h {
                let row = &full[(win.y as usize + y) * w + win.x as usize..][..win.w];
                assert_eq!(&window[y * win.w..][..win.w], row, "{filter:?} row {y}");
            }
        }
    }

    #[test]
    fn normalising_rounds_to_nearest_and_clamps() {
        assert_eq!(normalise(4, 3, 255), 1);
        assert_eq!(normalise(5, 3, 255), 2);
        assert_eq!(normalise(3 * 300, 3, 255), 255);
        assert_eq!(normalise(-7, 3, 255), 0);
        assert_eq!(Filter::Gauss5.kernel().sum(), 256);
    }
}
