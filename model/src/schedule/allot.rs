//! The allotment of one layer of independent malleable tasks: within √3 of the optimum
//! ([`mrt`](super::mrt)) when every task is monotonic (work q·τ(q) non-decreasing), else
//! within a factor 2 (`FACTOR`, below); [`LayerPlan::factor`] says which holds.
//!
//! The factor-2 algorithm:
//! For a target λ each task gets, among the processor counts q with τ(q) ≤ λ, the one of
//! least work q·τ(q) (the canonical allotment of a dual approximation). λ is feasible for
//! the lower bound when λ ≥ max τ(P) and the allotted work is at most P·λ; any schedule of
//! makespan T satisfies both at λ = T (its own allotments have τ ≤ T and at least the least
//! work), so the smallest such λ, `lower_bound`, is at most T_opt. The allotments change
//! only at the values τ_v(q), so those are the λ tried. Each allotment is list scheduled
//! ([`rigid::list_schedule`], widest first): at λ* = `lower_bound` that gives a makespan
//! below 2·max(W/P, τ_max) ≤ 2λ* ≤ 2·T_opt (model/README.md proves the list bound); the best
//! of the λ tried is kept. It holds for any non-increasing τ tables, so it is the fallback for
//! layers that are not monotonic (the √3 algorithm's knapsack bound needs monotonic work).
//! For a monotonic layer both run and the shorter schedule is kept, so it is within √3 too.

use super::mrt;
use super::rigid::{self, Rigid, Slot};

/// The factor of the fallback: a layer's makespan is below `FACTOR · lower_bound`.
pub const FACTOR: f64 = 2.0;

/// How many distinct allotments (smallest λ first) are list scheduled; the guarantee needs
/// only the first.
const TRIED: usize = 32;

/// A layer's schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerPlan {
    /// Processors per task.
    pub procs: Vec<usize>,
    /// Start (from the layer's start) and processors per task.
    pub slots: Vec<Slot>,
    /// The layer's makespan.
    pub makespan: f64,
    /// A lower bound on the layer's optimal makespan (see the module).
    pub lower_bound: f64,
    /// The factor δ that holds: makespan ≤ δ·`lower_bound` (times 1 + 10⁻¹² for √3, the
    /// bisection's width): [`mrt::FACTOR`] = √3 for a monotonic layer, else [`FACTOR`] = 2.
    pub factor: f64,
}

/// The allotment of least work with τ(q) ≤ λ, per task (`None` if some τ(P) > λ).
fn canonical(tables: &[Vec<f64>], lambda: f64) -> Option<Vec<usize>> {
    tables
        .iter()
        .map(|t| {
            (1..=t.len())
                .filter(|&q| t[q - 1] <= lambda)
                .min_by(|&a, &b| (a as f64 * t[a - 1]).total_cmp(&(b as f64 * t[b - 1])).then(a.cmp(&b)))
        })
        .collect()
}

/// Schedules independent tasks with τ tables `tables` (each τ(1…P), non-increasing) on
/// `p = tables[i].len()` processors: the shorter of [`mrt::schedule`] (monotonic layers) and
/// [`factor_two`], with the factor that holds.
pub fn allot(tables: &[Vec<f64>], p: usize) -> LayerPlan {
    let best = factor_two(tables, p);
    match mrt::schedule(tables, p) {
        Some(m) => {
            let lower_bound = best.lower_bound.max(m.lower_bound);
            if m.makespan < best.makespan {
                LayerPlan { procs: m.procs, slots: m.slots, makespan: m.makespan, lower_bound, factor: mrt::FACTOR }
            } else {
                LayerPlan { lower_bound, factor: mrt::FACTOR, ..best }
            }
        }
        None => best,
    }
}

/// The factor-2 algorithm alone (see the module), for any non-increasing tables.
pub fn factor_two(tables: &[Vec<f64>], p: usize) -> LayerPlan {
    assert!(p >= 1 && tables.iter().all(|t| t.len() == p));
    if tables.is_empty() {
        return LayerPlan { procs: vec![], slots: vec![], makespan: 0.0, lower_bound: 0.0, factor: FACTOR };
    }
    let floor = tables.iter().map(|t| t[p - 1]).fold(0.0, f64::max);
    let mut lambdas: Vec<f64> = tables.iter().flatten().copied().filter(|&x| x >= floor).collect();
    lambdas.sort_by(f64::total_cmp);
    lambdas.dedup();
    // Each λ with its allotment and the smallest feasible target in [λ, next λ).
    let mut candidates: Vec<(f64, Vec<usize>)> = lambdas
        .iter()
        .filter_map(|&lambda| {
            let procs = canonical(tables, lambda)?;
            let work: f64 = procs.iter().zip(tables).map(|(&q, t)| q as f64 * t[q - 1]).sum();
            Some((lambda.max(work / p as f64), procs))
        })
        .collect();
    candidates.sort_by(|a, b| a.0.total_cmp(&b.0));
    let lower_bound = candidates[0].0;
    let mut best: Option<LayerPlan> = None;
    let mut tried: Vec<&Vec<usize>> = Vec::new();
    for (_, procs) in &candidates {
        if tried.len() == TRIED {
            break;
        }
        if tried.contains(&procs) {
            continue;
        }
        tried.push(procs);
        let tasks: Vec<Rigid> = procs.iter().zip(tables).map(|(&q, t)| Rigid { procs: q, time: t[q - 1] }).collect();
        let mut order: Vec<usize> = (0..tasks.len()).collect();
        order.sort_by(|&a, &b| tasks[b].procs.cmp(&tasks[a].procs).then(tasks[b].time.total_cmp(&tasks[a].time)));
        let slots = rigid::list_schedule(&tasks, &order, &vec![Vec::new(); tasks.len()], p, |_, _| 0.0);
        let makespan = rigid::makespan(&tasks, &slots);
        if best.as_ref().is_none_or(|b| makespan < b.makespan) {
            best = Some(LayerPlan { procs: procs.clone(), slots, makespan, lower_bound, factor: FACTOR });
        }
    }
    best.expect("at least one allotment")
}
