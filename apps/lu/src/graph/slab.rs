//! A `columns` thread's column blocks in one column-major allocation, in ascending order, so
//! that a panel applied to several neighbouring blocks is one product: MKL's dgemm of 7680
//! rows, 512 deep, makes 75-84 GFLOP/s on one core for one block's 512 columns, 91-94 for
//! 2048-3584 (docs/measurements/2026-11-28-matmul-master-strip-lu-first.md).

use std::collections::BTreeMap;
use std::ops::Range;

use dps::Bulk;
use serde::{Deserialize, Serialize};

/// The blocks, each `n` rows high; a block taken out (shipped to be factored, or to the
/// coordinator) keeps its place until it is put back.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Slab {
    n: usize,
    data: Bulk<f64>,
    /// Block j → its columns in `data`.
    cols: BTreeMap<usize, Range<usize>>,
}

impl Slab {
    /// Blocks `js` (ascending), block j `width(j)` columns wide with data `block(j)`
    /// (column-major n × w); without `data` (NOALLOC) only the widths count.
    pub(super) fn new(
        n: usize,
        js: &[usize],
        width: impl Fn(usize) -> usize,
        data: bool,
        block: impl Fn(usize) -> Vec<f64>,
    ) -> Slab {
        let (mut cols, mut next) = (BTreeMap::new(), 0);
        for &j in js {
            cols.insert(j, next..next + width(j));
            next += width(j);
        }
        let mut all = Vec::with_capacity(if data { n * next } else { 0 });
        for &j in js.iter().filter(|_| data) {
            let b = block(j);
            assert_eq!(b.len(), n * width(j), "block {j}: {} elements, not {n} x {}", b.len(), width(j));
            all.extend_from_slice(&b);
        }
        Slab { n, data: Bulk(all), cols }
    }

    fn range(&self, j: usize) -> Range<usize> {
        let c = self.cols.get(&j).unwrap_or_else(|| panic!("block {j} is not on this thread"));
        if self.data.is_empty() {
            0..0 // NOALLOC
        } else {
            c.start * self.n..c.end * self.n
        }
    }

    /// Block j.
    pub(super) fn get(&self, j: usize) -> &[f64] {
        &self.data[self.range(j)]
    }

    /// Block j, to change in place.
    pub(super) fn get_mut(&mut self, j: usize) -> &mut [f64] {
        let range = self.range(j);
        &mut self.data[range]
    }

    /// A copy of block j, to ship: in a recycled buffer, whose pages are already mapped (a
    /// fresh one faults them in, 8-13 ms for a block of 8192 × 512).
    pub(super) fn take(&self, j: usize) -> Bulk<f64> {
        let block = self.get(j);
        let mut copy = Bulk::recycled(block.len());
        copy.copy_from_slice(block);
        copy
    }

    /// Puts block j back (a copy of `block`, n × its width, or empty under NOALLOC).
    pub(super) fn put(&mut self, j: usize, block: &[f64]) {
        let place = self.get_mut(j);
        assert_eq!(place.len(), block.len(), "block {j} came back with another size");
        place.copy_from_slice(block);
    }

    /// The blocks' indices, ascending.
    pub(super) fn blocks(&self) -> impl Iterator<Item = usize> + '_ {
        self.cols.keys().copied()
    }

    /// `blocks` (ascending, all of this thread) as runs of neighbours here: (first, last) of
    /// each run.
    pub(super) fn runs(&self, blocks: &[usize]) -> Vec<(usize, usize)> {
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for &b in blocks {
            match runs.last_mut() {
                Some((_, last)) if self.cols[last].end == self.cols[&b].start => *last = b,
                _ => runs.push((b, b)),
            }
        }
        runs
    }

    /// Blocks `first..=last` of this thread as one n × w matrix, if they are neighbours here
    /// (no block of another index between them): the data and w.
    pub(super) fn run_mut(&mut self, first: usize, last: usize) -> (&mut [f64], usize) {
        let (a, b) = (self.cols[&first].clone(), self.cols[&last].clone());
        let w = b.end - a.start;
        let range = if self.data.is_empty() { 0..0 } else { a.start * self.n..b.end * self.n };
        (&mut self.data[range], w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_sit_side_by_side_and_runs_span_them() {
        let n = 3;
        let block = |j: usize, w: usize| (0..n * w).map(|i| (j * 100 + i) as f64).collect::<Vec<_>>();
        let width = |j: usize| if j == 7 { 1 } else { 2 };
        let mut slab = Slab::new(n, &[1, 4, 7], width, true, |j| block(j, width(j)));
        assert_eq!(slab.get(4), &block(4, 2)[..]);
        assert_eq!(slab.blocks().collect::<Vec<_>>(), [1, 4, 7]);
        assert_eq!(slab.runs(&[1, 4, 7]), [(1, 7)], "neighbours here, whatever their indices");
        assert_eq!(slab.runs(&[1, 7]), [(1, 1), (7, 7)], "block 4 lies between them");
        let (run, w) = slab.run_mut(4, 7);
        assert_eq!((run.len(), w), (n * 3, 3));
        run[0] = -1.0;
        assert_eq!(slab.get(4)[0], -1.0, "a run is the blocks themselves");
        let out = slab.take(1);
        slab.get_mut(1).fill(0.0);
        slab.put(1, &out);
        assert_eq!(slab.get(1), &block(1, 2)[..], "taken out and put back");
        // NOALLOC: no data, the widths only.
        let mut empty = Slab::new(n, &[2, 5], width, false, |_| unreachable!("no data"));
        assert!(empty.get(2).is_empty() && empty.run_mut(2, 5) == (&mut [][..], 4));
    }
}
