//! The two search strategies as [`Kernel`]s of the distributed search: `thesis` (the
//! published scheme) and `fast` (Held-Karp bounds, a good first tour).

use std::sync::atomic::AtomicI64;
use std::sync::Arc;

use super::{Initial, Kernel, Report};
use crate::kernel::bound::prunes;
use crate::kernel::deadline::Deadline;
use crate::kernel::instance::Instance;
use crate::kernel::search::{Expansion, Searcher, Subproblem};
use crate::kernel::thesis::{self, Slave, ThesisJob};

/// The thesis's scheme: path-cost bound, ascending DFS, the master splits returned jobs.
#[derive(Debug)]
pub struct Thesis {
    /// The instance.
    pub inst: Arc<Instance>,
    /// DFS steps per job (`ComputationSteps`).
    pub steps: u64,
    /// Jobs are not split within this many cities of a full tour (`CutOffDepth`).
    pub cutoff: usize,
    /// Use the no-crossing test (Euclidean instances only).
    pub crossing: bool,
}

impl Kernel for Thesis {
    type Job = ThesisJob;

    fn initial(&self, _upper: i64, _deadline: Deadline) -> Initial<ThesisJob> {
        Initial { jobs: vec![ThesisJob::root()], nodes: 0, tour: None }
    }

    fn priority(&self, job: &ThesisJob) -> f64 {
        job.job_lower as f64
    }

    fn hopeless(&self, _job: &ThesisJob, _upper: i64) -> bool {
        false // the thesis's master keeps every job; the slave prunes it on its first step
    }

    fn dispatch(&self, job: &mut ThesisJob, push: &mut dyn FnMut(ThesisJob)) {
        thesis::expand(&self.inst, job, self.cutoff, push);
    }

    fn work(&self, mut job: ThesisJob, upper: i64, _best: &AtomicI64) -> Report<ThesisJob> {
        job.upper = upper;
        let n = self.inst.n;
        let nodes = Slave::new(&self.inst, self.crossing).run(&mut job, self.steps, |_| {});
        let tour = job.has_tour(n).then(|| (job.upper, job.tab[..n].to_vec()));
        let requeue = if job.terminated() { Vec::new() } else { vec![job] };
        Report::Done { nodes, tour, requeue }
    }
}

/// Held-Karp bounds with edge branching, from a tour found by local search.
#[derive(Debug)]
pub struct Fast {
    /// The instance.
    pub inst: Arc<Instance>,
    /// Search nodes per job.
    pub steps: u64,
    /// Depth of the master's breadth-first expansion before the slaves start.
    pub cutoff: usize,
}

impl Kernel for Fast {
    type Job = Subproblem;

    fn initial(&self, upper: i64, deadline: Deadline) -> Initial<Subproblem> {
        let mut s = Searcher::new(&self.inst);
        let mut best: Option<(i64, Vec<usize>)> = None;
        let mut level = match s.root(upper, deadline) {
            Ok(root) => vec![root],
            Err(Expansion::Tour(len, tour)) => return Initial { jobs: Vec::new(), nodes: 1, tour: Some((len, tour)) },
            Err(_) => return Initial { jobs: Vec::new(), nodes: 1, tour: None },
        };
        let mut nodes = 1;
        for _ in 0..self.cutoff {
            let mut next = Vec::new();
            for node in level {
                // Past the deadline the rest of the level stays unexpanded but queued: the
                // master drops a non-empty queue at the deadline, so the result is reported
                // as not proven (a dropped node here would let an unfinished search claim
                // optimality).
                if deadline.passed() {
                    next.push(node);
                    continue;
                }
                let upper = best.as_ref().map_or(upper, |b| b.0);
                if prunes(node.bound, upper) {
                    continue;
                }
                nodes += 1;
                match s.expand(&node, upper) {
                    Expansion::Pruned => {}
                    Expansion::Tour(len, tour) => best = Some((len, tour)),
                    Expansion::Children(children) => next.extend(children),
                }
            }
            level = next;
        }
        Initial { jobs: level, nodes, tour: best }
    }

    fn priority(&self, job: &Subproblem) -> f64 {
        job.bound
    }

    fn hopeless(&self, job: &Subproblem, upper: i64) -> bool {
        prunes(job.bound, upper)
    }

    fn dispatch(&self, _job: &mut Subproblem, _push: &mut dyn FnMut(Subproblem)) {}

    fn work(&self, job: Subproblem, _upper: i64, best: &AtomicI64) -> Report<Subproblem> {
        let out = Searcher::new(&self.inst).dfs(vec![job], best, self.steps);
        let tour = out.tour.map(|(len, t)| (len, t.into_iter().map(|c| c as u16).collect()));
        Report::Done { nodes: out.nodes, tour, requeue: out.open }
    }
}
