//! Scheduling malleable task graphs layer by layer, and ahead of events (the scheduling
//! paper §3.2-3.3):
//!
//! * [`graph`]: malleable task graphs (tasks atomic, given by τ tables, or nested graphs),
//!   heights and layers;
//! * [`tau`]: τ tables made non-increasing, speed-up models, the memo of nested graphs' tables;
//! * [`rigid`]: greedy list scheduling of tasks on fixed processor counts;
//! * [`allot`]: one layer of independent malleable tasks: [`mrt`]'s √3 when the tasks are
//!   monotonic, else within a factor 2;
//! * [`mrt`]: Mounié–Rapine–Trystram's knapsack and two shelves, √3 for monotonic tasks;
//! * [`comm`]: the redistribution phase's cost τ_comm(n, p) from the platform file;
//! * [`layered`]: the paper's algorithm, with k, µ and the bound its proof establishes;
//! * [`cpa`]: CPA (Radulescu et al.), MCPA (Bansal et al.) and the static allocation (every
//!   task on all P), for comparison;
//! * [`exact`]: the optimal makespan by exhaustive search, on small graphs;
//! * [`lookahead`]: schedules for every anticipated event, switched to by lookup;
//! * [`file`]: the task graph file; [`generate`]: random graphs and block LU.

pub mod allot;
pub mod comm;
pub mod cpa;
pub mod exact;
pub mod file;
pub mod generate;
pub mod graph;
pub mod layered;
pub mod lookahead;
pub mod mrt;
pub mod rigid;
pub mod tau;

#[cfg(test)]
mod tests;

/// Where and when one task runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    /// The task (index in its graph).
    pub task: usize,
    /// Start, seconds.
    pub start: f64,
    /// End, seconds.
    pub finish: f64,
    /// Its processors (0…P−1).
    pub procs: Vec<usize>,
}

/// A redistribution phase (layered schedules only).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Phase {
    /// Start, seconds.
    pub start: f64,
    /// Duration τ_comm(n, P), seconds.
    pub time: f64,
    /// Bytes moved, n.
    pub bytes: f64,
}

/// A schedule of one graph on `procs` processors.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    /// P.
    pub procs: usize,
    /// TIME(s): when the last task ends.
    pub makespan: f64,
    /// One per task, in task order.
    pub placements: Vec<Placement>,
    /// The redistribution phases.
    pub phases: Vec<Phase>,
}

/// The longest path from each task to the end, counting task times `time`.
pub(crate) fn bottom_levels(succs: &[Vec<usize>], time: &[f64]) -> Vec<f64> {
    let n = time.len();
    let mut bottom = vec![f64::NAN; n];
    fn visit(v: usize, succs: &[Vec<usize>], time: &[f64], bottom: &mut [f64]) -> f64 {
        if bottom[v].is_nan() {
            let below = succs[v].iter().map(|&w| visit(w, succs, time, bottom)).fold(0.0, f64::max);
            bottom[v] = time[v] + below;
        }
        bottom[v]
    }
    for v in 0..n {
        visit(v, succs, time, &mut bottom);
    }
    bottom
}

/// The lower bound on any schedule's makespan on `p` processors: max(critical path at
/// τ(P), W/P), with W the least work Σ_v min_q q·τ_v(q) (Σ τ_v(1) for monotonic tasks).
/// `tables` are the tasks' τ(1…p).
pub fn lower_bound(graph: &graph::Graph, tables: &[Vec<f64>], p: usize) -> f64 {
    let at_p: Vec<f64> = tables.iter().map(|t| t[p - 1]).collect();
    let cp = bottom_levels(&graph.succs(), &at_p).into_iter().fold(0.0, f64::max);
    let work: f64 = tables.iter().map(|t| (1..=p).map(|q| q as f64 * t[q - 1]).fold(f64::INFINITY, f64::min)).sum();
    cp.max(work / p as f64)
}

/// Checks `schedule` against `graph` and the τ tables it was made with: every task on 1…P
/// distinct processors for exactly τ(its count), after its predecessors end, and no processor
/// running two tasks at once. The error names the task.
pub fn check(graph: &graph::Graph, tables: &[Vec<f64>], schedule: &Schedule) -> Result<(), String> {
    const EPS: f64 = 1e-9;
    let p = schedule.procs;
    let name = |v: usize| &graph.tasks[v].name;
    for (v, pl) in schedule.placements.iter().enumerate() {
        let q = pl.procs.len();
        if q == 0 || q > p || pl.procs.iter().any(|&x| x >= p) {
            return Err(format!("task {:?} on processors {:?} of {p}", name(v), pl.procs));
        }
        let mut sorted = pl.procs.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != q {
            return Err(format!("task {:?} names a processor twice", name(v)));
        }
        let want = tables[v][q - 1];
        if ((pl.finish - pl.start) - want).abs() > EPS * want.max(1.0) {
            return Err(format!("task {:?} runs {} s on {q}, τ({q}) = {want}", name(v), pl.finish - pl.start));
        }
    }
    for e in &graph.edges {
        let (a, b) = (&schedule.placements[e.from], &schedule.placements[e.to]);
        if b.start + EPS < a.finish {
            return Err(format!(
                "task {:?} starts at {} before {:?} ends at {}",
                name(e.to),
                b.start,
                name(e.from),
                a.finish
            ));
        }
    }
    for q in 0..p {
        let mut on: Vec<&Placement> = schedule.placements.iter().filter(|pl| pl.procs.contains(&q)).collect();
        on.sort_by(|a, b| a.start.total_cmp(&b.start));
        if let Some(w) = on.windows(2).find(|w| w[1].start + EPS < w[0].finish) {
            return Err(format!("processor {q} runs {:?} and {:?} at once", name(w[0].task), name(w[1].task)));
        }
    }
    let end = schedule.placements.iter().map(|pl| pl.finish).fold(0.0, f64::max);
    if (end - schedule.makespan).abs() > EPS * end.max(1.0) {
        return Err(format!("makespan {} but the last task ends at {end}", schedule.makespan));
    }
    Ok(())
}
