//! The memory `dps-matmul --simulate P` checks before work against what the simulation really
//! takes (issue 27: the estimate counted the jobs in flight once per virtual rank, 3000×
//! too much: `--n 256 --simulate 300` "needed 49.4 GiB" and `--n 4096 --simulate 16`, the
//! README's example, was refused; the runs take megabytes).

use std::process::Command;

use clap::Parser;
use dps_matmul::cli::Args;

const BIN: &str = env!("CARGO_BIN_EXE_dps-matmul");

#[test]
fn the_simulations_memory_estimate_is_within_0_5_to_4_times_its_peak() {
    let dir = tempfile::tempdir().unwrap();
    let platform = dps_harness::simulate::made_up_platform_file(dir.path());
    let platform = platform.as_str();
    // Ascending peaks: the children's peak is then the last run's.
    for args in [
        &["--n", "256", "--simulate", "300"][..],
        &["--n", "1024", "--simulate", "64", "--variant", "farm"],
        &["--n", "1536", "--simulate", "4", "--variant", "phased"],
        &["--n", "2048", "--simulate", "16"],
    ] {
        let all: Vec<&str> = args.iter().copied().chain(["--platform", platform]).collect();
        let out = Command::new(BIN).args(&all).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let parsed = Args::parse_from(std::iter::once("dps-matmul").chain(all.iter().copied()));
        let p: usize = args[3].parse().unwrap();
        let estimate = parsed.plan().unwrap().simulated_memory_need() + dps_harness::simulate::simulator_bytes(p);
        let peak = dps_launch::children_peak_rss();
        let ratio = estimate as f64 / peak as f64;
        assert!((0.5..=4.0).contains(&ratio), "{args:?}: estimate {estimate} B, peak {peak} B: {ratio:.2}");
    }
}
