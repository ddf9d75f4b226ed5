//! `dps-lu --variant dynamic --simulate P --alloc ... --per-iteration`: the simulated
//! factorization passes --verify under every strategy, the per-iteration rows count the
//! ranks each iteration held, and the times are the simulated clock's. No mpirun.

use std::path::Path;
use std::process::Command;

use dps_launch::bad_input::{case, check_table};
use dps_launch::json_record;

const BIN: &str = env!("CARGO_BIN_EXE_dps-lu");

fn simulate(platform: &Path, ranks: &str, alloc: &str) -> serde_json::Value {
    let args = [
        "--variant",
        "dynamic",
        "--n",
        "96",
        "--block",
        "16",
        "--simulate",
        ranks,
        "--alloc",
        alloc,
        "--per-iteration",
        "--verify",
        "--json",
    ];
    let out = Command::new(BIN).args(args).arg("--platform").arg(platform).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    json_record(&String::from_utf8_lossy(&out.stdout))
}

#[test]
fn simulated_strategies_factor_correctly_and_report_each_iteration() {
    let dir = tempfile::tempdir().unwrap();
    let platform = dps_harness::simulate::made_up_platform_file(dir.path());
    // 6 iterations on 4 virtual ranks: P = 4, P/2 = 2 (the ranks holding the column blocks).
    for (alloc, ranks) in
        [("all", [4; 6]), ("half", [2; 6]), ("half-after:2", [4, 4, 2, 2, 2, 2]), ("half-after:5", [4, 4, 4, 4, 4, 2])]
    {
        let r = simulate(Path::new(&platform), "4", alloc);
        assert_eq!(
            (&r["verified"], &r["simulated_ranks"], &r["alloc"]),
            (&true.into(), &4.into(), &alloc.into()),
            "{r}"
        );
        let rows = r["iterations"].as_array().unwrap();
        let held: Vec<u64> = rows.iter().map(|i| i["ranks"].as_u64().unwrap()).collect();
        assert_eq!(held, ranks, "{alloc}: {r}");
        let seconds: Vec<f64> = rows.iter().map(|i| i["seconds"].as_f64().unwrap()).collect();
        assert!(seconds.iter().all(|&s| s > 0.0), "{alloc}: every iteration takes simulated time: {r}");
        // The iterations lie inside the timed factorization (the predicted time).
        let predicted = r["predicted_seconds"].as_f64().unwrap();
        assert_eq!(r["seconds"].as_f64(), Some(predicted), "{r}");
        assert!(seconds.iter().sum::<f64>() <= predicted, "{alloc}: {r}");
        for i in rows {
            let e = i["efficiency"].as_f64().unwrap();
            let expected =
                i["serial_seconds"].as_f64().unwrap() / (i["ranks"].as_f64().unwrap() * i["seconds"].as_f64().unwrap());
            assert!(e.is_finite() && e > 0.0 && (e - expected).abs() <= 1e-9 * expected, "{alloc}: {i}");
        }
    }
}

#[test]
fn the_dynamic_variant_refuses_modes_that_skip_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let platform = dps_harness::simulate::made_up_platform_file(dir.path());
    let platform = platform.as_str();
    let dynamic = ["--variant", "dynamic", "--n", "64", "--block", "8", "--simulate", "8", "--platform", platform];
    let with = |extra: &[&'static str]| -> Vec<&str> { dynamic.iter().copied().chain(extra.iter().copied()).collect() };
    let (pdexec, noalloc) = (with(&["--sim-mode", "pdexec"]), with(&["--sim-mode", "noalloc", "--per-iteration"]));
    check_table(
        Path::new(BIN),
        &[
            case(&pdexec, 2, &["--sim-mode pdexec", "dynamic variant", "--sim-mode de"]),
            case(&noalloc, 2, &["--sim-mode noalloc", "dynamic variant"]),
        ],
    );
}
