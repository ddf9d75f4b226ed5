//! `dps-matmul --simulate P`: the simulated product passes --verify (against one serial
//! dgemm) on 2 and 4 virtual ranks in every variant; PDEXEC predictions are reproducible
//! to the last digit and within what the kernel table allows. No mpirun: the simulator
//! runs in one process.

use std::process::Command;

use dps_harness::launch::json_record;
use dps_harness::simulate::{fastest, platform_with_rates};

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
    let _alone = dps_harness::simulate::one_at_a_time();
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
    let _alone = dps_harness::simulate::one_at_a_time();
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

/// The made-up platform with this machine's gemm and copy rates, measured here on one core:
/// enough for PDEXEC to be compared with DE.
fn measured_platform(dir: &std::path::Path) -> String {
    dps_dense::blas::set_threads(1);
    let r = 128;
    let (a, b, mut c) = (vec![0.5; r * r], vec![0.25; r * r], vec![0.0; r * r]);
    let gemm_rate = 2.0 * (r as f64).powi(3) / fastest(|| dps_dense::blas::gemm_row(r, r, r, &a, &b, &mut c));
    let (src, mut dst) = (vec![1.5f64; 1 << 17], vec![0.0f64; 1 << 17]);
    let copy_rate = (8 << 17) as f64 / fastest(|| dst.copy_from_slice(std::hint::black_box(&src)));
    platform_with_rates(dir, &[("gemm", gemm_rate), ("copy", copy_rate)])
}

#[test]
fn noalloc_predicts_what_pdexec_predicts_and_both_stay_near_de() {
    let _alone = dps_harness::simulate::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let p = measured_platform(dir.path());
    for variant in ["pipelined", "phased", "farm"] {
        let predict = |mode: &str| {
            let args = ["--n", "384", "--block", "128", "--variant", variant, "--simulate", "2", "--sim-mode", mode];
            let r = run(&[&args[..], &["--reps", "3"]].concat(), &p);
            (r["predicted_seconds"].as_f64().unwrap(), r)
        };
        let (noalloc, r) = predict("noalloc");
        assert_eq!(r["sim_mode"], "noalloc");
        assert_eq!(noalloc, predict("noalloc").0, "{variant}: two NOALLOC simulations of the same run differ");
        // The same kernels are charged and absent blocks weigh what present ones do on the wire.
        assert_eq!(noalloc, predict("pdexec").0, "{variant}: NOALLOC and PDEXEC predict differently");
        // DE measures the same work (and the rest of each operation). Not the farm: its
        // master adds every partial product with a loop this debug build does not optimise.
        if variant != "farm" {
            dps_harness::simulate::assert_near_de_in_one_of_three_rounds(variant, || {
                let p = measured_platform(dir.path());
                let args = ["--n", "384", "--block", "128", "--variant", variant, "--simulate", "2", "--reps", "3"];
                let mode =
                    |m: &str| run(&[&args[..], &["--sim-mode", m]].concat(), &p)["predicted_seconds"].as_f64().unwrap();
                mode("noalloc") / mode("de")
            });
        }
    }
}

#[test]
fn noalloc_memory_does_not_grow_with_n() {
    let _alone = dps_harness::simulate::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let p = platform(dir.path());
    // A, B and C would take 6 GiB at n = 16384: a fraction of one of them would show.
    dps_harness::simulate::assert_noalloc_memory_is_flat(|args| run(args, &p));
}
