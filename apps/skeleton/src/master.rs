//! Rank 0's bookkeeping between rounds: the living and dead cells (§8.2.1), the load of
//! each cell for the balance policy, and the count of passes. Rank 0 holds no pixels: the
//! cells exchange their strips directly, and report to rank 0 only what their round did.
//!
//! A cell is *dead* for a round, and gets no work, when its last round changed nothing and
//! no cell sent it a strip since (its input is the same, so its output would be too), or
//! when it is all white (for good: an empty cell "requires only one computation step",
//! §8.2.1, here none). This is exactly the full-image iteration (the thesis's literal
//! rule, "dead once unchanged", is not: a neighbour's later deletions can wake a cell up).
//! Thinning only deletes, so a cell all white stays all white.

use crate::cells::{self, Grid, Report};
use crate::kernel::Plane;

/// What rank 0 knows of the cells between rounds.
#[derive(Debug)]
pub struct Master {
    grid: Grid,
    depth: usize,
    /// Per cell: whether its last round changed a pixel.
    changed: Vec<bool>,
    /// Per cell: whether a strip reached it in the last round.
    received: Vec<bool>,
    /// Per cell: the work of its last round (before the first: its foreground words, times
    /// the passes of a round), see `cells::work`.
    work: Vec<u64>,
    /// Per cell: all white, so dead for good (thinning only deletes).
    empty: Vec<bool>,
    /// The cells whose last round left strips to send.
    senders: Vec<usize>,
    /// Rounds run.
    pub rounds: u64,
    /// Cell rounds run (living cells, summed over the rounds).
    pub cell_rounds: u64,
    /// The last pass, counted from 1, that deleted a pixel anywhere (0: none).
    pub last_change: u64,
}

impl Master {
    /// Before the first round: every cell alive.
    pub fn new(grid: Grid, depth: usize, image: &Plane) -> Master {
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
            changed: vec![true; n],
            received: vec![false; n],
            senders: Vec::new(),
            rounds: 0,
            cell_rounds: 0,
            last_change: 0,
        }
    }

    /// The living cells of the next round.
    pub fn next_cells(&self) -> Vec<usize> {
        (0..self.grid.cells()).filter(|&c| !self.empty[c] && (self.changed[c] || self.received[c])).collect()
    }

    /// The cells whose last round left strips to send.
    pub fn senders(&self) -> &[usize] {
        &self.senders
    }

    /// The cells in the reach of `cell` that need no strips: all white, they never run
    /// again.
    pub fn quiet(&self, cell: usize) -> Vec<usize> {
        self.grid.reach(cell, 2 * self.depth).into_iter().filter(|&c| self.empty[c]).collect()
    }

    /// Takes in the reports of a round; returns whether any cell changed (if not, the image
    /// is the skeleton).
    ///
    /// # Panics
    /// If a report is missing or duplicated: `reports` must answer the cells `worked` one
    /// for one.
    pub fn absorb(&mut self, worked: &[usize], reports: &[Report]) -> bool {
        let n = self.grid.cells();
        let mut answered = vec![false; n];
        assert_eq!(
            worked.len(),
            reports.len(),
            "round {}: {} reports for {} cells",
            self.rounds,
            reports.len(),
            worked.len()
        );
        self.received = vec![false; n];
        self.senders.clear();
        let mut any = false;
        for r in reports {
            assert!(!std::mem::replace(&mut answered[r.cell], true), "cell {} answered twice", r.cell);
            self.changed[r.cell] = r.last_change > 0;
            self.work[r.cell] = r.work;
            self.empty[r.cell] = r.black == 0;
            for &to in &r.sent_to {
                self.received[to] = true;
            }
            if !r.sent_to.is_empty() {
                self.senders.push(r.cell);
            }
            if r.last_change > 0 {
                any = true;
                self.last_change = self.last_change.max(self.rounds * self.depth as u64 + r.last_change as u64);
            }
        }
        assert!(worked.iter().all(|&c| answered[c]), "round {}: a cell did not answer", self.rounds);
        for (changed, answered) in self.changed.iter_mut().zip(answered) {
            *changed &= answered;
        }
        self.rounds += 1;
        self.cell_rounds += reports.len() as u64;
        any
    }

    /// Passes of the full-image iteration this amounts to, the last (unchanged) one included,
    /// as the serial reference counts them.
    pub fn passes(&self) -> u64 {
        self.last_change + 1
    }

    /// The predicted load of each cell in a round of the living cells `living`: the work of
    /// its last round if it works in this one, else 0.
    pub fn predicted_load(&self, living: &[usize]) -> Vec<u64> {
        let mut load = vec![0; self.grid.cells()];
        for &c in living {
            load[c] = self.work[c].max(1);
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

    /// The rounds rank 0 deals, run in order here with the strips delivered between
    /// rounds, against the serial reference; dead cells are skipped.
    #[test]
    fn rounds_with_dead_cells_skipped_give_the_serial_skeleton() {
        for (kind, size, depth) in
            [(Kind::Blobs, 16, 1), (Kind::Skewed, 24, 3), (Kind::Text, 40, 8), (Kind::Mixed, 7, 2)]
        {
            let image = generate(Generate { kind, width: 150, height: 110 }, 9, size);
            let (reference, passes) = kernel::skeletonize(&image);
            let grid = Grid::new(150, 110, size);
            let mut cells: Vec<Cell> = (0..grid.cells()).map(|i| Cell::new(&grid, i, &image, depth)).collect();
            let mut master = Master::new(grid, depth, &image);
            loop {
                let living = master.next_cells();
                let mut reports = Vec::new();
                let mut strips = Vec::new();
                for &c in &living {
                    reports.push(cells[c].round(master.rounds, &master.quiet(c)));
                    strips.extend(cells[c].take_outbox());
                }
                for s in strips {
                    let to = s.to;
                    cells[to].receive(s);
                }
                if !master.absorb(&living, &reports) {
                    break;
                }
            }
            let mut out = Plane::new(150, 110);
            for c in &cells {
                out.paste(&c.pixels(), c.rect.x as isize, c.rect.y as isize);
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
