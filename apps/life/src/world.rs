//! Worlds of packed rows: the [`Slab`] of rows with a ghost row above and below that every
//! band (and the serial run) steps, the [`Source`]s that fill rows (random or a pattern at an
//! offset), the serial reference, and PNG output.

use std::ops::{Deref, Range};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use rand::{RngCore, SeedableRng};

use crate::kernel::{self, Geometry, Scratch};
use crate::rle::Pattern;

/// Rows `y0..y0 + height` of a world, between `halo` ghost rows above and below (the
/// neighbours' border rows, or dead rows at a world edge), double-buffered: a step reads the
/// current rows and writes the next ones; [`Slab::swap`] makes them current. A step of `d`
/// generations reads `d` ghost rows on each side, so `halo` is the deepest step.
///
/// The current rows sit behind a lock so that a [`SlabView`] on another thread can copy them
/// while the slab's owner computes the next generation (the region service reads a band
/// while it computes, as the DPS paper's viewer did): a step holds it shared, as readers
/// do; only the ghost rows' update and the swap hold it exclusively, each briefly.
#[derive(Debug)]
pub struct Slab {
    /// The shape of a row.
    pub geom: Geometry,
    /// Rows held, ghosts excluded.
    pub height: usize,
    /// Ghost rows on each side.
    pub halo: usize,
    /// Buffer rows inside the world: all but the ghost rows beyond a dead edge.
    live: Range<usize>,
    /// The rows, double-buffered; both empty in a NOALLOC simulation ([`Slab::absent`]).
    cur: Arc<RwLock<Current>>,
    next: Vec<u64>,
    scratch: Scratch,
}

/// A slab's current generation: its number and its rows, ghost rows included.
#[derive(Debug, Default)]
struct Current {
    generation: u64,
    cells: Vec<u64>,
}

/// Reads `lock`; a panic on another thread while it held the lock left whole rows (the
/// writes under it copy rows or swap buffers), so its state is still the rows to read.
fn read(lock: &RwLock<Current>) -> RwLockReadGuard<'_, Current> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Rows of a slab's current generation, read while the guard lives (derefs to the words).
#[derive(Debug)]
pub struct Rows<'a> {
    guard: RwLockReadGuard<'a, Current>,
    words: Range<usize>,
}

impl Deref for Rows<'_> {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        &self.guard.cells[self.words.clone()]
    }
}

/// Another thread's handle on a slab's current generation ([`Slab::view`]).
#[derive(Clone, Debug)]
pub struct SlabView {
    cur: Arc<RwLock<Current>>,
    words: usize,
    halo: usize,
    height: usize,
}

impl SlabView {
    /// Rows held, ghosts excluded.
    pub fn height(&self) -> usize {
        self.height
    }

    /// Words per row.
    pub fn words(&self) -> usize {
        self.words
    }

    /// Calls `f` with the current generation's number and its rows, one after the other
    /// (ghosts excluded): the slab's owner cannot make another generation current meanwhile.
    ///
    /// # Panics
    /// On the rows of an absent slab (NOALLOC), which are not there to read.
    pub fn read<T>(&self, f: impl FnOnce(u64, &[u64]) -> T) -> T {
        let current = read(&self.cur);
        assert!(!current.cells.is_empty() || self.height == 0, "the cells of an absent slab (NOALLOC) cannot be read");
        let n = self.words;
        f(current.generation, &current.cells[self.halo * n..(self.halo + self.height) * n])
    }
}

/// `len` zero words, backed by transparent huge pages where the system allows them on
/// request (`madvise`), as on Debian: a generation streams through the whole slab, and with
/// 4 KiB pages the hardware prefetcher stops at every page boundary.
fn zeroed_rows(len: usize) -> Vec<u64> {
    const HUGE: usize = 2 << 20;
    let mut v: Vec<u64> = Vec::with_capacity(len);
    #[cfg(target_os = "linux")]
    if len * 8 >= 2 * HUGE {
        let start = v.as_mut_ptr() as usize;
        let (from, to) = (start.next_multiple_of(HUGE), (start + len * 8) / HUGE * HUGE);
        if from < to {
            // SAFETY: [from, to) lies inside the vector's allocation, which this thread owns;
            // MADV_HUGEPAGE only changes how the kernel backs the (untouched) pages.
            unsafe { libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE) };
        }
    }
    v.resize(len, 0);
    v
}

/// Which ghost row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Side {
    /// The row above the first row.
    Above,
    /// The row below the last row.
    Below,
}

impl Slab {
    /// A slab of `height` dead rows with `halo` ghost rows on each side; `dead_edges` says
    /// whether the rows above and below the slab lie beyond a dead edge of the world (they
    /// then stay dead in every generation).
    pub fn new(geom: Geometry, height: usize, halo: usize, dead_edges: (bool, bool)) -> Slab {
        let rows = height + 2 * halo;
        let live = if dead_edges.0 { halo } else { 0 }..if dead_edges.1 { halo + height } else { rows };
        let (cells, next) = (zeroed_rows(rows * geom.words), zeroed_rows(rows * geom.words));
        let cur = Arc::new(RwLock::new(Current { generation: 0, cells }));
        Slab { geom, height, halo, live, cur, next, scratch: Scratch::default() }
    }

    /// A slab of that shape whose cells are left out, for a NOALLOC simulation (seed 003:
    /// only the sizes matter, so the simulator's memory does not grow with the world): it
    /// fills, takes ghost rows and steps as a no-op, and its rows cannot be read.
    pub fn absent(geom: Geometry, height: usize, halo: usize) -> Slab {
        Slab { geom, height, halo, live: 0..0, cur: Arc::default(), next: Vec::new(), scratch: Scratch::default() }
    }

    /// The cells are left out ([`Slab::absent`]).
    pub fn is_absent(&self) -> bool {
        self.next.is_empty()
    }

    /// A handle on the current generation for another thread.
    pub fn view(&self) -> SlabView {
        SlabView { cur: self.cur.clone(), words: self.geom.words, halo: self.halo, height: self.height }
    }

    /// The current generation's number: the generations made current since the slab was made.
    pub fn generation(&self) -> u64 {
        read(&self.cur).generation
    }

    /// Row `r` (in `0..height`) of the current generation.
    pub fn row(&self, r: usize) -> Rows<'_> {
        self.rows_of(r..r + 1)
    }

    /// Rows `rows` (in `0..height`) of the current generation, one after the other.
    fn rows_of(&self, rows: Range<usize>) -> Rows<'_> {
        let n = self.geom.words;
        Rows { guard: read(&self.cur), words: (rows.start + self.halo) * n..(rows.end + self.halo) * n }
    }

    /// The rows of the current generation, one after the other (ghosts excluded).
    pub fn rows(&self) -> Rows<'_> {
        self.rows_of(0..self.height)
    }

    /// The first (`Side::Above`) or last `count` rows of the current generation: the ghost
    /// rows of the neighbour on that side.
    pub fn border(&self, side: Side, count: usize) -> Rows<'_> {
        let h = self.height;
        assert!(count <= h, "a border of {count} rows from a slab of {h}");
        match side {
            Side::Above => self.rows_of(0..count),
            Side::Below => self.rows_of(h - count..h),
        }
    }

    /// Sets the ghost rows of the current generation nearest to the slab on `side` to
    /// `rows` (whole rows, at most `halo`).
    pub fn set_ghost(&mut self, side: Side, rows: &[u64]) {
        let n = self.geom.words;
        let count = rows.len() / n;
        assert!(count <= self.halo && rows.len() == count * n, "{count} ghost rows for a halo of {}", self.halo);
        let at = match side {
            Side::Above => self.halo - count,
            Side::Below => self.halo + self.height,
        };
        self.cur.write().unwrap_or_else(PoisonError::into_inner).cells[at * n..(at + count) * n].copy_from_slice(rows);
    }

    /// Computes rows `rows` (in `0..height`) `depth` generations ahead into the next buffer.
    /// Rows within `depth` of the ends read that many ghost rows. `pause` is called with the
    /// rows computed so far, every few rows (see [`kernel::advance`]).
    ///
    /// # Panics
    /// On an absent slab, unless `rows` is empty: its cells are not there to compute (a
    /// NOALLOC simulation charges the kernel instead, `dps::skip_kernel`).
    pub fn step(&mut self, rows: Range<usize>, depth: usize, pause: &mut dyn FnMut(usize)) {
        assert!(depth <= self.halo, "a step of {depth} generations with a halo of {} rows", self.halo);
        if self.is_absent() {
            assert!(rows.is_empty(), "the cells of an absent slab (NOALLOC) cannot be computed");
            return;
        }
        let rows = rows.start + self.halo..rows.end + self.halo;
        let sweep = kernel::Sweep { rows, depth, live: self.live.clone() };
        kernel::advance(&self.geom, &read(&self.cur).cells, &mut self.next, &sweep, &mut self.scratch, pause);
    }

    /// Makes the next generation, `generations` on from the current one, current.
    pub fn swap(&mut self, generations: u64) {
        let mut cur = self.cur.write().unwrap_or_else(PoisonError::into_inner);
        std::mem::swap(&mut cur.cells, &mut self.next);
        cur.generation += generations;
    }

    /// Fills rows `y0..y0 + height` of the world from `source` (nothing on an absent slab).
    pub fn fill(&mut self, y0: usize, source: &Source) {
        if self.is_absent() {
            return;
        }
        let n = self.geom.words;
        let mut cur = self.cur.write().unwrap_or_else(PoisonError::into_inner);
        let rows = &mut cur.cells[self.halo * n..(self.halo + self.height) * n];
        for (r, row) in rows.chunks_mut(n.max(1)).enumerate() {
            source.fill_row(y0 + r, row);
        }
    }

    /// Live cells in the current generation.
    pub fn population(&self) -> u64 {
        kernel::population(&self.rows())
    }
}

/// The initial world.
#[derive(Clone, Debug)]
pub enum Source {
    /// Each cell alive with probability `density`; row `y` is drawn from its own stream of
    /// the seeded generator, so every band fills its rows alone and the world does not depend
    /// on how it is cut.
    Random {
        /// Cells per row.
        width: usize,
        /// Rows.
        height: usize,
        /// Probability that a cell is alive.
        density: f64,
        /// Seed of the generator.
        seed: u64,
    },
    /// A pattern placed with its top-left corner at `at` in a dead world (build it with
    /// [`Source::pattern`], which checks that it fits).
    Pattern {
        /// Cells per row.
        width: usize,
        /// Rows.
        height: usize,
        /// The pattern.
        pattern: Arc<Pattern>,
        /// Column and row of the pattern's top-left cell.
        at: (usize, usize),
    },
}

impl Source {
    /// World width.
    pub fn width(&self) -> usize {
        match self {
            Source::Random { width, .. } | Source::Pattern { width, .. } => *width,
        }
    }

    /// World height.
    pub fn height(&self) -> usize {
        match self {
            Source::Random { height, .. } | Source::Pattern { height, .. } => *height,
        }
    }

    /// Writes row `y` of the world into a packed row (all of whose words it overwrites).
    pub fn fill_row(&self, y: usize, row: &mut [u64]) {
        row.fill(0);
        match self {
            Source::Random { width, density, seed, .. } => {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(*seed);
                rng.set_stream(y as u64);
                if *density == 0.5 {
                    row.iter_mut().for_each(|w| *w = rng.next_u64());
                } else {
                    // P(next_u64 < threshold) = density, without a float per cell.
                    let threshold = (density.clamp(0.0, 1.0) * 2f64.powi(64)).min(u64::MAX as f64) as u64;
                    for x in 0..*width {
                        if rng.next_u64() < threshold || *density >= 1.0 {
                            kernel::set(row, x, true);
                        }
                    }
                }
                let n = row.len();
                row[n - 1] &= Geometry::new(*width, false).last_mask();
            }
            Source::Pattern { pattern, at, .. } => {
                // In the world by construction (`Source::pattern` checks the fit).
                if let Some(py) = y.checked_sub(at.1).filter(|&py| py < pattern.height) {
                    for run in pattern.runs_in_row(py) {
                        for x in run.start + at.0..run.end + at.0 {
                            kernel::set(row, x, true);
                        }
                    }
                }
            }
        }
    }

    /// Live cells of the initial world, counted without the [`Slab`]s it fills: for a
    /// pattern, its own count; for a random world, its rows drawn one at a time. With
    /// `--verify`, the bands' initial world is checked against it, so a world that lost
    /// cells on its way in (a pattern placed outside it, say) cannot pass.
    pub fn population(&self) -> u64 {
        match self {
            Source::Pattern { pattern, .. } => pattern.population(),
            Source::Random { width, height, .. } => {
                let mut row = vec![0u64; width.div_ceil(64)];
                (0..*height)
                    .map(|y| {
                        self.fill_row(y, &mut row);
                        kernel::population(&row)
                    })
                    .sum()
            }
        }
    }

    /// `pattern` with its top-left cell at `at` in a dead `width × height` world.
    ///
    /// # Errors
    /// If the pattern does not fit (the sums are checked: a position near `usize::MAX` does
    /// not wrap around into the world).
    pub fn pattern(width: usize, height: usize, pattern: Arc<Pattern>, at: (usize, usize)) -> Result<Source, String> {
        let fits = |at: usize, size: usize, room: usize| at.checked_add(size).is_some_and(|end| end <= room);
        if !fits(at.0, pattern.width, width) || !fits(at.1, pattern.height, height) {
            return Err(format!(
                "the {}x{} pattern at ({}, {}) does not fit in the {width}x{height} world",
                pattern.width, pattern.height, at.0, at.1
            ));
        }
        Ok(Source::Pattern { width, height, pattern, at })
    }
}

/// The serial reference: the whole world in one slab, stepped on this thread.
#[derive(Debug)]
pub struct World {
    /// All rows.
    pub slab: Slab,
}

impl World {
    /// The initial world of `source`, stepped at most `depth` generations at a time.
    pub fn new(source: &Source, wrap: bool, depth: usize) -> World {
        let depth = depth.clamp(1, source.height());
        let mut slab = Slab::new(Geometry::new(source.width(), wrap), source.height(), depth, (!wrap, !wrap));
        slab.fill(0, source);
        World { slab }
    }

    /// Advances `depth` generations (at most the depth it was made for) in one pass.
    pub fn step(&mut self, depth: usize) {
        let h = self.slab.height;
        if self.slab.geom.wrap {
            let (first, last) =
                (self.slab.border(Side::Above, depth).to_vec(), self.slab.border(Side::Below, depth).to_vec());
            self.slab.set_ghost(Side::Above, &last);
            self.slab.set_ghost(Side::Below, &first);
        }
        self.slab.step(0..h, depth, &mut |_| {});
        self.slab.swap(depth as u64);
    }

    /// Advances `generations`, as many at a time as it was made for.
    pub fn advance(&mut self, generations: u64) {
        let mut left = generations;
        while left > 0 {
            let depth = self.slab.halo.min(left as usize);
            self.step(depth);
            left -= depth as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_rows_do_not_depend_on_the_cut() {
        let source = Source::Random { width: 100, height: 10, density: 0.3, seed: 5 };
        let whole = World::new(&source, false, 1);
        let mut band = Slab::new(Geometry::new(100, false), 4, 2, (false, false));
        band.fill(3, &source);
        assert_eq!(*band.rows(), whole.slab.rows()[3 * 2..7 * 2]);
        let p = whole.slab.population() as f64 / 1000.0;
        assert!((0.2..0.4).contains(&p), "density {p}");
    }

    #[test]
    fn a_view_reads_the_current_generation_while_the_next_is_computed() {
        let source = Source::Random { width: 256, height: 64, density: 0.3, seed: 9 };
        let mut slab = Slab::new(Geometry::new(256, false), 64, 1, (true, true));
        slab.fill(0, &source);
        let before = slab.rows().to_vec();
        let view = slab.view();
        let mut seen = None;
        slab.step(0..64, 1, &mut |_| {
            // Another thread reads in the middle of the step: it must not wait for its end.
            if seen.is_none() {
                let view = view.clone();
                let (tx, rx) = std::sync::mpsc::channel();
                std::thread::spawn(move || tx.send(view.read(|g, rows| (g, rows.to_vec()))).unwrap());
                seen = Some(rx.recv_timeout(std::time::Duration::from_secs(10)).expect("the read waited for the step"));
            }
        });
        assert_eq!(seen, Some((0, before.clone())), "a read during a step sees the current generation");
        slab.swap(1);
        let after = view.read(|g, rows| (g, rows.to_vec()));
        assert_eq!(after.0, 1);
        assert_ne!(after.1, before, "the swap makes the next generation current for the view too");
        assert_eq!(after.1, *slab.rows());
    }
}
