//! The memory `dps-skeleton` checks before work against what the run really takes (issue
//! 27: the check counted the image alone, and `--generate blobs 1024 1024 --cell 2` passed
//! it and died in the allocator: each cell costs its thread, halo, neighbours and strips).

use std::process::Command;

use clap::Parser;
use dps_skeleton::cells::Grid;
use dps_skeleton::cli::Args;
use dps_skeleton::footprint;

const BIN: &str = env!("CARGO_BIN_EXE_dps-skeleton");

#[test]
fn the_memory_estimate_is_within_0_5_to_4_times_the_peak() {
    // Ascending peaks: the children's peak is then the last run's. Large cells (the image
    // sets the memory), then ever more and smaller cells (their count and neighbours set it).
    for args in [
        &["--generate", "blobs", "2048", "2048", "--verify"][..],
        &["--generate", "blobs", "1024", "1024", "--cell", "16"],
        &["--generate", "text", "512", "512", "--cell", "8", "--depth", "4"],
        &["--generate", "blobs", "512", "512", "--cell", "4"],
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let plan = Args::parse_from(std::iter::once(&"dps-skeleton").chain(args)).plan().unwrap();
        let grid = Grid::new(plan.image.width, plan.image.height, plan.cell);
        let (estimate, _) = footprint::need(&grid, plan.depth, 1, plan.standard.verify());
        let peak = dps_launch::children_peak_rss();
        let ratio = estimate as f64 / peak as f64;
        eprintln!("{args:?}: estimate {estimate} B, peak {peak} B: {ratio:.2}");
        assert!((0.5..=4.0).contains(&ratio), "{args:?}: estimate {estimate} B, peak {peak} B: {ratio:.2}");
    }
}
