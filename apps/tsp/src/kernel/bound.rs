//! Lower bounds: the 1-tree with Held-Karp multipliers, improved by subgradient ascent,
//! under branching constraints (edges forced into or excluded from the tour).
//!
//! A 1-tree is a spanning tree on cities `1..n` plus two edges at city 0; every tour is one,
//! so the cheapest 1-tree is a lower bound. With multipliers `pi`, edge `(i, j)` costs
//! `d(i, j) + pi[i] + pi[j]` and the bound is `w(1-tree) - 2 Σ pi`, still valid for every
//! `pi`. Subgradient ascent moves `pi` towards cities of degree above 2 (`pi += t (deg - 2)`),
//! which raises the bound to the Held-Karp bound, typically within 1% of the optimum. A
//! 1-tree in which every city has degree 2 is a tour, and then an optimal one for the
//! subproblem.
//!
//! Constraints come from branching ([`Branch`]): forced edges must be in the tour, excluded
//! edges must not. [`Constraints::build`] propagates them (a city with two forced edges
//! loses its other edges; a city with only two usable edges must use both; an edge closing a
//! forced path into a short cycle is excluded) and detects infeasible subproblems.

use serde::{Deserialize, Serialize};

use super::deadline::Deadline;
use super::instance::Instance;

/// An undirected edge `(i, j)` with `i < j`.
pub type Edge = (u16, u16);

/// The edge between `a` and `b`, normalised.
pub fn edge(a: usize, b: usize) -> Edge {
    if a < b {
        (a as u16, b as u16)
    } else {
        (b as u16, a as u16)
    }
}

/// The branching decisions that define a subproblem.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Branch {
    /// Edges every tour of the subproblem uses.
    pub forced: Vec<Edge>,
    /// Edges no tour of the subproblem uses.
    pub excluded: Vec<Edge>,
}

const FREE: i8 = 0;
const FORCED: i8 = 1;
const EXCLUDED: i8 = -1;

/// The propagated edge states of a subproblem.
#[derive(Clone, Debug)]
pub struct Constraints {
    n: usize,
    state: Vec<i8>,
    forced_degree: Vec<u8>,
    /// The tour the forced edges already form, if they form one.
    pub complete: Option<Vec<usize>>,
}

impl Constraints {
    /// Applies `branch` to `n` cities and propagates; `None` if no tour satisfies it.
    pub fn build(n: usize, branch: &Branch) -> Option<Constraints> {
        let mut c = Constraints { n, state: vec![FREE; n * n], forced_degree: vec![0; n], complete: None };
        for i in 0..n {
            c.state[i * n + i] = EXCLUDED;
        }
        for &(a, b) in &branch.excluded {
            c.set(a as usize, b as usize, EXCLUDED);
        }
        for &(a, b) in &branch.forced {
            let (a, b) = (a as usize, b as usize);
            match c.get(a, b) {
                EXCLUDED => return None,
                FORCED => {}
                _ => c.force(a, b),
            }
        }
        c.propagate()?;
        Some(c)
    }

    #[inline]
    fn get(&self, a: usize, b: usize) -> i8 {
        self.state[a * self.n + b]
    }

    fn set(&mut self, a: usize, b: usize, s: i8) {
        self.state[a * self.n + b] = s;
        self.state[b * self.n + a] = s;
    }

    fn force(&mut self, a: usize, b: usize) {
        self.set(a, b, FORCED);
        self.forced_degree[a] += 1;
        self.forced_degree[b] += 1;
    }

    /// True if edge `(a, b)` is forced.
    pub fn is_forced(&self, a: usize, b: usize) -> bool {
        self.get(a, b) == FORCED
    }

    /// True if edge `(a, b)` is excluded.
    pub fn is_excluded(&self, a: usize, b: usize) -> bool {
        self.get(a, b) == EXCLUDED
    }

    /// How many forced edges city `v` has.
    pub fn forced_degree(&self, v: usize) -> usize {
        self.forced_degree[v] as usize
    }

    /// Propagates to a fixpoint; `None` if infeasible.
    fn propagate(&mut self) -> Option<()> {
        let n = self.n;
        loop {
            let mut changed = false;
            for v in 0..n {
                let f = self.forced_degree[v] as usize;
                let usable = (0..n).filter(|&w| self.get(v, w) != EXCLUDED).count();
                if f > 2 || usable < 2 {
                    return None;
                }
                if f == 2 && usable > 2 {
                    for w in 0..n {
                        if self.get(v, w) == FREE {
                            self.set(v, w, EXCLUDED);
                        }
                    }
                    changed = true;
                } else if usable == 2 && f < 2 {
                    for w in 0..n {
                        if self.get(v, w) == FREE {
                            self.force(v, w);
                        }
                    }
                    changed = true;
                }
            }
            if self.close_paths()? {
                changed = true;
            }
            if !changed {
                return Some(());
            }
        }
    }

    /// Excludes the edge that would close each forced path into a cycle shorter than a tour;
    /// detects such cycles (`None`) and a complete forced tour. Returns whether it changed
    /// anything.
    fn close_paths(&mut self) -> Option<bool> {
        let n = self.n;
        let mut seen = vec![false; n];
        let mut changed = false;
        let mut forced_edges = 0;
        for v in 0..n {
            forced_edges += self.forced_degree[v] as usize;
        }
        forced_edges /= 2;
        for start in 0..n {
            if seen[start] || self.forced_degree[start] != 1 {
                continue;
            }
            // Walk the path from one end to the other.
            let (mut prev, mut cur, mut len) = (usize::MAX, start, 1);
            seen[start] = true;
            loop {
                let next = (0..n).find(|&w| w != prev && self.get(cur, w) == FORCED);
                match next {
                    Some(w) if !seen[w] => {
                        seen[w] = true;
                        prev = cur;
                        cur = w;
                        len += 1;
                    }
                    _ => break,
                }
            }
            if len < n && self.get(start, cur) == FREE {
                self.set(start, cur, EXCLUDED);
                changed = true;
            }
        }
        // Cities with two forced edges not reached from a path end lie on forced cycles.
        let on_cycle = (0..n).filter(|&v| !seen[v] && self.forced_degree[v] == 2).count();
        if on_cycle > 0 {
            if on_cycle == n && forced_edges == n {
                self.complete = Some(self.forced_cycle());
                return Some(false);
            }
            return None;
        }
        Some(changed)
    }

    fn forced_cycle(&self) -> Vec<usize> {
        let mut tour = vec![0];
        let mut prev = usize::MAX;
        while tour.len() < self.n {
            let cur = *tour.last().unwrap();
            let next = (0..self.n).find(|&w| w != prev && self.get(cur, w) == FORCED).unwrap();
            prev = cur;
            tour.push(next);
        }
        tour
    }
}

/// A 1-tree: its edges, the degree of every city, and its cost under the multipliers.
#[derive(Clone, Debug, Default)]
pub struct OneTree {
    /// The `n` edges.
    pub edges: Vec<(usize, usize)>,
    /// Degree of each city.
    pub degree: Vec<u32>,
    /// `w(1-tree) - 2 Σ pi`: the lower bound these multipliers give.
    pub bound: f64,
}

impl OneTree {
    /// The tour this 1-tree is, if every city has degree 2.
    pub fn as_tour(&self) -> Option<Vec<usize>> {
        if self.degree.iter().any(|&d| d != 2) {
            return None;
        }
        let n = self.degree.len();
        let mut adj = vec![Vec::with_capacity(2); n];
        for &(a, b) in &self.edges {
            adj[a].push(b);
            adj[b].push(a);
        }
        let mut tour = vec![0];
        let mut prev = usize::MAX;
        while tour.len() < n {
            let cur = *tour.last().unwrap();
            let next = if adj[cur][0] != prev { adj[cur][0] } else { adj[cur][1] };
            if next == 0 {
                return None; // a 1-tree with all degrees 2 is one cycle, but be safe
            }
            prev = cur;
            tour.push(next);
        }
        Some(tour)
    }
}

/// Settings of the subgradient ascent.
#[derive(Clone, Copy, Debug)]
pub struct AscentParams {
    /// Most iterations.
    pub iterations: usize,
    /// Initial step factor λ of the Polyak step `λ (upper - L) / |g|²`.
    pub lambda: f64,
    /// λ is halved after this many iterations without a better bound.
    pub patience: usize,
    /// The ascent stops here with the best bound so far (still a valid bound).
    pub deadline: Deadline,
}

impl AscentParams {
    /// For the root: long, from zero multipliers.
    pub fn root(n: usize) -> AscentParams {
        AscentParams { iterations: 50 * n + 1000, lambda: 2.0, patience: n.max(20), deadline: Deadline::NONE }
    }

    /// For a search node, warm-started from its parent's multipliers.
    pub fn node(n: usize) -> AscentParams {
        AscentParams { iterations: n.max(30), lambda: 0.5, patience: 10, deadline: Deadline::NONE }
    }
}

/// The outcome of bounding a subproblem.
#[derive(Clone, Debug)]
pub enum Bounded {
    /// No tour of the subproblem can be shorter than `upper`.
    Pruned,
    /// The best 1-tree is a tour: the subproblem's optimum, of this length.
    Tour(i64, Vec<usize>),
    /// The bound, the multipliers that give it and their 1-tree (for branching).
    Open(f64, Vec<f64>, OneTree),
}

/// True if a bound `lb` shows that no tour is shorter than `upper` (integer lengths).
pub fn prunes(lb: f64, upper: i64) -> bool {
    (lb - 1e-6).ceil() >= upper as f64
}

/// Computes 1-trees and Held-Karp bounds for one instance, reusing its buffers.
#[derive(Debug)]
pub struct HeldKarp<'a> {
    inst: &'a Instance,
    /// Edge costs under the current constraints: `INFINITY` if excluded, `NEG_INFINITY` if
    /// forced.
    cost: Vec<f64>,
    /// Prim's cheapest known connection of each city to the tree, and its other end.
    key: Vec<f64>,
    parent: Vec<usize>,
    /// Cities not yet in the tree.
    rest: Vec<usize>,
}

impl<'a> HeldKarp<'a> {
    /// Buffers for `inst`.
    pub fn new(inst: &'a Instance) -> HeldKarp<'a> {
        let n = inst.n;
        HeldKarp { inst, cost: vec![0.0; n * n], key: vec![0.0; n], parent: vec![0; n], rest: Vec::with_capacity(n) }
    }

    /// Loads the constraints into the cost matrix.
    fn load(&mut self, c: &Constraints) {
        let n = self.inst.n;
        for (k, &d) in self.inst.matrix().iter().enumerate() {
            self.cost[k] = match c.state[k] {
                EXCLUDED => f64::INFINITY,
                FORCED => f64::NEG_INFINITY,
                _ => d as f64,
            };
        }
        debug_assert_eq!(self.cost.len(), n * n);
    }

    /// The cheapest 1-tree under the loaded constraints and multipliers `pi`, or `None` if
    /// the usable edges do not connect the cities.
    #[allow(clippy::needless_range_loop)] // Prim's loops index several arrays by city
    fn one_tree(&mut self, pi: &[f64], tree: &mut OneTree) -> Option<()> {
        let n = self.inst.n;
        tree.edges.clear();
        tree.degree.clear();
        tree.degree.resize(n, 0);
        let mut total = 0.0;
        // Prim on cities 1..n over the cities not yet in the tree. A forced edge costs
        // -inf, so it is taken before any other; an excluded one +inf, so never.
        self.rest.clear();
        self.rest.extend(2..n);
        self.key[2..n].fill(f64::INFINITY);
        let mut u = 1;
        while !self.rest.is_empty() {
            let row = &self.cost[u * n..(u + 1) * n];
            let pu = pi[u];
            let (mut best_at, mut best_key) = (usize::MAX, f64::INFINITY);
            for (at, &j) in self.rest.iter().enumerate() {
                let c = row[j] + pu + pi[j];
                if c < self.key[j] {
                    self.key[j] = c;
                    self.parent[j] = u;
                }
                if self.key[j] < best_key {
                    best_key = self.key[j];
                    best_at = at;
                }
            }
            if best_at == usize::MAX {
                return None; // disconnected by exclusions
            }
            let best = self.rest.swap_remove(best_at);
            let p = self.parent[best];
            total += self.inst.d(p, best) as f64 + pi[p] + pi[best];
            tree.edges.push((p, best));
            tree.degree[p] += 1;
            tree.degree[best] += 1;
            u = best;
        }
        // City 0: its forced edges, then its cheapest usable ones.
        let mut picked = [usize::MAX; 2];
        let mut count = 0;
        for j in 1..n {
            if self.cost[j] == f64::NEG_INFINITY {
                picked[count] = j;
                count += 1;
            }
        }
        while count < 2 {
            let mut best = usize::MAX;
            let mut best_c = f64::INFINITY;
            for j in 1..n {
                if picked[0] == j || self.cost[j] == f64::NEG_INFINITY {
                    continue;
                }
                let c = self.cost[j] + pi[j];
                if c < best_c {
                    best_c = c;
                    best = j;
                }
            }
            if best == usize::MAX {
                return None;
            }
            picked[count] = best;
            count += 1;
        }
        for j in picked {
            total += self.inst.d(0, j) as f64 + pi[0] + pi[j];
            tree.edges.push((0, j));
            tree.degree[0] += 1;
            tree.degree[j] += 1;
        }
        tree.bound = total - 2.0 * pi.iter().sum::<f64>();
        Some(())
    }

    /// Bounds the subproblem `c` by subgradient ascent from multipliers `pi`, against the
    /// best known tour length `upper`.
    pub fn bound(&mut self, c: &Constraints, pi: &[f64], upper: i64, p: AscentParams) -> Bounded {
        if let Some(tour) = &c.complete {
            let len = self.inst.tour_length(tour);
            return if len < upper { Bounded::Tour(len, tour.clone()) } else { Bounded::Pruned };
        }
        self.load(c);
        let mut pi = pi.to_vec();
        let mut tree = OneTree::default();
        let mut best = OneTree { bound: f64::NEG_INFINITY, ..OneTree::default() };
        let mut best_pi = pi.clone();
        let (mut lambda, mut stale) = (p.lambda, 0);
        for _ in 0..p.iterations {
            if p.deadline.passed() && !best.edges.is_empty() {
                break;
            }
            if self.one_tree(&pi, &mut tree).is_none() {
                return Bounded::Pruned;
            }
            if prunes(tree.bound, upper) {
                return Bounded::Pruned;
            }
            if let Some(tour) = tree.as_tour() {
                let len = self.inst.tour_length(&tour);
                return if len < upper { Bounded::Tour(len, tour) } else { Bounded::Pruned };
            }
            if tree.bound > best.bound + 1e-9 {
                std::mem::swap(&mut best, &mut tree);
                best_pi.copy_from_slice(&pi);
                stale = 0;
            } else {
                stale += 1;
                if stale >= p.patience {
                    lambda /= 2.0;
                    stale = 0;
                    if lambda < 1e-4 {
                        break;
                    }
                }
            }
            let cur = if stale == 0 { &best } else { &tree };
            let norm: f64 = cur.degree.iter().map(|&d| (d as f64 - 2.0).powi(2)).sum();
            let gap = (upper as f64 - cur.bound).clamp(1.0, f64::MAX / 4.0);
            let t = lambda * gap / norm;
            for (p, &d) in pi.iter_mut().zip(&cur.degree) {
                *p += t * (d as f64 - 2.0);
            }
        }
        if best.edges.is_empty() {
            // No iteration ran: take the tree of the given multipliers.
            if self.one_tree(&best_pi, &mut best).is_none() {
                return Bounded::Pruned;
            }
        }
        Bounded::Open(best.bound, best_pi, best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::dp;

    #[test]
    fn forced_degree_two_excludes_the_rest_and_short_cycles_are_infeasible() {
        let n = 5;
        let b = Branch { forced: vec![(0, 1), (0, 2)], excluded: vec![] };
        let c = Constraints::build(n, &b).unwrap();
        assert!(c.is_excluded(0, 3) && c.is_excluded(0, 4));
        assert!(c.is_excluded(1, 2), "closing the path 1-0-2 makes a 3-cycle in a 5-city tour");
        let triangle = Branch { forced: vec![(0, 1), (1, 2), (0, 2)], excluded: vec![] };
        assert!(Constraints::build(n, &triangle).is_none());
        let three = Branch { forced: vec![(0, 1), (0, 2), (0, 3)], excluded: vec![] };
        assert!(Constraints::build(n, &three).is_none());
    }

    #[test]
    fn a_forced_tour_is_complete() {
        let b = Branch { forced: vec![(0, 1), (1, 2), (2, 3)], excluded: vec![] };
        let c = Constraints::build(4, &b).unwrap();
        assert_eq!(c.complete.as_deref(), Some(&[0, 1, 2, 3][..]));
    }

    #[test]
    fn held_karp_bound_never_exceeds_the_optimum() {
        for seed in 0..20 {
            let inst = Instance::random(10, seed);
            let (opt, _) = dp::solve(&inst).unwrap();
            let c = Constraints::build(inst.n, &Branch::default()).unwrap();
            let mut hk = HeldKarp::new(&inst);
            match hk.bound(&c, &vec![0.0; inst.n], opt + 1, AscentParams::root(inst.n)) {
                Bounded::Pruned => panic!("seed {seed}: the optimum {opt} cannot be pruned against {}", opt + 1),
                Bounded::Tour(len, _) => assert_eq!(len, opt, "seed {seed}"),
                Bounded::Open(lb, _, _) => assert!(lb <= opt as f64 + 1e-6, "seed {seed}: {lb} > {opt}"),
            }
        }
    }
}
