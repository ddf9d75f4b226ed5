//! The striped file service (the DPS paper, Fig. 5): windows of a stored image read where
//! its tiles are, as a graph `serve` exports ([`serve_path`]) and clients import and call as
//! a leaf of their own graph ([`client_path`]).
//!
//! The service's graph splits a window into the tiles it overlaps (window 2·S); the disk
//! thread of each cuts the overlap out of its tile; the merge on rank 0 puts the pieces in
//! place. A client's split fans its windows out through the service, at most `window` in
//! flight, and its merge collects the replies in request order.

use dps::{route, Bulk, Collection, MergeFn, Node, Service};
use serde::{Deserialize, Serialize};

use crate::disk::Disk;
use crate::layout::{TileId, Tiling};
use crate::raster::Depth;

/// A request of the service: the window `(x, y, w, h)` of the served image. `id` is the
/// caller's, returned with the reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowRequest {
    /// The caller's number for it.
    pub id: u64,
    /// Left column.
    pub x: u64,
    /// Top row.
    pub y: u64,
    /// Columns.
    pub w: u64,
    /// Rows.
    pub h: u64,
}

/// The service's reply: the window's pixels, row by row, or why there are none.
#[derive(Debug, Serialize, Deserialize)]
pub struct WindowPixels {
    /// The request it answers.
    pub request: WindowRequest,
    /// The pixels' depth.
    pub depth: Depth,
    /// `w × h` pixels of `depth.bytes()` bytes.
    pub pixels: Bulk<u8>,
    /// A window the service refused (empty or outside the image), and why; no pixels.
    pub error: Option<String>,
    /// A tile of the window the service could not read (its file and the OS error): the
    /// pixels are not the image's.
    pub failed: Option<String>,
}

/// One tile's part of a window (or, for a refused window, the refusal).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct TileRead {
    request: WindowRequest,
    tile: Option<TileId>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Piece {
    read: TileRead,
    /// The overlap of the tile and the window, image coordinates.
    at: (usize, usize, usize, usize),
    bytes: Bulk<u8>,
    failed: Option<String>,
}

/// Why the service refuses `r` for an image of `tiling` (None: it is inside).
pub fn refusal(r: &WindowRequest, tiling: &Tiling) -> Option<String> {
    let (x, y, w, h) = (r.x, r.y, r.w, r.h);
    if w == 0 || h == 0 {
        return Some(format!("window {x} {y} {w} {h}: the window is empty"));
    }
    let inside = |start: u64, len: u64, side: usize| start.checked_add(len).is_some_and(|e| e <= side as u64);
    (!inside(x, w, tiling.width) || !inside(y, h, tiling.height))
        .then(|| format!("window {x} {y} {w} {h}: outside the {}x{} image", tiling.width, tiling.height))
}

/// The served graph: a window in, its pixels out (`window`: tiles in flight per request).
pub fn serve_path(
    client: &Collection<()>,
    disks: &Collection<Disk>,
    tiling: Tiling,
    depth: Depth,
    window: usize,
) -> dps::Path<WindowRequest, WindowPixels> {
    let split = Node::split("split_window", client, route::fixed(0), move |_: &mut (), request: WindowRequest| {
        let tiles: Vec<Option<TileId>> = if refusal(&request, &tiling).is_some() {
            // One token still, so that the merge has something to answer with.
            vec![None]
        } else {
            let (x, y, w, h) = (request.x as usize, request.y as usize, request.w as usize, request.h as usize);
            let (a, b) = (tiling.tile_at(x, y), tiling.tile_at(x + w - 1, y + h - 1));
            (a.r..=b.r).flat_map(|r| (a.c..=b.c).map(move |c| Some(TileId { r, c }))).collect()
        };
        tiles.into_iter().map(move |tile| TileRead { request, tile })
    })
    .window(window);
    let read = Node::leaf(
        "read_window_tile",
        disks,
        route::by_key(move |t: &TileRead| t.tile.map_or(0, |id| tiling.disk(id))),
        move |d: &mut Disk, read: TileRead| cut(d, read, tiling),
    );
    let assemble = Node::merge(
        "assemble_window",
        client,
        MergeFn::new(
            |_: &mut ()| None::<WindowPixels>,
            move |_, acc: &mut Option<WindowPixels>, piece: Piece| {
                let r = piece.read.request;
                let b = depth.bytes();
                let out = acc.get_or_insert_with(|| {
                    let error = refusal(&r, &tiling);
                    let size = if error.is_some() { 0 } else { (r.w * r.h) as usize * b };
                    WindowPixels { request: r, depth, pixels: Bulk(vec![0; size]), error, failed: None }
                });
                if out.error.is_some() || out.failed.is_some() {
                    return;
                }
                if piece.failed.is_some() {
                    out.failed = piece.failed;
                    return;
                }
                let (px, py, pw, ph) = piece.at;
                let (x, y, w) = (r.x as usize, r.y as usize, r.w as usize);
                for row in 0..ph {
                    out.pixels[((py + row - y) * w + px - x) * b..][..pw * b]
                        .copy_from_slice(&piece.bytes[row * pw * b..][..pw * b]);
                }
            },
            |_, acc| acc.expect("a window has at least one piece"),
        ),
    );
    split >> read >> assemble
}

/// The part of the tile inside the window, row by row.
fn cut(d: &mut Disk, read: TileRead, tiling: Tiling) -> Piece {
    let nothing = |failed| Piece { read, at: (0, 0, 0, 0), bytes: Bulk(Vec::new()), failed };
    let Some(id) = read.tile else { return nothing(None) };
    let r = read.request;
    let slot = match d.tile(id) {
        Ok(slot) => slot,
        Err(why) => return nothing(Some(why)),
    };
    let b = slot.len() / (tiling.tile * tiling.tile);
    let (tx, ty, tw, th) = tiling.rect(id);
    let (x0, x1) = (tx.max(r.x as usize), (tx + tw).min((r.x + r.w) as usize));
    let (y0, y1) = (ty.max(r.y as usize), (ty + th).min((r.y + r.h) as usize));
    let mut bytes = Vec::with_capacity((x1 - x0) * (y1 - y0) * b);
    for yy in y0..y1 {
        bytes.extend_from_slice(&slot[((yy - ty) * tiling.tile + x0 - tx) * b..][..(x1 - x0) * b]);
    }
    Piece { read, at: (x0, y0, x1 - x0, y1 - y0), bytes: Bulk(bytes), failed: None }
}

/// A client's graph: a list of windows in, each window's reply out in the list's order,
/// the windows fanned out through `service` (called from the threads of `callers`) with at
/// most `window` in flight.
pub fn client_path(
    main: &Collection<()>,
    callers: &Collection<()>,
    service: &Service<WindowRequest, WindowPixels>,
    window: usize,
) -> dps::Path<Vec<WindowRequest>, Vec<WindowPixels>> {
    let split =
        Node::split("split_requests", main, route::fixed(0), |_: &mut (), all: Vec<WindowRequest>| all.into_iter())
            .window(window);
    let call = service.leaf("read_window", callers, route::round_robin());
    let collect = Node::merge(
        "collect_windows",
        main,
        MergeFn::new(
            |_: &mut ()| Vec::new(),
            |_, all: &mut Vec<WindowPixels>, reply: WindowPixels| all.push(reply),
            |_, mut all| {
                all.sort_by_key(|p| p.request.id);
                all
            },
        ),
    );
    split >> call >> collect
}
