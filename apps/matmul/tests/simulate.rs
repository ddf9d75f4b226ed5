//! `dps-matmul --simulate P`: the simulated product passes --verify (against one serial
//! dgemm) on 2 and 4 virtual ranks in every variant; PDEXEC predictions are reproducible
//! to the last digit and within what the kernel table allows. No mpirun: the simulator
//! runs in one process.

use std::process::Command;

use dps_harness::simulate::{platform_with_rates, typical};
use dps_launch::json_record;

const BIN: &str = env!("CARGO_BIN_EXE_dps-matmul");

fn run(args: &[&str], platform: &str) -> serde_json::Value {
    let out = Command::new(BIN).args(args).args(["--platform", platform, "--json"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    json_record(&String::from_utf8_lossy(&out.stdout))
}

#[test]
fn simulated_products_match_serial_dgemm() {
    let _alone = dps_harness::simulate::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let p = dps_harness::simulate::made_up_platform_file(dir.path());
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
    let p = dps_harness::simulate::made_up_platform_file(dir.path());
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

/// The size of the run that compares NOALLOC with DE: 9 products of 256×768 by 768×256
/// (~6 ms each), so the kernel is nearly all of each operation's time, as it is at the
/// sizes users predict (at n 384, block 128, the runtime's and C's debug-build bookkeeping
/// was a tenth of DE's time here, and phased's three graph calls more on the CI machine).
const N: usize = 768;
const BLOCK: usize = 256;

/// The made-up platform with this machine's gemm and copy rates, measured here on one core
/// at the shape of the products of an `N`, `BLOCK` run: enough for PDEXEC to be compared
/// with DE.
fn measured_platform(dir: &std::path::Path) -> String {
    dps_dense::blas::set_threads(1);
    let (h, k) = (BLOCK, N);
    let (a, b, mut c) = (vec![0.5; h * k], vec![0.25; k * h], vec![0.0; h * h]);
    let flop = 2.0 * (h * h * k) as f64;
    let gemm_rate = flop / typical(|| dps_dense::blas::gemm_row(h, h, k, &a, &b, 0.0, &mut c));
    let (src, mut dst) = (vec![1.5f64; 1 << 17], vec![0.0f64; 1 << 17]);
    let copy_rate = (8 << 17) as f64 / typical(|| dst.copy_from_slice(std::hint::black_box(&src)));
    platform_with_rates(dir, &[("gemm", gemm_rate), ("copy", copy_rate)])
}

#[test]
fn noalloc_predicts_what_pdexec_predicts_and_both_stay_near_de() {
    let _alone = dps_harness::simulate::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let p = measured_platform(dir.path());
    let (n, block) = (N.to_string(), BLOCK.to_string());
    for variant in ["pipelined", "phased", "farm"] {
        let predict = |mode: &str, p: &str| {
            let args = ["--n", &n, "--block", &block, "--variant", variant, "--simulate", "2", "--sim-mode", mode];
            let r = run(&[&args[..], &["--reps", "3"]].concat(), p);
            (r["predicted_seconds"].as_f64().unwrap(), r)
        };
        let (noalloc, r) = predict("noalloc", &p);
        assert_eq!(r["sim_mode"], "noalloc");
        assert_eq!(noalloc, predict("noalloc", &p).0, "{variant}: two NOALLOC simulations of the same run differ");
        // The same kernels are charged and absent blocks weigh what present ones do on the wire.
        assert_eq!(noalloc, predict("pdexec", &p).0, "{variant}: NOALLOC and PDEXEC predict differently");
        // DE measures the same work (and the rest of each operation). Not the farm: its
        // master adds every partial product with a loop this debug build does not optimise.
        if variant != "farm" {
            dps_harness::simulate::assert_near_de_in_one_of_three_rounds(variant, || {
                let p = measured_platform(dir.path());
                predict("noalloc", &p).0 / predict("de", &p).0
            });
        }
    }
}

#[test]
fn noalloc_memory_does_not_grow_with_n() {
    let _alone = dps_harness::simulate::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let p = dps_harness::simulate::made_up_platform_file(dir.path());
    // A, B and C would take 6 GiB at n = 16384: a fraction of one of them would show.
    dps_harness::simulate::assert_noalloc_memory_is_flat(|args| run(args, &p));
}

/// Issue 27: with the slowest gemm the platform limits allow (1 flop a second), a 4096
/// product needs more time than the simulated clock holds (584 years): the record says so
/// (`sim_clock_saturated`) and the human line says there is no prediction, instead of a
/// plain capped time or, before, a wrapped-around one smaller than the truth.
#[test]
fn a_run_past_the_simulated_clock_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = dps_harness::simulate::made_up_platform();
    let gemm = p.kernels.iter_mut().find(|k| k.name == "gemm").unwrap();
    gemm.points = vec![dps_model::platform::KernelPoint { dims: vec![64; 3], seconds: 3600.0, work: 3600.0 }];
    p.seal();
    let path = dir.path().join("slow.toml");
    std::fs::write(&path, p.to_toml()).unwrap();
    let args = ["--n", "4096", "--simulate", "2", "--sim-mode", "noalloc", "--reps", "1", "--platform"];
    let r = run(&args[..8], path.to_str().unwrap());
    assert_eq!(r["sim_clock_saturated"], true, "{r}");
    let out = std::process::Command::new(BIN).args(args).arg(&path).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains("beyond the simulated clock's range"), "{stdout}");
    // The same product at the made-up 10 GFLOP/s is an ordinary prediction.
    let normal = run(&args[..8], &dps_harness::simulate::made_up_platform_file(dir.path()));
    assert_eq!(normal["sim_clock_saturated"], false, "{normal}");
}
