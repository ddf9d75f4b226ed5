//! The DPS graphs of thesis ch. 7 on three collections: `client` (one thread on rank 0),
//! `compute` (the ComputeServers, `--map`) and `disks` (the TileServers: disk k lives on the
//! rank of compute thread k mod S, so a tile is processed where it is stored).
//!
//! * `exchange` (exchange-process-and-store, Fig. 7.12): see [`exchange`].
//! * `gather` (process-and-gather, Fig. 7.9): see [`gather`].
//! * `window` (the striped file service `serve` exports, and its clients' graph): see
//!   [`window`].
//! * `collect`: every output tile back to the client (verification).
//! * `control`: every disk thread resets before a run or commits its output file after it,
//!   and says what failed.

pub mod exchange;
pub mod gather;
pub mod window;

use dps::{route, Bulk, Collection, Graph, MergeFn, Node, Runtime};
use serde::{Deserialize, Serialize};

use crate::disk::Disk;
use crate::layout::{TileId, Tiling};
use crate::store::Generation;
use exchange::ExchangeReport;
use gather::{GatherRequest, Gathered};

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
    /// Every output tile, assembled on the client (`bytes` per pixel), or the first tile
    /// that could not be read back (its file and the OS error).
    pub collect: Graph<Tiling, Result<Bulk<u8>, String>>,
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

/// Builds every graph (collective). `window` is the tiles in flight (S times the tiles in
/// flight per compute thread).
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
        gather: rt.graph("filter_gather", gather::path(client, compute, disks, window))?,
        collect: rt.graph("filter_collect", collect(client, disks))?,
        control: rt.graph("filter_control", control(client, disks))?,
    })
}

fn collect(client: &Collection<()>, disks: &Collection<Disk>) -> dps::Path<Tiling, Result<Bulk<u8>, String>> {
    let split = Node::split("split_collect", client, route::fixed(0), |_: &mut (), t: Tiling| {
        t.tiles().map(move |id| Collect { id, tiling: t }).collect::<Vec<_>>()
    });
    let read = Node::leaf(
        "read_output",
        disks,
        route::by_key(|c: &Collect| c.tiling.disk(c.id)),
        |d: &mut Disk, c: Collect| (c, d.output(c.id).map(Bulk)),
    );
    let assemble = Node::merge(
        "assemble_output",
        client,
        MergeFn::new(
            |_: &mut ()| Ok(Vec::<u8>::new()),
            |_, image: &mut Result<Vec<u8>, String>, (c, slot): (Collect, Result<Bulk<u8>, String>)| {
                let slot = match slot {
                    Ok(slot) => slot,
                    Err(why) => {
                        if image.is_ok() {
                            *image = Err(why); // the first failure is kept
                        }
                        return;
                    }
                };
                let Ok(image) = image else { return };
                let t = c.tiling;
                let b = slot.len() / (t.tile * t.tile);
                image.resize(t.width * t.height * b, 0);
                let (x, y, w, h) = t.rect(c.id);
                for row in 0..h {
                    image[((y + row) * t.width + x) * b..][..w * b].copy_from_slice(&slot[row * t.tile * b..][..w * b]);
                }
            },
            |_, image| image.map(Bulk),
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
