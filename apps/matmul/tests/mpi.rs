//! `dps-matmul` under mpirun: every variant equals the serial dgemm (to rounding) on 1, 2 and
//! 4 ranks, for orders the block size does not divide (bad options: tests/bad_input.rs).

use dps_harness::launch::mpirun;

const BIN: &str = env!("CARGO_BIN_EXE_dps-matmul");

fn json(stdout: &str) -> serde_json::Value {
    let line = stdout.lines().find(|l| l.starts_with('{')).unwrap_or_else(|| panic!("no JSON line in:\n{stdout}"));
    serde_json::from_str(line).unwrap()
}

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
