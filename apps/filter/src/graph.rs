//! The DPS graphs of thesis ch. 7 on three collections: `client` (one thread on rank 0),
//! `compute` (the ComputeServers, `--map`) and `disks` (the TileServers: disk k lives on the
//! rank of compute thread k mod S, so a tile is processed where it is stored).
//!
//! * `exchange` (exchange-process-and-store, Fig. 7.12): see [`crate::exchange`].
//! * `gather` (process-and-gather, Fig. 7.9): the client splits the tiles the window
//!   needs (window 2·S); each is read by its disk thread and filtered, enlarged, by compute
//!   thread `disk mod S`; the client adds them into the window (overlap-add).
//! * `collect`: every output tile back to the client (verification).
//! * `control`: every disk thread resets before a run or commits its output file after it,
//!   and says what failed.

use std::time::Instant;

use dps::{route, Bulk, Collection, Graph, MergeFn, Node, Runtime};
use serde::{Deserialize, Serialize};

use crate::disk::Disk;
use crate::exchange::{self, ExchangeReport};
use crate::generation::Generation;
use crate::layout::{TileId, Tiling};
use crate::linear::{self, Area, Filter};

/// A process-and-gather request: `filter` over `window`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct GatherRequest {
    /// The image's tiling.
    pub tiling: Tiling,
    /// The window, inside the image.
    pub window: Area,
    /// The filter.
    pub filter: Filter,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct TileRead {
    id: TileId,
    request: GatherRequest,
}

#[derive(Debug, Serialize, Deserialize)]
struct RawTile {
    read: TileRead,
    slot: Bulk<u8>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Enlarged {
    window: Area,
    at: Area,
    sums: Bulk<i32>,
    compute_ns: u64,
}

/// A gathered window: the unnormalised sums of the filter, row by row.
#[derive(Debug, Serialize, Deserialize)]
pub struct Gathered {
    /// The window.
    pub window: Area,
    /// `window.w × window.h` sums.
    pub sums: Bulk<i32>,
    /// Tiles filtered.
    pub tiles: usize,
    /// Compute time of each tile, ns.
    pub compute_ns: Vec<u64>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Collect {
    id: TileId,
    tiling: Tiling,
}

/// What the disks do between runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Control {
    /// Forget the last run's output and the tile cache; an output file is of this
    /// generation (chosen by the client, so that every disk's agrees).
    Reset(Generation),
    /// Commit the output file (name it; the image is committed by its metadata, later).
    Commit,
}

/// The graphs.
#[derive(Debug)]
pub struct Graphs {
    /// Exchange-process-and-store, 5×5 median.
    pub exchange: Graph<Tiling, ExchangeReport>,
    /// Process-and-gather, linear filter.
    pub gather: Graph<GatherRequest, Gathered>,
    /// Every output tile, assembled on the client (`bytes` per pixel).
    pub collect: Graph<Tiling, Bulk<u8>>,
    /// `(disks, control)`: every disk resets or commits; returns the disks' errors, each
    /// naming its file (none: all done).
    pub control: Graph<(usize, Control), Vec<String>>,
}

/// A compute thread (ComputeServer): no state beyond the tokens.
#[derive(Debug, Default)]
pub struct Compute;

/// The mapping string of the `disks` collection: disk k on the rank of compute thread k mod S.
pub fn disk_mapping(compute: &Collection<Compute>, disks: usize) -> String {
    (0..disks).map(|k| compute.rank_of(k % compute.len()).to_string()).collect::<Vec<_>>().join(" ")
}

/// Builds every graph (collective). `window` is the tiles in flight (2·S).
///
/// # Errors
/// If the runtime rejects a graph.
pub fn build(
    rt: &Runtime,
    client: &Collection<()>,
    compute: &Collection<Compute>,
    disks: &Collection<Disk>,
    window: usize,
) -> Result<Graphs, dps::Error> {
    Ok(Graphs {
        exchange: rt.graph("filter_exchange", exchange::path(client, compute, disks, window))?,
        gather: rt.graph("filter_gather", gather(client, compute, disks, window))?,
        collect: rt.graph("filter_collect", collect(client, disks))?,
        control: rt.graph("filter_control", control(client, disks))?,
    })
}

fn gather(
    client: &Collection<()>,
    compute: &Collection<Compute>,
    disks: &Collection<Disk>,
    window: usize,
) -> dps::Path<GatherRequest, Gathered> {
    let nodes = compute.len();
    let split = Node::split("split_window", client, route::fixed(0), |_: &mut (), g: GatherRequest| {
        let k = g.filter.kernel();
        let (rx, ry) = (k.rx() as i64, k.ry() as i64);
        let t = g.tiling;
        // The tiles within the kernel's radius of the window contribute to it.
        let x0 = (g.window.x - rx).max(0) as usize;
        let y0 = (g.window.y - ry).max(0) as usize;
        let x1 = ((g.window.x + g.window.w as i64 + rx).min(t.width as i64) - 1) as usize;
        let y1 = ((g.window.y + g.window.h as i64 + ry).min(t.height as i64) - 1) as usize;
        let (a, b) = (t.tile_at(x0, y0), t.tile_at(x1, y1));
        (a.r..=b.r).flat_map(move |r| (a.c..=b.c).map(move |c| TileRead { id: TileId { r, c }, request: g }))
    })
    .window(window);
    let read = Node::leaf(
        "read_tile",
        disks,
        route::by_key(|t: &TileRead| t.request.tiling.disk(t.id)),
        |d: &mut Disk, read: TileRead| RawTile { read, slot: Bulk(d.tile(read.id).0.to_vec()) },
    );
    let filter = Node::leaf(
        "filter_tile",
        compute,
        route::by_key(move |t: &RawTile| t.read.request.tiling.node(t.read.id, nodes)),
        |_: &mut Compute, t: RawTile| filter_tile(&t),
    );
    let merge = Node::merge(
        "overlap_add",
        client,
        MergeFn::new(
            |_: &mut ()| None::<Gathered>,
            |_, acc: &mut Option<Gathered>, e: Enlarged| {
                let g = acc.get_or_insert_with(|| Gathered {
                    window: e.window,
                    sums: Bulk(vec![0; e.window.w * e.window.h]),
                    tiles: 0,
                    compute_ns: Vec::new(),
                });
                linear::overlap_add(&mut g.sums, g.window, &e.sums, e.at);
                g.tiles += 1;
                g.compute_ns.push(e.compute_ns);
            },
            |_, acc| acc.expect("a window needs at least one tile"),
        ),
    );
    split >> read >> filter >> merge
}

/// One tile filtered as if zero beyond its border, enlarged by the kernel's radius.
fn filter_tile(t: &RawTile) -> Enlarged {
    let start = Instant::now();
    let GatherRequest { tiling, window, filter } = t.read.request;
    let k = filter.kernel();
    let (x, y, w, h) = tiling.rect(t.read.id);
    let b = t.slot.len() / (tiling.tile * tiling.tile);
    let grey: Vec<u16> = (0..h)
        .flat_map(|row| {
            let line = &t.slot[row * tiling.tile * b..][..w * b];
            line.chunks_exact(b).map(|p| if b == 2 { u16::from_le_bytes([p[0], p[1]]) } else { u16::from(p[0]) })
        })
        .collect();
    let sums = linear::convolve_enlarged(&grey, w, h, &k);
    let at = Area { x: x as i64 - k.rx() as i64, y: y as i64 - k.ry() as i64, w: w + 2 * k.rx(), h: h + 2 * k.ry() };
    Enlarged { window, at, sums: Bulk(sums), compute_ns: start.elapsed().as_nanos() as u64 }
}

fn collect(client: &Collection<()>, disks: &Collection<Disk>) -> dps::Path<Tiling, Bulk<u8>> {
    let split = Node::split("split_collect", client, route::fixed(0), |_: &mut (), t: Tiling| {
        t.tiles().map(move |id| Collect { id, tiling: t }).collect::<Vec<_>>()
    });
    let read = Node::leaf(
        "read_output",
        disks,
        route::by_key(|c: &Collect| c.tiling.disk(c.id)),
        |d: &mut Disk, c: Collect| (c, Bulk(d.output(c.id))),
    );
    let assemble = Node::merge(
        "assemble_output",
        client,
        MergeFn::new(
            |_: &mut ()| Vec::<u8>::new(),
            |_, image: &mut Vec<u8>, (c, slot): (Collect, Bulk<u8>)| {
                let t = c.tiling;
                let b = slot.len() / (t.tile * t.tile);
                image.resize(t.width * t.height * b, 0);
                let (x, y, w, h) = t.rect(c.id);
                for row in 0..h {
                    image[((y + row) * t.width + x) * b..][..w * b].copy_from_slice(&slot[row * t.tile * b..][..w * b]);
                }
            },
            |_, image| Bulk(image),
        ),
    );
    split >> read >> assemble
}

fn control(client: &Collection<()>, disks: &Collection<Disk>) -> dps::Path<(usize, Control), Vec<String>> {
    let split = Node::split("split_disks", client, route::fixed(0), |_: &mut (), (n, c): (usize, Control)| {
        (0..n).map(move |d| (d, c))
    });
    let act = Node::leaf("disk_control", disks, route::by_key(|d: &(usize, Control)| d.0), |d: &mut Disk, (_, c)| {
        // A failure is told to the client, not panicked: the job ends with one error.
        match c {
            Control::Reset(generation) => {
                d.reset(generation);
                None
            }
            Control::Commit => d.commit().err().map(|e| format!("{e:#}")),
        }
    });
    let failures = Node::merge(
        "disks_done",
        client,
        MergeFn::new(
            |_: &mut ()| Vec::new(),
            |_, errors: &mut Vec<String>, e: Option<String>| errors.extend(e),
            |_, errors| errors,
        ),
    );
    split >> act >> failures
}
