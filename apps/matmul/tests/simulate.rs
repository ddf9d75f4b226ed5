//! `dps-matmul --simulate P`: the simulated product passes --verify (against one serial
//! dgemm) on 2 and 4 virtual ranks in every variant; PDEXEC predictions are reproducible
//! to the last digit and within what the kernel table allows. No mpirun: the simulator
//! runs in one process.

use std::process::Command;

use dps_harness::launch::json_record;

const BIN: &str = env!("CARGO_BIN_EXE_dps-matmul");

fn run(args: &[&str], platform: &str) -> serde_json::Value {
    let out = Command::new(BIN).args(args).args(["--platform", platform, "--json"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    json_record(&String::from_utf8_lossy(&out.stdout))
}

fn platform(dir: &std::path::Path) -> String {
    let path = dir.join("platform.toml");
    std::fs::write(&path, dps_harness::simulate::made_up_platform().to_toml()).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn simulated_products_match_serial_dgemm() {
    let dir = tempfile::tempdir().unwrap();
    let p = platform(dir.path());
    for ranks in ["2", "4"] {
        for variant in ["pipelined", "phased", "farm"] {
            let r = run(&["--n", "70", "--block", "16", "--variant", variant, "--simulate", ranks, "--verify"], &p);
            assert_eq!(r["verified"], true, "{variant} on {ranks} virtual ranks: {r}");
            assert_eq!(r["simulated_ranks"].as_u64().unwrap().to_string(), ranks);
            assert_eq!((r["sim_mode"].as_str(), r["predicted_seconds"].as_f64()), (Some("de"), r["seconds"].as_f64()));
            assert!(r["seconds"].as_f64().unwrap() > 0.0, "{r}");
        }
    }
}

#[test]
fn pdexec_predictions_are_reproducible_and_follow_the_kernel_table() {
    let dir = tempfile::tempdir().unwrap();
    let p = platform(dir.path());
    let predict = |ranks: &str| {
        let args = ["--n", "128", "--block", "32", "--simulate", ranks, "--sim-mode", "pdexec", "--reps", "2"];
        run(&args, &p)["predicted_seconds"].as_f64().unwrap()
    };
    let (one, four) = (predict("1"), predict("4"));
    assert_eq!(four, predict("4"), "two PDEXEC simulations of the same run differ");
    // The made-up table: gemm at 10 GFLOP/s, 2n³ flop in all. Four ranks of one core each
    // need at least a quarter of it, and less than one rank does.
    let work = 2.0 * 128f64.powi(3) / 1e10;
    assert!(four >= work / 4.0 && four < one, "P=1: {one} s, P=4: {four} s, gemm work {work} s");
}
