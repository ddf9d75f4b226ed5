//! The memory `dps-tsp` checks before work (`dps_harness::check_memory`) against what the run
//! really takes (issue 27: every app's estimate within 0.5-4× of the measured peak, so that
//! a refusal is neither needless nor too late).

use dps_harness::memory::{reported_estimate, REPORT_VAR};

const BIN: &str = env!("CARGO_BIN_EXE_dps-tsp");

#[test]
fn the_memory_estimate_is_within_0_5_to_4_times_the_peak() {
    // One process (one rank) each, in order of ascending peaks.
    let runs = [
        &["--random", "1000", "--time-limit", "1"][..],
        &["--random", "2000", "--time-limit", "1"],
        &["--random", "3000", "--time-limit", "1", "--threads", "2"],
    ];
    dps_launch::memory_estimates_within_peaks(BIN, &runs, REPORT_VAR, reported_estimate);
}
