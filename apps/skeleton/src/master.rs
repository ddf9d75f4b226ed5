//! Rank 0's bookkeeping between rounds: the living and dead cells (§8.2.1), the halos of the
//! next round, and the count of passes.
//!
//! Rank 0 keeps the image as the cells' border frames left it (a cell's pixels within
//! `2·depth` of its edge, which is all that the halos of its neighbours are cut from). A
//! cell is *dead* for a round, and gets no work, when its last round changed nothing and its
//! halo is the one it had then (the same input gives the same, unchanged, output), or when
//! it is all white (for good: an empty cell "requires only one computation step", §8.2.1,
//! here none). This is
//! exactly the full-image iteration (the thesis's literal rule, "dead once unchanged", is
//! not: a neighbour's later deletions can wake a cell up). Thinning only deletes, so a
//! cell unchanged over a round was unchanged at every pass of it.

use crate::cells::{self, Done, Frame, Grid, Work};
use crate::kernel::Plane;

/// What rank 0 knows of the cells between rounds.
#[derive(Debug)]
pub struct Master {
    grid: Grid,
    depth: usize,
    border: Plane,
    /// Per cell: the halo of its last round.
    last_halo: Vec<Option<Frame>>,
    /// Per cell: whether its last round changed a pixel.
    changed: Vec<bool>,
    /// Per cell: the work of its last round (before the first: its foreground words, times
    /// the passes of a round), see `cells::work`.
    work: Vec<u64>,
    /// Per cell: all white, so dead for good (thinning only deletes).
    empty: Vec<bool>,
    /// Rounds run.
    pub rounds: u64,
    /// Cell rounds run (living cells, summed over the rounds).
    pub cell_rounds: u64,
    /// The last pass, counted from 1, that deleted a pixel anywhere (0: none).
    pub last_change: u64,
}

impl Master {
    /// Before the first round: every cell alive.
    pub fn new(grid: Grid, depth: usize, image: Plane) -> Master {
        let n = grid.cells();
        let crops: Vec<Plane> = (0..n)
            .map(|c| {
                let r = grid.rect(c);
                image.crop(r.x as isize, r.y as isize, r.w, r.h)
            })
            .collect();
        Master {
            empty: crops.iter().map(|p| p.count() == 0).collect(),
            work: crops.iter().map(|p| cells::work(p, 0..p.height) * depth as u64).collect(),
            grid,
            depth,
            border: image,
            last_halo: vec![None; n],
            changed: vec![true; n],
            rounds: 0,
            cell_rounds: 0,
            last_change: 0,
        }
    }

    /// The work of the next round: one per living cell.
    pub fn next_works(&mut self) -> Vec<Work> {
        let t = 2 * self.depth;
        let mut works = Vec::new();
        for cell in 0..self.grid.cells() {
            if self.empty[cell] {
                continue;
            }
            let r = self.grid.rect(cell);
            let (x, y) = (r.x as isize - t as isize, r.y as isize - t as isize);
            let halo = Frame::read(&self.border, x, y, r.w + 2 * t, r.h + 2 * t, t);
            if !self.changed[cell] && self.last_halo[cell].as_ref() == Some(&halo) {
                continue;
            }
            self.last_halo[cell] = Some(halo.clone());
            works.push(Work { cell, depth: self.depth, halo });
        }
        works
    }

    /// Takes in the results of a round; returns whether any cell changed (if not, the image
    /// is the skeleton).
    ///
    /// # Panics
    /// If a result is missing or duplicated: `dones` must answer the cells `worked` (those
    /// of the round's works) one for one.
    pub fn absorb(&mut self, worked: &[usize], dones: &[Done]) -> bool {
        let t = 2 * self.depth;
        let mut answered = vec![false; self.grid.cells()];
        assert_eq!(
            worked.len(),
            dones.len(),
            "round {}: {} results for {} cells",
            self.rounds,
            dones.len(),
            worked.len()
        );
        let mut any = false;
        for d in dones {
            assert!(!std::mem::replace(&mut answered[d.cell], true), "cell {} answered twice", d.cell);
            let r = self.grid.rect(d.cell);
            d.border.write(&mut self.border, r.x as isize, r.y as isize, r.w, r.h, t);
            self.changed[d.cell] = d.last_change > 0;
            self.work[d.cell] = d.work;
            self.empty[d.cell] = d.black == 0;
            if d.last_change > 0 {
                any = true;
                self.last_change = self.last_change.max(self.rounds * self.depth as u64 + d.last_change as u64);
            }
        }
        assert!(worked.iter().all(|&c| answered[c]), "round {}: a cell did not answer", self.rounds);
        for (changed, answered) in self.changed.iter_mut().zip(answered) {
            *changed &= answered;
        }
        self.rounds += 1;
        self.cell_rounds += dones.len() as u64;
        any
    }

    /// Passes of the full-image iteration this amounts to, the last (unchanged) one included,
    /// as the serial reference counts them.
    pub fn passes(&self) -> u64 {
        self.last_change + 1
    }

    /// The predicted load of each cell in the round `works` describes: the work of its
    /// last round if it works in this one, else 0.
    pub fn predicted_load(&self, works: &[Work]) -> Vec<u64> {
        let mut load = vec![0; self.grid.cells()];
        for w in works {
            load[w.cell] = self.work[w.cell].max(1);
        }
        load
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::Cell;
    use crate::images::{generate, Generate, Kind};
    use crate::kernel;

    /// The rounds rank 0 deals, run in order here, against the serial reference; dead
    /// cells are skipped.
    #[test]
    fn rounds_with_dead_cells_skipped_give_the_serial_skeleton() {
        for (kind, size, depth) in
            [(Kind::Blobs, 16, 1), (Kind::Skewed, 24, 3), (Kind::Text, 40, 8), (Kind::Mixed, 7, 2)]
        {
            let image = generate(Generate { kind, width: 150, height: 110 }, 9, size);
            let (reference, passes) = kernel::skeletonize(&image);
            let grid = Grid::new(150, 110, size);
            let mut cells: Vec<Cell> = (0..grid.cells()).map(|i| Cell::new(&grid, i, &image)).collect();
            let mut master = Master::new(grid, depth, image);
            loop {
                let works = master.next_works();
                let dones: Vec<Done> = works.iter().map(|w| cells[w.cell].round(w)).collect();
                let worked: Vec<usize> = works.iter().map(|w| w.cell).collect();
                if !master.absorb(&worked, &dones) {
                    break;
                }
            }
            let mut out = Plane::new(150, 110);
            for c in &cells {
                out.paste(&c.pixels, c.rect.x as isize, c.rect.y as isize);
            }
            assert_eq!(out, reference, "{kind:?}, cells of {size}, depth {depth}");
            assert_eq!(master.passes(), passes, "{kind:?}: passes");
            if kind == Kind::Skewed {
                // Empty cells die after a round (their halos are white or unchanged).
                assert!(master.cell_rounds < master.rounds * grid.cells() as u64, "{kind:?}: no cell was ever skipped");
            }
        }
    }
}
