//! The DPS graph of the distributed search (thesis Fig. 10.14): a master on rank 0 hands
//! jobs to slaves through a flow-controlled, load-balanced split, and merges their reports.
//!
//! ```text
//!   master[0]: split "dispatch" --(window PipelineDepth * slaves, load_balanced)-->
//!   slaves (all*k): leaf "search" --> master[0]: merge "collect"
//! ```
//!
//! **One split instance runs the whole search.** The master's job queue, best tour and
//! in-flight count live in an `Arc<Mutex<Master>>` held by the master thread's state and
//! shared by the split's iterator and the merge (both run on the master's DPS thread, one
//! operation at a time, so the lock is never contended). The runtime pulls the iterator
//! lazily, one token per returned credit: so each report is merged (its open subproblems
//! re-queued, its tour recorded) before the slave that sent it gets its next job, and that
//! job carries the best tour length known at that moment. The iterator returns `None` only
//! when the search is over (queue empty and no job in flight), because `None` ends a split
//! for good. When the queue is empty but jobs are still out, it returns an *idle* token,
//! as the thesis's master sends invalid jobs: the slave pauses briefly and returns it, which
//! gives the master its next chance to hand out whatever the running jobs re-queue.
//! (The runtime pulls one token ahead to learn early whether a split has ended, so one idle
//! token may precede a job that just became available; it only costs one short pause.)
//!
//! The search itself is a [`Kernel`]: the `thesis` variant ([`crate::kernel::thesis`]) or
//! the `fast` one ([`crate::kernel::search`]), with the same master and slaves; [`variants`]
//! plugs the two into it.

pub mod variants;

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use dps::{route, MergeFn, Node, Runtime, Token};
use serde::{Deserialize, Serialize};

use crate::kernel::deadline::Deadline;

/// How long a slave holds an idle token before returning it.
const IDLE_PAUSE: Duration = Duration::from_millis(1);

/// A search strategy the master and slaves run.
pub trait Kernel: Send + Sync + 'static {
    /// A job: a subproblem a slave can search (and resume).
    type Job: Token + Clone;
    /// The jobs to start with, generated on the master from the best tour length known,
    /// cut short at the `deadline` (the jobs not yet expanded are then the first jobs).
    fn initial(&self, upper: i64, deadline: Deadline) -> Initial<Self::Job>;
    /// The master's order: smaller first.
    fn priority(&self, job: &Self::Job) -> f64;
    /// True if a queued job cannot hold a tour shorter than `upper`.
    fn hopeless(&self, job: &Self::Job, upper: i64) -> bool;
    /// Called when the master hands `job` out: it may split part of it off into new jobs.
    fn dispatch(&self, job: &mut Self::Job, push: &mut dyn FnMut(Self::Job));
    /// A slave's search on `job` for one step budget. `upper` is the best length the
    /// master knew when it handed the job out; `best` is the best length known on this rank
    /// (shared by its slaves, already at most `upper`).
    fn work(&self, job: Self::Job, upper: i64, best: &AtomicI64) -> Report<Self::Job>;
}

/// What the master starts with.
#[derive(Clone, Debug)]
pub struct Initial<J> {
    /// The first jobs.
    pub jobs: Vec<J>,
    /// Nodes expanded to generate them.
    pub nodes: u64,
    /// A tour better than the one given, if generating the jobs found one.
    pub tour: Option<(i64, Vec<usize>)>,
}

/// A token from the master to a slave.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Work<J> {
    /// Nothing to do right now: return at once (the thesis's invalid job).
    Idle,
    /// A job, with the best tour length known when it was handed out.
    Job(J, i64),
}

/// A slave's answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Report<J> {
    /// The idle token, returned.
    Idle,
    /// The result of one job.
    Done {
        /// Search nodes (or DFS steps) the slave expanded.
        nodes: u64,
        /// A tour shorter than the job's upper bound, if found.
        tour: Option<(i64, Vec<u16>)>,
        /// What remains to search, to queue again.
        requeue: Vec<J>,
    },
}

/// The graph's input: the best tour known before the search and an optional time limit.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Start {
    /// Length of `tour` (`i64::MAX` if there is none).
    pub upper: i64,
    /// The best tour known, as city indices.
    pub tour: Vec<usize>,
    /// Stop handing out jobs after this many seconds (the result is then not proven).
    /// Negative or NaN counts as 0.
    pub time_limit: Option<f64>,
}

/// The graph's output.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Solution {
    /// Length of the best tour.
    pub length: i64,
    /// The best tour (empty if none was found).
    pub tour: Vec<usize>,
    /// True if the search completed, which proves the tour optimal.
    pub complete: bool,
    /// Nodes expanded, by the master and every slave.
    pub nodes: u64,
    /// Jobs handed out.
    pub jobs: u64,
    /// Idle tokens handed out.
    pub idle: u64,
}

struct Queued<J> {
    priority: f64,
    seq: u64,
    job: J,
}

impl<J> PartialEq for Queued<J> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}
impl<J> Eq for Queued<J> {}
impl<J> PartialOrd for Queued<J> {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl<J> Ord for Queued<J> {
    /// The max-heap pops the smallest priority, then the oldest.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        other.priority.total_cmp(&self.priority).then(other.seq.cmp(&self.seq))
    }
}

/// The master's state, shared by the split's iterator and the merge.
struct Master<J> {
    queue: BinaryHeap<Queued<J>>,
    seq: u64,
    in_flight: usize,
    best: (i64, Vec<usize>),
    deadline: Deadline,
    complete: bool,
    nodes: u64,
    jobs: u64,
    idle: u64,
}

impl<J> Master<J> {
    fn push(&mut self, priority: f64, job: J) {
        self.seq += 1;
        self.queue.push(Queued { priority, seq: self.seq, job });
    }

    fn offer(&mut self, len: i64, tour: Vec<usize>) {
        if len < self.best.0 {
            self.best = (len, tour);
        }
    }
}

/// The master thread's state: the kernel and the shared master state of the running search.
struct MasterThread<K: Kernel> {
    kernel: Arc<K>,
    master: Arc<Mutex<Master<K::Job>>>,
}

/// The split's token source: pulled by the runtime as credits return.
struct Dispatch<K: Kernel> {
    kernel: Arc<K>,
    master: Arc<Mutex<Master<K::Job>>>,
}

impl<K: Kernel> Iterator for Dispatch<K> {
    type Item = Work<K::Job>;

    fn next(&mut self) -> Option<Work<K::Job>> {
        let mut m = self.master.lock().unwrap();
        if m.deadline.passed() && !m.queue.is_empty() {
            m.queue.clear();
            m.complete = false;
        }
        while let Some(Queued { mut job, .. }) = m.queue.pop() {
            let upper = m.best.0;
            if self.kernel.hopeless(&job, upper) {
                continue;
            }
            let mut split_off = Vec::new();
            self.kernel.dispatch(&mut job, &mut |j| split_off.push(j));
            for j in split_off {
                let p = self.kernel.priority(&j);
                m.push(p, j);
            }
            m.in_flight += 1;
            m.jobs += 1;
            return Some(Work::Job(job, upper));
        }
        if m.in_flight == 0 {
            return None;
        }
        m.idle += 1;
        Some(Work::Idle)
    }
}

/// The shape of the run: slaves per rank, jobs queued per slave.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// Slave threads on every rank.
    pub threads: usize,
    /// Jobs in flight per slave (the thesis's `PipelineDepth`, at least 2).
    pub pipeline_depth: usize,
}

/// The distributed search, built on every rank; [`Search::run`] on rank 0.
pub struct Search<K: Kernel> {
    graph: dps::Graph<Start, Solution>,
    _kernel: std::marker::PhantomData<K>,
}

impl<K: Kernel> std::fmt::Debug for Search<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Search")
    }
}

impl<K: Kernel> Search<K> {
    /// Builds the collections and the graph (collective: every rank calls it).
    ///
    /// # Errors
    /// If the runtime rejects the collections or the graph.
    pub fn build(rt: &Runtime, kernel: Arc<K>, layout: Layout) -> Result<Search<K>> {
        let k = kernel.clone();
        let master = rt.collection("master", "0", move |_| MasterThread::<K> {
            kernel: k.clone(),
            master: Arc::new(Mutex::new(new_master(i64::MAX, Vec::new(), Deadline::NONE))),
        })?;
        // The best length known on each rank, shared by its slaves: one per rank, so that the
        // virtual ranks of a simulation do not share it (a real rank has only its own). "all*k"
        // puts slave i on rank i mod ranks.
        let ranks = rt.ranks();
        let rank_best: Vec<Arc<AtomicI64>> = (0..ranks).map(|_| Arc::new(AtomicI64::new(i64::MAX))).collect();
        let slaves = rt.collection("slaves", &format!("all*{}", layout.threads), |i| rank_best[i % ranks].clone())?;
        debug_assert!((0..slaves.len()).all(|i| slaves.rank_of(i) == i % ranks));
        let window = layout
            .pipeline_depth
            .max(1)
            .checked_mul(layout.threads)
            .and_then(|w| w.checked_mul(rt.ranks()))
            .ok_or_else(|| dps_harness::BadInput::new("--pipeline-depth x --threads x ranks overflows"))?;

        let dispatch = Node::split("dispatch", &master, route::fixed(0), |s: &mut MasterThread<K>, start: Start| {
            let deadline = Deadline::after(start.time_limit);
            let Initial { jobs, nodes, tour } = s.kernel.initial(start.upper, deadline);
            let mut m = new_master(start.upper, start.tour, deadline);
            m.nodes = nodes;
            if let Some((len, t)) = tour {
                m.offer(len, t);
            }
            for job in jobs {
                let p = s.kernel.priority(&job);
                m.push(p, job);
            }
            *s.master.lock().unwrap() = m;
            Dispatch { kernel: s.kernel.clone(), master: s.master.clone() }
        })
        .window(window);
        let search =
            Node::leaf("search", &slaves, route::load_balanced(), move |best: &mut Arc<AtomicI64>, w: Work<K::Job>| {
                match w {
                    Work::Idle => {
                        // Charged, not slept, under simulation.
                        dps::pause(IDLE_PAUSE);
                        Report::Idle
                    }
                    Work::Job(job, upper) => {
                        best.fetch_min(upper, Ordering::Relaxed);
                        kernel.work(job, upper, best)
                    }
                }
            });
        let collect = Node::merge(
            "collect",
            &master,
            MergeFn::new(
                |_: &mut MasterThread<K>| (),
                |s: &mut MasterThread<K>, _: &mut (), r: Report<K::Job>| {
                    let Report::Done { nodes, tour, requeue } = r else { return };
                    let mut m = s.master.lock().unwrap();
                    m.in_flight -= 1;
                    m.nodes += nodes;
                    if let Some((len, t)) = tour {
                        m.offer(len, t.into_iter().map(usize::from).collect());
                    }
                    for job in requeue {
                        let p = s.kernel.priority(&job);
                        m.push(p, job);
                    }
                },
                |s: &mut MasterThread<K>, ()| {
                    let m = s.master.lock().unwrap();
                    Solution {
                        length: m.best.0,
                        tour: m.best.1.clone(),
                        complete: m.complete,
                        nodes: m.nodes,
                        jobs: m.jobs,
                        idle: m.idle,
                    }
                },
            ),
        );
        let graph = rt.graph("tsp", dispatch >> search >> collect)?;
        Ok(Search { graph, _kernel: std::marker::PhantomData })
    }

    /// Runs the search from `start` (on rank 0).
    ///
    /// # Errors
    /// If an operation failed.
    pub fn run(&self, rt: &Runtime, start: Start) -> Result<Solution> {
        Ok(rt.call(&self.graph, start)?)
    }
}

fn new_master<J>(upper: i64, tour: Vec<usize>, deadline: Deadline) -> Master<J> {
    Master {
        queue: BinaryHeap::new(),
        seq: 0,
        in_flight: 0,
        best: (upper, tour),
        deadline,
        complete: true,
        nodes: 0,
        jobs: 0,
        idle: 0,
    }
}
