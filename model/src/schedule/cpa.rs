//! Schedules to compare the layered one with: CPA (Radulescu, Nicolescu, van Gemund and
//! Jonker, "CPA: a two-step algorithm for scheduling mixed-parallel applications", 2001),
//! MCPA (Bansal, Kumar and Singh's modified CPA, 2006), and the static allocation, every task
//! on all P processors one after another.
//!
//! CPA's first step gives every task one processor, then, while the critical path is longer
//! than the average area Σ p_v·τ_v(p_v)/P, gives one more processor to the task of the
//! critical path that gains most (τ(p)/p − τ(p+1)/(p+1)). Its second step list-schedules the
//! tasks by decreasing bottom level, each on the p_v processors free earliest. MCPA gives a
//! task one more processor only while its precedence layer (the tasks of its height) holds at
//! most P processors in all, so that a layer's tasks can still run side by side: CPA's
//! allotment grows without that cap and may serialise independent tasks. Unlike the
//! layered schedule, both pay for data per edge: an edge u → v delays v by τ_comm(bytes,
//! max(p_u, p_v)).

use super::comm::Comm;
use super::graph::Graph;
use super::{Placement, Schedule};

/// The bottom levels with allotment `procs` (task times and edge delays).
fn levels(graph: &Graph, tables: &[Vec<f64>], procs: &[usize], comm: &Comm) -> (Vec<f64>, Vec<f64>) {
    let n = tables.len();
    let time: Vec<f64> = (0..n).map(|v| tables[v][procs[v] - 1]).collect();
    let order = graph.topological_order().expect("an acyclic graph");
    let delay = |e: &super::graph::Edge| comm.tau(e.bytes, procs[e.from].max(procs[e.to]));
    let mut top = vec![0.0f64; n];
    for &v in &order {
        for e in graph.edges.iter().filter(|e| e.from == v) {
            top[e.to] = top[e.to].max(top[v] + time[v] + delay(e));
        }
    }
    let mut bottom = vec![0.0f64; n];
    for &v in order.iter().rev() {
        let below = graph.edges.iter().filter(|e| e.from == v).map(|e| delay(e) + bottom[e.to]).fold(0.0, f64::max);
        bottom[v] = time[v] + below;
    }
    (top, bottom)
}

/// CPA's allotment.
pub fn cpa_allotment(graph: &Graph, tables: &[Vec<f64>], p: usize, comm: &Comm) -> Vec<usize> {
    allotment(graph, tables, p, comm, false)
}

/// MCPA's allotment: CPA's, with each precedence layer's total allotment capped at P.
pub fn mcpa_allotment(graph: &Graph, tables: &[Vec<f64>], p: usize, comm: &Comm) -> Vec<usize> {
    allotment(graph, tables, p, comm, true)
}

/// CPA's allotment loop; `capped`: MCPA's cap on each layer's processors.
fn allotment(graph: &Graph, tables: &[Vec<f64>], p: usize, comm: &Comm, capped: bool) -> Vec<usize> {
    let n = tables.len();
    let height = graph.heights();
    let mut in_layer = vec![0usize; height.iter().max().map_or(0, |h| h + 1)];
    height.iter().for_each(|&h| in_layer[h] += 1);
    let mut procs = vec![1usize; n];
    loop {
        let (top, bottom) = levels(graph, tables, &procs, comm);
        let cp = bottom.iter().copied().fold(0.0, f64::max);
        let area: f64 = (0..n).map(|v| procs[v] as f64 * tables[v][procs[v] - 1]).sum::<f64>() / p as f64;
        if cp <= area {
            return procs;
        }
        let gain = |v: usize| {
            let q = procs[v];
            tables[v][q - 1] / q as f64 - tables[v][q] / (q + 1) as f64
        };
        let critical = (0..n)
            .filter(|&v| procs[v] < p && (top[v] + bottom[v] - cp).abs() <= 1e-12 * cp.max(1.0))
            .filter(|&v| !capped || in_layer[height[v]] < p)
            .max_by(|&a, &b| gain(a).total_cmp(&gain(b)));
        match critical {
            Some(v) => {
                procs[v] += 1;
                in_layer[height[v]] += 1;
            }
            None => return procs,
        }
    }
}

/// List-schedules `graph` with allotment `procs`: tasks by decreasing bottom level, each on
/// the `procs[v]` processors free earliest, after its data arrives.
pub fn map(graph: &Graph, tables: &[Vec<f64>], procs: &[usize], p: usize, comm: &Comm) -> Schedule {
    let n = tables.len();
    let (_, bottom) = levels(graph, tables, procs, comm);
    let order = {
        // Decreasing bottom level is a topological order when every task takes time; ties
        // and zero times are broken by a topological rank.
        let topo = graph.topological_order().expect("an acyclic graph");
        let mut rank = vec![0usize; n];
        for (i, &v) in topo.iter().enumerate() {
            rank[v] = i;
        }
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| bottom[b].total_cmp(&bottom[a]).then(rank[a].cmp(&rank[b])));
        order
    };
    let preds = graph.preds();
    let mut free_at = vec![0.0f64; p];
    let mut placements: Vec<Option<Placement>> = vec![None; n];
    let mut finish = vec![0.0f64; n];
    for v in order {
        debug_assert!(preds[v].iter().all(|&u| placements[u].is_some()));
        let ready = graph
            .edges
            .iter()
            .filter(|e| e.to == v)
            .map(|e| finish[e.from] + comm.tau(e.bytes, procs[e.from].max(procs[v])))
            .fold(0.0, f64::max);
        let mut by_free: Vec<usize> = (0..p).collect();
        by_free.sort_by(|&a, &b| free_at[a].total_cmp(&free_at[b]).then(a.cmp(&b)));
        let on: Vec<usize> = by_free[..procs[v]].to_vec();
        let start = on.iter().map(|&q| free_at[q]).fold(ready, f64::max);
        finish[v] = start + tables[v][procs[v] - 1];
        for &q in &on {
            free_at[q] = finish[v];
        }
        placements[v] = Some(Placement { task: v, start, finish: finish[v], procs: on });
    }
    let makespan = finish.iter().copied().fold(0.0, f64::max);
    Schedule { procs: p, makespan, placements: placements.into_iter().map(Option::unwrap).collect(), phases: vec![] }
}

/// CPA's schedule.
pub fn cpa(graph: &Graph, tables: &[Vec<f64>], p: usize, comm: &Comm) -> Schedule {
    let procs = cpa_allotment(graph, tables, p, comm);
    map(graph, tables, &procs, p, comm)
}

/// MCPA's schedule: its allotment, mapped as CPA's.
pub fn mcpa(graph: &Graph, tables: &[Vec<f64>], p: usize, comm: &Comm) -> Schedule {
    let procs = mcpa_allotment(graph, tables, p, comm);
    map(graph, tables, &procs, p, comm)
}

/// Every task on all `p` processors, one after another.
pub fn static_all(graph: &Graph, tables: &[Vec<f64>], p: usize, comm: &Comm) -> Schedule {
    map(graph, tables, &vec![p; tables.len()], p, comm)
}
