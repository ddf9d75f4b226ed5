//! The DPS graphs: one step of the world held as horizontal bands by the threads of the
//! `bands` collection, in the DPS paper's two forms, and the world as a service. A step is
//! `depth` generations (--depth): the bands exchange `depth` border rows, then compute
//! `depth` generations in one pass (see [`kernel::advance`]); depth 1 is the paper's step.
//!
//! * `simple` (Figure 7): rank 0's `main` thread splits to every band; each band splits its
//!   first and last rows to the neighbouring bands (ghost rows); a merge per band and one on
//!   `main` wait for every border (the global synchronisation); then a second split asks
//!   every band to compute its rows, and a merge on `main` ends the step.
//! * `overlap` (Figure 8): the same first split, but each band also sends itself an
//!   `Interior` token after its borders, and computes its interior rows (those `depth` or
//!   more rows from its edges) while the borders travel. The border rows are computed by
//!   whichever of the band's three tokens (two ghost-row tokens, interior) arrives when both
//!   ghost-row tokens are there; the last of the three makes the next generation current.
//!   One merge on `main` ends the step.
//!
//! A call of `simple` is one step. A call of `overlap` runs several steps (see `build`):
//! a band may then get its neighbour's ghost rows of the next step early, and keeps them
//! until it gets there. Each token carries its step and the band checks it.
//!
//! The region service (Figure 10) is a second graph, `region`: a split on the calling
//! rank's `portal` thread asks the bands that hold the requested rows for their part, and a
//! merge on the same thread assembles the rectangle. Any rank may call it while rank 0 runs
//! generations. Each band has a reader thread (`band_readers`, on the band's rank) that
//! copies the band's current generation while the band computes the next one, so a call
//! does not wait for a band's operation (a 400×400 block took most of an iteration when
//! the bands answered between their operations); each part is a whole generation, and the
//! returned region says which generations its parts come from.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use dps::{route, Bulk, Collection, Graph, MaybeBulk, MergeFn, Node, Runtime, SimMode};
use serde::{Deserialize, Serialize};

use crate::kernel::{self, Geometry};
use crate::layout::{Layout, Rect};
use crate::world::{Side, Slab, SlabView, Source};

/// A band computing more cells than this at once yields its core in between (see
/// `Band::step_yielding`): about 100 µs of work at 4·10¹⁰ cell updates per second.
pub const CELLS_PER_YIELD: usize = 1 << 22;

/// The state of a `bands` thread: its rows and where it is in the current step.
#[derive(Debug)]
pub struct Band {
    index: usize,
    y0: usize,
    slab: Slab,
    /// `simple`: the step under way, from the band's Go.
    step: Option<Step>,
    /// `overlap`: ghost-row tokens of the next step, from a neighbour a step ahead.
    early: Vec<Exchange>,
    /// Ghost-row tokens this band receives per step (0, 1 or 2).
    ghosts_expected: u8,
    /// Ghost-row tokens received in the current step.
    ghosts: u8,
    /// Tokens of the current step handled (ghosts and interior, `overlap`).
    handled: u8,
    borders_done: bool,
}

impl Band {
    /// Band `index` of `layout`, filled from `source`, for steps of at most `depth`
    /// generations.
    pub fn new(layout: &Layout, index: usize, source: &Source, depth: usize) -> Band {
        let rows = layout.rows(index);
        let (above, below) = (layout.above(index), layout.below(index));
        let geom = Geometry::new(layout.width, layout.wrap);
        let mut slab = if dps::simulated() == Some(SimMode::Noalloc) {
            Slab::absent(geom, rows.len(), depth)
        } else {
            Slab::new(geom, rows.len(), depth, (above.is_none(), below.is_none()))
        };
        slab.fill(rows.start, source);
        let ghosts_expected = u8::from(above.is_some()) + u8::from(below.is_some());
        Band {
            index,
            y0: rows.start,
            slab,
            step: None,
            early: Vec::new(),
            ghosts_expected,
            ghosts: 0,
            handled: 0,
            borders_done: false,
        }
    }

    /// The generation its rows are at (the slab counts them).
    fn generation(&self) -> u64 {
        self.slab.generation()
    }

    fn check(&self, step: Step) {
        assert_eq!(step.generation, self.generation(), "band {} got a token of another step", self.index);
        assert!(
            step.depth >= 1 && step.depth <= self.slab.halo,
            "band {}: a step of {} generations",
            self.index,
            step.depth
        );
    }

    /// Its `step.depth` border rows on each side, as ghost-row tokens for its neighbours
    /// (only their size in a NOALLOC simulation).
    fn borders(&self, layout: &Layout, step: Step) -> Vec<Exchange> {
        let mut out = Vec::with_capacity(3);
        let words = step.depth * self.slab.geom.words;
        let mut ghost = |to, side, from| {
            let rows = MaybeBulk::from_fn(words, || self.slab.border(from, step.depth).to_vec());
            out.push(Exchange::Ghost { to, step, side, rows });
        };
        if let Some(to) = layout.above(self.index) {
            ghost(to, Side::Below, Side::Above);
        }
        if let Some(to) = layout.below(self.index) {
            ghost(to, Side::Above, Side::Below);
        }
        out
    }

    /// The rows a step of `depth` generations can compute without the ghost rows, and the
    /// rows it computes once they are in.
    fn interior_and_borders(&self, depth: usize) -> (Range<usize>, [Range<usize>; 2]) {
        let h = self.slab.height;
        if h <= 2 * depth {
            (0..0, [0..h, h..h])
        } else {
            (depth..h - depth, [0..depth, h - depth..h])
        }
    }

    /// `overlap`: handles one token of the current step, or keeps a neighbour's ghost rows
    /// for the next step. The token that completes the step returns the next step's tokens
    /// (the border rows for the neighbours and the band's own interior token), unless the
    /// call ends there.
    fn advance(&mut self, token: Exchange, layout: &Layout) -> Vec<Exchange> {
        let step = token.step();
        let generation = self.generation();
        if step.generation != generation {
            // The neighbour finished this step (it had our border rows) before we did.
            let next = generation + step.depth as u64;
            assert!(
                matches!(token, Exchange::Ghost { .. }) && step.generation == next,
                "band {} at generation {} got a token of generation {}",
                self.index,
                generation,
                step.generation
            );
            self.early.push(token);
            return Vec::new();
        }
        self.take(token);
        if self.handled < self.ghosts_expected + 1 {
            return Vec::new();
        }
        self.finish_step(step);
        let generation = self.generation();
        if generation >= step.end {
            return Vec::new();
        }
        let next = Step { generation, ..step };
        for token in std::mem::take(&mut self.early) {
            self.take(token);
        }
        let mut out = self.borders(layout, next);
        out.push(Exchange::Interior { to: self.index, step: next });
        out
    }

    /// `overlap`: stores ghost rows or computes the interior, then the border rows as soon as
    /// both ghost-row tokens are in.
    fn take(&mut self, token: Exchange) {
        let step = token.step();
        self.check(step);
        match token {
            Exchange::Ghost { side, rows, .. } => {
                self.set_ghost(side, &rows);
                self.ghosts += 1;
            }
            Exchange::Interior { .. } => {
                let (interior, _) = self.interior_and_borders(step.depth);
                self.compute_yielding(interior, step.depth);
            }
        }
        self.handled += 1;
        if self.ghosts == self.ghosts_expected && !self.borders_done {
            let (_, borders) = self.interior_and_borders(step.depth);
            for rows in borders {
                self.step(rows, step.depth, &mut |_| {});
            }
            self.borders_done = true;
        }
    }

    /// `simple`: stores ghost rows.
    fn store(&mut self, token: Exchange) {
        match token {
            Exchange::Ghost { step, side, rows, .. } => {
                self.check(step);
                self.set_ghost(side, &rows);
            }
            Exchange::Interior { .. } => unreachable!("the simple graph sends no interior token"),
        }
    }

    /// Stores a neighbour's border rows as ghost rows (NOALLOC: absent rows for an absent
    /// slab, nothing to store).
    fn set_ghost(&mut self, side: Side, rows: &MaybeBulk<u64>) {
        match rows.data() {
            Some(rows) => self.slab.set_ghost(side, rows),
            None => {
                assert!(self.slab.is_absent(), "band {}: absent ghost rows for a slab that holds cells", self.index)
            }
        }
    }

    /// `simple`: computes every row once the ghost rows are in.
    fn compute(&mut self) {
        let step = self.step.take().expect("a band computes after its Go");
        self.check(step);
        self.compute_yielding(0..self.slab.height, step.depth);
        self.finish_step(step);
    }

    /// Computes `rows` `depth` generations ahead, yielding the core after about every
    /// [`CELLS_PER_YIELD`] cell updates. The rank's progress thread is often woken on the
    /// core of the worker that sent a message, and Linux's scheduler (EEVDF) may leave it
    /// queued there, behind a computation of several milliseconds, while the other core
    /// idles: the border rows and the neighbour's start message then wait for the whole
    /// interior. Yielding every ~100 µs bounds that wait at ~1% of the computation's time.
    fn compute_yielding(&mut self, rows: Range<usize>, depth: usize) {
        let width = self.slab.geom.width;
        let mut cells = 0;
        self.step(rows, depth, &mut |rows| {
            cells += rows * width;
            if cells >= CELLS_PER_YIELD {
                cells = 0;
                std::thread::yield_now();
            }
        });
    }

    /// Computes `rows` `depth` generations ahead, or, under `--sim-mode pdexec`, charges the
    /// platform file's cost of that call (kernel `life`, dims width × rows × depth, work in
    /// cell updates, as `dps-bench calibrate` measures it) and leaves the cells as they are.
    fn step(&mut self, rows: Range<usize>, depth: usize, pause: &mut dyn FnMut(usize)) {
        let (width, n) = (self.slab.geom.width, rows.len());
        if n > 0 && dps::skip_kernel("life", &[width as u64, n as u64, depth as u64], (width * n * depth) as f64) {
            return;
        }
        self.slab.step(rows, depth, pause);
    }

    fn finish_step(&mut self, step: Step) {
        self.slab.swap(step.depth as u64);
        (self.ghosts, self.handled, self.borders_done) = (0, 0, false);
    }
}

/// The state of a `band_readers` thread: its band's first row and a view of its rows, read
/// while the band computes.
#[derive(Debug)]
pub struct Reader {
    y0: usize,
    rows: SlabView,
}

impl Reader {
    /// The part of `rect` this band holds: its rows of the rectangle, packed.
    fn read(&self, rect: &Rect) -> Part {
        let start = Instant::now();
        let rows = rect.y.max(self.y0)..(rect.y + rect.height).min(self.y0 + self.rows.height());
        let words = rect.width.div_ceil(64);
        let mut cells = Bulk::<u64>::recycled(rows.len() * words);
        let n = self.rows.words();
        let generation = self.rows.read(|generation, held| {
            for (y, out) in rows.clone().zip(cells.chunks_mut(words.max(1))) {
                let r = y - self.y0;
                kernel::extract(&held[r * n..(r + 1) * n], rect.x, rect.width, out);
            }
            generation
        });
        Part { rect: *rect, y: rows.start, generation, cells, read_ns: start.elapsed().as_nanos() as u64 }
    }
}

/// The bands of a world and their readers (collective: every rank calls it in the same
/// order): `map` places band `i` and its reader on the same rank.
///
/// # Errors
/// If the runtime rejects a collection (a malformed `map`).
pub fn band_collections(
    rt: &Runtime,
    map: &str,
    band: impl Fn(usize) -> Band,
) -> Result<(Collection<Band>, Collection<Reader>), dps::Error> {
    // Each band made on this rank leaves a view of its rows for its reader.
    let views: Mutex<HashMap<usize, (usize, SlabView)>> = Mutex::default();
    let bands = rt.collection("bands", map, |i| {
        let b = band(i);
        views.lock().unwrap_or_else(PoisonError::into_inner).insert(i, (b.y0, b.slab.view()));
        b
    })?;
    let views = Arc::new(views.into_inner().unwrap_or_else(PoisonError::into_inner));
    let readers = rt.collection("band_readers", map, |i| {
        let (y0, rows) = views.get(&i).cloned().expect("a band's reader is made on the band's rank");
        Reader { y0, rows }
    })?;
    Ok((bands, readers))
}

/// A step: the world goes from generation `generation` to `generation + depth`, with one
/// exchange of `depth` ghost rows on each side. A call of a generation graph runs steps
/// until generation `end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// The generation the bands are at.
    pub generation: u64,
    /// Generations computed in one pass.
    pub depth: usize,
    /// The generation the call ends at (`simple`: `generation + depth`).
    pub end: u64,
}

/// Rank 0 asks band `band` to take part in a step.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Go {
    band: usize,
    step: Step,
}

/// A token between bands within a step.
#[derive(Debug, Serialize, Deserialize)]
pub enum Exchange {
    /// Border rows, which become the ghost rows on side `side` of band `to`.
    Ghost {
        /// Receiving band.
        to: usize,
        /// The step.
        step: Step,
        /// Which ghost rows of the receiver they are.
        side: Side,
        /// `step.depth` packed rows, in world order (absent in a NOALLOC simulation).
        rows: MaybeBulk<u64>,
    },
    /// `overlap`: band `to` computes its interior rows.
    Interior {
        /// The band (the sender itself).
        to: usize,
        /// The step.
        step: Step,
    },
}

impl Exchange {
    fn to(&self) -> usize {
        match self {
            Exchange::Ghost { to, .. } | Exchange::Interior { to, .. } => *to,
        }
    }

    fn step(&self) -> Step {
        match self {
            Exchange::Ghost { step, .. } | Exchange::Interior { step, .. } => *step,
        }
    }
}

/// A call of the region service: `rect`, asked by rank `from` (whose `portal` thread
/// splits and merges the request).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct RegionRequest {
    /// The caller's rank.
    pub from: usize,
    /// The rectangle, which must lie inside the world.
    pub rect: Rect,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Read {
    band: usize,
    rect: Rect,
}

/// One band's rows of a region.
#[derive(Debug, Serialize, Deserialize)]
struct Part {
    rect: Rect,
    y: usize,
    generation: u64,
    cells: Bulk<u64>,
    read_ns: u64,
}

/// A rectangle of the world as the bands held it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Region {
    /// Where it is.
    pub rect: Rect,
    /// Oldest and newest generation among its parts (equal unless the call ran while a
    /// generation was under way).
    pub generations: (u64, u64),
    /// Time the bands spent reading their parts (the call's processing time), seconds.
    pub read_seconds: f64,
    /// `rect.height` packed rows of `rect.width` cells.
    pub cells: Bulk<u64>,
}

/// The world's shape, as the `life.world` service tells a viewer started separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorldInfo {
    /// Cells per row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Whether the world is a torus.
    pub wrap: bool,
}

/// The graph that answers a [`WorldInfo`] (a leaf on `main`), for `--export-region`.
/// Collective, as every graph.
///
/// # Errors
/// If the runtime rejects the graph.
pub fn world_info(rt: &Runtime, layout: Layout, main: &Collection<()>) -> Result<Graph<(), WorldInfo>, dps::Error> {
    let info = WorldInfo { width: layout.width, height: layout.height, wrap: layout.wrap };
    rt.graph("life_world", Node::leaf("world_info", main, route::fixed(0), move |_: &mut (), _: ()| info))
}

/// Which generation graph to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// Exchange borders, synchronise, then compute (Figure 7).
    Simple,
    /// Compute the interior while the borders travel (Figure 8).
    Overlap,
}

/// The graphs of one world.
#[derive(Debug)]
pub struct Graphs {
    /// One step, `simple` (Figure 7).
    pub simple: Graph<Step, ()>,
    /// Up to `rounds` steps, `overlap` (Figure 8).
    pub overlap: Graph<Step, ()>,
    /// Live cells of the whole world.
    pub population: Graph<(), u64>,
    /// A rectangle of the current world, gathered from the bands that hold it (Figure 10).
    pub region: Graph<RegionRequest, Region>,
}

impl Graphs {
    /// The generation graph of `schedule`.
    pub fn generation(&self, schedule: Schedule) -> &Graph<Step, ()> {
        match schedule {
            Schedule::Simple => &self.simple,
            Schedule::Overlap => &self.overlap,
        }
    }
}

/// Builds every graph (collective: every rank calls it in the same order). `main` is one
/// thread on rank 0, `portal` one thread per rank (`"all"`); a call of `overlap` runs up
/// to `rounds` steps.
///
/// # Errors
/// If the runtime rejects a graph.
pub fn build(
    rt: &Runtime,
    layout: Layout,
    main: &Collection<()>,
    bands: &Collection<Band>,
    readers: &Collection<Reader>,
    portal: &Collection<()>,
    rounds: usize,
) -> Result<Graphs, dps::Error> {
    assert!(rounds >= 1, "a call runs at least one step");
    let n = layout.bands;
    let by_band = || route::by_key(|g: &Go| g.band);
    let to_band = || route::by_key(|e: &Exchange| e.to());
    let go_all = move |_: &mut (), step: Step| (0..n).map(move |band| Go { band, step });

    // simple: exchange (split, split, deliver, merge, merge), then compute (split, leaf, merge).
    let split = Node::split("split_bands", main, route::fixed(0), go_all);
    let send = Node::split("send_borders", bands, by_band(), move |b: &mut Band, g: Go| {
        b.check(g.step);
        b.step = Some(g.step);
        b.borders(&layout, g.step)
    });
    let store = Node::leaf("store_border", bands, to_band(), |b: &mut Band, e: Exchange| b.store(e));
    let borders_in = Node::merge("borders_sent", bands, dps::join());
    let sync = Node::merge("all_borders_in", main, dps::join());
    // Each band computes the step its Go carried (`send_borders` keeps it).
    let compute_split = Node::split("split_compute", main, route::fixed(0), move |_: &mut (), _: ()| 0..n);
    let compute = Node::leaf("compute", bands, route::by_key(|b: &usize| *b), |b: &mut Band, _: usize| b.compute());
    let done = Node::merge("generation_done", main, dps::join());
    let simple =
        rt.graph("life_simple", split >> send >> store >> borders_in >> sync >> compute_split >> compute >> done)?;

    // overlap: every band sends its borders, then itself its interior. A call runs up to
    // `rounds` steps: the token completing a band's step opens the band's next step at once
    // (the graph is unrolled, one `advance` per step), so a band that finishes early starts
    // its next interior instead of waiting for the slowest band; bands synchronise only with
    // their neighbours, through the ghost rows, until the call's end.
    let split = Node::split("split_bands", main, route::fixed(0), go_all);
    let send = Node::split("send_borders_and_interior", bands, by_band(), move |b: &mut Band, g: Go| {
        b.check(g.step);
        assert!(b.early.is_empty(), "band {}: ghost rows ahead of the call", b.index);
        let mut out = b.borders(&layout, g.step);
        out.push(Exchange::Interior { to: b.index, step: g.step });
        out
    });
    let mut path = split >> send;
    for round in 1..rounds {
        let name = format!("advance_step_{round}");
        path = path >> Node::split(&name, bands, to_band(), move |b: &mut Band, e: Exchange| b.advance(e, &layout));
    }
    let last = Node::leaf("advance_last_step", bands, to_band(), move |b: &mut Band, e: Exchange| {
        let next = b.advance(e, &layout);
        assert!(next.is_empty(), "band {}: a call of more than {rounds} steps", b.index);
    });
    let mut path = path >> last;
    for round in (1..=rounds).rev() {
        path = path >> Node::merge(&format!("step_{round}_done"), bands, dps::join());
    }
    let overlap = rt.graph("life_overlap", path >> Node::merge("steps_done", main, dps::join()))?;

    let split = Node::split("split_population", main, route::fixed(0), move |_: &mut (), _: ()| 0..n);
    let count = Node::leaf("count", bands, route::by_key(|b: &usize| *b), |b: &mut Band, _: usize| b.slab.population());
    let sum = Node::merge("sum", main, MergeFn::new(|_: &mut ()| 0u64, |_, s: &mut u64, p: u64| *s += p, |_, s| s));
    let population = rt.graph("life_population", split >> count >> sum)?;

    let region = rt.graph("life_region", region_path(layout, readers, portal))?;
    Ok(Graphs { simple, overlap, population, region })
}

fn region_path(
    layout: Layout,
    readers: &Collection<Reader>,
    portal: &Collection<()>,
) -> dps::Path<RegionRequest, Region> {
    let split = Node::split(
        "split_region",
        portal,
        route::by_key(|r: &RegionRequest| r.from),
        move |_: &mut (), r: RegionRequest| {
            // Another program may ask for any rectangle: it gets the part inside the world.
            let r = RegionRequest { rect: layout.clamp(r.rect), ..r };
            let rows = r.rect.y..r.rect.y + r.rect.height;
            (0..layout.bands)
                .filter(move |&b| {
                    let held = layout.rows(b);
                    held.start < rows.end && rows.start < held.end
                })
                .map(move |band| Read { band, rect: r.rect })
        },
    )
    .merge_on(|r: &RegionRequest, _| r.from);
    let read =
        Node::leaf("read_region", readers, route::by_key(|r: &Read| r.band), |b: &mut Reader, r: Read| b.read(&r.rect));
    let assemble = Node::merge("assemble_region", portal, Assemble);
    split >> read >> assemble
}

/// The region merge: places each band's rows; the rectangle comes with the first part.
struct Assemble;

/// The region being assembled.
struct Partial {
    parts: Vec<Part>,
}

impl dps::Merge<()> for Assemble {
    type In = Part;
    type Out = Region;
    type Acc = Partial;
    fn start(&self, _: &mut ()) -> Partial {
        Partial { parts: Vec::new() }
    }
    fn merge(&self, _: &mut (), acc: &mut Partial, part: Part) {
        acc.parts.push(part);
    }
    fn finish(&self, _: &mut (), acc: Partial) -> Region {
        let mut parts = acc.parts;
        parts.sort_by_key(|p| p.y);
        let rect = parts.first().expect("a region covers at least one band").rect;
        let cells: Vec<u64> = parts.iter().flat_map(|p| p.cells.iter().copied()).collect();
        let generations = parts.iter().fold((u64::MAX, 0), |(lo, hi), p| (lo.min(p.generation), hi.max(p.generation)));
        let read_seconds = parts.iter().map(|p| p.read_ns as f64 * 1e-9).sum();
        Region { rect, generations, read_seconds, cells: Bulk(cells) }
    }
}
