//! The DPS graph of the block LU, built to the size of the problem (one stage per block
//! column), after the DPS paper's Figures 12-13.
//!
//! Column block j lives on thread `j % T` of the `columns` collection. Each stage k is an
//! `update` leaf (a column block applies panel k) followed by a collector on the `panels`
//! thread of the rank that owns block k+1:
//! * `stream` variant: the collector is a stream. As soon as block k+1 has applied panel k
//!   it factors panel k+1 and posts its updates to every block that already applied panel
//!   k; the others get theirs as their notifications arrive. Panel k+1 so overlaps the rest
//!   of step k, and a block always applies panels in order.
//! * `merge-split` variant: the collector is a merge (every block applies panel k) followed
//!   by a split that factors panel k+1 and sends its updates: no overlap between steps.
//!
//! The factored block k goes back to its owner (`Store`), which keeps its pivots. After the
//! last stage, two small graphs apply the later row interchanges to the earlier blocks and
//! collect the pivots; a third gathers the factors on rank 0 for `--verify`.

use std::collections::HashMap;
use std::sync::Arc;

use dps::{route, Bulk, Collection, Graph, MaybeBulk, MergeFn, Node, Path, Posted, RouteCtx, Runtime, SimMode, Stream};
use serde::{Deserialize, Serialize};

use crate::kernel::{self, span, Panel, Source};

/// Which collector the stages use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pipelining {
    /// Streams: the next panel starts while the current update goes on.
    Stream,
    /// A full merge, then a split, at every step.
    MergeSplit,
}

/// The state of a `columns` thread: its column blocks and the pivots of its panels.
#[derive(Debug)]
pub struct Columns {
    pub(crate) n: usize,
    pub(crate) r: usize,
    source: Source,
    pub(crate) blocks: HashMap<usize, Vec<f64>>,
    pub(crate) pivots: HashMap<usize, (Vec<i32>, i32)>,
    /// Panels received once for several blocks, with the number of uses left.
    panels: HashMap<usize, (Arc<Panel>, usize)>,
    /// `dynamic` variant: the product tiles each block still waits for in this iteration.
    pub(crate) tiles_left: HashMap<usize, usize>,
}

impl Columns {
    /// Thread `t` of `threads`: owns blocks t, t + threads, ...
    pub fn new(n: usize, r: usize, source: Source, t: usize, threads: usize) -> Self {
        let mut c = Columns {
            n,
            r,
            source,
            blocks: HashMap::new(),
            pivots: HashMap::new(),
            panels: HashMap::new(),
            tiles_left: HashMap::new(),
        };
        c.reload(t, threads);
        c
    }

    fn reload(&mut self, t: usize, threads: usize) {
        let nb = self.n.div_ceil(self.r);
        // NOALLOC: the blocks are left out (empty); their sizes follow from n, r and j.
        let block = |j| if noalloc() { Vec::new() } else { self.source.column_block(self.n, self.r, j) };
        self.blocks = (t..nb).step_by(threads).map(|j| (j, block(j))).collect();
        self.pivots.clear();
        self.panels.clear();
        self.tiles_left.clear();
    }

    /// The panel an update refers to.
    pub(crate) fn panel(&mut self, p: PanelRef) -> Arc<Panel> {
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

/// Work for a column block. Step −1 is written `k = usize::MAX`.
#[derive(Debug, Serialize, Deserialize)]
pub enum Work {
    /// Start: block 0 leaves to be factored.
    Touch {
        /// Block.
        j: usize,
    },
    /// Apply a panel to block j.
    Update {
        /// Block.
        j: usize,
        /// The factored panel.
        panel: PanelRef,
    },
    /// Block k, factored, returns to its owner with its pivots.
    Store {
        /// Block.
        k: usize,
        /// The factored block.
        col: MaybeBulk<f64>,
        /// Its pivots and LAPACK info.
        ipiv: Vec<i32>,
        /// LAPACK info.
        info: i32,
    },
}

/// Block j has applied the current panel; it carries the block itself if it is the next panel.
#[derive(Debug, Serialize, Deserialize)]
pub struct Done {
    j: usize,
    next_panel: Option<MaybeBulk<f64>>,
}

/// Whether this thread runs a NOALLOC simulation (blocks and panels left out).
fn noalloc() -> bool {
    dps::simulated() == Some(SimMode::Noalloc)
}

/// Column block j (n × w) as a token: absent under NOALLOC, where the block is empty.
fn ship(block: Vec<f64>, n: usize, r: usize, j: usize) -> MaybeBulk<f64> {
    if noalloc() {
        MaybeBulk::Absent(n * span(n, r, j).len())
    } else {
        MaybeBulk::Data(Bulk(block))
    }
}

/// The column block a token brought (empty when absent, under NOALLOC).
fn unship(block: MaybeBulk<f64>) -> Vec<f64> {
    block.into_data().map_or_else(Vec::new, Bulk::into_inner)
}

/// The graphs of one problem size.
#[derive(Debug)]
pub struct Graphs {
    /// The factorization proper.
    pub factor: Graph<(), u64>,
    /// Applies later interchanges to earlier blocks and returns the global pivots.
    pub finish: Graph<(), (Vec<i32>, i32)>,
    /// Gathers the factors on rank 0 (column-major n × n).
    pub gather: Graph<(), Bulk<f64>>,
    /// Restores the original matrix (between timed repetitions).
    pub reload: Graph<(), u64>,
}

/// Which thread of each collection does what.
#[derive(Clone, Copy, Debug)]
struct Layout {
    n: usize,
    r: usize,
    nb: usize,
    threads: usize,
}

impl Layout {
    fn owner(&self, j: usize) -> usize {
        j % self.threads
    }
}

fn update_leaf(name: &str, columns: &Collection<Columns>, lay: Layout, k: Option<usize>) -> Node<Work, Done> {
    let route = move |w: &Work, _: &RouteCtx| match w {
        Work::Touch { j } | Work::Update { j, .. } => lay.owner(*j),
        Work::Store { k, .. } => lay.owner(*k),
    };
    Node::leaf(name, columns, route, move |c: &mut Columns, w: Work| {
        let next = k.map_or(0, |k| k + 1);
        match w {
            Work::Touch { j } if j != next => Done { j, next_panel: None },
            Work::Touch { j } => {
                let block = c.blocks.remove(&j).expect("the owner holds the block");
                Done { j, next_panel: Some(ship(block, c.n, c.r, j)) }
            }
            Work::Update { j, panel } => {
                let panel = c.panel(panel);
                let mut block = c.blocks.remove(&j).expect("the owner holds the block");
                kernel::apply_panel_to(&mut block, c.n, c.r, span(c.n, c.r, j).len(), &panel);
                if j == next {
                    Done { j, next_panel: Some(ship(block, c.n, c.r, j)) }
                } else {
                    c.blocks.insert(j, block);
                    Done { j, next_panel: None }
                }
            }
            Work::Store { k, col, ipiv, info } => {
                c.blocks.insert(k, unship(col));
                c.pivots.insert(k, (ipiv, info));
                Done { j: k, next_panel: None }
            }
        }
    })
}

/// Collects the notifications of step k (None: the start) and sends out step k+1.
struct Collector {
    lay: Layout,
    next: usize,
}

/// A collector's accumulator: the next panel once factored, the blocks waiting for it, and
/// the column threads that already have it.
struct StepState {
    panel: Option<Arc<Panel>>,
    waiting: Vec<usize>,
    sent_to: Vec<bool>,
}

impl StepState {
    fn new(lay: Layout) -> Self {
        StepState { panel: None, waiting: Vec::new(), sent_to: vec![false; lay.threads] }
    }
}

impl Collector {
    /// Factors the next panel from its block: the block goes home, waiting blocks get updates.
    fn factor(&self, block: MaybeBulk<f64>, acc: &mut StepState, out: &mut Vec<Work>) {
        let mut block = unship(block);
        let (n, r) = (self.lay.n, self.lay.r);
        let panel = Arc::new(kernel::factor_panel(&mut block, n, r, self.next));
        let (ipiv, info) = (panel.ipiv.clone(), panel.info);
        out.push(Work::Store { k: self.next, col: ship(block, n, r, self.next), ipiv, info });
        // The block of the panel after this one first: it is on the critical path.
        if let Some(pos) = acc.waiting.iter().position(|&j| j == self.next + 1) {
            let j = acc.waiting.remove(pos);
            acc.waiting.insert(0, j);
        }
        acc.panel = Some(panel);
        for j in std::mem::take(&mut acc.waiting) {
            out.push(self.update(j, acc));
        }
    }

    /// The update of block j: with the panel if its thread does not have it yet.
    fn update(&self, j: usize, acc: &mut StepState) -> Work {
        let panel = acc.panel.as_ref().expect("factored");
        let t = self.lay.owner(j);
        if std::mem::replace(&mut acc.sent_to[t], true) {
            Work::Update { j, panel: PanelRef::Sent(self.next) }
        } else {
            let uses = (self.next + 1..self.lay.nb).filter(|&b| self.lay.owner(b) == t).count();
            Work::Update { j, panel: PanelRef::Here(panel.clone(), uses) }
        }
    }

    fn notified(&self, done: Done, acc: &mut StepState, out: &mut Vec<Work>) {
        match done.next_panel {
            Some(block) => self.factor(block, acc, out),
            None if done.j > self.next => match &acc.panel {
                Some(_) => out.push(self.update(done.j, acc)),
                None => acc.waiting.push(done.j),
            },
            None => {} // a block already done with, or the previous panel coming home
        }
    }

    /// The collector thread of the stage after this one: on the rank owning block next + 1.
    fn merge_index(&self, columns_rank: &[usize]) -> usize {
        match self.next + 1 {
            j if j < self.lay.nb => columns_rank[self.lay.owner(j)],
            _ => 0, // the final merge, on rank 0's main thread
        }
    }
}

struct StreamCollector(Collector, Arc<Vec<usize>>);

impl Stream<()> for StreamCollector {
    type In = Done;
    type Out = Work;
    type Acc = StepState;
    fn start(&self, _: &mut ()) -> StepState {
        StepState::new(self.0.lay)
    }
    fn input(&self, _: &mut (), acc: &mut StepState, done: Done, out: &mut Posted<Work>) {
        let mut work = Vec::new();
        self.0.notified(done, acc, &mut work);
        work.into_iter().for_each(|w| out.post(w));
    }
    fn finish(&self, _: &mut (), acc: StepState, _: &mut Posted<Work>) {
        assert!(acc.waiting.is_empty() && acc.panel.is_some(), "step {}: the panel block never arrived", self.0.next);
    }
    fn merge_thread(&self, _: &StepState, _: usize) -> usize {
        self.0.merge_index(&self.1)
    }
}

/// Everything a merge-split collector carries from its merge to its split.
#[derive(Debug, Serialize, Deserialize)]
pub struct Step {
    block: Option<MaybeBulk<f64>>,
    ready: Vec<usize>,
}

fn collector(
    lay: Layout,
    k: Option<usize>,
    panels: &Collection<()>,
    columns_rank: &Arc<Vec<usize>>,
    how: Pipelining,
) -> Path<Done, Work> {
    let next = k.map_or(0, |k| k + 1);
    let name = format!("collect{}", k.map_or("_start".into(), |k| k.to_string()));
    match how {
        Pipelining::Stream => {
            Node::stream(&name, panels, StreamCollector(Collector { lay, next }, columns_rank.clone())).into()
        }
        Pipelining::MergeSplit => {
            let merge = Node::merge(
                &name,
                panels,
                MergeFn::new(
                    |_: &mut ()| Step { block: None, ready: Vec::new() },
                    move |_, s: &mut Step, d: Done| match d.next_panel {
                        Some(b) => s.block = Some(b),
                        None if d.j > next => s.ready.push(d.j),
                        None => {}
                    },
                    |_, s| s,
                ),
            );
            let rank = columns_rank[lay.owner(next)];
            let ranks = columns_rank.clone();
            let split =
                Node::split(&format!("split{next}"), panels, route::fixed(rank), move |_: &mut (), mut s: Step| {
                    let c = Collector { lay, next };
                    let mut acc = StepState::new(lay);
                    acc.waiting = std::mem::take(&mut s.ready);
                    let mut out = Vec::new();
                    c.factor(s.block.take().expect("the panel block arrived"), &mut acc, &mut out);
                    out
                })
                .merge_on(move |_, _| Collector { lay, next }.merge_index(&ranks));
            merge >> split
        }
    }
}

impl Graphs {
    /// Builds the graphs for an n×n matrix in blocks of r (collective). `panels` must have
    /// one thread per rank, thread i on rank i (mapping `"all"`).
    pub fn build(
        rt: &Runtime,
        (n, r): (usize, usize),
        main: &Collection<()>,
        columns: &Collection<Columns>,
        panels: &Collection<()>,
        how: Pipelining,
    ) -> anyhow::Result<Self> {
        let lay = Layout { n, r, nb: n.div_ceil(r), threads: columns.len() };
        let columns_rank: Arc<Vec<usize>> = Arc::new((0..columns.len()).map(|t| columns.rank_of(t)).collect());
        let first = columns_rank[lay.owner(0)];
        let start = Node::split("start", main, route::fixed(0), move |_: &mut (), _: ()| {
            (0..lay.nb).map(|j| Work::Touch { j })
        })
        .merge_on(move |_, _| first)
        .unbounded();
        let mut path: Path<(), Work> = start
            >> update_leaf("update_start", columns, lay, None)
            >> collector(lay, None, panels, &columns_rank, how);
        for k in 0..lay.nb - 1 {
            path = path
                >> update_leaf(&format!("update{k}"), columns, lay, Some(k))
                >> collector(lay, Some(k), panels, &columns_rank, how);
        }
        let last = update_leaf(&format!("update{}", lay.nb - 1), columns, lay, Some(lay.nb - 1));
        let end =
            Node::merge("end", main, MergeFn::new(|_: &mut ()| 0u64, |_, c: &mut u64, _d: Done| *c += 1, |_, c| c));
        let factor = rt.graph("lu", path >> last >> end)?;
        let (finish, gather, reload) = helper_graphs(rt, (n, r), main, columns)?;
        Ok(Graphs { factor, finish, gather, reload })
    }
}

/// The graphs around a factorization: `finish` (later interchanges applied to earlier
/// blocks, global pivots), `gather` and `reload`, for the column blocks of `columns`
/// (block j on thread j % threads). Shared by every parallel variant.
#[allow(clippy::type_complexity)]
pub(crate) fn helper_graphs(
    rt: &Runtime,
    (n, r): (usize, usize),
    main: &Collection<()>,
    columns: &Collection<Columns>,
) -> anyhow::Result<(Graph<(), (Vec<i32>, i32)>, Graph<(), Bulk<f64>>, Graph<(), u64>)> {
    let threads = columns.len();
    let all_threads = move |_: &mut (), _: ()| 0..threads;
    let pivots = Node::split("ask_pivots", main, route::fixed(0), all_threads);
    let give = Node::leaf(
        "give_pivots",
        columns,
        |t: &usize, _: &RouteCtx| *t,
        |c: &mut Columns, _t: usize| c.pivots.iter().map(|(k, (p, info))| (*k, p.clone(), *info)).collect::<Vec<_>>(),
    );
    let collect = Node::merge(
        "global_pivots",
        main,
        MergeFn::new(
            move |_: &mut ()| (vec![0i32; n], 0i32),
            move |_, (ipiv, info): &mut (Vec<i32>, i32), panels: Vec<(usize, Vec<i32>, i32)>| {
                for (k, p, inf) in panels {
                    let s = k * r;
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
            let (n, r) = (c.n, c.r);
            let nb = n.div_ceil(r);
            for (&j, block) in c.blocks.iter_mut() {
                for k in j + 1..nb {
                    let rows = span(n, r, k);
                    // Charged, not made, under PDEXEC and NOALLOC (blocks empty in NOALLOC).
                    if kernel::skip_swaps(rows.len(), span(n, r, j).len()) {
                        continue;
                    }
                    let local: Vec<i32> = ipiv[rows.clone()].iter().map(|v| v - rows.start as i32).collect();
                    let w = block.len() / n;
                    dps_dense::blas::swap_rows(block, n, w, rows.start, &local);
                }
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
        |c: &mut Columns, _t: usize| c.blocks.iter().map(|(j, b)| (*j, Bulk(b.clone()))).collect::<Vec<_>>(),
    );
    let assemble = Node::merge(
        "assemble",
        main,
        MergeFn::new(
            move |_: &mut ()| vec![0.0; n * n],
            move |_, lu: &mut Vec<f64>, blocks: Vec<(usize, Bulk<f64>)>| {
                for (j, b) in blocks {
                    lu[span(n, r, j).start * n..span(n, r, j).end * n].copy_from_slice(&b);
                }
            },
            |_, lu| Bulk(lu),
        ),
    );
    let gather = rt.graph("gather", ask >> give >> assemble)?;

    let ask = Node::split("ask_reload", main, route::fixed(0), all_threads);
    let reload = Node::leaf(
        "reload",
        columns,
        |t: &usize, _: &RouteCtx| *t,
        move |c: &mut Columns, t: usize| {
            c.reload(t, threads);
            1u64
        },
    );
    let count =
        Node::merge("reloaded", main, MergeFn::new(|_: &mut ()| 0u64, |_, c: &mut u64, x: u64| *c += x, |_, c| c));
    let reload = rt.graph("reload", ask >> reload >> count)?;
    Ok((finish, gather, reload))
}
