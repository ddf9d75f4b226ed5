//! The optimal makespan T_opt of a small malleable task graph (without communication), by
//! exhaustive search: every processor count per task and every precedence-respecting order,
//! each order placed by the serial schedule-generation scheme (each task at the earliest time
//! its processors are free after its predecessors). Those schedules include an optimal one
//! (the active schedules of a single-resource project scheduling problem; a schedule that
//! never uses more than P processors at once can be given concrete processors in order of
//! start). Branch and bound prunes it; graphs whose search could exceed [`MAX_STATES`] are
//! refused before any work, with the figure.

use super::graph::Graph;

/// The largest search admitted: the orders times the useful allotments (see [`search_size`]).
pub const MAX_STATES: f64 = 5e8;

/// Why a graph is too large for the exhaustive search.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the exact solver would search up to {states:.2e} schedules ({tasks} tasks on {procs} processors: orders × allotments), above its limit of {limit:.0e}")]
pub struct TooLarge {
    /// n.
    pub tasks: usize,
    /// P.
    pub procs: usize,
    /// [`search_size`].
    pub states: f64,
    /// [`MAX_STATES`].
    pub limit: f64,
}

struct Search<'a> {
    preds: Vec<Vec<usize>>,
    tables: &'a [Vec<f64>],
    p: usize,
    least_work: Vec<f64>,
    /// Placed tasks: (start, end, processors).
    placed: Vec<(f64, f64, usize)>,
    finish: Vec<f64>,
    done: Vec<bool>,
    best: f64,
}

impl Search<'_> {
    /// The earliest start ≥ `ready` with `q` processors free for `d` seconds.
    fn earliest(&self, ready: f64, q: usize, d: f64) -> f64 {
        let mut times: Vec<f64> =
            std::iter::once(ready).chain(self.placed.iter().map(|x| x.1).filter(|&e| e > ready)).collect();
        times.sort_by(f64::total_cmp);
        let used = |t: f64| self.placed.iter().filter(|x| x.0 <= t && t < x.1).map(|x| x.2).sum::<usize>();
        for s in times {
            let fits = std::iter::once(s)
                .chain(self.placed.iter().map(|x| x.0).filter(|&t| t > s && t < s + d))
                .all(|t| used(t) + q <= self.p);
            if fits {
                return s;
            }
        }
        unreachable!("all processors are free after the last end")
    }

    fn go(&mut self, makespan: f64, area: f64, left_work: f64) {
        let n = self.tables.len();
        if self.done.iter().all(|&d| d) {
            self.best = self.best.min(makespan);
            return;
        }
        if (area + left_work) / self.p as f64 >= self.best {
            return;
        }
        for v in 0..n {
            if self.done[v] || !self.preds[v].iter().all(|&u| self.done[u]) {
                continue;
            }
            let ready = self.preds[v].iter().map(|&u| self.finish[u]).fold(0.0, f64::max);
            for q in 1..=self.p {
                let d = self.tables[v][q - 1];
                if q > 1 && d >= self.tables[v][q - 2] {
                    continue; // as slow as with one processor fewer: never better
                }
                let s = self.earliest(ready, q, d);
                if s + d >= self.best {
                    continue;
                }
                self.done[v] = true;
                self.finish[v] = s + d;
                self.placed.push((s, s + d, q));
                self.go(makespan.max(s + d), area + q as f64 * d, left_work - self.least_work[v]);
                self.placed.pop();
                self.done[v] = false;
            }
        }
    }
}

/// The number of schedules the search may visit: the precedence-respecting orders (counted
/// over subsets for up to 20 tasks, else n!) times, per task, its useful processor counts
/// (those where τ decreases).
pub fn search_size(graph: &Graph, tables: &[Vec<f64>], p: usize) -> f64 {
    let n = tables.len();
    let allotments: f64 =
        tables.iter().map(|t| (1..=p).filter(|&q| q == 1 || t[q - 1] < t[q - 2]).count() as f64).product();
    let orders = if n <= 20 {
        let preds: Vec<u32> = graph.preds().iter().map(|ps| ps.iter().fold(0u32, |m, &u| m | 1 << u)).collect();
        let mut ways = vec![0f64; 1 << n];
        ways[0] = 1.0;
        for set in 0..(1usize << n) {
            if ways[set] == 0.0 {
                continue;
            }
            for v in (0..n).filter(|&v| set & (1 << v) == 0 && preds[v] as usize & !set == 0) {
                ways[set | 1 << v] += ways[set];
            }
        }
        ways[(1 << n) - 1]
    } else {
        (1..=n).map(|k| k as f64).product()
    };
    orders * allotments
}

/// T_opt of `graph` with τ tables `tables` (τ(1…p) each) on `p` processors.
///
/// # Errors
/// [`TooLarge`] when [`search_size`] exceeds [`MAX_STATES`] (or the graph has more than 20
/// tasks).
pub fn optimal_makespan(graph: &Graph, tables: &[Vec<f64>], p: usize) -> Result<f64, TooLarge> {
    let n = tables.len();
    if n > 20 {
        let states = (1..=n).map(|k| k as f64).product();
        return Err(TooLarge { tasks: n, procs: p, states, limit: MAX_STATES });
    }
    let states = search_size(graph, tables, p);
    if states > MAX_STATES {
        return Err(TooLarge { tasks: n, procs: p, states, limit: MAX_STATES });
    }
    let least_work: Vec<f64> =
        tables.iter().map(|t| (1..=p).map(|q| q as f64 * t[q - 1]).fold(f64::INFINITY, f64::min)).collect();
    let total: f64 = least_work.iter().sum();
    let mut search = Search {
        preds: graph.preds(),
        tables,
        p,
        least_work,
        placed: Vec::new(),
        finish: vec![0.0; n],
        done: vec![false; n],
        // Everything on one processor, one after another, is a schedule.
        best: tables.iter().map(|t| t[0]).sum::<f64>() * (1.0 + 1e-12),
    };
    search.go(0.0, 0.0, total);
    Ok(search.best.min(tables.iter().map(|t| t[0]).sum()))
}
