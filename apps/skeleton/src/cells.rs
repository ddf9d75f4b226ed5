//! The image cut into cells (§8.2.1): the grid, the static distribution of eq. (8-2), and a
//! cell's state and work. A cell is a DPS thread of a movable collection: its state is its
//! pixels and its halo, so moving the thread moves the cell.
//!
//! A round advances a cell `depth` passes at once over itself plus its halo (the
//! `2·depth`-pixel frame of the image around it, as its neighbours left it): each pass is
//! exact on two rows and columns fewer on each side, since the rule reads two pixels up and
//! left and one down and right, so after `depth` passes the cell's own pixels are exact. It
//! then sends the cells whose halo it lies in the strips of itself that changed, directly
//! (the runtime delivers a strip wherever its receiver lives now); a receiver keeps them
//! until its next round. `depth` 1 is the thesis's exchange per pass; more divide the
//! messages by `depth`.

use std::time::Instant;

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

/// Strips of a round go to the cells whose halo they fall in.
impl Grid {
    /// The cells other than `index` whose pixels lie within `t` of cell `index` (the cells
    /// its halo of thickness `t` is cut from; the relation is symmetric), in index order.
    pub fn reach(&self, index: usize, t: usize) -> Vec<usize> {
        let r = self.rect(index);
        let cols = r.x.saturating_sub(t) / self.size..=((r.x + r.w + t - 1).min(self.width - 1) / self.size);
        let rows = r.y.saturating_sub(t) / self.size..=((r.y + r.h + t - 1).min(self.height - 1) / self.size);
        rows.flat_map(|l| cols.clone().map(move |c| l * self.cols + c)).filter(|&c| c != index).collect()
    }
}

impl Rect {
    /// This rectangle grown by `t` on every side (it may start left of or above the image).
    fn grown(&self, t: usize) -> (isize, isize, usize, usize) {
        (self.x as isize - t as isize, self.y as isize - t as isize, self.w + 2 * t, self.h + 2 * t)
    }

    /// The part of this rectangle inside `other` grown by `t`.
    pub fn within(&self, other: &Rect, t: usize) -> Rect {
        let (ox, oy, ow, oh) = other.grown(t);
        let x0 = (self.x as isize).max(ox) as usize;
        let y0 = (self.y as isize).max(oy) as usize;
        let x1 = (self.x + self.w).min((ox + ow as isize).max(0) as usize);
        let y1 = (self.y + self.h).min((oy + oh as isize).max(0) as usize);
        Rect { x: x0, y: y0, w: x1.saturating_sub(x0), h: y1.saturating_sub(y0) }
    }
}

/// A cell's state, which moves with it: its pixels inside the halo its neighbours last sent
/// (`2·depth` pixels around it, as the image stood after the last round they sent), and the
/// strips that arrived for later rounds.
#[derive(Debug, Serialize, Deserialize)]
pub struct Cell {
    /// Its number in the grid.
    pub index: usize,
    /// Where it is in the image.
    pub rect: Rect,
    /// Passes per round.
    pub depth: usize,
    /// `(w + 4·depth) × (h + 4·depth)`: the halo around the cell's pixels.
    padded: Plane,
    /// Strips from neighbours not yet in `padded`: a neighbour sends its strips right after
    /// its round, possibly before this cell ran the same round, which must not see them.
    pending: Vec<Strip>,
    /// The cells it sends strips to, and the part of it each one's halo holds.
    targets: Vec<(usize, Rect)>,
    /// The strips its last round produced, until the next round's exchange sends them.
    outbox: Vec<Strip>,
}

/// The pixels a cell's round changed in another cell's halo.
#[derive(Debug, Serialize, Deserialize)]
pub struct Strip {
    /// The receiving cell.
    pub to: usize,
    /// The round after which the sender had these pixels.
    pub round: u64,
    /// Where they are in the image.
    pub rect: Rect,
    /// The pixels.
    pub pixels: Plane,
}

/// What a cell's round did, for rank 0.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    /// The cell.
    pub cell: usize,
    /// The last pass of the round (1..=depth) that deleted a pixel of the cell, 0 if none.
    pub last_change: usize,
    /// The cells it sent strips to (those whose halo changed).
    pub sent_to: Vec<usize>,
    /// Foreground pixels of the cell after the round.
    pub black: u64,
    /// The round's work: the words the passes computed (see [`work`]).
    pub work: u64,
    /// The round's time on its rank, ns (for the measured speed of the rank).
    pub nanos: u64,
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
    /// Cell `index` of `grid`, cut from `image` with its halo, for rounds of `depth` passes.
    pub fn new(grid: &Grid, index: usize, image: &Plane, depth: usize) -> Cell {
        let rect = grid.rect(index);
        let t = 2 * depth;
        let (x, y, w, h) = rect.grown(t);
        let targets = grid.reach(index, t).into_iter().map(|c| (c, rect.within(&grid.rect(c), t))).collect();
        Cell { index, rect, depth, padded: image.crop(x, y, w, h), pending: Vec::new(), targets, outbox: Vec::new() }
    }

    /// Its pixels.
    pub fn pixels(&self) -> Plane {
        let t = 2 * self.depth;
        self.padded.crop(t as isize, t as isize, self.rect.w, self.rect.h)
    }

    /// Keeps a neighbour's strip for the next round this cell runs after `strip.round`.
    pub fn receive(&mut self, strip: Strip) {
        assert_eq!(strip.to, self.index, "a strip for cell {} reached cell {}", strip.to, self.index);
        self.pending.push(strip);
    }

    /// Puts the strips of rounds before `round` into the halo, oldest first.
    fn apply_pending(&mut self, round: u64) {
        let t = 2 * self.depth as isize;
        self.pending.sort_by_key(|s| s.round);
        let later = self.pending.iter().position(|s| s.round >= round).unwrap_or(self.pending.len());
        for s in self.pending.drain(..later) {
            let (x, y) = (s.rect.x as isize - self.rect.x as isize + t, s.rect.y as isize - self.rect.y as isize + t);
            self.padded.paste(&s.pixels, x, y);
        }
    }

    /// Runs round `round`: `depth` passes over the cell and its halo (each pass is exact on
    /// two pixels fewer on each side), and keeps its own part. The strips of it that changed,
    /// for the cells whose halo they are in (except those in `quiet`, which never run
    /// again), wait in the cell for [`Cell::take_outbox`].
    pub fn round(&mut self, round: u64, quiet: &[usize]) -> Report {
        let start = Instant::now();
        self.apply_pending(round);
        let (k, Rect { w, h, .. }) = (self.depth, self.rect);
        let t = 2 * k;
        let ph = h + 2 * t;
        let mut a = self.padded.clone();
        let mut b = a.clone();
        let mask = column_mask(a.width, t, w);
        let (mut last_change, mut spent) = (0, 0);
        for pass in 1..=k {
            spent += work(&a, 2 * pass..ph - 2 * pass);
            kernel::thin_rows(&a, &mut b, 2 * pass..ph - 2 * pass);
            if (t..t + h).any(|y| a.row(y).iter().zip(b.row(y)).zip(&mask).any(|((x, y), m)| (x ^ y) & m != 0)) {
                last_change = pass;
            }
            std::mem::swap(&mut a, &mut b);
        }
        let mut strips = Vec::new();
        if last_change > 0 {
            for &(to, r) in self.targets.iter().filter(|(to, _)| !quiet.contains(to)) {
                let (x, y) = (
                    r.x as isize - self.rect.x as isize + t as isize,
                    r.y as isize - self.rect.y as isize + t as isize,
                );
                let pixels = a.crop(x, y, r.w, r.h);
                if pixels != self.padded.crop(x, y, r.w, r.h) {
                    strips.push(Strip { to, round, rect: r, pixels });
                }
            }
            self.padded.paste(&a.crop(t as isize, t as isize, w, h), t as isize, t as isize);
        }
        let black = self.black();
        let sent_to = strips.iter().map(|s| s.to).collect();
        self.outbox = strips;
        Report { cell: self.index, last_change, sent_to, black, work: spent, nanos: start.elapsed().as_nanos() as u64 }
    }

    /// Foreground pixels of the cell.
    pub fn black(&self) -> u64 {
        self.pixels().count()
    }

    /// The strips of the last round, to send.
    pub fn take_outbox(&mut self) -> Vec<Strip> {
        std::mem::take(&mut self.outbox)
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
    fn the_reach_of_a_cell_is_the_cells_within_t_of_it() {
        let g = Grid::new(100, 70, 16); // 7 x 5 cells, the last column 4 wide, the last row 6 high
        assert_eq!(g.reach(0, 4), vec![1, 7, 8]);
        assert_eq!(g.reach(8, 4), vec![0, 1, 2, 7, 9, 14, 15, 16]);
        // Thicker than a cell: two rings, and the narrow last column reaches two columns.
        assert_eq!(g.reach(6, 20).len(), 3 * 3 - 1);
        for c in 0..g.cells() {
            for t in [1, 4, 20] {
                for &d in &g.reach(c, t) {
                    assert!(g.reach(d, t).contains(&c), "reach is symmetric: {c} {d} t={t}");
                    assert!(g.rect(d).within(&g.rect(c), t).w > 0, "{d} within {t} of {c}");
                }
            }
        }
    }

    /// Cells in lock-step rounds, strips delivered between rounds (and some before the
    /// receiver's own round, as the runtime may), against the serial reference, for several
    /// cell sizes and depths.
    #[test]
    fn rounds_of_cells_give_the_serial_skeleton() {
        for (w, h, size, depth, seed) in
            [(90, 70, 16, 1, 1), (90, 70, 16, 3, 2), (130, 65, 32, 8, 3), (40, 40, 2, 1, 4), (64, 64, 5, 4, 5)]
        {
            let image = random_plane(w, h, seed);
            let (reference, passes) = kernel::skeletonize(&image);
            let grid = Grid::new(w, h, size);
            let mut cells: Vec<Cell> = (0..grid.cells()).map(|i| Cell::new(&grid, i, &image, depth)).collect();
            let (mut round, mut last) = (0u64, 0);
            loop {
                // Every cell runs; each strip is delivered at once, so later cells hold
                // strips of this round when they run it.
                let mut changed = 0;
                for i in 0..cells.len() {
                    changed = changed.max(cells[i].round(round, &[]).last_change);
                    for s in cells[i].take_outbox() {
                        let to = s.to;
                        cells[to].receive(s);
                    }
                }
                if changed == 0 {
                    break;
                }
                last = round as usize * depth + changed;
                round += 1;
            }
            let mut current = Plane::new(w, h);
            for c in &cells {
                current.paste(&c.pixels(), c.rect.x as isize, c.rect.y as isize);
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
