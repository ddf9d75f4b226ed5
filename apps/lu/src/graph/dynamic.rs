//! The dynamic pipeline of the `dynamic` variant: the simulator paper's basic LU graph (Fig. 5 with merge barriers between
//! iterations) with a separate, stateless collection of multiplication threads whose
//! membership `--alloc` sets per iteration (Fig. 12, "thread removal"), read from an
//! [`Allotment`] the coordinator may rewrite as an iteration begins (`--withdraw`).
//!
//! Iteration k, all coordinated by one `coordinator` thread on rank 0:
//! 1. a split factors panel k (its block arrived with the previous merge), sends the block
//!    home (`Store`) and a `Solve` to every later block;
//! 2. the owner of block j applies the interchanges and the triangular solve and returns
//!    T_kj, its r rows of U (leaf on `columns`);
//! 3. a stream on the coordinator, which keeps the panel's L21, posts one multiplication
//!    per tile (i, j > k): L_ik (r × r) and T_kj travel in the request, so the
//!    multiplication threads hold no state;
//! 4. a multiplication thread of iteration k's membership computes L_ik·T_kj;
//! 5. the owner of block j subtracts the product; block k+1, complete, ships itself to the
//!    coordinator;
//! 6. a merge on the coordinator closes the iteration and stamps its end on the clock.
//!
//! The column blocks live on the first ranks (`--column-ranks`, by default those `--alloc
//! half` keeps: `alloc::kept_ranks`), so shrinking the multiplication collection moves no
//! state: the ranks released simply get no more multiplications. A withdrawn rank that
//! holds column threads sees them moved between the two [`Halves`] of the factorization.
//! Every token entering an iteration leaves it (a `Pass` where
//! there is nothing to multiply), so no instance is ever empty.

use std::collections::HashMap;
use std::sync::Arc;

use dps::{route, Bulk, Collection, Graph, MergeFn, Node, Path, Posted, RouteCtx, Runtime, Stream};
use serde::{Deserialize, Serialize};

use super::{Columns, Graphs, Layout, PanelRef, Placement};
use crate::kernel::{self, Blocking, Panel, Source};
use crate::scheduled::Allotment;

/// The clock the coordinator stamps iteration ends with, in seconds: real time in a real
/// run; a simulated run passes its virtual clock.
pub type Clock = Arc<dyn Fn() -> f64 + Send + Sync>;

/// The coordinator's state: the panels whose multiplications are under way, the iteration
/// ends of the factorization in progress, and the multiplication threads of each iteration.
pub struct Coordinator {
    clock: Clock,
    panels: HashMap<usize, Arc<Panel>>,
    marks: Vec<f64>,
    allotment: Arc<Allotment>,
}

impl std::fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordinator").field("panels", &self.panels.keys()).field("marks", &self.marks).finish()
    }
}

impl Coordinator {
    /// A coordinator reading `clock`, running each iteration on the threads of `allotment`.
    pub fn new(clock: Clock, allotment: Arc<Allotment>) -> Self {
        Coordinator { clock, panels: HashMap::new(), marks: Vec::new(), allotment }
    }
}

/// The next panel's block, brought to the coordinator by the merge closing an iteration.
#[derive(Debug, Serialize, Deserialize)]
pub struct Step {
    block: Bulk<f64>,
}

/// Work for a block's owner.
#[derive(Debug, Serialize, Deserialize)]
pub enum ColWork {
    /// Block k, factored, returns home with its pivots.
    Store {
        /// Block.
        k: usize,
        /// The factored block.
        col: Bulk<f64>,
        /// Its pivots.
        ipiv: Vec<i32>,
        /// LAPACK info.
        info: i32,
    },
    /// Block j applies the interchanges and the triangular solve of the panel.
    Solve {
        /// Block.
        j: usize,
        /// The panel, or a reference to one its thread already received.
        panel: PanelRef,
    },
}

/// What an owner hands to the multiplication stream.
#[derive(Debug, Serialize, Deserialize)]
pub enum Solved {
    /// T_kj: the panel's rows of block j after the solve (w × wj, column-major).
    Row {
        /// Block.
        j: usize,
        /// The rows.
        t: Bulk<f64>,
    },
    /// Nothing to multiply (the factored block came home).
    Nothing,
}

/// A request to a multiplication thread.
#[derive(Debug, Serialize, Deserialize)]
pub enum Mult {
    /// The iteration's panel (L21 below its first w rows), to member `to` before any tile.
    Prepare {
        /// The panel.
        panel: Arc<Panel>,
        /// Index among the iteration's members.
        to: usize,
    },
    /// T_kj (w × wj, column-major), to member `to` before any tile of column j.
    Row {
        /// Block column.
        j: usize,
        /// The rows.
        t: Arc<Bulk<f64>>,
        /// Index among the iteration's members.
        to: usize,
    },
    /// Tile (i, j): L_ik times T_kj, on whichever member the load balancing picks.
    Tile {
        /// Block row.
        i: usize,
        /// Block column.
        j: usize,
    },
    /// Nothing to multiply; goes on to the merge through block j's owner.
    Pass {
        /// Block.
        j: usize,
    },
}

/// A multiplication thread's state: the panel and the T_kj of its latest iteration,
/// replaced when the next iteration's panel arrives (nothing moves when it is released).
#[derive(Debug, Default)]
pub struct MultCache {
    panel: Option<Arc<Panel>>,
    rows: HashMap<usize, Arc<Bulk<f64>>>,
}

/// Work for a block's owner after the multiplications.
#[derive(Debug, Serialize, Deserialize)]
pub enum Tile {
    /// Start: block j leaves for the coordinator.
    Fetch {
        /// Block.
        j: usize,
    },
    /// Subtract L_ik·T_kj from tile (i, j).
    Product {
        /// Block row.
        i: usize,
        /// Block column.
        j: usize,
        /// The product, rows of block row i × wj.
        p: Bulk<f64>,
    },
    /// Nothing to subtract.
    Pass {
        /// Block.
        j: usize,
    },
}

/// Block j is done with the iteration; it carries itself if it is the next panel.
#[derive(Debug, Serialize, Deserialize)]
pub struct Ready {
    next_panel: Option<Bulk<f64>>,
}

/// The coordinator's split: begins iteration k of the allotment (where a withdrawal
/// switches), factors panel k from its block, sends the block home and the solves to the
/// later blocks (the next panel's block first: it is on the critical path).
fn factor_panel(lay: Layout, k: usize, c: &mut Coordinator, step: Step) -> Vec<ColWork> {
    c.allotment.begin(k);
    let mut block = step.block.into_inner();
    let panel = Arc::new(kernel::factor_panel(&mut block, lay.blocking, k));
    let mut out = vec![ColWork::Store { k, col: Bulk(block), ipiv: panel.ipiv.clone(), info: panel.info }];
    let mut sent_to = vec![false; lay.owners];
    for j in k + 1..lay.nb {
        out.push(ColWork::Solve { j, panel: lay.panel_ref(&panel, j, &mut sent_to) });
    }
    c.panels.insert(k, panel);
    out
}

fn solve_leaf(columns: &Collection<Columns>, lay: Layout, k: usize) -> Node<ColWork, Solved> {
    let route = move |w: &ColWork, _: &RouteCtx| match w {
        ColWork::Store { k, .. } => lay.owner(*k),
        ColWork::Solve { j, .. } => lay.owner(*j),
    };
    Node::leaf(&format!("dyn_solve{k}"), columns, route, move |c: &mut Columns, w: ColWork| match w {
        ColWork::Store { k, col, ipiv, info } => {
            c.blocks.put(k, &col);
            c.pivots.insert(k, (ipiv, info));
            Solved::Nothing
        }
        ColWork::Solve { j, panel } => {
            let p = c.panel(panel);
            let (n, s) = (c.blocking.n, c.blocking.span(p.k).start);
            let block = c.blocks.get_mut(j);
            let wj = block.len() / n;
            dps_dense::blas::swap_rows(block, n, wj, s, &p.ipiv);
            dps_dense::blas::trsm_unit_lower(p.w, wj, &p.lu, p.m, &mut block[s..], n);
            let mut t = Bulk::recycled(p.w * wj);
            for col in 0..wj {
                t[col * p.w..(col + 1) * p.w].copy_from_slice(&block[col * n + s..col * n + s + p.w]);
            }
            c.tiles_left.insert(j, lay.nb - 1 - k);
            Solved::Row { j, t }
        }
    })
}

/// The stream of iteration k: the panel to every member first, then, as each T_kj arrives,
/// T_kj to every member and one multiplication per tile (i, j). A thread receives the
/// stream's tokens in the order they were posted, so the panel and T_kj are there before
/// any tile that needs them, whichever member a tile goes to.
struct MultStream {
    lay: Layout,
    k: usize,
}

impl Stream<Coordinator> for MultStream {
    type In = Solved;
    type Out = Mult;
    /// Whether the panel was sent.
    type Acc = bool;
    fn start(&self, _: &mut Coordinator) -> bool {
        false
    }
    fn input(&self, c: &mut Coordinator, prepared: &mut bool, input: Solved, out: &mut Posted<Mult>) {
        // The iteration's threads: fixed once its split has begun it.
        let p = c.allotment.count(self.k);
        if !std::mem::replace(prepared, true) {
            let panel = c.panels.get(&self.k).expect("the split stored the panel");
            (0..p).for_each(|to| out.post(Mult::Prepare { panel: panel.clone(), to }));
        }
        let Solved::Row { j, t } = input else {
            out.post(Mult::Pass { j: self.k });
            return;
        };
        let t = Arc::new(t);
        (0..p).for_each(|to| out.post(Mult::Row { j, t: t.clone(), to }));
        (self.k + 1..self.lay.nb).for_each(|i| out.post(Mult::Tile { i, j }));
    }
    fn finish(&self, _: &mut Coordinator, _: bool, _: &mut Posted<Mult>) {}
}

fn mult_leaf(mults: &Collection<MultCache>, lay: Layout, k: usize, members: Arc<Allotment>) -> Node<Mult, Tile> {
    // Tiles are load-balanced over the iteration's members: a flow-control slot is freed
    // when its product has been subtracted, so the next tile goes where one just finished
    // and a slower rank (or one that also owns blocks) takes fewer. The routes run on rank
    // 0, where the stream posts, and read the coordinator's allotment.
    let route = move |m: &Mult, cx: &RouteCtx| match m {
        Mult::Prepare { to, .. } | Mult::Row { to, .. } => members.member(k, *to),
        Mult::Tile { i, j } => members.member(k, cx.slot.unwrap_or(i + j)),
        Mult::Pass { .. } => members.member(k, 0),
    };
    Node::leaf(&format!("dyn_mult{k}"), mults, route, move |c: &mut MultCache, m: Mult| match m {
        Mult::Prepare { panel, .. } => {
            c.panel = Some(panel);
            c.rows.clear();
            Tile::Pass { j: k }
        }
        Mult::Row { j, t, .. } => {
            c.rows.insert(j, t);
            Tile::Pass { j }
        }
        Mult::Tile { i, j } => {
            let panel = c.panel.as_ref().filter(|p| p.k == k).expect("the panel came before the tiles");
            let t = c.rows.get(&j).expect("T_kj came before its tiles");
            let (w, rows) = (panel.w, lay.blocking.span(i));
            let (top, h, wj) = (rows.start - lay.blocking.span(k).start, rows.len(), t.len() / panel.w);
            let mut prod = Bulk::recycled(h * wj);
            dps_dense::blas::gemm_col(h, wj, w, 1.0, &panel.lu[top..], panel.m, t, w, 0.0, &mut prod, h);
            Tile::Product { i, j, p: prod }
        }
        Mult::Pass { j } => Tile::Pass { j },
    })
}

/// The owners' leaf after the multiplications of iteration k (None: the start).
fn subtract_leaf(columns: &Collection<Columns>, lay: Layout, k: Option<usize>) -> Node<Tile, Ready> {
    let route = move |t: &Tile, _: &RouteCtx| match t {
        Tile::Fetch { j } | Tile::Product { j, .. } | Tile::Pass { j } => lay.owner(*j),
    };
    let name = format!("dyn_subtract{}", k.map_or("_start".into(), |k| k.to_string()));
    Node::leaf(&name, columns, route, move |c: &mut Columns, t: Tile| match t {
        Tile::Fetch { j } => Ready { next_panel: Some(c.blocks.take(j)) },
        Tile::Product { i, j, p } => {
            let (n, rows) = (c.blocking.n, c.blocking.span(i));
            let block = c.blocks.get_mut(j);
            for (col, prod) in p.chunks_exact(rows.len()).enumerate() {
                for (x, y) in block[col * n + rows.start..col * n + rows.end].iter_mut().zip(prod) {
                    *x -= y;
                }
            }
            let left = c.tiles_left.get_mut(&j).expect("the solve counted the tiles");
            *left -= 1;
            let next = k.map_or(0, |k| k + 1);
            if *left == 0 && j == next {
                c.tiles_left.remove(&j);
                Ready { next_panel: Some(c.blocks.take(j)) }
            } else {
                Ready { next_panel: None }
            }
        }
        Tile::Pass { .. } => Ready { next_panel: None },
    })
}

/// The merge closing iteration k (None: the start): keeps the next panel's block and
/// stamps the iteration's end.
fn close(c: &mut Coordinator, k: Option<usize>, next: Option<Bulk<f64>>) -> Step {
    let now = (c.clock)();
    match k {
        None => c.marks = vec![now],
        Some(k) => {
            c.marks.push(now);
            c.panels.remove(&k);
        }
    }
    Step { block: next.expect("the next panel's block arrived") }
}

fn keep(_: &mut Coordinator, acc: &mut Option<Bulk<f64>>, r: Ready) {
    if r.next_panel.is_some() {
        *acc = r.next_panel;
    }
}

/// The factorization cut in two as iteration `at` (from 0) begins, for a withdrawal that
/// moves column threads: the program calls `head`, moves the threads while no token is on
/// its way to them (the iterations are closed by merges), then calls `tail` on the block of
/// panel `at` that `head` returned. The coordinator's stamps run on across the two calls.
#[derive(Debug)]
pub struct Halves {
    /// Iterations 0..at: the start, then each iteration to its merge; returns the next
    /// panel's block.
    pub head: Graph<(), Step>,
    /// Iterations at.., from the next panel's block to the stamps.
    pub tail: Graph<Step, Vec<f64>>,
}

/// The collections and the allotment the dynamic graphs use.
#[derive(Clone, Copy)]
struct Parts<'a> {
    lay: Layout,
    coordinator: &'a Collection<Coordinator>,
    columns: &'a Collection<Columns>,
    mults: &'a Collection<MultCache>,
    allotment: &'a Arc<Allotment>,
}

impl Parts<'_> {
    /// The start: block 0 leaves for the coordinator, whose merge stamps the start.
    fn start(&self) -> Path<(), Step> {
        let start = Node::split("dyn_start", self.coordinator, route::fixed(0), |_: &mut Coordinator, _: ()| {
            [Tile::Fetch { j: 0 }]
        });
        let ready = Node::merge(
            "dyn_ready",
            self.coordinator,
            MergeFn::new(|_: &mut Coordinator| None, keep, |c: &mut Coordinator, acc| close(c, None, acc)),
        );
        start >> subtract_leaf(self.columns, self.lay, None) >> ready
    }

    /// The merge closing iteration k < nb − 1: the next panel's block.
    fn end(&self, k: usize) -> Node<Ready, Step> {
        let merge =
            MergeFn::new(|_: &mut Coordinator| None, keep, move |c: &mut Coordinator, acc| close(c, Some(k), acc));
        Node::merge(&format!("dyn_end{k}"), self.coordinator, merge)
    }

    /// Iteration k and its merge, for k < nb − 1.
    fn step(&self, k: usize) -> Path<Step, Step> {
        iteration(self.lay, k, self.coordinator, self.columns, self.mults, self.allotment) >> self.end(k)
    }

    /// Iterations `from`..nb, the last merge returning the stamps.
    fn rest(&self, from: usize) -> Path<Step, Vec<f64>> {
        let (lay, k) = (self.lay, self.lay.nb - 1);
        let mut path = iteration(lay, from, self.coordinator, self.columns, self.mults, self.allotment);
        for j in from..k {
            path = path
                >> self.end(j)
                >> iteration(lay, j + 1, self.coordinator, self.columns, self.mults, self.allotment);
        }
        let last = Node::merge(
            &format!("dyn_end{k}"),
            self.coordinator,
            MergeFn::new(
                |_: &mut Coordinator| (),
                |_, _: &mut (), _: Ready| {},
                move |c: &mut Coordinator, ()| {
                    c.marks.push((c.clock)());
                    c.panels.remove(&k);
                    std::mem::take(&mut c.marks)
                },
            ),
        );
        path >> last
    }
}

/// Builds the graphs of the dynamic pipeline for an n×n matrix in blocks of r (collective).
/// `coordinator` and `main` have one thread, on rank 0; `columns` holds block j on thread
/// j % len (the matrix from `source`); `mults` is the multiplication collection, used at
/// iteration k by the threads `allotment` gives it (the coordinator's, on rank 0). The
/// factorization returns the coordinator's stamps: the start, then each iteration's end
/// (seconds on its clock). With `cut`, also the factorization in two [`Halves`] as iteration
/// `cut` (from 0) begins.
///
/// # Errors
/// The runtime refuses a graph.
#[allow(clippy::too_many_arguments)]
pub fn build(
    rt: &Runtime,
    blocking: Blocking,
    source: &Source,
    main: &Collection<()>,
    coordinator: &Collection<Coordinator>,
    columns: &Collection<Columns>,
    mults: &Collection<MultCache>,
    allotment: &Arc<Allotment>,
    cut: Option<usize>,
) -> anyhow::Result<(Graphs<Vec<f64>>, Option<Halves>)> {
    let lay = Layout::of(blocking, columns, Placement::Cyclic);
    let parts = Parts { lay, coordinator, columns, mults, allotment };
    let factor = rt.graph("lu_dynamic", parts.start() >> parts.rest(0))?;
    let halves = match cut {
        Some(at) => {
            let head = (0..at).fold(parts.start(), |path, k| path >> parts.step(k));
            let head = rt.graph("lu_dynamic_head", head)?;
            let tail = rt.graph("lu_dynamic_tail", parts.rest(at))?;
            Some(Halves { head, tail })
        }
        None => None,
    };
    Ok((Graphs::around(rt, lay, main, columns, source, factor)?, halves))
}

/// Iteration k from the next panel's block to the owners' notifications.
fn iteration(
    lay: Layout,
    k: usize,
    coordinator: &Collection<Coordinator>,
    columns: &Collection<Columns>,
    mults: &Collection<MultCache>,
    allotment: &Arc<Allotment>,
) -> Path<Step, Ready> {
    let split = Node::split(&format!("dyn_panel{k}"), coordinator, route::fixed(0), move |c: &mut Coordinator, s| {
        factor_panel(lay, k, c, s)
    })
    .unbounded();
    // A few tokens in flight per member: enough to keep each busy while products travel,
    // few enough that the slots follow the members' speed (members as allotted before the
    // run; after a withdrawal the slots wrap around the fewer members).
    let p = allotment.count(k);
    let stream = Node::stream(&format!("dyn_mults{k}"), coordinator, MultStream { lay, k }).window(4 * p);
    split
        >> solve_leaf(columns, lay, k)
        >> stream
        >> mult_leaf(mults, lay, k, allotment.clone())
        >> subtract_leaf(columns, lay, Some(k))
}
