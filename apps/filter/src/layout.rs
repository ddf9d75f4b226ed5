//! Tiling and striping (thesis §7.2): square tiles, each on one of D disks by the rule
//! `disk(r, c) = (c + r·s) mod D`, numbered on its disk in row-major order; the serpentine
//! scan of exchange-process-and-store; which node processes a tile.

use serde::{Deserialize, Serialize};

/// How a stride `s` keeps the 8 neighbours of a tile off its disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrideQuality {
    /// s coprime to D, s ∉ {1, D−1}: the spec's rule; all 8 neighbours on other disks.
    Spec,
    /// No such s exists (D = 4, 6): s = 2 still keeps all 8 neighbours on other disks
    /// (the offsets ±1, ±s, ±(s±1) are all non-zero mod D) without being coprime to D.
    NotCoprime,
    /// D ≤ 3: no row-offset rule can (the 8 neighbours and the tile need 4 disks); this s
    /// separates the horizontal and vertical neighbours, not both diagonals.
    Partial,
}

/// The stride the store uses for `disks` disks when none is given: the valid s closest to
/// D/2 (ties to the larger, which gives s = 5 for D = 8, the thesis's example), or the
/// closest rule for a D that has none (see [`StrideQuality`]).
pub fn default_stride(disks: usize) -> (usize, StrideQuality) {
    let valid: Vec<usize> = (2..disks.saturating_sub(1)).filter(|&s| gcd(s, disks) == 1).collect();
    if let Some(&s) = valid.iter().min_by_key(|&&s| ((2 * s).abs_diff(disks), std::cmp::Reverse(s))) {
        return (s, StrideQuality::Spec);
    }
    match disks {
        4 | 6 => (2, StrideQuality::NotCoprime),
        0 | 1 => (0, StrideQuality::Partial),
        _ => (1, StrideQuality::Partial),
    }
}

/// Whether `s` is a stride the spec's rule allows for `disks` disks.
pub fn is_valid_stride(s: usize, disks: usize) -> bool {
    disks >= 5 && (2..disks - 1).contains(&s) && gcd(s, disks) == 1
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// A tiled image's geometry and striping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tiling {
    /// Image width, pixels.
    pub width: usize,
    /// Image height, pixels.
    pub height: usize,
    /// Tile side, pixels (edge tiles are cut by the image's border).
    pub tile: usize,
    /// Disks.
    pub disks: usize,
    /// The row offset s of the allocation rule.
    pub stride: usize,
}

/// Where a tile is: row and column of tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TileId {
    /// Row of tiles.
    pub r: usize,
    /// Column of tiles.
    pub c: usize,
}

impl Tiling {
    /// Rows of tiles.
    pub fn rows(&self) -> usize {
        self.height.div_ceil(self.tile)
    }

    /// Columns of tiles.
    pub fn cols(&self) -> usize {
        self.width.div_ceil(self.tile)
    }

    /// Tiles in the image.
    pub fn count(&self) -> usize {
        self.rows() * self.cols()
    }

    /// The disk holding tile `t`.
    pub fn disk(&self, t: TileId) -> usize {
        (t.c + t.r * self.stride) % self.disks
    }

    /// Tile `t`'s index on its disk: the tiles before it in row-major order on that disk.
    pub fn local(&self, t: TileId) -> usize {
        let d = self.disk(t);
        let per_row: usize = (0..t.r).map(|r| self.tiles_in_row_on(r, d, self.cols())).sum();
        per_row + self.tiles_in_row_on(t.r, d, t.c)
    }

    /// Tiles among the first `cols` of row `r` that are on disk `d`.
    fn tiles_in_row_on(&self, r: usize, d: usize, cols: usize) -> usize {
        // Column c is on d iff c ≡ d − r·s (mod D): the first such c, then every D-th.
        let first = (d + self.disks - (r * self.stride) % self.disks) % self.disks;
        if first >= cols {
            0
        } else {
            (cols - first).div_ceil(self.disks)
        }
    }

    /// Tiles on disk `d`.
    pub fn tiles_on(&self, d: usize) -> usize {
        (0..self.rows()).map(|r| self.tiles_in_row_on(r, d, self.cols())).sum()
    }

    /// Tile `t`'s pixels: left column, top row, width, height.
    pub fn rect(&self, t: TileId) -> (usize, usize, usize, usize) {
        let (x, y) = (t.c * self.tile, t.r * self.tile);
        (x, y, self.tile.min(self.width - x), self.tile.min(self.height - y))
    }

    /// Every tile, row by row, left to right.
    pub fn tiles(self) -> impl Iterator<Item = TileId> {
        (0..self.rows()).flat_map(move |r| (0..self.cols()).map(move |c| TileId { r, c }))
    }

    /// Every tile in the serpentine order of exchange-process-and-store: left to right on
    /// even rows, right to left on odd ones (the tile cache then holds the neighbours).
    pub fn serpentine(self) -> impl Iterator<Item = TileId> {
        let cols = self.cols();
        (0..self.rows())
            .flat_map(move |r| (0..cols).map(move |i| TileId { r, c: if r % 2 == 0 { i } else { cols - 1 - i } }))
    }

    /// The node (index among `nodes`) that processes tile `t`: its disk mod the nodes.
    pub fn node(&self, t: TileId, nodes: usize) -> usize {
        self.disk(t) % nodes
    }

    /// The tile containing pixel row `y`, column `x`.
    pub fn tile_at(&self, x: usize, y: usize) -> TileId {
        TileId { r: y / self.tile, c: x / self.tile }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thesis_example_d8_s5_on_a_16_by_16_grid() {
        // Spec S-2: tile (x = 4, y = 6) is local tile 12 on disk 2, node 0 of 2.
        let t = Tiling { width: 4096, height: 4096, tile: 256, disks: 8, stride: 5 };
        assert_eq!(default_stride(8), (5, StrideQuality::Spec));
        let id = TileId { r: 6, c: 4 };
        assert_eq!((t.disk(id), t.local(id), t.node(id, 2)), (2, 12, 0));
    }

    #[test]
    fn neighbours_are_on_other_disks_and_local_indices_are_dense() {
        for disks in 1..=24 {
            let (s, quality) = default_stride(disks);
            assert_eq!(quality == StrideQuality::Spec, (5..).contains(&disks) && disks != 6, "D = {disks}");
            for (w, h, tile) in [(1000, 700, 64), (130, 33, 16)] {
                let t = Tiling { width: w, height: h, tile, disks, stride: s };
                let mut seen = vec![Vec::new(); disks];
                for id in t.tiles() {
                    seen[t.disk(id)].push(t.local(id));
                    if quality == StrideQuality::Partial {
                        continue;
                    }
                    for (dr, dc) in [(-1i64, -1i64), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)] {
                        let (r, c) = (id.r as i64 + dr, id.c as i64 + dc);
                        if r >= 0 && c >= 0 && (r as usize) < t.rows() && (c as usize) < t.cols() {
                            let n = TileId { r: r as usize, c: c as usize };
                            assert_ne!(t.disk(n), t.disk(id), "D = {disks}, s = {s}: {id:?} and {n:?}");
                        }
                    }
                }
                for (d, locals) in seen.iter().enumerate() {
                    assert_eq!(*locals, (0..locals.len()).collect::<Vec<_>>(), "disk {d} of {disks}");
                    assert_eq!(locals.len(), t.tiles_on(d));
                }
            }
        }
    }

    #[test]
    fn the_serpentine_visits_every_tile_once_stepping_to_neighbours() {
        let t = Tiling { width: 100, height: 70, tile: 16, disks: 5, stride: 2 };
        let order: Vec<TileId> = t.serpentine().collect();
        assert_eq!(order.len(), t.count());
        for pair in order.windows(2) {
            assert_eq!(pair[0].r.abs_diff(pair[1].r) + pair[0].c.abs_diff(pair[1].c), 1);
        }
        assert!(is_valid_stride(5, 8) && !is_valid_stride(4, 8) && !is_valid_stride(7, 8) && !is_valid_stride(2, 4));
    }
}
