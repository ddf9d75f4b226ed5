//! The memory `dps-filter median` checks before work against what the run really takes
//! (issue 27: the check counted the pixels alone, and `--random 16384 16384 --tiles 2`
//! passed it and died in the allocator: each tile costs its slots and their bookkeeping).

use std::process::Command;

use clap::Parser;
use dps_filter::cli::{Args, Plan};

const BIN: &str = env!("CARGO_BIN_EXE_dps-filter");

#[test]
fn the_medians_memory_estimate_is_within_0_5_to_4_times_its_peak() {
    let scratch = tempfile::tempdir().unwrap();
    let scratch = scratch.path().to_str().unwrap();
    // Ascending peaks: the children's peak is then the last run's. Tiny tiles (their count
    // sets the memory), a scratch store, large tiles (the pixels set it), verified.
    for args in [
        &["--random", "512", "512", "--tiles", "2"][..],
        &["--random", "1024", "1024", "--tiles", "4", "--verify"],
        &["--random", "2048", "2048", "--tiles", "128", "--storage", "disk", "--scratch", scratch, "--verify"],
        &["--random", "4096", "4096", "--tiles", "512", "--compare-serial"],
        &["--random", "4096", "4096", "--tiles", "256", "--verify"],
    ] {
        let out = Command::new(BIN).arg("median").args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let parsed = Args::parse_from(["dps-filter", "median"].iter().chain(args));
        let Plan::Median(plan) = parsed.plan().unwrap() else { unreachable!("a median") };
        let checked = plan.source.check(1, false).unwrap();
        let (estimate, _) = plan.footprint(1, 1).need(&checked);
        let peak = dps_launch::children_peak_rss();
        let ratio = estimate as f64 / peak as f64;
        eprintln!("{args:?}: estimate {estimate} B, peak {peak} B: {ratio:.2}");
        assert!((0.5..=4.0).contains(&ratio), "{args:?}: estimate {estimate} B, peak {peak} B: {ratio:.2}");
    }
}
