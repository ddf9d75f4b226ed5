//! Dynamic load balancing by cell migration (§8.4), decided on rank 0 between two rounds.
//!
//! The thesis samples each node's *IdleFactor* (eq. 8-4: how far its cells' steps run
//! ahead of the average) with a token circling the nodes, and moves one cell every
//! IntegrationTime from the node furthest behind to the one furthest ahead. Here the rounds
//! are lock-step, so what a node's lag measures is known on rank 0 from the reports the
//! cells return with each round: the time its cells will take in the next round. A cell's
//! predicted work is that of its last round (before the first, its foreground) if it works
//! in the next one, 0 if it sleeps (a dead cell), counted in words computed; each rank's
//! cost of a word is measured ([`Speeds`]: the time its cells took over the work they did,
//! which the reports carry), so a rank whose core is shared or slower gets less work, as the
//! thesis's timing-based IdleFactor gives a slow node fewer cells.
//! While the most loaded rank (the most negative IdleFactor) carries more than
//! [`TOLERANCE`] over the least loaded one (the largest IdleFactor, an idle rank above all),
//! the cell of the loaded rank that best evens the pair moves, if moving it lowers the
//! pair's maximum. Like the thesis's R1/R2, the tolerance keeps cells from moving back and
//! forth over differences the noise of a round's timing could make. Where the cells run
//! never changes the skeleton, only the time.

/// Moves are made while the most loaded rank carries more than this fraction over the
/// least loaded one.
pub const TOLERANCE: f64 = 0.1;

/// Rounds whose cells on a rank took less than this (ns) say too little of its speed.
const MIN_SAMPLE_NS: u64 = 2_000_000;

/// Each rank's measured cost of a word of work (ns), smoothed over the rounds; 1 for every
/// rank until measured (only the ratios matter).
#[derive(Clone, Debug)]
pub struct Speeds {
    cost: Vec<f64>,
    measured: Vec<bool>,
}

impl Speeds {
    /// Nothing measured yet on `ranks` ranks.
    pub fn new(ranks: usize) -> Speeds {
        Speeds { cost: vec![1.0; ranks], measured: vec![false; ranks] }
    }

    /// Takes in a round: `work[r]` words computed on rank `r` in `nanos[r]`.
    pub fn observe(&mut self, work: &[u64], nanos: &[u64]) {
        for r in 0..self.cost.len() {
            if nanos[r] < MIN_SAMPLE_NS || work[r] == 0 {
                continue;
            }
            let now = nanos[r] as f64 / work[r] as f64;
            self.cost[r] = if self.measured[r] { 0.5 * (self.cost[r] + now) } else { now };
            self.measured[r] = true;
        }
        // A rank not measured yet counts as the mean of the measured ones.
        let known: Vec<f64> = (0..self.cost.len()).filter(|&r| self.measured[r]).map(|r| self.cost[r]).collect();
        if !known.is_empty() {
            let mean = known.iter().sum::<f64>() / known.len() as f64;
            for r in 0..self.cost.len() {
                if !self.measured[r] {
                    self.cost[r] = mean;
                }
            }
        }
    }

    /// The cost of a word on each rank.
    pub fn cost(&self) -> &[f64] {
        &self.cost
    }
}

/// Among the moves that even the pair about as well as the best one (within this fraction
/// of the loaded rank's time), the one that keeps most neighbours together is made.
pub const SLACK: f64 = 0.05;

/// The moves `(cell, rank)` that even out the ranks' times: `owner[c]` is cell `c`'s rank,
/// `load[c]` its predicted work, `cost[r]` the time a word takes on rank `r`, and `near[c]`
/// the cells cell `c` exchanges strips with. Given the same inputs, the same moves.
///
/// Of the loaded rank's cells whose move evens the pair within [`SLACK`] of the best, the
/// one with the most working neighbours on the receiving rank (less those it leaves behind)
/// moves: a cell's strips to a neighbour on its own rank are moved in memory, to another
/// rank sent, so the cells that move together keep their exchanges local (on the skewed
/// image, whole columns of cells move).
pub fn plan(owner: &[usize], load: &[u64], cost: &[f64], near: &[Vec<usize>]) -> Vec<(usize, usize)> {
    assert_eq!(owner.len(), load.len());
    assert_eq!(owner.len(), near.len());
    let mut owner = owner.to_vec();
    let mut time = vec![0f64; cost.len()];
    for (&o, &l) in owner.iter().zip(load) {
        time[o] += l as f64 * cost[o];
    }
    let mut moves = Vec::new();
    // Each move lowers the pair's maximum; the bound is a guard.
    for _ in 0..owner.len() {
        let (from, to) = (argmax(&time), argmin(&time));
        let (high, low) = (time[from], time[to]);
        if from == to || high - low <= TOLERANCE * high {
            break;
        }
        // The moves that lower the pair's maximum, and how even each leaves the pair.
        let after = |c: usize| (high - load[c] as f64 * cost[from], low + load[c] as f64 * cost[to]);
        let gap = |c: usize| (after(c).0 - after(c).1).abs();
        let candidates: Vec<usize> =
            (0..owner.len()).filter(|&c| owner[c] == from && load[c] > 0 && after(c).1 < high).collect();
        let Some(best) = candidates.iter().map(|&c| gap(c)).min_by(f64::total_cmp) else { break };
        let together = |c: usize| {
            near[c]
                .iter()
                .filter(|&&n| load[n] > 0)
                .map(|&n| i64::from(owner[n] == to) - i64::from(owner[n] == from))
                .sum::<i64>()
        };
        let cell = candidates
            .into_iter()
            .filter(|&c| gap(c) <= best + SLACK * high)
            .max_by(|&a, &b| together(a).cmp(&together(b)).then(gap(b).total_cmp(&gap(a))).then(b.cmp(&a)))
            .expect("the best move is a candidate");
        owner[cell] = to;
        (time[from], time[to]) = after(cell);
        moves.push((cell, to));
    }
    moves
}

/// The first index of the largest value.
fn argmax(v: &[f64]) -> usize {
    (0..v.len()).fold(0, |best, i| if v[i] > v[best] { i } else { best })
}

/// The first index of the smallest value.
fn argmin(v: &[f64]) -> usize {
    (0..v.len()).fold(0, |best, i| if v[i] < v[best] { i } else { best })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No cell exchanges strips with another.
    fn alone(n: usize) -> Vec<Vec<usize>> {
        vec![Vec::new(); n]
    }

    fn loads_after(owner: &[usize], load: &[u64], ranks: usize, moves: &[(usize, usize)]) -> Vec<u64> {
        let mut owner = owner.to_vec();
        for &(c, r) in moves {
            owner[c] = r;
        }
        let mut per = vec![0; ranks];
        for (o, l) in owner.iter().zip(load) {
            per[*o] += l;
        }
        per
    }

    #[test]
    fn an_idle_rank_takes_half_of_the_work() {
        // The skewed image under eq. (8-2) on 2 ranks: every working cell on rank 0.
        let owner: Vec<usize> = (0..16).map(|c| c % 2).collect();
        let load: Vec<u64> = (0..16).map(|c| if c % 2 == 0 { 100 } else { 0 }).collect();
        let moves = plan(&owner, &load, &[1.0; 2], &alone(16));
        assert_eq!(moves.len(), 4);
        assert!(moves.iter().all(|&(c, r)| c % 2 == 0 && r == 1));
        assert_eq!(loads_after(&owner, &load, 2, &moves), vec![400, 400]);
    }

    #[test]
    fn balanced_loads_move_nothing() {
        let owner: Vec<usize> = (0..12).map(|c| c % 3).collect();
        let load = vec![10, 11, 9, 10, 10, 10, 10, 9, 11, 10, 10, 10];
        assert!(plan(&owner, &load, &[1.0; 3], &alone(12)).is_empty());
    }

    #[test]
    fn a_move_must_lower_the_maximum() {
        // One big cell: moving it would only swap the roles.
        assert!(plan(&[0, 1], &[100, 10], &[1.0; 2], &alone(2)).is_empty());
        // Ties between ranks go to the lowest: rank 1 and 2 both idle, rank 1 receives first.
        let moves = plan(&[0, 0, 0], &[10, 10, 10], &[1.0; 3], &alone(3));
        assert_eq!(moves, vec![(0, 1), (1, 2)]);
    }

    #[test]
    fn the_decision_is_deterministic() {
        let owner: Vec<usize> = (0..40).map(|c| c % 4).collect();
        let load: Vec<u64> = (0..40).map(|c| (c * 37 % 11) as u64 * 5).collect();
        assert_eq!(plan(&owner, &load, &[1.0; 4], &alone(40)), plan(&owner, &load, &[1.0; 4], &alone(40)));
        let per = loads_after(&owner, &load, 4, &plan(&owner, &load, &[1.0; 4], &alone(40)));
        let (hi, lo) = (*per.iter().max().unwrap(), *per.iter().min().unwrap());
        assert!((hi - lo) as f64 <= 0.25 * hi as f64, "{per:?}");
    }

    #[test]
    fn a_slow_rank_gets_less_work() {
        // Rank 0 takes twice as long per word: it keeps about a third of the work.
        let owner = vec![0; 30];
        let load = vec![10; 30];
        let moves = plan(&owner, &load, &[2.0, 1.0], &alone(30));
        let per = loads_after(&owner, &load, 2, &moves);
        assert!((90..=110).contains(&per[0]), "{per:?}");
        let mut speeds = Speeds::new(3);
        speeds.observe(&[1000, 0, 1000], &[4_000_000, 0, 2_000_000]);
        assert_eq!(speeds.cost(), &[4000.0, 3000.0, 2000.0]);
        speeds.observe(&[1000, 1, 1000], &[2_000_000, 10, 2_000_000]);
        assert_eq!(speeds.cost(), &[3000.0, 2500.0, 2000.0], "rank 1's tiny round is no sample");
    }

    #[test]
    fn neighbours_move_together() {
        // Two columns of 8 cells (a cell's neighbours: the cells above and below), all on
        // rank 0, equal loads: rank 1 gets one whole column, not every other cell.
        let near: Vec<Vec<usize>> = (0..16)
            .map(|c: usize| {
                let (col, row) = (c / 8, c % 8);
                [row.checked_sub(1), (row + 1 < 8).then_some(row + 1)]
                    .into_iter()
                    .flatten()
                    .map(|r| col * 8 + r)
                    .collect()
            })
            .collect();
        let moves = plan(&[0; 16], &[10; 16], &[1.0, 1.0], &near);
        let mut moved: Vec<usize> = moves.iter().map(|m| m.0).collect();
        moved.sort_unstable();
        assert!(moved == (0..8).collect::<Vec<_>>() || moved == (8..16).collect::<Vec<_>>(), "{moved:?}");
    }
}
