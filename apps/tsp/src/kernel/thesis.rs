//! The `thesis` variant's kernel: the job token of Fig. 10.11, the slave's step-budgeted
//! depth-first search of Fig. 10.13 and the master's job expansion of Fig. 10.14, as
//! published: the bound is the partial path's cost, there is no initial tour, and the only
//! other pruning is the "intersectionless" test on Euclidean instances.
//!
//! A job is the complete DFS state, so any slave can resume it. The first `min_trip` cities
//! of `tab` are fixed for the job; children are explored in ascending city order, and
//! `resume_after` remembers the last child tried at the next position (the thesis's
//! `swapTab`). `tab` holds `n + 1` entries (the return to city 0) when a tour is complete.

use serde::{Deserialize, Serialize};

use super::instance::Instance;

/// The thesis's `tspJobT`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThesisJob {
    /// The current subpath, from city 0.
    pub tab: Vec<u16>,
    /// The last city tried at position `tab.len()`: the next try is a larger one.
    pub resume_after: Option<u16>,
    /// Set when the next step must backtrack.
    pub backtrack: bool,
    /// Cost of the subpath (the thesis's `lowerBound`).
    pub lower: i64,
    /// Best tour length known (`upperBound`).
    pub upper: i64,
    /// Cost of the fixed prefix (`jobLowerBound`): the master's priority.
    pub job_lower: i64,
    /// The first `min_trip` cities never change in this job (`minTripSize`).
    pub min_trip: usize,
}

impl ThesisJob {
    /// The root job: `tab = [0]`, nothing fixed beyond city 0, no bound yet.
    pub fn root() -> ThesisJob {
        ThesisJob {
            tab: vec![0],
            resume_after: None,
            backtrack: false,
            lower: 0,
            upper: i64::MAX,
            job_lower: 0,
            min_trip: 1,
        }
    }

    /// True once the job's subtree has been searched completely.
    pub fn terminated(&self) -> bool {
        self.tab.len() < self.min_trip
    }

    /// True if `tab` is a complete round trip.
    pub fn has_tour(&self, n: usize) -> bool {
        self.tab.len() > n
    }
}

fn path_cost(inst: &Instance, path: &[u16]) -> i64 {
    path.windows(2).map(|w| inst.d(w[0] as usize, w[1] as usize)).sum()
}

/// True if segments `p1 p2` and `q1 q2` cross properly (touching or collinear does not count).
fn crosses(p1: [f64; 2], p2: [f64; 2], q1: [f64; 2], q2: [f64; 2]) -> bool {
    let orient = |a: [f64; 2], b: [f64; 2], c: [f64; 2]| {
        let v = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
        v.partial_cmp(&0.0).map_or(0, |o| o as i8)
    };
    let (d1, d2) = (orient(q1, q2, p1), orient(q1, q2, p2));
    let (d3, d4) = (orient(p1, p2, q1), orient(p1, p2, q2));
    d1 * d2 < 0 && d3 * d4 < 0
}

/// The slave's depth-first search (Fig. 10.13) on one job.
#[derive(Debug)]
pub struct Slave<'a> {
    inst: &'a Instance,
    /// Coordinates for the no-crossing test, if it is on.
    coords: Option<&'a [[f64; 2]]>,
    visited: Vec<bool>,
}

impl<'a> Slave<'a> {
    /// A slave for `inst`; `crossing` turns the "intersectionless" test on (it needs
    /// coordinates).
    pub fn new(inst: &'a Instance, crossing: bool) -> Slave<'a> {
        let coords = if crossing { inst.coords.as_deref() } else { None };
        Slave { inst, coords, visited: vec![false; inst.n] }
    }

    /// Runs `job` for fewer than `steps` steps (the thesis's `while (++count < steps)`), but
    /// at least one: with `steps` 0 or 1 the thesis's loop takes none, the job comes back
    /// unchanged and the master re-queues it forever. Stops early when the job terminates
    /// or completes a tour no longer than its upper bound (then `job.upper` is that tour's
    /// length). Returns the loop's count; `hook` sees the job after every step (for tests
    /// of the visiting order).
    pub fn run(&mut self, job: &mut ThesisJob, steps: u64, mut hook: impl FnMut(&ThesisJob)) -> u64 {
        let steps = steps.max(2);
        let n = self.inst.n;
        self.visited.iter_mut().for_each(|v| *v = false);
        for &c in &job.tab {
            self.visited[c as usize] = true;
        }
        let mut count = 0;
        loop {
            count += 1;
            if count >= steps {
                break;
            }
            if job.backtrack || job.tab.len() > n {
                self.backtrack(job);
                hook(job);
                if job.terminated() {
                    break;
                }
                job.backtrack = false;
                continue;
            }
            self.next_subpath(job);
            hook(job);
            if job.lower > job.upper {
                job.backtrack = true;
                continue;
            }
            if job.tab.len() > n {
                job.upper = job.lower;
                break;
            }
            if !self.acceptable(job) {
                job.backtrack = true;
            }
        }
        count
    }

    /// `tspGetNextSubPath`: one step down.
    fn next_subpath(&mut self, job: &mut ThesisJob) {
        let n = self.inst.n;
        let last = *job.tab.last().expect("a live job has a subpath") as usize;
        let next = if job.tab.len() == n {
            0
        } else {
            let from = job.resume_after.map_or(0, |x| x as usize + 1);
            let c = (from..n).find(|&c| !self.visited[c]).expect("backtracking leaves an untried city");
            self.visited[c] = true;
            c
        };
        job.resume_after = None;
        job.lower += self.inst.d(last, next);
        job.tab.push(next as u16);
    }

    /// `tspbacktrack`: up to the deepest position that has an untried city.
    fn backtrack(&mut self, job: &mut ThesisJob) {
        let n = self.inst.n;
        loop {
            let closing = job.tab.len() == n + 1;
            let Some(x) = job.tab.pop() else { return };
            if let Some(&prev) = job.tab.last() {
                job.lower -= self.inst.d(prev as usize, x as usize);
            }
            if !closing {
                self.visited[x as usize] = false;
            }
            if job.terminated() {
                return;
            }
            if !closing && job.tab.len() < n && (x as usize + 1..n).any(|c| !self.visited[c]) {
                job.resume_after = Some(x);
                return;
            }
        }
    }

    /// `tspIsAcceptable`: the newest edge crosses no earlier non-adjacent edge of the path.
    fn acceptable(&self, job: &ThesisJob) -> bool {
        let Some(xy) = self.coords else { return true };
        let t = job.tab.len();
        if t < 4 {
            return true;
        }
        let p = |k: usize| xy[job.tab[k] as usize];
        let (a, b) = (p(t - 2), p(t - 1));
        !(0..=t - 4).any(|i| crosses(a, b, p(i), p(i + 1)))
    }
}

/// The master's `tspOrderedJobListExpand` at dispatch: if the job has been worked on
/// (`tab` longer than its fixed prefix) and its prefix is shorter than `n - cutoff`, the
/// untried siblings of its current city at position `min_trip` become new jobs (`push`)
/// and the job keeps the current one, with one more city fixed.
pub fn expand(inst: &Instance, job: &mut ThesisJob, cutoff: usize, mut push: impl FnMut(ThesisJob)) {
    let (m, n) = (job.min_trip, inst.n);
    if job.tab.len() <= m || m.saturating_add(cutoff) >= n {
        return;
    }
    let prefix = &job.tab[..m];
    let current = job.tab[m] as usize;
    let prefix_cost = path_cost(inst, prefix);
    let last = prefix[m - 1] as usize;
    for x in current + 1..n {
        if prefix.contains(&(x as u16)) {
            continue;
        }
        let mut tab = prefix.to_vec();
        tab.push(x as u16);
        let lower = prefix_cost + inst.d(last, x);
        push(ThesisJob {
            tab,
            resume_after: None,
            backtrack: false,
            lower,
            upper: job.upper,
            job_lower: lower,
            min_trip: m + 1,
        });
    }
    job.min_trip = m + 1;
    job.job_lower = path_cost(inst, &job.tab[..m + 1]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::dp;

    /// TSP-1 of the spec: with 4 cities at distance 1 and no crossing test, one slave with
    /// an unlimited budget returns the tours in DFS order, one per run (each ties the bound).
    #[test]
    fn visits_tours_in_the_thesis_order() {
        let inst = Instance::from_matrix("ones", 4, (0..16).map(|k| i64::from(k % 5 != 0)).collect()).unwrap();
        let mut slave = Slave::new(&inst, false);
        let mut job = ThesisJob::root();
        let mut states = Vec::new();
        let mut tours = Vec::new();
        while !job.terminated() {
            slave.run(&mut job, u64::MAX, |j| states.push(j.tab.clone()));
            if job.has_tour(4) {
                tours.push(job.tab[..4].iter().map(|c| c.to_string()).collect::<String>());
            }
        }
        assert_eq!(tours, ["0123", "0132", "0213", "0231", "0312", "0321"]);
        let first: Vec<Vec<u16>> = states.into_iter().take(8).collect();
        // A, B, C, D, closing, then back to B and on to E = [0,1,3], F = [0,1,3,2].
        assert_eq!(first[..4], [vec![0, 1], vec![0, 1, 2], vec![0, 1, 2, 3], vec![0, 1, 2, 3, 0]]);
        assert_eq!(first[4..7], [vec![0, 1], vec![0, 1, 3], vec![0, 1, 3, 2]]);
    }

    /// The master-slave protocol simulated serially with tiny budgets: every split and
    /// resume must keep the optimum.
    #[test]
    fn expanded_jobs_with_small_budgets_find_the_optimum() {
        for seed in 0..30 {
            let n = 5 + (seed as usize % 5);
            let inst = Instance::random(n, seed);
            let (opt, _) = dp::solve(&inst).unwrap();
            for crossing in [false, true] {
                let mut slave = Slave::new(&inst, crossing);
                let mut queue = vec![ThesisJob::root()];
                let mut best = i64::MAX;
                while let Some(mut job) = queue.pop() {
                    expand(&inst, &mut job, 2, |j| queue.insert(0, j));
                    job.upper = best;
                    slave.run(&mut job, 7, |_| {});
                    if job.has_tour(n) {
                        best = best.min(job.upper);
                    }
                    if !job.terminated() {
                        queue.push(job);
                    }
                }
                assert_eq!(best, opt, "seed {seed} n {n} crossing {crossing}");
            }
        }
    }

    /// Budgets of 0 and 1 steps still move the job (the thesis's loop takes `steps - 1`
    /// steps, none for these, and the unchanged job was re-queued forever).
    #[test]
    fn tiny_budgets_still_make_progress() {
        let inst = Instance::random(6, 2);
        let (opt, _) = dp::solve(&inst).unwrap();
        for steps in [0, 1] {
            let mut slave = Slave::new(&inst, false);
            let mut job = ThesisJob::root();
            let (mut best, mut runs) = (i64::MAX, 0);
            while !job.terminated() {
                let before = job.clone();
                job.upper = best;
                slave.run(&mut job, steps, |_| {});
                assert_ne!(job.tab, before.tab, "steps {steps}: the job did not move");
                if job.has_tour(6) {
                    best = best.min(job.upper);
                }
                runs += 1;
                assert!(runs < 1_000_000);
            }
            assert_eq!(best, opt, "steps {steps}");
        }
    }
}
