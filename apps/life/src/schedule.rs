//! The default schedule of a run: generations per step (`--depth`) and steps per call
//! (`--steps-per-call`), chosen from the run's length so that every timed call does the same
//! work. A short last call (50 generations at depth 8 and 8 steps per call: a call of 48
//! generations, then one of 2) pays a whole call's synchronisation and two thin passes for
//! almost nothing, which a short run feels: at 50 generations it was a tenth of the time.

/// Generations per step when nothing else decides: past 8, the memory traffic saved is small
/// next to the computation (16384² on one core: 5.0e10 cell updates/s at depth 1, 7.0e10 at
/// 4, 7.1e10 at 8, 7.4e10 at 16).
pub const DEFAULT_DEPTH: usize = 8;
/// The depths the default may take instead, to divide the generations evenly: the kernel's
/// rate is flat over this range (see [`DEFAULT_DEPTH`]).
const DEPTHS: std::ops::RangeInclusive<usize> = 4..=8;
/// Steps per call at most, by default: a call is the unit of progress reports, snapshots and
/// the serial comparison's blocks, so calls stay short enough for those.
pub const DEFAULT_MAX_STEPS: usize = 8;

/// A run's schedule and why it was chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Steps {
    /// Generations per step.
    pub depth: usize,
    /// Steps per call (of the `overlap` graph).
    pub steps_per_call: usize,
    /// One line for the record.
    pub reason: String,
}

/// The schedule for `generations` timed generations with bands of at least `rows` rows;
/// `depth` and `steps` are the options given (`None`: choose). The depth must already be
/// checked against `rows`.
pub fn choose(generations: u64, rows: usize, depth: Option<usize>, steps: Option<usize>) -> Steps {
    let mut why = Vec::new();
    let depth = depth.unwrap_or_else(|| {
        let max = DEFAULT_DEPTH.min(rows).max(1);
        let even = DEPTHS.rev().filter(|&d| d <= max).find(|&d| generations.is_multiple_of(d as u64));
        match even {
            Some(d) if d != max => why.push(format!("depth {d} divides the {generations} generations")),
            _ => why.push(format!("depth {max}")),
        }
        even.unwrap_or(max)
    });
    let steps_per_call = steps.unwrap_or_else(|| {
        let total = generations.div_ceil(depth as u64).max(1) as usize;
        // The most steps (up to the maximum, and at least half of it) that divide the steps
        // evenly; else calls as even as they can be.
        let max = DEFAULT_MAX_STEPS;
        let per_call = (max.div_ceil(2)..=max.min(total))
            .rev()
            .find(|&k| total.is_multiple_of(k))
            .unwrap_or_else(|| total.div_ceil(total.div_ceil(max)));
        why.push(format!("{} calls of {per_call} steps", total.div_ceil(per_call)));
        per_call
    });
    let reason = if why.is_empty() { "--depth and --steps-per-call".to_string() } else { why.join(", ") };
    Steps { depth, steps_per_call, reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calls `generations` make under `s` (as `Sim::call` cuts them): generations each.
    fn calls(s: &Steps, generations: u64) -> Vec<u64> {
        let mut left = generations;
        let mut out = Vec::new();
        while left > 0 {
            let depth = (s.depth as u64).min(left);
            let g = (s.steps_per_call as u64).min(left / depth) * depth;
            out.push(g);
            left -= g;
        }
        out
    }

    #[test]
    fn short_runs_get_calls_of_equal_work() {
        let s = choose(50, 4096, None, None);
        assert_eq!((s.depth, s.steps_per_call), (5, 5), "{s:?}");
        assert_eq!(calls(&s, 50), [25, 25]);
        let s = choose(200, 4096, None, None);
        assert_eq!((s.depth, s.steps_per_call), (8, 5), "{s:?}");
        assert_eq!(calls(&s, 200), [40; 5]);
        let s = choose(512, 4096, None, None);
        assert_eq!(calls(&s, 512), [64; 8]);
        // Nothing in 4..=8 divides 53: depth 8, and the remainder as it comes.
        assert_eq!(choose(53, 4096, None, None).depth, 8);
    }

    #[test]
    fn options_given_are_kept_and_thin_bands_cap_the_depth() {
        let s = choose(50, 4096, Some(3), Some(2));
        assert_eq!((s.depth, s.steps_per_call, s.reason.as_str()), (3, 2, "--depth and --steps-per-call"));
        assert_eq!(choose(64, 2, None, None).depth, 2);
        assert_eq!(
            choose(1, 1, None, None),
            Steps { depth: 1, steps_per_call: 1, reason: "depth 1, 1 calls of 1 steps".into() }
        );
    }
}
