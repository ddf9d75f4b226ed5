//! `dps-lu --simulate P`: the simulated factorization passes --verify (HPL residual, pivots
//! of dgetrf) on 2 and 3 virtual ranks, both variants. No mpirun.

use std::process::Command;

use dps_harness::launch::json_record;

const BIN: &str = env!("CARGO_BIN_EXE_dps-lu");

#[test]
fn simulated_factorizations_pass_verification() {
    let dir = tempfile::tempdir().unwrap();
    let platform = dir.path().join("platform.toml");
    std::fs::write(&platform, dps_harness::simulate::made_up_platform().to_toml()).unwrap();
    for ranks in ["2", "3"] {
        for variant in ["stream", "merge-split"] {
            let args = ["--n", "150", "--block", "32", "--variant", variant, "--simulate", ranks, "--verify", "--json"];
            let out = Command::new(BIN).args(args).arg("--platform").arg(&platform).output().unwrap();
            assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
            let r = json_record(&String::from_utf8_lossy(&out.stdout));
            assert_eq!((&r["verified"], &r["pivots_match"]), (&true.into(), &true.into()), "{variant} on {ranks}: {r}");
            assert_eq!(r["simulated_ranks"].as_u64().unwrap().to_string(), ranks);
        }
    }
}
