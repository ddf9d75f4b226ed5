//! The DPS graphs. `main` is one thread on rank 0; `cells` has one thread per cell, mapped
//! by eq. (8-2) and movable, whose state is the cell ([`Cell`]).
//!
//! * `skeleton_round`: rank 0 deals a round's work (the living cells' halos) with a split;
//!   each work token is routed to its cell by index (wherever the cell lives now: the
//!   runtime delivers it there), the cell advances `depth` passes (a leaf), and a merge
//!   collects every cell's border frame and whether it changed.
//! * `skeleton_gather`: every cell sends its pixels to rank 0, once the skeleton is reached.
//!
//! Migration happens between two rounds, with `Runtime::migrate`: the cell's pixels move to
//! the new rank, and the next round's token for it goes there.

use std::sync::Arc;

use dps::{route, Collection, Graph, MergeFn, Node, Runtime};
use serde::{Deserialize, Serialize};

use crate::cells::{Cell, Done, Grid, Work};
use crate::kernel::Plane;

/// The work of one round: one token per living cell.
#[derive(Debug, Serialize, Deserialize)]
pub struct Round {
    /// The living cells' work.
    pub works: Vec<Work>,
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
    pub round: Graph<Round, Vec<Done>>,
    /// Every cell's pixels.
    pub gather: Graph<(), Vec<Piece>>,
    /// Every cell back to the input's pixels (before a run of `compare` or `--reps`).
    pub reset: Graph<(), ()>,
}

/// Builds the graphs (collective: every rank calls it).
///
/// # Errors
/// If the runtime rejects a graph.
pub fn build(
    rt: &Runtime,
    main: &Collection<()>,
    cells: &Collection<Cell>,
    grid: Grid,
    image: Arc<Plane>,
) -> Result<Graphs, dps::Error> {
    let deal = Node::split("deal_round", main, route::fixed(0), |_: &mut (), r: Round| r.works);
    let thin = Node::leaf("thin_cell", cells, route::by_key(|w: &Work| w.cell), |c: &mut Cell, w: Work| c.round(&w));
    let collect = Node::merge(
        "collect_round",
        main,
        MergeFn::new(|_: &mut ()| Vec::new(), |_, acc: &mut Vec<Done>, d: Done| acc.push(d), |_, acc| acc),
    );
    let round = rt.graph("skeleton_round", deal >> thin >> collect)?;
    let n = cells.len();
    let ask = Node::split("ask_cells", main, route::fixed(0), move |_: &mut (), _: ()| 0..n);
    let read = Node::leaf("read_cell", cells, route::by_key(|i: &usize| *i), |c: &mut Cell, _: usize| Piece {
        cell: c.index,
        pixels: c.pixels.clone(),
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
        *c = Cell::new(&grid, i, &image);
    });
    let done = Node::merge("reset_done", main, MergeFn::new(|_: &mut ()| (), |_, _: &mut (), _: ()| {}, |_, _| ()));
    let reset = rt.graph("skeleton_reset", ask >> reset >> done)?;
    Ok(Graphs { round, gather, reset })
}
