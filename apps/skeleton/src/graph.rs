//! The DPS graphs. `main` is one thread on rank 0; `cells` has one thread per cell, mapped
//! by eq. (8-2) and movable, whose state is the cell ([`Cell`]).
//!
//! * `skeleton_round`: rank 0 sends each rank the list of its living cells (a split to the
//!   `nodes` collection, one thread per rank); each rank's node sends its cells a `Go`
//!   each, at most `in_flight` at a time (the split's window: the cells of a rank run a few
//!   at a time rather than all time-sliced together, so the first strips leave early and
//!   the progress thread is not one thread among dozens of busy ones); the cell runs its
//!   round and sends the strips of itself that changed straight to the cells whose halo
//!   they are in (a split on the cell, each strip routed to its receiver by index, wherever
//!   the receiver lives now: the runtime delivers it there); the receiver keeps the strip
//!   for its next round (a leaf); a merge on the sending cell waits until its strips are
//!   kept and returns the cell's report, a merge on the node collects its rank's reports,
//!   and a merge on rank 0 all of them. Rank 0 handles no pixels: a report is a few numbers.
//! * `skeleton_gather`: every cell sends its pixels to rank 0, once the skeleton is reached.
//! * `skeleton_reset`: every cell back to the input's pixels.
//!
//! Migration happens between two rounds, with `Runtime::migrate_each`: the cell's pixels,
//! halo and pending strips move to the new rank, and the next round's tokens for it go there.

use std::sync::Arc;

use dps::{route, Collection, Graph, MergeFn, Node, Runtime};
use serde::{Deserialize, Serialize};

use crate::cells::{Cell, Grid, Report, Strip};
use crate::kernel::Plane;

/// The living cells of one round, by the rank they live on.
#[derive(Debug, Serialize, Deserialize)]
pub struct Round {
    /// The round's number (from 0).
    pub round: u64,
    /// Per rank that hosts living cells: the rank and its living cells.
    pub shares: Vec<(usize, Vec<usize>)>,
}

/// A rank's living cells in a round.
#[derive(Debug, Serialize, Deserialize)]
struct Share {
    rank: usize,
    round: u64,
    cells: Vec<usize>,
}

/// Cell `cell` runs round `round`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Go {
    cell: usize,
    round: u64,
}

/// A cell's pixels, at the end.
#[derive(Debug, Serialize, Deserialize)]
pub struct Piece {
    /// The cell.
    pub cell: usize,
    /// Its pixels.
    pub pixels: Plane,
}

/// The graphs of a run.
#[derive(Debug)]
pub struct Graphs {
    /// One round of the living cells.
    pub round: Graph<Round, Vec<Report>>,
    /// Every cell's pixels.
    pub gather: Graph<(), Vec<Piece>>,
    /// Every cell back to the input's pixels (before a run of `compare` or `--reps`).
    pub reset: Graph<(), ()>,
}

/// How a run cuts and schedules the image.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// The cells.
    pub grid: Grid,
    /// Passes per round.
    pub depth: usize,
    /// Cells a rank runs at once.
    pub in_flight: usize,
}

/// Builds the graphs (collective: every rank calls it).
///
/// # Errors
/// If the runtime rejects a graph.
pub fn build(
    rt: &Runtime,
    main: &Collection<()>,
    nodes: &Collection<()>,
    cells: &Collection<Cell>,
    shape: Shape,
    image: Arc<Plane>,
) -> Result<Graphs, dps::Error> {
    let Shape { grid, depth, in_flight } = shape;
    let share = Node::split("share_round", main, route::fixed(0), |_: &mut (), r: Round| {
        let round = r.round;
        r.shares.into_iter().map(move |(rank, cells)| Share { rank, round, cells })
    })
    .unbounded();
    let deal = Node::split("deal_cells", nodes, route::by_key(|s: &Share| s.rank), |_: &mut (), s: Share| {
        let round = s.round;
        s.cells.into_iter().map(move |cell| Go { cell, round })
    })
    .window(in_flight);
    let thin = Node::split("thin_cell", cells, route::by_key(|g: &Go| g.cell), |c: &mut Cell, g: Go| c.round(g.round))
        .unbounded();
    let keep = Node::leaf("keep_strip", cells, route::by_key(|s: &Strip| s.to), |c: &mut Cell, s: Strip| c.receive(s));
    let report = Node::merge(
        "strips_kept",
        cells,
        MergeFn::new(|_: &mut Cell| (), |_, _: &mut (), _: ()| {}, |c, _| c.take_report()),
    );
    let on_node = Node::merge(
        "collect_rank",
        nodes,
        MergeFn::new(|_: &mut ()| Vec::new(), |_, acc: &mut Vec<Report>, r: Report| acc.push(r), |_, acc| acc),
    );
    let collect = Node::merge(
        "collect_round",
        main,
        MergeFn::new(|_: &mut ()| Vec::new(), |_, acc: &mut Vec<Report>, r: Vec<Report>| acc.extend(r), |_, acc| acc),
    );
    let round = rt.graph("skeleton_round", share >> deal >> thin >> keep >> report >> on_node >> collect)?;
    let n = cells.len();
    let ask = Node::split("ask_cells", main, route::fixed(0), move |_: &mut (), _: ()| 0..n);
    let read = Node::leaf("read_cell", cells, route::by_key(|i: &usize| *i), |c: &mut Cell, _: usize| Piece {
        cell: c.index,
        pixels: c.pixels(),
    });
    let assemble = Node::merge(
        "assemble",
        main,
        MergeFn::new(|_: &mut ()| Vec::new(), |_, acc: &mut Vec<Piece>, p: Piece| acc.push(p), |_, acc| acc),
    );
    let gather = rt.graph("skeleton_gather", ask >> read >> assemble)?;
    // Every rank holds the input image, so a cell is reset where it lives.
    let ask = Node::split("ask_cells", main, route::fixed(0), move |_: &mut (), _: ()| 0..n);
    let reset = Node::leaf("reset_cell", cells, route::by_key(|i: &usize| *i), move |c: &mut Cell, i: usize| {
        *c = Cell::new(&grid, i, &image, depth);
    });
    let done = Node::merge("reset_done", main, MergeFn::new(|_: &mut ()| (), |_, _: &mut (), _: ()| {}, |_, _| ()));
    let reset = rt.graph("skeleton_reset", ask >> reset >> done)?;
    Ok(Graphs { round, gather, reset })
}
