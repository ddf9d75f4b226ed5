//! The memory a run takes, from the image's size and its cells alone, so that a run too
//! large for the machine is refused with the figure before the image is made. Issue 27:
//! counting the image alone let `--generate blobs 1024 1024 --cell 2` start and die in the
//! allocator past 3 GB: every cell also costs its thread, its halo, its list of the
//! neighbours it sends strips to and the strips themselves, which for cells of 2 pixels is
//! thousands of times its pixels. `tests/memory.rs` checks the estimate against the
//! measured peak.

use crate::cells::Grid;

/// What the runtime, its threads and the program take before any image (measured: 23 MB
/// for a 1024² image in 16 cells on one rank).
const BASE: u64 = 16 << 20;

/// A cell's thread and state, its tokens of a round and rank 0's bookkeeping of it, beside
/// its planes and neighbours (measured: 4-7 KiB).
const PER_CELL: u64 = 6 << 10;

/// Planes of a cell's padded size it holds at its peak: its halo, the strips of itself it
/// sends and those it keeps for its next round, its pixels cut out for the round's report.
const PLANES_PER_CELL: u64 = 4;

/// Per neighbour a cell sends strips to: its entry in the cell's list and in rank 0's, a
/// strip in the sender's outbox and in the receiver's pending list, with their tokens
/// (measured: 116 B with cells of 2 and 4 pixels, where a strip is a few words).
const PER_NEIGHBOUR: u64 = 128;

/// Whole-image copies every rank holds (the image read or generated and the runtime's
/// shared copy the cells are cut from and reset to), and those rank 0 adds (the cells'
/// first loads cut from it, then the gathered pieces and the skeleton they are pasted
/// into), and --verify's serial reference (its two planes).
const IMAGES: u64 = 2;
const RANK0_IMAGES: u64 = 2;
const VERIFY_IMAGES: u64 = 2;

/// Bytes of a `width × height` plane: one bit a pixel, rows of 64-bit words.
pub fn plane(width: usize, height: usize) -> u64 {
    (width.div_ceil(64) as u64).saturating_mul(8).saturating_mul(height as u64)
}

/// The cells a cell of `grid` sends strips to with rounds of `depth` passes (its halo is
/// `2·depth` pixels): at most the cells within that distance, on each axis `2·⌈2·depth /
/// side⌉ + 1` of them, the grid permitting, itself excluded.
fn neighbours(grid: &Grid, depth: usize) -> u64 {
    let reach = (2 * depth).div_ceil(grid.size) as u64 * 2 + 1;
    let (x, y) = (reach.min(grid.cols as u64), reach.min(grid.rows as u64));
    (x * y).saturating_sub(1)
}

/// Bytes one cell of `grid` costs with rounds of `depth` passes.
pub fn per_cell(grid: &Grid, depth: usize) -> u64 {
    let padded = grid.size.saturating_add(4 * depth);
    PER_CELL
        .saturating_add(PLANES_PER_CELL.saturating_mul(plane(padded, padded)))
        .saturating_add(PER_NEIGHBOUR.saturating_mul(neighbours(grid, depth)))
}

/// Bytes on rank 0 and on each other rank of a job of `ranks` ranks, `verify` with
/// --verify. The cells are counted as dealt evenly (eq. (8-2)): wherever migration moves
/// them, the node's total is exact on one node.
pub fn need(grid: &Grid, depth: usize, ranks: usize, verify: bool) -> (u64, u64) {
    let image = plane(grid.width, grid.height);
    let cells = (grid.cells() as u64).div_ceil(ranks.max(1) as u64);
    let other =
        BASE.saturating_add(IMAGES.saturating_mul(image)).saturating_add(cells.saturating_mul(per_cell(grid, depth)));
    let rank0_images = RANK0_IMAGES + if verify { VERIFY_IMAGES } else { 0 };
    (other.saturating_add(rank0_images.saturating_mul(image)), other)
}

/// Bytes of a simulation on `ranks` virtual ranks: every cell and the one shared image in
/// this process, beside the simulator's own tables.
pub fn simulated(grid: &Grid, depth: usize, ranks: usize, verify: bool) -> u64 {
    let (rank0, _) = need(grid, depth, 1, verify);
    rank0.saturating_add(dps_harness::simulate::simulator_bytes(ranks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_are_the_cells_within_the_halo() {
        // Cells of 2 with a halo of 16: 8 cells each way, 17 × 17 in all.
        assert_eq!(neighbours(&Grid::new(1024, 1024, 2), 8), 17 * 17 - 1);
        // Cells larger than the halo: the 8 around.
        assert_eq!(neighbours(&Grid::new(1024, 1024, 256), 8), 8);
        // A grid of one row of 3 cells.
        assert_eq!(neighbours(&Grid::new(30, 10, 10), 8), 2);
        // Never fewer than `Grid::reach` finds for any cell.
        let g = Grid::new(90, 70, 16);
        assert!((0..g.cells()).all(|c| g.reach(c, 2 * 3).len() as u64 <= neighbours(&g, 3)));
    }

    #[test]
    fn figures_saturate_instead_of_wrapping() {
        let g = Grid::new(1 << 20, 1 << 20, 1);
        assert!(need(&g, 32, 1, true).0 > 1 << 50);
        assert_eq!(plane(usize::MAX, usize::MAX), u64::MAX);
    }
}
