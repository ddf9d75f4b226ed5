//! Exchange-process-and-store (thesis §7.4, Fig. 7.12), the `exchange` graph: the client
//! splits the tiles in serpentine order, with a window of k·S tiles in flight (`--in-flight`
//! k, 8 by default; the thesis's 2); each goes to
//! compute thread `disk mod S`, which splits it into the tile itself and the border strips
//! of its (up to) 8 neighbours, each read by the disk thread holding that tile; the merge
//! places them around the tile and computes the 5×5 median (the tile's interior as soon as
//! the tile itself arrives, CenterFiltering; the border frame once every strip is in,
//! BorderFiltering); the tile's own disk thread writes the result, to the same disk index;
//! a merge on the client counts the tiles and what they cost.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use dps::{route, Collection, MaybeBulk, MergeFn, Node};
use serde::{Deserialize, Serialize};

use super::Compute;
use crate::disk::{Disk, Tile};
use crate::kernel::linear::Area;
use crate::kernel::median::{self, RADIUS};
use crate::layout::{TileId, Tiling};

/// The interior of a tile is computed in bands of about this many pixels, with a yield of
/// the core in between (about 100 µs of work at the kernel's 1400 Mpix/s).
const PIXELS_PER_YIELD: usize = 1 << 17;

/// What the client learns of one exchange run, over all its tiles.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ExchangeReport {
    /// Tiles processed.
    pub tiles: usize,
    /// Input tiles read from files (cache misses).
    pub reads: u64,
    /// Requests for input tiles or parts of them (9 per interior tile).
    pub requests: u64,
    /// Time of each file read, ns.
    pub read_ns: Vec<u64>,
    /// Compute time of each tile's median, ns.
    pub compute_ns: Vec<u64>,
    /// Time of each tile's write, ns.
    pub write_ns: Vec<u64>,
    /// Most tiles created by the client's split and not yet merged back, counted (the
    /// window's tiles plus the one the runtime pulls ahead).
    pub max_in_flight: usize,
}

/// Tiles split by the client and not yet merged back: both run on the client's thread.
#[derive(Debug, Default)]
struct InFlight {
    now: AtomicUsize,
    max: AtomicUsize,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Job {
    id: TileId,
    tiling: Tiling,
}

/// A request for the part `area` (image coordinates) of input tile `id`, which tile
/// `for_tile` needs.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Request {
    id: TileId,
    for_tile: TileId,
    tiling: Tiling,
    area: Area,
}

#[derive(Debug, Serialize, Deserialize)]
struct Piece {
    request: Request,
    pixels: Pixels,
    reads: u32,
    read_ns: u64,
}

/// A piece's pixels.
#[derive(Debug, Serialize, Deserialize)]
enum Pixels {
    /// A neighbour's strip, copied out of its tile (rows `area.w` apart). Absent in a
    /// NOALLOC simulation, as every tile of this graph.
    Strip(MaybeBulk<u8>),
    /// The tile itself: the disk thread's whole slot, shared, not copied (rows `tile`
    /// apart). A tile's compute thread is on its disk's rank (the allocation rule), so this
    /// one is moved, never encoded; copying it took a sixth of a 2-rank run's CPU time.
    Slot(Tile),
}

impl Pixels {
    /// The pixels and the distance between their rows, or `None` when absent (NOALLOC).
    fn rows(&self, area: Area, tile: usize) -> Option<(&[u8], usize)> {
        match self {
            Pixels::Strip(b) => b.data().map(|d| (&d[..], area.w)),
            Pixels::Slot(slot) => Some((&slot[..], tile)),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Filtered {
    id: TileId,
    tiling: Tiling,
    slot: MaybeBulk<u8>,
    reads: u32,
    requests: u32,
    read_ns: Vec<u64>,
    compute_ns: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct Written {
    reads: u32,
    requests: u32,
    read_ns: Vec<u64>,
    compute_ns: u64,
    write_ns: u64,
}

/// The graph's path.
pub(crate) fn path(
    client: &Collection<()>,
    compute: &Collection<Compute>,
    disks: &Collection<Disk>,
    window: usize,
) -> dps::Path<Tiling, ExchangeReport> {
    let nodes = compute.len();
    let flight = Arc::new(InFlight::default());
    let counted = flight.clone();
    let split = Node::split("split_tiles", client, route::fixed(0), move |_: &mut (), tiling: Tiling| {
        counted.max.store(0, Ordering::Relaxed);
        let counted = counted.clone();
        // Lazily, as the window's credits come back: the count is of tiles really in flight.
        tiling.serpentine().map(move |id| {
            let now = counted.now.fetch_add(1, Ordering::Relaxed) + 1;
            counted.max.fetch_max(now, Ordering::Relaxed);
            Job { id, tiling }
        })
    })
    .window(window);
    let parts = Node::split(
        "split_neighbours",
        compute,
        route::by_key(move |j: &Job| j.tiling.node(j.id, nodes)),
        |_: &mut Compute, j: Job| neighbour_requests(&j.tiling, j.id),
    );
    let read = Node::leaf("read_part", disks, route::by_key(|r: &Request| r.tiling.disk(r.id)), read_part);
    let assemble = Node::merge("median_tile", compute, MedianMerge);
    let write = Node::leaf(
        "write_tile",
        disks,
        route::by_key(|f: &Filtered| f.tiling.disk(f.id)),
        |d: &mut Disk, f: Filtered| {
            let write_ns = d.write(f.id, f.slot);
            Written { reads: f.reads, requests: f.requests, read_ns: f.read_ns, compute_ns: f.compute_ns, write_ns }
        },
    );
    let done = Node::merge(
        "tiles_done",
        client,
        MergeFn::new(
            |_: &mut ()| ExchangeReport::default(),
            move |_, acc: &mut ExchangeReport, w: Written| {
                flight.now.fetch_sub(1, Ordering::Relaxed);
                acc.max_in_flight = flight.max.load(Ordering::Relaxed);
                acc.tiles += 1;
                acc.reads += u64::from(w.reads);
                acc.requests += u64::from(w.requests);
                acc.read_ns.extend(w.read_ns);
                acc.compute_ns.push(w.compute_ns);
                acc.write_ns.push(w.write_ns);
            },
            |_, acc| acc,
        ),
    );
    split >> parts >> read >> assemble >> write >> done
}

/// The parts tile `id` needs: itself (first) and the strips of its neighbours within
/// [`RADIUS`] of it.
fn neighbour_requests(tiling: &Tiling, id: TileId) -> Vec<Request> {
    let (x, y, w, h) = tiling.rect(id);
    let r = RADIUS as i64;
    let halo = Area { x: x as i64 - r, y: y as i64 - r, w: w + 2 * RADIUS, h: h + 2 * RADIUS };
    let mut out = Vec::with_capacity(9);
    for (dr, dc) in [(0i64, 0i64), (-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)] {
        let (nr, nc) = (id.r as i64 + dr, id.c as i64 + dc);
        if nr < 0 || nc < 0 || nr as usize >= tiling.rows() || nc as usize >= tiling.cols() {
            continue;
        }
        let n = TileId { r: nr as usize, c: nc as usize };
        let (nx, ny, nw, nh) = tiling.rect(n);
        let x0 = halo.x.max(nx as i64);
        let x1 = (halo.x + halo.w as i64).min((nx + nw) as i64);
        let y0 = halo.y.max(ny as i64);
        let y1 = (halo.y + halo.h as i64).min((ny + nh) as i64);
        if x0 < x1 && y0 < y1 {
            let area = Area { x: x0, y: y0, w: (x1 - x0) as usize, h: (y1 - y0) as usize };
            out.push(Request { id: n, for_tile: id, tiling: *tiling, area });
        }
    }
    out
}

fn read_part(d: &mut Disk, request: Request) -> Piece {
    let tiling = request.tiling;
    // A failed read ends the run with an error at the commit, not a panic.
    let (slot, cost) = d.tile_or_remember(request.id);
    let piece = |pixels| Piece { request, pixels, reads: cost.reads, read_ns: cost.read_ns };
    // An empty slot: a NOALLOC simulation's, whose pieces are absent.
    if request.id == request.for_tile && !slot.is_empty() {
        return piece(Pixels::Slot(slot));
    }
    let (tx, ty, _, _) = tiling.rect(request.id);
    let area = request.area;
    let (ox, oy) = ((area.x - tx as i64) as usize, (area.y - ty as i64) as usize);
    let mut pixels = MaybeBulk::<u8>::recycled(area.w * area.h);
    if let Some(pixels) = pixels.data_mut() {
        for (row, out) in pixels.chunks_exact_mut(area.w).enumerate() {
            out.copy_from_slice(&slot[(oy + row) * tiling.tile + ox..][..area.w]);
        }
    }
    piece(Pixels::Strip(pixels))
}

/// The merge of one tile's parts: the tile with its halo, and its median.
struct MedianMerge;

#[derive(Default)]
struct TileInProgress {
    /// The tile and where it is (from the first piece).
    job: Option<Job>,
    /// The tile with its halo (every pixel is written: by a piece, or by the clamp).
    buf: MaybeBulk<u8>,
    /// The median, in a full tile slot as stored.
    slot: MaybeBulk<u8>,
    centre_done: bool,
    reads: u32,
    requests: u32,
    read_ns: Vec<u64>,
    compute_ns: u64,
}

/// The tile `id` with its halo, in image coordinates.
fn halo_of(tiling: &Tiling, id: TileId) -> Area {
    let (x, y, w, h) = tiling.rect(id);
    Area { x: x as i64 - RADIUS as i64, y: y as i64 - RADIUS as i64, w: w + 2 * RADIUS, h: h + 2 * RADIUS }
}

impl dps::Merge<Compute> for MedianMerge {
    type In = Piece;
    type Out = Filtered;
    type Acc = TileInProgress;

    fn start(&self, _: &mut Compute) -> TileInProgress {
        TileInProgress::default()
    }

    fn merge(&self, _: &mut Compute, acc: &mut TileInProgress, p: Piece) {
        let (tiling, id) = (p.request.tiling, p.request.for_tile);
        if acc.job.is_none() {
            let halo = halo_of(&tiling, id);
            acc.job = Some(Job { id, tiling });
            acc.buf = MaybeBulk::recycled(halo.w * halo.h);
            acc.slot = MaybeBulk::recycled(tiling.tile * tiling.tile);
            let edge = halo.w - 2 * RADIUS < tiling.tile || halo.h - 2 * RADIUS < tiling.tile;
            if let Some(slot) = acc.slot.data_mut().filter(|_| edge) {
                slot.fill(0); // an edge tile's padding is stored as 0
            }
        }
        acc.requests += 1;
        acc.reads += p.reads;
        if p.reads > 0 {
            acc.read_ns.push(p.read_ns);
        }
        let halo = halo_of(&tiling, id);
        let own = p.request.id == id;
        let pixels = p.pixels.rows(p.request.area, tiling.tile);
        match (acc.buf.data_mut(), pixels) {
            // The tile itself: only its frame (what the border's medians read); the interior's
            // medians read the piece itself, so its middle is not copied at all.
            (Some(buf), Some(pixels)) if own => place_frame(buf, halo, p.request.area, pixels),
            (Some(buf), Some(pixels)) => place(buf, halo, p.request.area, pixels),
            (None, None) => {} // NOALLOC: only the sizes travel
            _ => panic!("tile {id:?}: a piece and the tile's buffer are not both present or both absent"),
        }
        if own {
            // The interior (the tile shrunk by RADIUS) needs only the tile's own pixels: it
            // is computed while the neighbours' strips are still on their way.
            let start = Instant::now();
            let (tw, th) = (halo.w - 2 * RADIUS, halo.h - 2 * RADIUS);
            debug_assert_eq!((p.request.area.w, p.request.area.h), (tw, th), "the tile's own piece is the tile");
            if tw > 2 * RADIUS && th > 2 * RADIUS {
                let (iw, ih) = (tw - 2 * RADIUS, th - 2 * RADIUS);
                let t = tiling.tile;
                // In bands of about PIXELS_PER_YIELD pixels, yielding the core in between: the
                // rank's disk thread, which serves the neighbours' strip requests, and its
                // progress thread then wait ~100 µs for this core, not a scheduler time slice.
                let band = (PIXELS_PER_YIELD / iw).max(1);
                for y0 in (0..ih).step_by(band) {
                    let rows = band.min(ih - y0);
                    // Under PDEXEC and NOALLOC, charged from the platform's table instead.
                    if !dps::skip_kernel("median", &[iw as u64, rows as u64], (iw * rows) as f64) {
                        let (src, stride) = pixels.expect("the kernel runs on present pixels");
                        let dst = &mut acc.slot[(RADIUS + y0) * t + RADIUS..];
                        median::median5(&src[y0 * stride..], stride, iw, rows, dst, t);
                    }
                    std::thread::yield_now();
                }
            }
            acc.compute_ns += start.elapsed().as_nanos() as u64;
            acc.centre_done = true;
        }
    }

    fn finish(&self, _: &mut Compute, mut acc: TileInProgress) -> Filtered {
        assert!(acc.centre_done, "a tile's neighbours arrived without the tile itself");
        let Job { id, tiling } = acc.job.expect("a tile has at least itself as a part");
        let halo = halo_of(&tiling, id);
        let start = Instant::now();
        let (tw, th) = (halo.w - 2 * RADIUS, halo.h - 2 * RADIUS);
        if let Some(buf) = acc.buf.data_mut() {
            clamp_halo(buf, halo, (tiling.width, tiling.height));
        }
        let t = tiling.tile;
        for (x, y, w, h) in border_frame(tw, th) {
            if !dps::skip_kernel("median", &[w as u64, h as u64], (w * h) as f64) {
                median::median5(&acc.buf[y * halo.w + x..], halo.w, w, h, &mut acc.slot[y * t + x..], t);
            }
        }
        acc.compute_ns += start.elapsed().as_nanos() as u64;
        Filtered {
            id,
            tiling,
            slot: acc.slot,
            reads: acc.reads,
            requests: acc.requests,
            read_ns: acc.read_ns,
            compute_ns: acc.compute_ns,
        }
    }
}

/// The rectangles of a `w × h` tile within [`RADIUS`] of its edges (all of it if small).
fn border_frame(w: usize, h: usize) -> Vec<(usize, usize, usize, usize)> {
    let r = RADIUS;
    if w <= 2 * r || h <= 2 * r {
        return vec![(0, 0, w, h)];
    }
    vec![(0, 0, w, r), (0, h - r, w, r), (0, r, r, h - 2 * r), (w - r, r, r, h - 2 * r)]
}

/// Copies a piece's pixels (rows `stride` apart), the area `a` of the image, into the halo
/// buffer.
fn place(buf: &mut [u8], halo: Area, a: Area, (pixels, stride): (&[u8], usize)) {
    let (ox, oy) = ((a.x - halo.x) as usize, (a.y - halo.y) as usize);
    for row in 0..a.h {
        buf[(oy + row) * halo.w + ox..][..a.w].copy_from_slice(&pixels[row * stride..][..a.w]);
    }
}

/// Copies the tile's own piece (`pixels`, the area `a`: the whole tile) into the halo
/// buffer, but only its frame 2·[`RADIUS`] wide: the border's medians read no more of it (a
/// pixel within RADIUS of the edge reads RADIUS further in). A tile too small to have a
/// middle is copied whole.
fn place_frame(buf: &mut [u8], halo: Area, a: Area, (pixels, stride): (&[u8], usize)) {
    let f = 2 * RADIUS;
    if a.w <= 2 * f || a.h <= 2 * f {
        return place(buf, halo, a, (pixels, stride));
    }
    let (ox, oy) = ((a.x - halo.x) as usize, (a.y - halo.y) as usize);
    for row in 0..a.h {
        let (dst, src) = (&mut buf[(oy + row) * halo.w + ox..][..a.w], &pixels[row * stride..][..a.w]);
        if row < f || row >= a.h - f {
            dst.copy_from_slice(src);
        } else {
            dst[..f].copy_from_slice(&src[..f]);
            dst[a.w - f..].copy_from_slice(&src[a.w - f..]);
        }
    }
}

/// Fills the halo pixels outside the image with the nearest image pixel (clamp to edge).
/// Every such pixel's clamped position lies inside both the buffer and the image, where a
/// piece has put it.
pub fn clamp_halo(buf: &mut [u8], halo: Area, (width, height): (usize, usize)) {
    let (first_x, last_x) = (halo.x.max(0), (halo.x + halo.w as i64).min(width as i64) - 1);
    let (first_y, last_y) = (halo.y.max(0), (halo.y + halo.h as i64).min(height as i64) - 1);
    let (fx, lx) = ((first_x - halo.x) as usize, (last_x - halo.x) as usize);
    for y in first_y..=last_y {
        let row = &mut buf[(y - halo.y) as usize * halo.w..][..halo.w];
        let (left, right) = (row[fx], row[lx]);
        row[..fx].fill(left);
        row[lx + 1..].fill(right);
    }
    for py in 0..halo.h {
        let y = halo.y + py as i64;
        let from = if y < first_y {
            first_y
        } else if y > last_y {
            last_y
        } else {
            continue;
        };
        let src = (from - halo.y) as usize * halo.w;
        buf.copy_within(src..src + halo.w, py * halo.w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_halo_pixel_inside_the_image_is_requested_once() {
        for (w, h, tile) in [(600, 520, 256), (513, 260, 256), (40, 40, 8), (9, 30, 4)] {
            let t = Tiling { width: w, height: h, tile, disks: 5, stride: 2 };
            for id in t.tiles() {
                let halo = halo_of(&t, id);
                let mut count = vec![0u8; halo.w * halo.h];
                for r in neighbour_requests(&t, id) {
                    for y in r.area.y..r.area.y + r.area.h as i64 {
                        for x in r.area.x..r.area.x + r.area.w as i64 {
                            count[((y - halo.y) as usize) * halo.w + (x - halo.x) as usize] += 1;
                        }
                    }
                }
                for (i, &n) in count.iter().enumerate() {
                    let (x, y) = (halo.x + (i % halo.w) as i64, halo.y + (i / halo.w) as i64);
                    let inside = x >= 0 && y >= 0 && (x as usize) < w && (y as usize) < h;
                    assert_eq!(n, u8::from(inside), "tile {id:?} pixel ({x}, {y}) of {w}x{h}/{tile}");
                }
            }
        }
    }
}
