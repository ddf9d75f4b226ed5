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

/// The moves `(cell, rank)` that even out the ranks' times: `owner[c]` is cell `c`'s rank,
/// `load[c]` its predicted work and `cost[r]` the time a word takes on rank `r`. Given the
/// same inputs, the same moves.
pub fn plan(owner: &[usize], load: &[u64], cost: &[f64]) -> Vec<(usize, usize)> {
    assert_eq!(owner.len(), load.len());
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
        // The cell whose move leaves the pair most even, among those that lower its maximum.
        let after = |c: usize| (high - load[c] as f64 * cost[from], low + load[c] as f64 * cost[to]);
        let best =
            (0..owner.len()).filter(|&c| owner[c] == from && load[c] > 0 && after(c).1 < high).min_by(|&a, &b| {
                let gap = |c: usize| (after(c).0 - after(c).1).abs();
                gap(a).total_cmp(&gap(b)).then(a.cmp(&b))
            });
        let Some(cell) = best else { break };
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
        let moves = plan(&owner, &load, &[1.0; 2]);
        assert_eq!(moves.len(), 4);
        assert!(moves.iter().all(|&(c, r)| c % 2 == 0 && r == 1));
        assert_eq!(loads_after(&owner, &load, 2, &moves), vec![400, 400]);
    }

    #[test]
    fn balanced_loads_move_nothing() {
        let owner: Vec<usize> = (0..12).map(|c| c % 3).collect();
        let load = vec![10, 11, 9, 10, 10, 10, 10, 9, 11, 10, 10, 10];
        assert!(plan(&owner, &load, &[1.0; 3]).is_empty());
    }

    #[test]
    fn a_move_must_lower_the_maximum() {
        // One big cell: moving it would only swap the roles.
        assert!(plan(&[0, 1], &[100, 10], &[1.0; 2]).is_empty());
        // Ties between ranks go to the lowest: rank 1 and 2 both idle, rank 1 receives first.
        let moves = plan(&[0, 0, 0], &[10, 10, 10], &[1.0; 3]);
        assert_eq!(moves, vec![(0, 1), (1, 2)]);
    }

    #[test]
    fn the_decision_is_deterministic() {
        let owner: Vec<usize> = (0..40).map(|c| c % 4).collect();
        let load: Vec<u64> = (0..40).map(|c| (c * 37 % 11) as u64 * 5).collect();
        assert_eq!(plan(&owner, &load, &[1.0; 4]), plan(&owner, &load, &[1.0; 4]));
        let per = loads_after(&owner, &load, 4, &plan(&owner, &load, &[1.0; 4]));
        let (hi, lo) = (*per.iter().max().unwrap(), *per.iter().min().unwrap());
        assert!((hi - lo) as f64 <= 0.25 * hi as f64, "{per:?}");
    }

    #[test]
    fn a_slow_rank_gets_less_work() {
        // Rank 0 takes twice as long per word: it keeps about a third of the work.
        let owner = vec![0; 30];
        let load = vec![10; 30];
        let moves = plan(&owner, &load, &[2.0, 1.0]);
        let per = loads_after(&owner, &load, 2, &moves);
        assert!((90..=110).contains(&per[0]), "{per:?}");
        let mut speeds = Speeds::new(3);
        speeds.observe(&[1000, 0, 1000], &[4_000_000, 0, 2_000_000]);
        assert_eq!(speeds.cost(), &[4000.0, 3000.0, 2000.0]);
        speeds.observe(&[1000, 1, 1000], &[2_000_000, 10, 2_000_000]);
        assert_eq!(speeds.cost(), &[3000.0, 2500.0, 2000.0], "rank 1's tiny round is no sample");
    }
}
