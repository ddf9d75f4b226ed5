//! The DPS graphs of the block LU: what the two pipelines share. The matrix is split into
//! column blocks ([`Blocking`]: graded in the staged pipeline, uniform in the dynamic one);
//! column block j lives on thread `lay.owner(j)` of the `columns`
//! collection (dealt back and forth in the staged pipeline, `j % T` in the dynamic one:
//! [`Placement`]) ([`Columns`]), which keeps it, the pivots of its factored panels and
//! the panels several of its blocks still need ([`PanelRef`]). Each pipeline builds its own
//! factorization graph, one stage per block column, and the same three graphs around it
//! ([`Graphs`]):
//! * [`staged`]: the `stream` and `merge-split` variants (DPS paper, Figs. 12-13), each
//!   stage an update of every later block and a collector that factors the next panel;
//! * [`dynamic`]: the `dynamic` variant (the simulator paper), each iteration a split, a solve, a stream
//!   of block multiplications on a separate collection whose membership changes, and a
//!   merge.
//!
//! After the factorization, `finish` applies the later row interchanges to the earlier
//! blocks and collects the pivots, `gather` brings the factors to rank 0 for `--verify`, and
//! `reload` puts the original matrix back between timed runs.

pub mod dynamic;
mod slab;
pub mod staged;

use std::collections::HashMap;
use std::sync::Arc;

use dps::{route, Bulk, Collection, Graph, MergeFn, Node, RouteCtx, Runtime, SimMode};
use serde::{Deserialize, Serialize};

use crate::kernel::{self, Blocking, Panel, Source};
use slab::Slab;

/// How the column blocks are dealt to the `columns` threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Placement {
    /// Block j on thread j mod T (the `dynamic` variant: its allotments, `--column-ranks`
    /// and withdrawals count on it).
    Cyclic,
    /// Dealt back and forth, threads 0..T then T−1..0 (the staged variants). Block j is
    /// updated by the j panels before it, so the last blocks carry the most work: cyclic
    /// dealing gave the last thread 64 of the 120 block updates of n = 8192 in blocks of 512
    /// on 2 threads, and the other rank waited for it (11 % of the run idle); dealt back
    /// and forth, each thread gets 60.
    Snake,
}

impl Placement {
    /// The thread of `threads` that owns block j.
    pub fn owner(self, j: usize, threads: usize) -> usize {
        match self {
            Placement::Cyclic => j % threads,
            Placement::Snake => {
                let i = j % (2 * threads);
                if i < threads {
                    i
                } else {
                    2 * threads - 1 - i
                }
            }
        }
    }
}

/// The state of a `columns` thread: its column blocks and the pivots of its panels. It is
/// serializable (the blocks as [`Bulk`]s) so that the `dynamic` variant can move the thread
/// to another rank when its rank is withdrawn (`Runtime::migrate_each`).
#[derive(Debug, Serialize, Deserialize)]
pub struct Columns {
    blocking: Blocking,
    placement: Placement,
    blocks: Slab,
    /// Block j → how many panels it has applied (`stream`, `merge-split`).
    applied: HashMap<usize, usize>,
    pivots: HashMap<usize, (Vec<i32>, i32)>,
    /// Panels received once for several blocks, with the number of uses left.
    panels: HashMap<usize, (Arc<Panel>, usize)>,
    /// `dynamic` variant: the product tiles each block still waits for in this iteration.
    tiles_left: HashMap<usize, usize>,
}

impl Columns {
    /// Thread `t` of `threads`: owns the blocks `placement` deals it.
    pub fn new(blocking: Blocking, placement: Placement, source: &Source, t: usize, threads: usize) -> Self {
        let mut c = Columns {
            blocking,
            placement,
            blocks: Slab::default(),
            applied: HashMap::new(),
            pivots: HashMap::new(),
            panels: HashMap::new(),
            tiles_left: HashMap::new(),
        };
        c.reload(source, t, threads);
        c
    }

    fn reload(&mut self, source: &Source, t: usize, threads: usize) {
        // NOALLOC: the blocks are left out (empty); their sizes follow from the blocking.
        let (b, placement) = (self.blocking, self.placement);
        let mine: Vec<usize> = (0..b.count()).filter(|&j| placement.owner(j, threads) == t).collect();
        self.blocks = Slab::default(); // freed before the new one is made
        self.blocks = Slab::new(b.n, &mine, |j| b.span(j).len(), !noalloc(), |j| source.column_block(b, j));
        self.applied = mine.into_iter().map(|j| (j, 0)).collect();
        self.pivots.clear();
        self.panels.clear();
        self.tiles_left.clear();
    }

    /// Keeps a panel for the updates that will refer to it.
    fn keep(&mut self, p: PanelRef) {
        if let PanelRef::Here(panel, uses) = p {
            self.panels.insert(panel.k, (panel, uses));
        }
    }

    /// The panel an update refers to.
    fn panel(&mut self, p: PanelRef) -> Arc<Panel> {
        match p {
            PanelRef::Here(panel, uses) => {
                if uses > 1 {
                    self.panels.insert(panel.k, (panel.clone(), uses - 1));
                }
                panel
            }
            PanelRef::Sent(k) => {
                let (panel, left) = self.panels.get_mut(&k).expect("the panel came with an earlier update");
                let panel = panel.clone();
                *left -= 1;
                if *left == 0 {
                    self.panels.remove(&k);
                }
                panel
            }
        }
    }
}

/// How an update gets its panel: each column thread receives a panel once (with the number
/// of its blocks that will use it) and later updates refer to it, so a panel crosses to
/// another rank once per thread, not once per block. The collector sends every update of a
/// thread from one place, in order, so the panel always arrives first.
#[derive(Debug, Serialize, Deserialize)]
pub enum PanelRef {
    /// The panel itself, and how many updates of this thread will use it.
    Here(Arc<Panel>, usize),
    /// Panel k, sent with an earlier update.
    Sent(usize),
}

/// Whether this thread runs a NOALLOC simulation (blocks and panels left out).
fn noalloc() -> bool {
    dps::simulated() == Some(SimMode::Noalloc)
}

/// Where the column blocks are: n×n in blocks of r, block j on thread `owner(j)` of the
/// `columns` collection.
#[derive(Clone, Copy, Debug)]
struct Layout {
    blocking: Blocking,
    /// Block columns (and steps).
    nb: usize,
    /// Threads of the `columns` collection.
    owners: usize,
    placement: Placement,
}

impl Layout {
    /// The blocks of `blocking` on the threads of `columns`.
    fn of(blocking: Blocking, columns: &Collection<Columns>, placement: Placement) -> Self {
        Layout { blocking, nb: blocking.count(), owners: columns.len(), placement }
    }

    /// The `columns` thread that owns block j.
    fn owner(&self, j: usize) -> usize {
        self.placement.owner(j, self.owners)
    }

    /// How the update of block j gets `panel`: the panel itself if the block's thread is not
    /// yet in `sent_to` (with how many of its blocks will use it), else a reference to it.
    fn panel_ref(&self, panel: &Arc<Panel>, j: usize, sent_to: &mut [bool]) -> PanelRef {
        let t = self.owner(j);
        if std::mem::replace(&mut sent_to[t], true) {
            PanelRef::Sent(panel.k)
        } else {
            let uses = (panel.k + 1..self.nb).filter(|&b| self.owner(b) == t).count();
            PanelRef::Here(panel.clone(), uses)
        }
    }
}

/// The graphs of one problem size, for either pipeline: the factorization (returning `T`:
/// the count of blocks done in the staged pipeline, the iteration stamps in the dynamic one)
/// and the three graphs around it.
#[derive(Debug)]
pub struct Graphs<T> {
    /// The factorization proper.
    pub factor: Graph<(), T>,
    /// Applies later interchanges to earlier blocks and returns the global pivots.
    pub finish: Graph<(), (Vec<i32>, i32)>,
    /// Gathers the factors on rank 0 (column-major n × n).
    pub gather: Graph<(), Bulk<f64>>,
    /// Restores the original matrix (between timed repetitions).
    pub reload: Graph<(), u64>,
}

impl<T> Graphs<T> {
    /// The graphs around `factor` (collective, built after it): `finish`, `gather` and
    /// `reload` for the column blocks of `columns`, laid out as `lay`.
    fn around(
        rt: &Runtime,
        lay: Layout,
        main: &Collection<()>,
        columns: &Collection<Columns>,
        source: &Source,
        factor: Graph<(), T>,
    ) -> anyhow::Result<Self> {
        let (blocking, threads) = (lay.blocking, lay.owners);
        let n = blocking.n;
        let all_threads = move |_: &mut (), _: ()| 0..threads;
        let pivots = Node::split("ask_pivots", main, route::fixed(0), all_threads);
        let give = Node::leaf(
            "give_pivots",
            columns,
            |t: &usize, _: &RouteCtx| *t,
            |c: &mut Columns, _t: usize| {
                c.pivots.iter().map(|(k, (p, info))| (*k, p.clone(), *info)).collect::<Vec<_>>()
            },
        );
        let collect = Node::merge(
            "global_pivots",
            main,
            MergeFn::new(
                move |_: &mut ()| (vec![0i32; n], 0i32),
                move |_, (ipiv, info): &mut (Vec<i32>, i32), panels: Vec<(usize, Vec<i32>, i32)>| {
                    for (k, p, inf) in panels {
                        let s = blocking.span(k).start;
                        for (i, v) in p.iter().enumerate() {
                            ipiv[s + i] = v + s as i32;
                        }
                        if inf > 0 && *info == 0 {
                            *info = inf + s as i32;
                        }
                    }
                },
                |_, acc| acc,
            ),
        );
        let spread =
            Node::split("spread_pivots", main, route::fixed(0), move |_: &mut (), (ipiv, info): (Vec<i32>, i32)| {
                let ipiv = Arc::new(ipiv);
                (0..threads).map(move |t| (t, ipiv.clone(), info))
            });
        let swap = Node::leaf(
            "swap_left",
            columns,
            |t: &(usize, Arc<Vec<i32>>, i32), _: &RouteCtx| t.0,
            |c: &mut Columns, (_, ipiv, info): (usize, Arc<Vec<i32>>, i32)| {
                let (n, blocking) = (c.blocking.n, c.blocking);
                for j in c.blocks.blocks().collect::<Vec<_>>() {
                    let block = c.blocks.get_mut(j);
                    let cols = blocking.span(j);
                    let (s, w) = (cols.end, cols.len());
                    // Charged, not made, under PDEXEC and NOALLOC (blocks empty in NOALLOC):
                    // one read and one write of the rows below the block.
                    if s == n || kernel::skip_copy(2 * (n - s) * w) {
                        continue;
                    }
                    kernel::swap_rows_once(block, n, w, s, &ipiv[s..]);
                }
                (ipiv, info)
            },
        );
        let keep = Node::merge(
            "pivots",
            main,
            MergeFn::new(
                |_: &mut ()| None,
                |_, acc: &mut Option<(Arc<Vec<i32>>, i32)>, x| *acc = Some(x),
                |_, acc| {
                    let (ipiv, info) = acc.expect("at least one column thread");
                    (ipiv.to_vec(), info)
                },
            ),
        );
        let finish = rt.graph("finish", pivots >> give >> collect >> spread >> swap >> keep)?;

        let ask = Node::split("ask_blocks", main, route::fixed(0), all_threads);
        let give = Node::leaf(
            "give_blocks",
            columns,
            |t: &usize, _: &RouteCtx| *t,
            |c: &mut Columns, _t: usize| c.blocks.blocks().map(|j| (j, c.blocks.take(j))).collect::<Vec<_>>(),
        );
        let assemble = Node::merge(
            "assemble",
            main,
            MergeFn::new(
                move |_: &mut ()| vec![0.0; n * n],
                move |_, lu: &mut Vec<f64>, blocks: Vec<(usize, Bulk<f64>)>| {
                    for (j, b) in blocks {
                        let cols = blocking.span(j);
                        lu[cols.start * n..cols.end * n].copy_from_slice(&b);
                    }
                },
                |_, lu| Bulk(lu),
            ),
        );
        let gather = rt.graph("gather", ask >> give >> assemble)?;

        let ask = Node::split("ask_reload", main, route::fixed(0), all_threads);
        let source = source.clone();
        let reload = Node::leaf(
            "reload",
            columns,
            |t: &usize, _: &RouteCtx| *t,
            move |c: &mut Columns, t: usize| {
                c.reload(&source, t, threads);
                1u64
            },
        );
        let count =
            Node::merge("reloaded", main, MergeFn::new(|_: &mut ()| 0u64, |_, c: &mut u64, x: u64| *c += x, |_, c| c));
        let reload = rt.graph("reload", ask >> reload >> count)?;
        Ok(Graphs { factor, finish, gather, reload })
    }
}

#[cfg(test)]
mod tests {
    use super::Placement;

    /// The block updates each thread does: block j applies the j panels before it.
    fn updates(placement: Placement, blocks: usize, threads: usize) -> Vec<usize> {
        let mut per_thread = vec![0; threads];
        for j in 0..blocks {
            per_thread[placement.owner(j, threads)] += j;
        }
        per_thread
    }

    #[test]
    fn snake_deals_back_and_forth_and_balances_the_updates() {
        let owners: Vec<usize> = (0..8).map(|j| Placement::Snake.owner(j, 3)).collect();
        assert_eq!(owners, [0, 1, 2, 2, 1, 0, 0, 1]);
        assert_eq!(updates(Placement::Cyclic, 16, 2), [56, 64]);
        assert_eq!(updates(Placement::Snake, 16, 2), [60, 60]);
        // Whole rounds there and back (2T blocks each): every thread gets the same.
        for (blocks, threads) in [(16, 4), (32, 2), (36, 3), (64, 8)] {
            let u = updates(Placement::Snake, blocks, threads);
            let c = updates(Placement::Cyclic, blocks, threads);
            let spread = |v: &[usize]| v.iter().max().unwrap() - v.iter().min().unwrap();
            assert!(spread(&u) == 0 && spread(&c) > 0, "{blocks} blocks on {threads}: snake {u:?}, cyclic {c:?}");
        }
    }
}
