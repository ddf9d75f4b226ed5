//! The image cut into cells (§8.2.1): the grid, the static distribution of eq. (8-2), and a
//! cell's state and work. A cell is a DPS thread of a movable collection: its state is its
//! pixels, so moving the thread moves the cell.
//!
//! A round advances a cell `depth` passes at once: it receives the `2·depth`-pixel frame of
//! the image around it (its halo, as the neighbours' borders left it), computes `depth`
//! passes over itself plus the halo (each pass is exact on two rows and columns fewer on
//! each side, since the rule reads two pixels up and left and one down and right), keeps
//! its own part and sends back its border frame, from which the halos of the next round are
//! cut. `depth` 1 is the thesis's exchange per pass; more divide the messages and the
//! bookkeeping by `depth`.

use std::time::Instant;

use dps::Bulk;
use serde::{Deserialize, Serialize};

use crate::kernel::{self, Plane};

/// A rectangle of the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rect {
    /// Left column.
    pub x: usize,
    /// Top row.
    pub y: usize,
    /// Columns.
    pub w: usize,
    /// Rows.
    pub h: usize,
}

/// The image cut into square cells of `size` pixels (the last row and column of cells may
/// be smaller), `rows × cols` of them, numbered row-major.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    /// Image width.
    pub width: usize,
    /// Image height.
    pub height: usize,
    /// Cell side.
    pub size: usize,
    /// Cell rows (the thesis's LMax).
    pub rows: usize,
    /// Cell columns (CMax).
    pub cols: usize,
}

impl Grid {
    /// The grid of a `width × height` image in cells of side `size` (all positive).
    pub fn new(width: usize, height: usize, size: usize) -> Grid {
        Grid { width, height, size, rows: height.div_ceil(size), cols: width.div_ceil(size) }
    }

    /// Number of cells.
    pub fn cells(&self) -> usize {
        self.rows * self.cols
    }

    /// The pixels of cell `index`.
    pub fn rect(&self, index: usize) -> Rect {
        let (l, c) = (index / self.cols, index % self.cols);
        let (x, y) = (c * self.size, l * self.size);
        Rect { x, y, w: self.size.min(self.width - x), h: self.size.min(self.height - y) }
    }

    /// Eq. (8-2): cell (L, C) on node `(L · CMax + C) mod N`, as a mapping string.
    pub fn static_mapping(&self, ranks: usize) -> String {
        (0..self.cells()).map(|i| (i % ranks).to_string()).collect::<Vec<_>>().join(" ")
    }
}

/// The pixels of a rectangle that lie within `t` of its edge, row by row: whole rows for
/// the first and last `t` rows, the first and last `min(t, w)` pixels of the others.
/// Read from an image at any position (white outside it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    bits: Bulk<u64>,
}

impl Frame {
    /// Calls `f(dx, dy, n, word_offset)` for each run of the frame of a `w × h` rectangle.
    fn runs(w: usize, h: usize, t: usize, mut f: impl FnMut(usize, usize, usize, usize)) {
        let side = t.min(w);
        let mut at = 0;
        for dy in 0..h {
            if dy < t || dy + t >= h {
                f(0, dy, w, at);
                at += w.div_ceil(64);
            } else {
                f(0, dy, side, at);
                f(w - side, dy, side, at + 1);
                at += 2;
            }
        }
    }

    /// The frame of thickness `t` (at most 64) of the `w × h` rectangle of `image` at
    /// (`x`, `y`).
    pub fn read(image: &Plane, x: isize, y: isize, w: usize, h: usize, t: usize) -> Frame {
        debug_assert!(t <= 64);
        let mut bits = Vec::new();
        Frame::runs(w, h, t, |dx, dy, n, at| {
            debug_assert_eq!(bits.len(), at);
            let (x, y) = (x + dx as isize, y + dy as isize);
            let inside = y >= 0 && (y as usize) < image.height && x >= 0 && x as usize + n <= image.width;
            for j in 0..n.div_ceil(64) {
                let left = n - 64 * j;
                let word = if inside {
                    // Inside the image (most runs): two words and a shift.
                    let row = image.row(y as usize);
                    let (q, r) = ((x as usize + 64 * j) / 64, (x as usize + 64 * j) % 64);
                    let hi = if r == 0 { 0 } else { row.get(q + 1).map_or(0, |w| w << (64 - r)) };
                    (row[q] >> r) | hi
                } else {
                    image.get64(x + 64 * j as isize, y)
                };
                bits.push(if left >= 64 { word } else { word & ((1u64 << left) - 1) });
            }
        });
        Frame { bits: Bulk(bits) }
    }

    /// Writes the frame back into the same rectangle of `image` (clipped to the image).
    pub fn write(&self, image: &mut Plane, x: isize, y: isize, w: usize, h: usize, t: usize) {
        Frame::runs(w, h, t, |dx, dy, n, at| {
            image.put_bits(x + dx as isize, y + dy as isize, n, &self.bits[at..]);
        });
    }
}

/// A cell's state, which moves with it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Cell {
    /// Its number in the grid.
    pub index: usize,
    /// Where it is in the image.
    pub rect: Rect,
    /// Its pixels.
    pub pixels: Plane,
}

/// A round of a cell: `depth` passes with this halo.
#[derive(Debug, Serialize, Deserialize)]
pub struct Work {
    /// The cell.
    pub cell: usize,
    /// Passes of the round.
    pub depth: usize,
    /// The `2·depth` pixels around the cell.
    pub halo: Frame,
}

/// What a cell's round produced.
#[derive(Debug, Serialize, Deserialize)]
pub struct Done {
    /// The cell.
    pub cell: usize,
    /// The last pass of the round (1..=depth) that deleted a pixel of the cell, 0 if none.
    pub last_change: usize,
    /// The cell's pixels within `2·depth` of its edge, after the round.
    pub border: Frame,
    /// Time the round took, ns.
    pub nanos: u64,
    /// Foreground pixels of the cell after the round.
    pub black: u64,
    /// The round's work: the words the passes computed (see [`work`]).
    pub work: u64,
}

/// The work of a pass over `rows` of `plane`, in words: the kernel computes the words
/// holding a foreground pixel and only glances at white ones (counted 1/16). A measure of
/// the time a cell takes that, unlike a clock, neither the machine's load nor the other
/// threads sharing the core can distort, so every run decides the same migrations.
pub fn work(plane: &Plane, rows: std::ops::Range<usize>) -> u64 {
    let words = &plane.bits[rows.start * plane.words..rows.end * plane.words];
    words.iter().filter(|&&w| w != 0).count() as u64 + words.len() as u64 / 16
}

impl Cell {
    /// Cell `index` of `grid`, cut from `image`.
    pub fn new(grid: &Grid, index: usize, image: &Plane) -> Cell {
        let rect = grid.rect(index);
        Cell { index, rect, pixels: image.crop(rect.x as isize, rect.y as isize, rect.w, rect.h) }
    }

    /// Runs a round (see the module doc).
    pub fn round(&mut self, job: &Work) -> Done {
        assert_eq!(job.cell, self.index, "a round for cell {} reached cell {}", job.cell, self.index);
        let start = Instant::now();
        let (k, Rect { w, h, .. }) = (job.depth, self.rect);
        let t = 2 * k;
        let (pw, ph) = (w + 2 * t, h + 2 * t);
        let mut a = Plane::new(pw, ph);
        job.halo.write(&mut a, 0, 0, pw, ph, t);
        a.paste(&self.pixels, t as isize, t as isize);
        let mut b = a.clone();
        let mask = column_mask(pw, t, w);
        let (mut last_change, mut spent) = (0, 0);
        for pass in 1..=k {
            spent += work(&a, 2 * pass..ph - 2 * pass);
            kernel::thin_rows(&a, &mut b, 2 * pass..ph - 2 * pass);
            if (t..t + h).any(|y| a.row(y).iter().zip(b.row(y)).zip(&mask).any(|((x, y), m)| (x ^ y) & m != 0)) {
                last_change = pass;
            }
            std::mem::swap(&mut a, &mut b);
        }
        self.pixels = a.crop(t as isize, t as isize, w, h);
        let border = Frame::read(&self.pixels, 0, 0, w, h, t);
        let black = self.pixels.count();
        Done { cell: self.index, last_change, border, nanos: start.elapsed().as_nanos() as u64, black, work: spent }
    }
}

/// Per word of a row `width` pixels wide, the bits of columns `from..from + n`.
fn column_mask(width: usize, from: usize, n: usize) -> Vec<u64> {
    (0..width.div_ceil(64))
        .map(|i| {
            let (lo, hi) = (64 * i, 64 * i + 64);
            let (a, b) = (from.max(lo), (from + n).min(hi));
            if a >= b {
                0
            } else {
                let len = b - a;
                let ones = if len == 64 { u64::MAX } else { (1u64 << len) - 1 };
                ones << (a - lo)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_plane(w: usize, h: usize, seed: u64) -> Plane {
        let mut p = Plane::new(w, h);
        let mut s = seed | 1;
        // Rectangles, so that thinning takes several passes.
        for _ in 0..(w * h / 150).max(1) {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let (x0, y0) = ((s >> 20) as usize % w, (s >> 40) as usize % h);
            let (rw, rh) = (3 + (s >> 8) as usize % 12, 3 + (s >> 14) as usize % 12);
            for y in y0..(y0 + rh).min(h) {
                for x in x0..(x0 + rw).min(w) {
                    p.set(x, y, true);
                }
            }
        }
        p
    }

    #[test]
    fn frames_read_and_write_the_edge_pixels() {
        let p = random_plane(100, 40, 3);
        for (x, y, w, h, t) in
            [(0isize, 0isize, 100usize, 40usize, 2usize), (-4, -4, 108, 48, 4), (10, 5, 3, 3, 2), (30, 7, 70, 20, 16)]
        {
            let f = Frame::read(&p, x, y, w, h, t);
            let mut q = Plane::new(100, 40);
            f.write(&mut q, x, y, w, h, t);
            for py in 0..40isize {
                for px in 0..100isize {
                    let (dx, dy) = (px - x, py - y);
                    let inside = dx >= 0 && dy >= 0 && (dx as usize) < w && (dy as usize) < h;
                    let edge = inside
                        && ((dx as usize) < t || (dy as usize) < t || dx as usize + t >= w || dy as usize + t >= h);
                    assert_eq!(q.get(px, py), edge && p.get(px, py), "({px}, {py}) of frame {x},{y} {w}x{h} t={t}");
                }
            }
        }
    }

    /// Cells in lock-step rounds, halos cut from the assembled image, against the serial
    /// reference, for several cell sizes and depths.
    #[test]
    fn rounds_of_cells_give_the_serial_skeleton() {
        for (w, h, size, depth, seed) in
            [(90, 70, 16, 1, 1), (90, 70, 16, 3, 2), (130, 65, 32, 8, 3), (40, 40, 2, 1, 4), (64, 64, 5, 4, 5)]
        {
            let image = random_plane(w, h, seed);
            let (reference, passes) = kernel::skeletonize(&image);
            let grid = Grid::new(w, h, size);
            let mut cells: Vec<Cell> = (0..grid.cells()).map(|i| Cell::new(&grid, i, &image)).collect();
            let mut current = image.clone();
            let (mut round, mut last) = (0, 0);
            loop {
                let t = 2 * depth;
                let dones: Vec<Done> = cells
                    .iter_mut()
                    .map(|c| {
                        let r = c.rect;
                        let halo = Frame::read(
                            &current,
                            r.x as isize - t as isize,
                            r.y as isize - t as isize,
                            r.w + 2 * t,
                            r.h + 2 * t,
                            t,
                        );
                        c.round(&Work { cell: c.index, depth, halo })
                    })
                    .collect();
                for c in &cells {
                    current.paste(&c.pixels, c.rect.x as isize, c.rect.y as isize);
                }
                let changed = dones.iter().map(|d| d.last_change).max().unwrap();
                if changed == 0 {
                    break;
                }
                last = round * depth + changed;
                round += 1;
            }
            assert_eq!(current, reference, "{w}x{h}, cells of {size}, depth {depth}");
            assert_eq!(last as u64 + 1, passes, "{w}x{h}, cells of {size}, depth {depth}: passes");
        }
    }

    #[test]
    fn the_static_mapping_deals_cells_round_robin() {
        let g = Grid::new(10, 7, 4);
        assert_eq!((g.rows, g.cols, g.cells()), (2, 3, 6));
        assert_eq!(g.static_mapping(4), "0 1 2 3 0 1");
        assert_eq!(g.rect(5), Rect { x: 8, y: 4, w: 2, h: 3 });
    }
}
