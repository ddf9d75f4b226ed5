//! The scheduling paper's algorithm `schedule(G, P)` (§3.3): a graph of atomic tasks is list
//! scheduled (Graham, critical path first: factor c = 2 − 1/P); any other graph is scheduled
//! layer by layer, each layer of independent malleable tasks by [`allot`](super::allot),
//! with a redistribution phase before every layer but the first; the τ tables of nested
//! graphs are their own schedules' makespans, memoised per sub-graph ([`TauMemo`]).
//! Also the analysis: the hierarchy level k, the degree of malleability µ(G, P) and the bound
//! the paper's proof establishes.

use super::allot;
use super::comm::Comm;
use super::graph::{Family, GraphId, Work};
use super::rigid::{self, Rigid};
use super::tau::{self, TauMemo};
use super::{Phase, Placement, Schedule};

/// One layer of a layered schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Layer {
    /// Its tasks.
    pub tasks: Vec<usize>,
    /// When it starts (after the phase before it).
    pub start: f64,
    /// Its makespan, TIME(s_i).
    pub makespan: f64,
    /// A lower bound on T_opt(Λ_i) (see [`allot`](super::allot)).
    pub lower_bound: f64,
    /// W(Λ_i) = Σ τ_v(1).
    pub work: f64,
    /// The factor δ_i its allotment holds: √3 (monotonic tasks) or 2.
    pub factor: f64,
}

/// A schedule with the paper's analysis.
#[derive(Clone, Debug, PartialEq)]
pub struct Layered {
    /// The schedule.
    pub schedule: Schedule,
    /// Its layers (none for an all-atomic graph, list scheduled whole).
    pub layers: Vec<Layer>,
    /// The hierarchy level k.
    pub level: usize,
    /// µ(G, P).
    pub mu: f64,
    /// The factor of the algorithm used at this level: δ = 2 per layer, or Graham's
    /// c = 2 − 1/P for an all-atomic graph.
    pub factor: f64,
    /// An upper bound on TIME(s) the proof establishes, evaluated: δ·Σ_i LB(Λ_i)/µ with LB
    /// the layers' lower bounds (≤ T_opt(Λ_i), so it implies δ·Σ_i T_opt(Λ_i)/µ); for an
    /// all-atomic graph Graham's W/P + (1 − 1/P)·(critical path).
    pub bound: f64,
}

/// The layered scheduler: the link that costs redistributions and the memo of nested graphs'
/// τ tables (valid for one family, and for families sharing its nested graphs).
#[derive(Clone, Debug)]
pub struct Scheduler {
    comm: Comm,
    memo: TauMemo,
}

impl Scheduler {
    /// A scheduler costing redistributions with `comm`.
    pub fn new(comm: Comm) -> Scheduler {
        Scheduler { comm, memo: TauMemo::default() }
    }

    /// Its link.
    pub fn comm(&self) -> Comm {
        self.comm
    }

    /// Sub-graph schedules computed so far (memo misses).
    pub fn computed(&self) -> usize {
        self.memo.computed
    }

    /// The non-increasing τ table on 1…`p` of every task of graph `g`.
    pub fn tables(&mut self, family: &Family, g: GraphId, p: usize) -> Vec<Vec<f64>> {
        let tasks = family.graph(g).tasks.clone();
        tasks
            .iter()
            .map(|t| match &t.work {
                Work::Atomic(x) => vec![*x; p],
                Work::Table(table) => tau::extend(table, p),
                Work::Graph(inner) => {
                    for q in self.memo.known(*inner) + 1..=p {
                        let makespan = self.schedule(family, *inner, q).schedule.makespan;
                        self.memo.push(*inner, makespan);
                    }
                    self.memo.table(*inner, p)
                }
            })
            .collect()
    }

    /// µ(G, p) of graph `g` (the paper's definition ii-iii; a single layer has no phase).
    pub fn mu(&mut self, family: &Family, g: GraphId, p: usize) -> f64 {
        if family.level(g) == 0 {
            return 1.0;
        }
        let graph = family.graph(g).clone();
        let tables = self.tables(family, g, p);
        let layers = graph.layers();
        let mut mu = 1.0f64;
        for (i, layer) in layers.iter().enumerate() {
            for &v in layer {
                if let Work::Graph(inner) = graph.tasks[v].work {
                    mu = mu.min(self.mu(family, inner, p));
                }
            }
            if let Some(next) = layers.get(i + 1) {
                let per_proc = layer.iter().map(|&v| tables[v][0]).sum::<f64>() / p as f64;
                let comm = self.comm.tau(bytes_into(&graph, next), p);
                mu = mu.min(per_proc / (per_proc + comm));
            }
        }
        mu
    }

    /// `schedule(G, p)` of graph `g` of `family`, with its analysis.
    pub fn schedule(&mut self, family: &Family, g: GraphId, p: usize) -> Layered {
        assert!(p >= 1);
        let graph = family.graph(g).clone();
        let tables = self.tables(family, g, p);
        let level = family.level(g);
        if level == 0 {
            return graham(&graph.preds(), &tables, p);
        }
        let mut placements = vec![None; graph.tasks.len()];
        let mut phases = Vec::new();
        let mut layers = Vec::new();
        let mut now = 0.0;
        for (i, tasks) in graph.layers().into_iter().enumerate() {
            if i > 0 {
                let bytes = bytes_into(&graph, &tasks);
                let time = self.comm.tau(bytes, p);
                phases.push(Phase { start: now, time, bytes });
                now += time;
            }
            let layer_tables: Vec<Vec<f64>> = tasks.iter().map(|&v| tables[v].clone()).collect();
            let plan = allot::allot(&layer_tables, p);
            for (k, &v) in tasks.iter().enumerate() {
                let start = now + plan.slots[k].start;
                let finish = start + layer_tables[k][plan.procs[k] - 1];
                placements[v] = Some(Placement { task: v, start, finish, procs: plan.slots[k].procs.clone() });
            }
            let work = tasks.iter().map(|&v| tables[v][0]).sum();
            let (makespan, lower_bound, factor) = (plan.makespan, plan.lower_bound, plan.factor);
            layers.push(Layer { tasks, start: now, makespan, lower_bound, work, factor });
            now += plan.makespan;
        }
        let mu = self.mu(family, g, p);
        // makespan_i ≤ δ_i·LB_i (√3 up to the bisection's 10⁻¹²).
        let bound = layers.iter().map(|l| l.factor * l.lower_bound).sum::<f64>() / mu * (1.0 + 1e-12);
        let factor = layers.iter().map(|l| l.factor).fold(1.0, f64::max);
        let placements: Vec<Placement> = placements.into_iter().map(|x| x.expect("every task in a layer")).collect();
        let schedule = Schedule { procs: p, makespan: now, placements, phases };
        Layered { schedule, layers, level, mu, factor, bound }
    }
}

/// The bytes on edges into the tasks `layer`.
fn bytes_into(graph: &super::graph::Graph, layer: &[usize]) -> f64 {
    graph.edges.iter().filter(|e| layer.contains(&e.to)).map(|e| e.bytes).sum()
}

/// Graham's list schedule of an all-atomic graph (one processor per task, longest path to
/// the end first), without communication: within W/P + (1 − 1/P)·CP.
fn graham(preds: &[Vec<usize>], tables: &[Vec<f64>], p: usize) -> Layered {
    let n = tables.len();
    let tasks: Vec<Rigid> = tables.iter().map(|t| Rigid { procs: 1, time: t[0] }).collect();
    let mut succs = vec![Vec::new(); n];
    for (v, ps) in preds.iter().enumerate() {
        for &u in ps {
            succs[u].push(v);
        }
    }
    let bottom = super::bottom_levels(&succs, &tasks.iter().map(|t| t.time).collect::<Vec<_>>());
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| bottom[b].total_cmp(&bottom[a]));
    let slots = rigid::list_schedule(&tasks, &order, preds, p, |_, _| 0.0);
    let placements: Vec<Placement> = slots
        .into_iter()
        .enumerate()
        .map(|(v, s)| Placement { task: v, start: s.start, finish: s.start + tasks[v].time, procs: s.procs })
        .collect();
    let makespan = placements.iter().map(|pl| pl.finish).fold(0.0, f64::max);
    let work: f64 = tasks.iter().map(|t| t.time).sum();
    let cp = bottom.iter().copied().fold(0.0, f64::max);
    let pf = p as f64;
    Layered {
        schedule: Schedule { procs: p, makespan, placements, phases: vec![] },
        layers: vec![],
        level: 0,
        mu: 1.0,
        factor: 2.0 - 1.0 / pf,
        bound: work / pf + (1.0 - 1.0 / pf) * cp,
    }
}
