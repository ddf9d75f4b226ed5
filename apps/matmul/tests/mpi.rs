//! `dps-matmul` under mpirun: every variant equals the serial dgemm (to rounding) on 1, 2 and
//! 4 ranks, for orders the block size does not divide (bad options: tests/bad_input.rs).

use dps_harness::launch::json_record as json;
use dps_harness::launch::mpirun;

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
