//! The DPS graphs. `main` is one thread on rank 0, `nodes` one thread per rank; `cells` has
//! one thread per cell, mapped by eq. (8-2) and movable, whose state is the cell ([`Cell`]).
//!
//! * `skeleton_round`, one call per round, in two phases. *Exchange*: rank 0 sends each rank
//!   the list of its cells whose last round changed a strip of another cell's halo (a split
//!   to the rank's node); the node asks each of them (a split); the cell sends its strips
//!   straight to their receivers (a split on the cell, each strip routed to its receiver by
//!   index, wherever the receiver lives now: the runtime delivers it there), which keep them
//!   (a leaf); merges on the cells, the nodes and rank 0 wait until every strip is kept.
//!   *Compute*: rank 0 sends each rank the list of its living cells; the node sends each a
//!   `Go`, at most `in_flight` at a time (the split's window, 1 by default: a rank runs its
//!   cells one after another rather than all time-sliced together, and the credits that
//!   pace them never leave the rank); the cell runs its round and returns its report; a merge on the node
//!   collects its rank's reports, and one on rank 0 all of them. Rank 0 handles no pixels:
//!   a report is a few numbers. The compute phase sends nothing between ranks but the lists
//!   and the reports, so no cell waits for a message from another rank while it computes.
//! * `skeleton_gather`: every cell sends its pixels to rank 0, once the skeleton is reached.
//! * `skeleton_reset`: every cell back to the input's pixels.
//!
//! Migration happens between two rounds, with `Runtime::migrate_each`: the cell's pixels,
//! halo and strips (received and to send) move to the new rank, and the next round's tokens
//! for it go there.

use std::sync::Arc;

use dps::{route, Collection, Graph, MergeFn, Node, Runtime};
use serde::{Deserialize, Serialize};

use crate::cells::{Cell, Grid, Report, Strip};
use crate::kernel::Plane;

/// One round: per rank, the cells whose strips of the last round are to be sent, and the
/// living cells.
#[derive(Debug, Serialize, Deserialize)]
pub struct Round {
    /// Per rank with such cells: the rank and its cells that have strips to send.
    pub senders: Vec<(usize, Vec<usize>)>,
    /// Per rank that hosts living cells: the rank and its cells' work.
    pub shares: Vec<(usize, Vec<Go>)>,
}

/// The state of rank 0's `main` thread: the compute phase's lists while the exchange runs.
#[derive(Debug, Default)]
pub struct Stash {
    shares: Vec<(usize, Vec<Go>)>,
}

/// Cell `cell` runs round `round`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Go {
    /// The cell.
    pub cell: usize,
    /// The round (from 0).
    pub round: u64,
    /// Cells in its reach that need no strips: all white, so they never run again.
    pub quiet: Vec<usize>,
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
    main: &Collection<Stash>,
    nodes: &Collection<()>,
    cells: &Collection<Cell>,
    shape: Shape,
    image: Arc<Plane>,
) -> Result<Graphs, dps::Error> {
    let Shape { grid, depth, in_flight } = shape;
    // Exchange.
    let start = Node::split("start_round", main, route::fixed(0), |m: &mut Stash, r: Round| {
        m.shares = r.shares;
        r.senders
    })
    .unbounded();
    let ask = Node::split("ask_senders", nodes, route::by_key(|s: &(usize, Vec<usize>)| s.0), |_: &mut (), s| s.1)
        .unbounded();
    let send =
        Node::split("send_strips", cells, route::by_key(|c: &usize| *c), |c: &mut Cell, _: usize| c.take_outbox())
            .unbounded();
    let keep = Node::leaf("keep_strip", cells, route::by_key(|s: &Strip| s.to), |c: &mut Cell, s: Strip| c.receive(s));
    let sent = Node::merge("strips_kept", cells, dps::join::<()>());
    let rank_sent = Node::merge("rank_strips_kept", nodes, dps::join::<()>());
    let exchanged = Node::merge(
        "exchanged",
        main,
        MergeFn::new(|_: &mut Stash| (), |_, _: &mut (), _: ()| {}, |m: &mut Stash, _| std::mem::take(&mut m.shares)),
    );
    // Compute.
    let share =
        Node::split("share_round", main, route::fixed(0), |_: &mut Stash, s: Vec<(usize, Vec<Go>)>| s).unbounded();
    let deal = Node::split("deal_cells", nodes, route::by_key(|s: &(usize, Vec<Go>)| s.0), |_: &mut (), s| s.1)
        .window(in_flight);
    let thin = Node::leaf("thin_cell", cells, route::by_key(|g: &Go| g.cell), |c: &mut Cell, g: Go| {
        c.round(g.round, &g.quiet)
    });
    let on_node = Node::merge(
        "collect_rank",
        nodes,
        MergeFn::new(|_: &mut ()| Vec::new(), |_, acc: &mut Vec<Report>, r: Report| acc.push(r), |_, acc| acc),
    );
    let collect = Node::merge(
        "collect_round",
        main,
        MergeFn::new(
            |_: &mut Stash| Vec::new(),
            |_, acc: &mut Vec<Report>, r: Vec<Report>| acc.extend(r),
            |_, acc| acc,
        ),
    );
    let round = rt.graph(
        "skeleton_round",
        start >> ask >> send >> keep >> sent >> rank_sent >> exchanged >> share >> deal >> thin >> on_node >> collect,
    )?;
    let n = cells.len();
    let ask = Node::split("ask_cells", main, route::fixed(0), move |_: &mut Stash, _: ()| 0..n);
    let read = Node::leaf("read_cell", cells, route::by_key(|i: &usize| *i), |c: &mut Cell, _: usize| Piece {
        cell: c.index,
        pixels: c.pixels(),
    });
    let assemble = Node::merge(
        "assemble",
        main,
        MergeFn::new(|_: &mut Stash| Vec::new(), |_, acc: &mut Vec<Piece>, p: Piece| acc.push(p), |_, acc| acc),
    );
    let gather = rt.graph("skeleton_gather", ask >> read >> assemble)?;
    // Every rank holds the input image, so a cell is reset where it lives.
    let ask = Node::split("ask_cells", main, route::fixed(0), move |_: &mut Stash, _: ()| 0..n);
    let reset = Node::leaf("reset_cell", cells, route::by_key(|i: &usize| *i), move |c: &mut Cell, i: usize| {
        *c = Cell::new(&grid, i, &image, depth);
    });
    let done = Node::merge("reset_done", main, dps::join::<()>());
    let reset = rt.graph("skeleton_reset", ask >> reset >> done)?;
    Ok(Graphs { round, gather, reset })
}
