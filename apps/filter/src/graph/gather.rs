//! Process-and-gather (thesis §7.3, Fig. 7.9), the `gather` graph: the client splits the
//! tiles the window needs (window 2·S); each is read by its disk thread and filtered,
//! enlarged, by compute thread `disk mod S`; the client adds them into the window
//! (overlap-add).

use std::time::Instant;

use dps::{route, Bulk, Collection, MergeFn, Node};
use serde::{Deserialize, Serialize};

use super::Compute;
use crate::disk::Disk;
use crate::kernel::linear::{self, Area, Filter};
use crate::layout::{TileId, Tiling};

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
    /// The tile's slot, or why it could not be read (its file and the OS error).
    slot: Result<Bulk<u8>, String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Enlarged {
    window: Area,
    at: Area,
    sums: Bulk<i32>,
    compute_ns: u64,
    failed: Option<String>,
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
    /// The first tile that could not be read (its file and the OS error): the sums are
    /// not the filter's.
    pub failed: Option<String>,
}

/// The `gather` graph.
pub(super) fn path(
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
        |d: &mut Disk, read: TileRead| RawTile { read, slot: d.tile(read.id).map(|t| Bulk(t.to_vec())) },
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
                    failed: None,
                });
                if e.failed.is_some() {
                    g.failed = g.failed.take().or(e.failed);
                    return;
                }
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
    let slot = match &t.slot {
        Ok(slot) => slot,
        Err(why) => {
            let (sums, at) = (Bulk(Vec::new()), Area { x: 0, y: 0, w: 0, h: 0 });
            return Enlarged { window, at, sums, compute_ns: 0, failed: Some(why.clone()) };
        }
    };
    let k = filter.kernel();
    let (x, y, w, h) = tiling.rect(t.read.id);
    let b = slot.len() / (tiling.tile * tiling.tile);
    let grey: Vec<u16> = (0..h)
        .flat_map(|row| {
            let line = &slot[row * tiling.tile * b..][..w * b];
            line.chunks_exact(b).map(|p| if b == 2 { u16::from_le_bytes([p[0], p[1]]) } else { u16::from(p[0]) })
        })
        .collect();
    let sums = linear::convolve_enlarged(&grey, w, h, &k);
    let at = Area { x: x as i64 - k.rx() as i64, y: y as i64 - k.ry() as i64, w: w + 2 * k.rx(), h: h + 2 * k.ry() };
    Enlarged { window, at, sums: Bulk(sums), compute_ns: start.elapsed().as_nanos() as u64, failed: None }
}
