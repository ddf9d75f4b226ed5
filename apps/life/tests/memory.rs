//! The memory `dps-life --simulate P` checks before work against what the simulation really
//! takes (issue 27: at P = 4000 the simulator's tables took 1.4 GB before the bands were
//! checked against the rows, and the bands' memory was counted as if spread over P
//! processes, where a simulation holds them all).

use std::process::Command;

use clap::Parser;
use dps_life::cli::Args;

const BIN: &str = env!("CARGO_BIN_EXE_dps-life");

#[test]
fn the_simulations_memory_estimate_is_within_0_5_to_4_times_its_peak() {
    let dir = tempfile::tempdir().unwrap();
    let platform = dps_harness::simulate::made_up_platform_file(dir.path());
    // Ascending peaks: the children's peak is then the last run's. A large world on few
    // ranks (the bands set the memory), then many ranks (the simulator's tables set it).
    for args in [
        &["--random", "8192", "8192", "--simulate", "2", "--verify"][..],
        &["--random", "1000", "1000", "--simulate", "1000"],
        &["--random", "2000", "2000", "--simulate", "2000"],
    ] {
        let all: Vec<&str> = args.iter().copied().chain(["--generations", "2", "--platform", &platform]).collect();
        let out = Command::new(BIN).args(&all).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let plan = Args::parse_from(std::iter::once("dps-life").chain(all.iter().copied())).plan().unwrap();
        let estimate = plan.simulated_memory_need(args[4].parse().unwrap()).unwrap();
        let peak = dps_launch::children_peak_rss();
        let ratio = estimate as f64 / peak as f64;
        eprintln!("{args:?}: estimate {estimate} B, peak {peak} B: {ratio:.2}");
        assert!((0.5..=4.0).contains(&ratio), "{args:?}: estimate {estimate} B, peak {peak} B: {ratio:.2}");
    }
}
