//! The staged pipeline of the `stream` and `merge-split` variants: the factorization graph
//! built to the size of the problem (one stage per block column), after the DPS paper's
//! Figures 12-13.
//!
//! Column block j lives on thread `Placement::Snake.owner(j, T)` of the `columns` collection
//! (dealt 0..T then T−1..0, so that the threads share the last, most updated blocks). Each
//! stage k is an
//! `update` leaf (a column block applies panel k) followed by a collector on the `panels`
//! thread of the rank that owns block k+1:
//! * `stream` variant: the collector is a stream. Block k+1's update goes first on its
//!   thread (`first_if`), and its owner factors panel k+1 in place as soon as it has applied
//!   panel k: on the thread that updates the rank's other blocks, so that the panel, on the
//!   critical path, never shares the core with them (on the `panels` thread it did, and took
//!   2-5 times its own time at the end of the factorization). The collector sends panel k+1
//!   at once to every column thread that will need it (`Work::Panel`: its transfer overlaps
//!   the thread's work instead of following the thread's notifications), posts panel k+1's
//!   updates to every block that already applied panel k, and the others' as their
//!   notifications arrive. Panel k+1 so overlaps the rest of step k, and a block always
//!   applies panels in order.
//! * `merge-split` variant: the collector is a merge (every block applies panel k) followed
//!   by a split that factors panel k+1 and sends its updates: no overlap between steps. The
//!   factored block goes back to its owner (`Store`), which keeps its pivots.
//!
//! The graphs around the factorization are the shared ones of [`Graphs`].

use std::sync::Arc;

use dps::{route, Bulk, Collection, MaybeBulk, MergeFn, Node, Path, Posted, RouteCtx, Runtime, Stream};
use serde::{Deserialize, Serialize};

use super::{noalloc, Columns, Graphs, Layout, PanelRef, Placement};
use crate::kernel::{self, Blocking, Panel, Source};

/// Which collector the stages use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pipelining {
    /// Streams: the next panel starts while the current update goes on.
    Stream,
    /// A full merge, then a split, at every step.
    MergeSplit,
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
    /// A factored panel for column thread t, sent as soon as it is factored: the thread's
    /// updates refer to it (their notifications and the panel's transfer no longer make
    /// one round trip).
    Panel {
        /// Column thread.
        t: usize,
        /// The panel and how many of the thread's updates will use it.
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

/// The `j` of a [`Done`] that notifies no block (a [`Work::Panel`] delivered).
const NO_BLOCK: usize = usize::MAX;

/// Block j has applied the current panel; the next panel's block also carries that panel.
#[derive(Debug, Serialize, Deserialize)]
pub struct Done {
    j: usize,
    next_panel: Option<NextPanel>,
}

/// How the next panel reaches its collector.
#[derive(Debug, Serialize, Deserialize)]
pub enum NextPanel {
    /// The block itself, for the collector to factor (`merge-split`: the paper's split
    /// factors it).
    Block(MaybeBulk<f64>),
    /// Factored in place by its owner (`stream`): on the thread that updates the other
    /// blocks of its rank, the panel never shares the core with them, and the block stays.
    Factored(Arc<Panel>),
}

/// Column block j (n × w) as a token: absent under NOALLOC, where the block is empty.
fn ship(block: Bulk<f64>, blocking: Blocking, j: usize) -> MaybeBulk<f64> {
    if noalloc() {
        MaybeBulk::Absent(blocking.n * blocking.span(j).len())
    } else {
        MaybeBulk::Data(block)
    }
}

/// The column block a token brought (empty when absent, under NOALLOC).
fn unship(block: MaybeBulk<f64>) -> Bulk<f64> {
    block.into_data().unwrap_or_else(|| Bulk(Vec::new()))
}

fn update_leaf(
    name: &str,
    columns: &Collection<Columns>,
    lay: Layout,
    k: Option<usize>,
    how: Pipelining,
) -> Node<Work, Done> {
    let route = move |w: &Work, _: &RouteCtx| match w {
        Work::Touch { j } | Work::Update { j, .. } => lay.owner(*j),
        Work::Panel { t, .. } => *t,
        Work::Store { k, .. } => lay.owner(*k),
    };
    let next = k.map_or(0, |k| k + 1);
    // The block that becomes the next panel is on the critical path: its update goes ahead
    // of the previous step's updates still queued on its thread. So does a panel sent
    // ahead: this operation's updates, which refer to it, stay behind it.
    let critical = move |w: &Work| matches!(w, Work::Update { j, .. } if *j == next) || matches!(w, Work::Panel { .. });
    Node::leaf(name, columns, route, move |c: &mut Columns, w: Work| match w {
        Work::Touch { j } if j != next => Done { j, next_panel: None },
        Work::Touch { j } => Done { j, next_panel: Some(c.next_panel(j, how)) },
        Work::Update { j, panel } => {
            let panel = c.panel(panel);
            c.apply(&panel, j, next);
            let next_panel = (j == next).then(|| c.next_panel(j, how));
            Done { j, next_panel }
        }
        Work::Panel { panel, .. } => {
            c.keep(panel);
            Done { j: NO_BLOCK, next_panel: None }
        }
        Work::Store { k, col, ipiv, info } => {
            c.blocks.put(k, &unship(col));
            c.pivots.insert(k, (ipiv, info));
            Done { j: k, next_panel: None }
        }
    })
    .first_if(critical)
}

impl Columns {
    /// Block k, which has applied every panel before it, as the next panel: factored here
    /// (its pivots kept) or handed over whole.
    fn next_panel(&mut self, k: usize, how: Pipelining) -> NextPanel {
        let blocking = self.blocking;
        match how {
            Pipelining::Stream => {
                let panel = kernel::factor_panel(self.blocks.get_mut(k), blocking, k);
                self.pivots.insert(k, (panel.ipiv.clone(), panel.info));
                NextPanel::Factored(Arc::new(panel))
            }
            Pipelining::MergeSplit => NextPanel::Block(ship(self.blocks.take(k), blocking, k)),
        }
    }

    /// Applies `panel` (step k) to block j, unless a batch already did (its own update may
    /// come late: behind a later step's batch that took the block too). Any block but the two
    /// on the critical path (`next`, the next panel's, and the one after it) goes with every
    /// block of this thread that is ready for this panel too
    /// (has applied the panels before it), each run of neighbours in one product (`Slab`):
    /// MKL's dgemm makes 15-20 % more of 2048-3584 columns than of one block's 512. Their
    /// own updates then find them done. Not while one of the two critical blocks here still
    /// waits for this panel: its update would wait for the long product.
    fn apply(&mut self, panel: &Panel, j: usize, next: usize) {
        let k = panel.k;
        match self.applied[&j] {
            done if done > k => return,
            ready => assert_eq!(ready, k, "block {j} applies panel {k} after {ready} panels"),
        }
        let critical_waits = (next..=next + 1).any(|b| self.applied.get(&b).is_some_and(|&a| a <= k));
        let batch: Vec<usize> = if j <= next + 1 || critical_waits {
            vec![j]
        } else {
            self.blocks.blocks().filter(|b| *b > next + 1 && self.applied[b] == k).collect()
        };
        for (first, last) in self.blocks.runs(&batch) {
            let (cols, w) = self.blocks.run_mut(first, last);
            kernel::apply_panel_to(cols, self.blocking.n, w, panel);
        }
        for b in batch {
            *self.applied.get_mut(&b).expect("a block of this thread") += 1;
        }
    }
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
        StepState { panel: None, waiting: Vec::new(), sent_to: vec![false; lay.owners] }
    }
}

impl Collector {
    /// The next panel has come: factors it if it came as a block (which then goes home), and
    /// sends the waiting blocks their updates.
    fn panel_arrived(&self, next_panel: NextPanel, acc: &mut StepState, out: &mut Vec<Work>) {
        let panel = match next_panel {
            NextPanel::Factored(panel) => panel,
            NextPanel::Block(block) => {
                let mut block = unship(block);
                let blocking = self.lay.blocking;
                let panel = Arc::new(kernel::factor_panel(&mut block, blocking, self.next));
                let (ipiv, info) = (panel.ipiv.clone(), panel.info);
                out.push(Work::Store { k: self.next, col: ship(block, blocking, self.next), ipiv, info });
                panel
            }
        };
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

    /// `stream`: every thread that will need the panel and does not have it yet gets it
    /// now, ahead of its updates, which wait for the thread's notifications.
    fn panel_ahead(&self, acc: &mut StepState, out: &mut Vec<Work>) {
        let panel = acc.panel.clone().expect("factored");
        for t in 0..self.lay.owners {
            if acc.sent_to[t] {
                continue;
            }
            if let Some(j) = (self.next + 1..self.lay.nb).find(|&b| self.lay.owner(b) == t) {
                out.push(Work::Panel { t, panel: self.lay.panel_ref(&panel, j, &mut acc.sent_to) });
            }
        }
    }

    /// The update of block j: with the panel if its thread does not have it yet.
    fn update(&self, j: usize, acc: &mut StepState) -> Work {
        let panel = acc.panel.as_ref().expect("factored");
        Work::Update { j, panel: self.lay.panel_ref(panel, j, &mut acc.sent_to) }
    }

    fn notified(&self, done: Done, acc: &mut StepState, out: &mut Vec<Work>) {
        if done.j == NO_BLOCK {
            return; // a panel delivered
        }
        match done.next_panel {
            Some(next_panel) => {
                self.panel_arrived(next_panel, acc, out);
                self.panel_ahead(acc, out);
            }
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
    block: Option<NextPanel>,
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
                    c.panel_arrived(s.block.take().expect("the panel block arrived"), &mut acc, &mut out);
                    out
                })
                .merge_on(move |_, _| Collector { lay, next }.merge_index(&ranks));
            merge >> split
        }
    }
}

/// Builds the graphs of the staged pipeline for an n×n matrix in blocks of r (collective).
/// `source` is the matrix `reload` restores. `panels` must have one thread per rank, thread i on rank i (mapping `"all"`). The
/// factorization returns the count of the last stage's notifications.
///
/// # Errors
/// The runtime refuses a graph.
pub fn build(
    rt: &Runtime,
    blocking: Blocking,
    source: &Source,
    main: &Collection<()>,
    columns: &Collection<Columns>,
    panels: &Collection<()>,
    how: Pipelining,
) -> anyhow::Result<Graphs<u64>> {
    let lay = Layout::of(blocking, columns, Placement::Snake);
    let columns_rank: Arc<Vec<usize>> = Arc::new((0..columns.len()).map(|t| columns.rank_of(t)).collect());
    let first = columns_rank[lay.owner(0)];
    let start =
        Node::split("start", main, route::fixed(0), move |_: &mut (), _: ()| (0..lay.nb).map(|j| Work::Touch { j }))
            .merge_on(move |_, _| first)
            .unbounded();
    let mut path: Path<(), Work> = start
        >> update_leaf("update_start", columns, lay, None, how)
        >> collector(lay, None, panels, &columns_rank, how);
    for k in 0..lay.nb - 1 {
        path = path
            >> update_leaf(&format!("update{k}"), columns, lay, Some(k), how)
            >> collector(lay, Some(k), panels, &columns_rank, how);
    }
    let last = update_leaf(&format!("update{}", lay.nb - 1), columns, lay, Some(lay.nb - 1), how);
    let end = Node::merge("end", main, MergeFn::new(|_: &mut ()| 0u64, |_, c: &mut u64, _d: Done| *c += 1, |_, c| c));
    let factor = rt.graph("lu", path >> last >> end)?;
    Graphs::around(rt, lay, main, columns, source, factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The update of one block for panel 0 reaches its thread after a batch of panel 1 took
    /// the block too (seen across emulated nodes): it must find the block done, and every
    /// block must apply each panel once, in order, as a one-by-one factorization does.
    #[test]
    fn a_late_update_finds_its_block_done_by_a_later_batch() {
        let blocking = Blocking::uniform(12, 2); // blocks 0..6, all on one thread
        let source = Source::Random(7);
        let mut batched = Columns::new(blocking, Placement::Snake, &source, 0, 1);
        let mut single = Columns::new(blocking, Placement::Snake, &source, 0, 1);
        let p0 = single.next_panel(0, Pipelining::Stream);
        let NextPanel::Factored(p0) = p0 else { unreachable!() };
        batched.next_panel(0, Pipelining::Stream);
        // Panel 0: the critical blocks 1 and 2 alone, then block 3 takes 3, 4, 5 along.
        for j in [1, 2, 3] {
            batched.apply(&p0, j, 1);
        }
        assert_eq!((3..6).map(|j| batched.applied[&j]).collect::<Vec<_>>(), [1, 1, 1]);
        let NextPanel::Factored(p1) = batched.next_panel(1, Pipelining::Stream) else { unreachable!() };
        // Panel 1: blocks 2 and 3 alone (critical), block 4 takes 5 along, before the late
        // update of block 5 for panel 0 arrives.
        for j in [2, 3, 4] {
            batched.apply(&p1, j, 2);
        }
        batched.apply(&p0, 5, 1);
        batched.apply(&p1, 5, 2);
        assert_eq!((2..6).map(|j| batched.applied[&j]).collect::<Vec<_>>(), [2, 2, 2, 2]);
        for j in 1..6 {
            single.apply(&p0, j, 1);
        }
        let NextPanel::Factored(q1) = single.next_panel(1, Pipelining::Stream) else { unreachable!() };
        for j in 2..6 {
            single.apply(&q1, j, 2);
        }
        for j in 0..6 {
            assert_eq!(batched.blocks.get(j), single.blocks.get(j), "block {j}");
        }
    }
}
