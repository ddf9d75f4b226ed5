//! Dynamic load balancing by cell migration (§8.4), decided on rank 0 between two rounds.
//!
//! The thesis samples each node's *IdleFactor* (eq. 8-4: how far its cells' steps run
//! ahead of the average) with a token circling the nodes, and moves one cell every
//! IntegrationTime from the node furthest behind to the one furthest ahead. Here the rounds
//! are lock-step (rank 0 deals each round's work), so what a node's lag measures is known
//! directly: the work its cells will do in the next round. A cell's predicted load is the
//! work of its last round (before the first, its foreground) if it works in the next one,
//! 0 if it sleeps (a dead cell). The work is counted in words computed, not measured with a
//! clock, so the decisions do not depend on the machine's load.
//! While the most loaded rank (the most negative IdleFactor) carries more than
//! [`TOLERANCE`] over the least loaded one (the largest IdleFactor, an idle rank above all),
//! the cell of the loaded rank that best evens the pair moves, if moving it lowers the
//! pair's maximum. Like the thesis's R1/R2, the tolerance keeps cells from moving back and
//! forth over differences the noise of a round's timing could make.

/// Moves are made while the most loaded rank carries more than this fraction over the
/// least loaded one.
pub const TOLERANCE: f64 = 0.1;

/// The moves `(cell, rank)` that even out the loads: `owner[c]` is cell `c`'s rank and
/// `load[c]` its predicted load. Every rank given the same inputs decides the same moves.
pub fn plan(owner: &[usize], load: &[u64], ranks: usize) -> Vec<(usize, usize)> {
    assert_eq!(owner.len(), load.len());
    let mut owner = owner.to_vec();
    let mut per_rank = vec![0u64; ranks];
    for (&o, &l) in owner.iter().zip(load) {
        per_rank[o] += l;
    }
    let mut moves = Vec::new();
    // Each move lowers the sum of the squared loads, so this ends; the bound is a guard.
    for _ in 0..owner.len() {
        let (from, to) = (argmax(&per_rank), argmin(&per_rank));
        let (high, low) = (per_rank[from], per_rank[to]);
        if from == to || (high - low) as f64 <= TOLERANCE * high as f64 {
            break;
        }
        // The cell whose move leaves the pair most even, among those that lower its maximum.
        let best = (0..owner.len())
            .filter(|&c| owner[c] == from && load[c] > 0 && low + load[c] < high)
            .min_by_key(|&c| (high - load[c]).abs_diff(low + load[c]));
        let Some(cell) = best else { break };
        owner[cell] = to;
        per_rank[from] -= load[cell];
        per_rank[to] += load[cell];
        moves.push((cell, to));
    }
    moves
}

/// The first index of the largest value.
fn argmax(v: &[u64]) -> usize {
    (0..v.len()).fold(0, |best, i| if v[i] > v[best] { i } else { best })
}

/// The first index of the smallest value.
fn argmin(v: &[u64]) -> usize {
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
        let moves = plan(&owner, &load, 2);
        assert_eq!(moves.len(), 4);
        assert!(moves.iter().all(|&(c, r)| c % 2 == 0 && r == 1));
        assert_eq!(loads_after(&owner, &load, 2, &moves), vec![400, 400]);
    }

    #[test]
    fn balanced_loads_move_nothing() {
        let owner: Vec<usize> = (0..12).map(|c| c % 3).collect();
        let load = vec![10, 11, 9, 10, 10, 10, 10, 9, 11, 10, 10, 10];
        assert!(plan(&owner, &load, 3).is_empty());
    }

    #[test]
    fn a_move_must_lower_the_maximum() {
        // One big cell: moving it would only swap the roles.
        assert!(plan(&[0, 1], &[100, 10], 2).is_empty());
        // Ties between ranks go to the lowest: rank 1 and 2 both idle, rank 1 receives first.
        let moves = plan(&[0, 0, 0], &[10, 10, 10], 3);
        assert_eq!(moves, vec![(0, 1), (1, 2)]);
    }

    #[test]
    fn the_decision_is_deterministic() {
        let owner: Vec<usize> = (0..40).map(|c| c % 4).collect();
        let load: Vec<u64> = (0..40).map(|c| (c * 37 % 11) as u64 * 5).collect();
        assert_eq!(plan(&owner, &load, 4), plan(&owner, &load, 4));
        let per = loads_after(&owner, &load, 4, &plan(&owner, &load, 4));
        let (hi, lo) = (*per.iter().max().unwrap(), *per.iter().min().unwrap());
        assert!((hi - lo) as f64 <= 0.25 * hi as f64, "{per:?}");
    }
}
