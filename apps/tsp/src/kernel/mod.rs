//! The kernels, plain functions on plain data, and the serial reference `--verify` uses.
//!
//! [`instance`] holds a TSP instance and its distance matrix, [`distance`] TSPLIB's distance
//! functions; [`heuristic`] finds a first tour, [`bound`] computes Held-Karp 1-tree bounds,
//! [`search`] is the `fast` variant's serial depth-first branch and bound with a node
//! budget, [`thesis`] the `thesis` variant's own search, [`dp`] the exact dynamic program;
//! [`deadline`] is the `--time-limit` they all check. [`verify`] checks a search's tour
//! independently, and against the dynamic program on small instances.

pub mod bound;
pub mod deadline;
pub mod distance;
pub mod dp;
pub mod heuristic;
pub mod instance;
pub mod search;
pub mod thesis;

use instance::Instance;

/// Largest instance [`verify`] compares with the dynamic program.
pub const DP_VERIFY_MAX: usize = 12;

/// Checks that `tour` visits every city of `inst` exactly once and has length `length`,
/// recomputing the length from the distances.
///
/// # Errors
/// A message saying what is wrong.
pub fn check_tour(inst: &Instance, tour: &[usize], length: i64) -> Result<(), String> {
    if tour.len() != inst.n {
        return Err(format!("the tour has {} cities, the instance {}", tour.len(), inst.n));
    }
    let mut seen = vec![false; inst.n];
    for &c in tour {
        if c >= inst.n || std::mem::replace(&mut seen[c], true) {
            return Err(format!("city {} is visited twice or does not exist", c + 1));
        }
    }
    let Some(recomputed) = inst.checked_tour_length(tour) else {
        return Err("the tour's length overflows 64-bit integers".into());
    };
    if length < 0 || recomputed != length {
        return Err(format!("the tour's length is {recomputed}, not the {length} reported"));
    }
    Ok(())
}

/// `--verify`, failing closed: a tour was found, it visits every city once, its `length`
/// recomputed with checked sums is the one reported, and for small instances (at most
/// [`DP_VERIFY_MAX`] cities) the dynamic program (checked sums too) agrees: never shorter
/// than the optimum, equal to it when the search claims a proof (`proven`).
///
/// # Errors
/// A message saying what is wrong.
pub fn verify(inst: &Instance, tour: &[usize], length: i64, proven: bool) -> Result<(), String> {
    if tour.is_empty() {
        return Err("no tour was found".into());
    }
    check_tour(inst, tour, length)?;
    if inst.n <= DP_VERIFY_MAX {
        let (opt, _) = dp::solve(inst).map_err(|e| format!("the dynamic program failed: {e:#}"))?;
        if length < opt || (proven && opt != length) {
            return Err(format!("the dynamic program's optimum is {opt}, the search found {length}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_tours() {
        let inst = Instance::random(4, 1);
        let len = inst.tour_length(&[0, 1, 2, 3]);
        assert!(check_tour(&inst, &[0, 1, 2, 3], len).is_ok());
        assert!(check_tour(&inst, &[0, 1, 2, 3], len + 1).unwrap_err().contains("not the"));
        assert!(check_tour(&inst, &[0, 1, 1, 3], len).unwrap_err().contains("twice"));
        assert!(check_tour(&inst, &[0, 1, 2], len).is_err());
        let big = Instance::unchecked_matrix(3, vec![0, i64::MAX, 1, i64::MAX, 0, 1, 1, 1, 0]);
        assert!(check_tour(&big, &[0, 1, 2], i64::MIN + 1).unwrap_err().contains("overflows"));
    }

    /// `--verify` passes only a real tour of the reported length that the dynamic program
    /// does not contradict.
    #[test]
    fn verify_fails_closed() {
        let inst = Instance::random(8, 1);
        let (opt, tour) = dp::solve(&inst).unwrap();
        verify(&inst, &tour, opt, true).unwrap();
        assert!(verify(&inst, &[], opt, false).is_err(), "no tour");
        assert!(verify(&inst, &tour, opt - 1, false).is_err(), "wrong length");
        assert!(verify(&inst, &tour, -opt, false).is_err(), "negative length");
        let mut twice = tour.clone();
        twice[1] = twice[2];
        assert!(verify(&inst, &twice, opt, false).is_err(), "not a permutation");
        // A longer tour claimed optimal contradicts the dynamic program.
        let mut worse = tour;
        worse.swap(1, 4);
        let len = inst.tour_length(&worse);
        if len != opt {
            assert!(verify(&inst, &worse, len, true).is_err(), "false proof");
            verify(&inst, &worse, len, false).unwrap();
        }
    }
}
