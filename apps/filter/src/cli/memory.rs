//! The memory a `gather`, `median` or `serve` run takes on each rank, estimated before any
//! work and refused with the figure when the node cannot give it. Issue 27: counting the
//! pixels alone let `median --random 16384 16384 --tiles 2` start and die in the allocator;
//! every tile also costs its slot's allocation and bookkeeping, once as input and once as
//! output, which for 2×2 tiles is about 50 times its pixels. (`tests/memory.rs` checks the
//! estimate against the measured peak.)

use anyhow::Result;

use super::source::{CheckedSource, Origin, Storage};
use crate::layout::Tiling;

/// What the runtime, its threads and the program take before any image (measured: 21 MB
/// for a 64 × 64 median on one rank).
const BASE: u64 = 16 << 20;

/// What a run keeps in memory, beside the image's geometry.
#[derive(Clone, Copy, Debug)]
pub struct Footprint {
    /// Ranks of the job.
    pub ranks: usize,
    /// Compute threads (disk k is on the rank of compute thread k mod threads).
    pub threads: usize,
    /// Whether the disk threads are made (not by the serial variant).
    pub disks: bool,
    /// Whether the output tiles are kept in memory (a median whose input is not in files).
    pub outputs: bool,
    /// Tiles cached per disk thread, for file-backed input (`None`: [`default_cache`]).
    pub cache: Option<usize>,
    /// Tiles in flight per compute thread.
    pub in_flight: usize,
    /// Whole-image copies rank 0 makes (verification: the collected output, the input and
    /// the reference; `--compare-serial`: the input and the output).
    pub rank0_images: u64,
    /// Bytes rank 0 keeps per tile (the exchange report's per-tile times; the collect's
    /// tokens).
    pub rank0_per_tile: u64,
}

impl Footprint {
    /// A job that reads windows of the input through its disk threads, without a tile cache
    /// or output tiles (`gather`, `serve`), rank 0 making `rank0_images` whole-image copies.
    pub fn window_reads(ranks: usize, threads: usize, rank0_images: u64) -> Footprint {
        Footprint {
            ranks,
            threads,
            disks: true,
            outputs: false,
            cache: Some(0),
            in_flight: super::THESIS_IN_FLIGHT,
            rank0_images,
            rank0_per_tile: 0,
        }
    }

    /// Bytes on rank 0 and on each other rank.
    pub fn need(&self, input: &CheckedSource) -> (u64, u64) {
        let tiling = input.meta.tiling();
        let pixels = (tiling.width as u64).saturating_mul(tiling.height as u64);
        let image = pixels.saturating_mul(input.meta.depth().bytes() as u64);
        let slot = heap(input.meta.tile_bytes() as u64);
        let (in_memory, in_files) = match input.origin {
            Origin::Random { storage: Storage::Preloaded, .. } => (true, false),
            Origin::Random { storage: Storage::Disk, .. } => (false, true),
            Origin::Stored(_) => (false, true),
        };
        // Every rank makes a random image; rank 0 also writes it to the scratch store.
        let made = if matches!(input.origin, Origin::Random { .. }) { image } else { 0 };
        let mut other = BASE.saturating_add(made);
        if self.disks {
            let disks = disks_per_rank(&tiling, self.ranks, self.threads);
            let tiles =
                (tiling.count().div_ceil(tiling.disks) as u64 + 1).saturating_mul(disks).min(tiling.count() as u64);
            // An input tile: its slot, the Arc holding it and its entry; an output: its slot
            // and its entry.
            let input_tile = if in_memory { slot + heap(40) + 8 } else { 0 };
            let output_tile = if self.outputs && !in_files { slot } else { 0 } + 24;
            other = other.saturating_add(tiles.saturating_mul(input_tile + output_tile));
            if in_files {
                let window = self.in_flight * self.threads;
                let cache = self.cache.unwrap_or_else(|| default_cache(&tiling, window)) as u64;
                other = other.saturating_add(disks.saturating_mul(cache).saturating_mul(slot + heap(40)));
            }
            // The tiles in flight on a rank, each with its halo, its output and its pieces
            // (about 3 slots), and a few more in hand-offs.
            let in_flight = (self.in_flight * self.threads.div_ceil(self.ranks.max(1))) as u64;
            other = other.saturating_add((3 * in_flight + 6).saturating_mul(slot));
        }
        let rank0 = other
            .saturating_add(self.rank0_images.saturating_mul(image))
            .saturating_add(self.rank0_per_tile.saturating_mul(tiling.count() as u64));
        (rank0, other)
    }

    /// Refuses the run when this node cannot give what [`need`](Self::need) says.
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`] with the figures.
    pub fn check(&self, input: &CheckedSource) -> Result<()> {
        let (rank0, other) = self.need(input);
        let t = input.meta.tiling();
        let what = format!("a {}x{} image in {} tiles of {}x{}", t.width, t.height, t.count(), t.tile, t.tile);
        dps_harness::check_memory(&what, rank0, other)
    }
}

/// The disks of the busiest rank: its compute threads' (disk k on thread k mod S). The
/// disks hold nearly equal shares of the tiles.
fn disks_per_rank(tiling: &Tiling, ranks: usize, threads: usize) -> u64 {
    let (threads, ranks) = (threads.max(1), ranks.max(1));
    let disks_per_thread = tiling.disks.div_ceil(threads);
    (disks_per_thread * threads.div_ceil(ranks)).min(tiling.disks) as u64
}

/// The heap's cost of an allocation of `bytes`: glibc's chunk (8 bytes of header, rounded to
/// 16, at least 32), or whole pages past its mmap threshold (128 KiB).
fn heap(bytes: u64) -> u64 {
    if bytes >= 128 << 10 {
        bytes.div_ceil(4096).saturating_add(1).saturating_mul(4096)
    } else {
        (bytes + 8).div_ceil(16).max(2) * 16
    }
}

/// The default tile cache per disk thread, with `window` tiles in flight: 4 rows of tiles
/// shared among the disks, plus 2, and a row more for each row of tiles the window spans.
/// The thesis asks for 3 rows; with the serpentine, the tiles of the row before the last
/// are touched last at the far end, and LRU would drop some of them just before their last
/// use: 4 rows keep every tile until it is no longer needed while the window's tiles fit in
/// a row, and the window's tiles need the rows below theirs read ahead.
pub fn default_cache(tiling: &Tiling, window: usize) -> usize {
    let rows = 4 + window.saturating_sub(1) / tiling.cols();
    rows * tiling.cols().div_ceil(tiling.disks) + 2
}
