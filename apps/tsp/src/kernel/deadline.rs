//! `--time-limit`: the moment after which the search starts no more work, checked by every
//! phase that can take long (the first tour's local search, the root's bound ascent, the
//! master's first expansion and its job dispatch).

use std::time::{Duration, Instant};

/// A moment to stop at, or none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Deadline(Option<Instant>);

impl Deadline {
    /// No deadline: never passed.
    pub const NONE: Deadline = Deadline(None);

    /// `seconds` from now (`None`: no deadline). Seconds that are negative or NaN count as
    /// 0; a moment too far away to represent is no deadline.
    pub fn after(seconds: Option<f64>) -> Deadline {
        let Some(s) = seconds else { return Deadline::NONE };
        let s = if s.is_nan() { 0.0 } else { s.max(0.0) };
        Deadline(Duration::try_from_secs_f64(s).ok().and_then(|d| Instant::now().checked_add(d)))
    }

    /// True once the moment has come.
    pub fn passed(self) -> bool {
        self.0.is_some_and(|d| Instant::now() >= d)
    }

    /// Seconds left (0 once passed), `None` without a deadline.
    pub fn remaining_seconds(self) -> Option<f64> {
        self.0.map(|d| d.saturating_duration_since(Instant::now()).as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_pass_and_absurd_ones_do_not_panic() {
        assert!(!Deadline::NONE.passed());
        assert_eq!(Deadline::NONE.remaining_seconds(), None);
        assert!(Deadline::after(Some(0.0)).passed());
        assert!(Deadline::after(Some(-1.0)).passed());
        assert!(Deadline::after(Some(f64::NAN)).passed());
        assert!(!Deadline::after(Some(3600.0)).passed());
        assert!(Deadline::after(Some(3600.0)).remaining_seconds().is_some_and(|s| s > 3599.0));
        assert_eq!(Deadline::after(Some(f64::INFINITY)), Deadline::NONE);
        assert_eq!(Deadline::after(Some(1e300)), Deadline::NONE);
    }
}
