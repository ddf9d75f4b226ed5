//! `--alloc`: how many multiplication threads each LU iteration of the `dynamic` variant
//! may use (the simulator paper, §8 and Fig. 12, "thread removal"): all of them, the half on the first
//! half of the ranks, or all of them up to iteration K and the half afterwards; or as the
//! layered scheduler chooses (`schedule`: [`crate::scheduled`]).
//!
//! The half is counted in ranks, not threads: the threads kept are those on ranks
//! `0..max(1, ranks/2)`, where the column blocks live by default, so the ranks released hold
//! no state and simply receive no more work (on 2 ranks: P = 2 ranks, P/2 = rank 0). With
//! `--column-ranks` beyond them, a released rank keeps its column work.

use std::fmt;
use std::str::FromStr;

/// A thread-allocation strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alloc {
    /// Every multiplication thread at every iteration ("P always").
    All,
    /// The threads of the first half of the ranks at every iteration ("P/2 always").
    Half,
    /// All threads for iterations 1..=K, the half afterwards ("P then P/2 after iteration K").
    HalfAfter(usize),
    /// The ranks the layered scheduler allots to each iteration (issue 31).
    Schedule,
}

impl FromStr for Alloc {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "all" => Ok(Alloc::All),
            "half" => Ok(Alloc::Half),
            "schedule" => Ok(Alloc::Schedule),
            _ => match s.strip_prefix("half-after:") {
                Some(k) => match k.parse::<usize>() {
                    Ok(k) => Ok(Alloc::HalfAfter(k)),
                    Err(_) => Err(format!("{s:?}: K in half-after:K must be an iteration number (1, 2, ...)")),
                },
                None => Err(format!("{s:?} is not a strategy (all, half, half-after:K, schedule)")),
            },
        }
    }
}

impl fmt::Display for Alloc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Alloc::All => f.write_str("all"),
            Alloc::Half => f.write_str("half"),
            Alloc::HalfAfter(k) => write!(f, "half-after:{k}"),
            Alloc::Schedule => f.write_str("schedule"),
        }
    }
}

impl Alloc {
    /// Checks K against the number of iterations (block columns) `nb`: K must leave at least
    /// one iteration on each side, so 1 ≤ K < nb.
    ///
    /// # Errors
    /// A one-line message naming `--alloc`.
    pub fn check(&self, nb: usize) -> Result<(), String> {
        match *self {
            Alloc::HalfAfter(k) if k == 0 || k >= nb => Err(format!(
                "--alloc half-after:{k}: K must be between 1 and {} (the factorization has {nb} iterations; \
                 use --alloc all or --alloc half for the whole run)",
                nb.saturating_sub(1)
            )),
            _ => Ok(()),
        }
    }

    /// Whether iteration `k` (counted from 0) uses every thread (`schedule`: its rows come
    /// from the scheduler instead).
    pub fn uses_all(&self, k: usize) -> bool {
        match *self {
            Alloc::All | Alloc::Schedule => true,
            Alloc::Half => false,
            Alloc::HalfAfter(after) => k < after,
        }
    }
}

/// The multiplication threads of each iteration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Members {
    /// Every thread of the collection.
    pub all: Vec<usize>,
    /// The threads on the ranks kept (the first half of the ranks).
    pub kept: Vec<usize>,
}

impl Members {
    /// From the rank of each multiplication thread and the number of ranks kept.
    ///
    /// # Errors
    /// No thread on the ranks kept (a `--map` that leaves them without one).
    pub fn new(rank_of: &[usize], kept_ranks: usize) -> Result<Self, String> {
        let all: Vec<usize> = (0..rank_of.len()).collect();
        let kept: Vec<usize> = all.iter().copied().filter(|&t| rank_of[t] < kept_ranks).collect();
        if kept.is_empty() {
            return Err(format!("--map puts no multiplication thread on ranks 0..{kept_ranks}, which --alloc keeps"));
        }
        Ok(Members { all, kept })
    }

    /// The threads of iteration `k` (from 0) under `alloc`.
    pub fn of(&self, alloc: Alloc, k: usize) -> &[usize] {
        if alloc.uses_all(k) {
            &self.all
        } else {
            &self.kept
        }
    }
}

/// The number of ranks kept when the multiplications shrink: the first half, at least one.
pub fn kept_ranks(ranks: usize) -> usize {
    (ranks / 2).max(1)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn strategies_parse_and_print_back() {
        for s in ["all", "half", "half-after:1", "half-after:7", "schedule"] {
            assert_eq!(s.parse::<Alloc>().unwrap().to_string(), s);
        }
        for bad in ["", "ALL", "half-after", "half-after:", "half-after:-1", "half-after:x", "quarter"] {
            assert!(bad.parse::<Alloc>().is_err(), "{bad}");
        }
    }

    #[test]
    fn k_must_leave_an_iteration_on_each_side() {
        assert!(Alloc::HalfAfter(0).check(8).is_err());
        assert!(Alloc::HalfAfter(1).check(8).is_ok());
        assert!(Alloc::HalfAfter(7).check(8).is_ok());
        let e = Alloc::HalfAfter(8).check(8).unwrap_err();
        assert!(e.contains("between 1 and 7") && e.contains("8 iterations"), "{e}");
        assert!(Alloc::HalfAfter(1).check(1).is_err(), "one iteration leaves no K");
        assert!(Alloc::All.check(1).is_ok() && Alloc::Half.check(1).is_ok());
    }

    #[test]
    fn the_half_is_the_threads_of_the_first_half_of_the_ranks() {
        // --map all on 4 ranks; all*2 (thread t on rank t % 4) on 4 ranks; 1 rank.
        let m = Members::new(&[0, 1, 2, 3], kept_ranks(4)).unwrap();
        assert_eq!((m.of(Alloc::Half, 0), m.of(Alloc::All, 5)), (&[0, 1][..], &[0, 1, 2, 3][..]));
        let m = Members::new(&[0, 1, 2, 3, 0, 1, 2, 3], kept_ranks(4)).unwrap();
        assert_eq!(m.kept, [0, 1, 4, 5]);
        let m = Members::new(&[0], kept_ranks(1)).unwrap();
        assert_eq!(m.of(Alloc::Half, 0), [0]);
        assert_eq!(m.of(Alloc::HalfAfter(1), 0), m.of(Alloc::HalfAfter(1), 1));
        assert!(Members::new(&[1, 1], kept_ranks(2)).unwrap_err().contains("--map"));
    }

    #[test]
    fn half_after_k_uses_all_threads_for_the_first_k_iterations() {
        let a = Alloc::HalfAfter(2);
        assert_eq!((0..4).map(|k| a.uses_all(k)).collect::<Vec<_>>(), [true, true, false, false]);
    }

    proptest! {
        /// The parser never panics, and what it accepts prints back to itself or to the
        /// canonical form of the same number.
        #[test]
        fn parser_round_trips(s in "(all|half|schedule|half-after:[0-9]{0,25}|[a-z:0-9-]{0,12})") {
            if let Ok(a) = s.parse::<Alloc>() {
                prop_assert_eq!(a.to_string().parse::<Alloc>().unwrap(), a);
            }
        }
    }
}
