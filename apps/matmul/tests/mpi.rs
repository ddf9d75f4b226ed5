//! `dps-matmul` under mpirun: every variant equals the serial dgemm (to rounding) on 1, 2 and
//! 4 ranks, for orders the block size does not divide (bad options: tests/bad_input.rs).

use dps_launch::json_record as json;
use dps_launch::mpirun;

const BIN: &str = env!("CARGO_BIN_EXE_dps-matmul");

#[test]
fn every_variant_matches_serial_dgemm_on_1_2_4_ranks() {
    for ranks in [1, 2, 4] {
        for variant in ["pipelined", "phased", "farm", "compare"] {
            for (n, block) in [("37", "8"), ("100", "30")] {
                let args = ["--n", n, "--block", block, "--variant", variant, "--verify", "--json", "--map", "all*2"];
                let job = mpirun(ranks, BIN.as_ref(), &args);
                assert!(job.status.success(), "{ranks} ranks {variant} n {n}: {}", job.stderr);
                let r = json(&job.stdout);
                assert_eq!(r["verified"], true, "{r}");
                assert_eq!(r["ranks"], ranks);
                assert!(r["error"].as_f64().unwrap() <= 1e-12, "{r}");
            }
        }
    }
}

/// Without --block the cost model's tiling runs: on 2 and 4 ranks, strips of whole rows (B
/// shared whole, blocks moved into C), which must still equal the serial dgemm.
#[test]
fn the_default_tiling_matches_serial_dgemm_on_1_2_4_ranks() {
    for ranks in [1, 2, 4] {
        for variant in ["pipelined", "phased"] {
            let args = ["--n", "300", "--variant", variant, "--verify", "--json", "--reps", "2"];
            let job = mpirun(ranks, BIN.as_ref(), &args);
            assert!(job.status.success(), "{ranks} ranks {variant}: {}", job.stderr);
            let r = json(&job.stdout);
            assert_eq!(r["verified"], true, "{r}");
            assert!(r["error"].as_f64().unwrap() <= 1e-12, "{r}");
            let (rows, cols) = (r["block"].as_u64().unwrap(), r["block_cols"].as_u64().unwrap());
            assert_eq!(cols, 300, "whole rows: {r}");
            assert!(ranks == 1 || rows < 300, "{ranks} ranks share the rows: {r}");
            assert!(r["block_reason"].as_str().unwrap().contains("cost model"), "{r}");
        }
    }
}

/// `--kernel loops` (the emulated cluster's Fig. 6.6): the farm and the pipelined graph equal
/// the serial dgemm on 2 and 4 ranks, and the serial variant's blocked loops time the same
/// product.
#[test]
fn the_loops_kernel_matches_serial_dgemm_on_2_4_ranks() {
    for ranks in [2, 4] {
        for variant in ["farm", "pipelined"] {
            let args = ["--n", "100", "--block", "30", "--variant", variant, "--kernel", "loops", "--verify", "--json"];
            let job = mpirun(ranks, BIN.as_ref(), &args);
            assert!(job.status.success(), "{ranks} ranks {variant}: {}", job.stderr);
            let r = json(&job.stdout);
            assert_eq!((&r["verified"], &r["kernel"]), (&true.into(), &"loops".into()), "{r}");
            assert!(r["error"].as_f64().unwrap() <= 1e-12, "{r}");
        }
    }
}
