//! The memory `dps-lu` checks before work (`dps_harness::check_memory`) against what the run
//! really takes (issue 27: every app's estimate within 0.5-4× of the measured peak, so that
//! a refusal is neither needless nor too late).

use std::process::Command;

use dps_harness::memory::{reported_estimate, REPORT_VAR};

const BIN: &str = env!("CARGO_BIN_EXE_dps-lu");

#[test]
fn the_memory_estimate_is_within_0_5_to_4_times_the_peak() {
    // One process (one rank), in order of ascending peaks: the children's peak is then the
    // last run's.
    for args in [
        &["--n", "2048", "--variant", "serial"][..],
        &["--n", "3072", "--variant", "stream"],
        &["--n", "4096", "--variant", "stream", "--verify"],
    ] {
        let out = Command::new(BIN).args(args).env(REPORT_VAR, "1").output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        let estimate = reported_estimate(&stderr).unwrap_or_else(|| panic!("{args:?}: no estimate in {stderr}"));
        let peak = dps_launch::children_peak_rss();
        let ratio = estimate as f64 / peak as f64;
        eprintln!("{args:?}: estimate {estimate} B, peak {peak} B: {ratio:.2}");
        assert!((0.5..=4.0).contains(&ratio), "{args:?}: estimate {estimate} B, peak {peak} B: {ratio:.2}");
    }
}
