//! τ tables: a malleable task's time on 1…P processors, made non-increasing (a task given
//! more processors may leave some idle, the paper's `min(makespan(s_v(j)), T_v(j−1))`),
//! speed-up models that make them from a work, and the memo of the tables of nested graphs.

use std::collections::HashMap;

use super::graph::GraphId;

/// Makes `tau` non-increasing in place: τ(p) = min(τ(p), τ(p−1)).
pub fn make_non_increasing(tau: &mut [f64]) {
    for i in 1..tau.len() {
        tau[i] = tau[i].min(tau[i - 1]);
    }
}

/// The table `tau` (τ(1) first) on 1…`procs` processors: past its end, its last value.
pub fn extend(tau: &[f64], procs: usize) -> Vec<f64> {
    let last = *tau.last().expect("a non-empty table");
    let mut t: Vec<f64> = (0..procs).map(|i| tau.get(i).copied().unwrap_or(last)).collect();
    make_non_increasing(&mut t);
    t
}

/// A speed-up model S(p): τ(p) = work / S(p).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Speedup {
    /// S(p) = p.
    Linear,
    /// Amdahl's law with serial fraction `s`: S(p) = 1 / (s + (1 − s)/p).
    Amdahl(f64),
    /// S(p) = p^a, 0 ≤ a ≤ 1.
    Power(f64),
}

impl Speedup {
    /// Parses `linear`, `amdahl:S` (0 ≤ S ≤ 1) or `power:A` (0 ≤ A ≤ 1).
    ///
    /// # Errors
    /// A phrase saying what is accepted.
    pub fn parse(text: &str) -> Result<Speedup, String> {
        let number = |x: &str| -> Result<f64, String> {
            x.parse::<f64>()
                .ok()
                .filter(|v| (0.0..=1.0).contains(v))
                .ok_or_else(|| format!("{x:?} is not a number in 0..=1"))
        };
        match text.split_once(':') {
            None if text == "linear" => Ok(Speedup::Linear),
            Some(("amdahl", s)) => Ok(Speedup::Amdahl(number(s)?)),
            Some(("power", a)) => Ok(Speedup::Power(number(a)?)),
            _ => Err(format!("speedup {text:?}: expected linear, amdahl:S or power:A (S, A in 0..=1)")),
        }
    }

    /// S(p).
    pub fn at(self, p: usize) -> f64 {
        let p = p as f64;
        match self {
            Speedup::Linear => p,
            Speedup::Amdahl(s) => 1.0 / (s + (1.0 - s) / p),
            Speedup::Power(a) => p.powf(a),
        }
    }

    /// The table τ(1…`max_procs`) of a task of this `work` (seconds on one processor).
    pub fn table(self, work: f64, max_procs: usize) -> Vec<f64> {
        let mut t: Vec<f64> = (1..=max_procs.max(1)).map(|p| work / self.at(p)).collect();
        make_non_increasing(&mut t);
        t
    }
}

/// The τ tables of nested graphs, each computed once per processor count (the paper: "the
/// computation of the schedules in the malleable tasks need only be done once").
#[derive(Clone, Debug, Default)]
pub struct TauMemo {
    /// Per graph: the makespans of its schedules on 1, 2, … processors, as computed.
    makespans: HashMap<GraphId, Vec<f64>>,
    /// Schedules computed (for tests and the lookahead's report).
    pub computed: usize,
}

impl TauMemo {
    /// How many of graph `g`'s makespans (on 1, 2, … processors) are known.
    pub fn known(&self, g: GraphId) -> usize {
        self.makespans.get(&g).map_or(0, Vec::len)
    }

    /// Records the makespan of graph `g` on `known(g) + 1` processors.
    pub fn push(&mut self, g: GraphId, makespan: f64) {
        self.makespans.entry(g).or_default().push(makespan);
        self.computed += 1;
    }

    /// The non-increasing τ table of graph `g` on 1…`procs` (all known).
    pub fn table(&self, g: GraphId, procs: usize) -> Vec<f64> {
        let mut t = self.makespans[&g][..procs].to_vec();
        make_non_increasing(&mut t);
        t
    }
}
