//! `dps-skeleton --simulate P`: on 2 and 3 virtual ranks, the static and the migrating
//! variants (with forced moves on top of the balancer's) write the skeleton a real run
//! writes, byte for byte, and pass --verify (the serial reference); the cells do move. No
//! mpirun for the simulated runs: the simulator runs in one process.

use std::path::Path;
use std::process::Command;

use dps_launch::json_record;

const BIN: &str = env!("CARGO_BIN_EXE_dps-skeleton");

#[test]
fn simulated_skeletons_equal_a_real_runs() {
    let dir = tempfile::tempdir().unwrap();
    let [platform, ..] = dps_harness::simulate::test_platforms(dir.path());
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let image = ["--generate", "skewed", "300", "200", "--cell", "32", "--seed", "4"];
    let real = dps_launch::mpirun(1, Path::new(BIN), &[&image[..], &["--out", &path("real.png")]].concat());
    assert_eq!(real.status.code(), Some(0), "{}", real.stderr);
    let want = std::fs::read(path("real.png")).unwrap();
    for ranks in ["2", "3"] {
        for variant in ["static", "migrate"] {
            let out = path(&format!("{variant}-{ranks}.png"));
            let args = ["--variant", variant, "--force-migrations", "3", "--verify", "--json", "--out", &out];
            let sim = ["--simulate", ranks, "--platform", &platform];
            let done = Command::new(BIN).args(image).args(args).args(sim).output().unwrap();
            assert!(done.status.success(), "{variant} on {ranks}: {}", String::from_utf8_lossy(&done.stderr));
            let r = json_record(&String::from_utf8_lossy(&done.stdout));
            let what = format!("{variant} on {ranks} virtual ranks: {r}");
            assert_eq!(r["verified"], true, "{what}");
            assert!(r["migrations"].as_u64().unwrap() > 0, "{what}");
            assert_eq!(r["simulated_ranks"].as_u64().unwrap().to_string(), ranks, "{what}");
            assert_eq!((r["sim_mode"].as_str(), r["predicted_seconds"].as_f64()), (Some("de"), r["seconds"].as_f64()));
            assert!(std::fs::read(&out).unwrap() == want, "{what}: another skeleton than the real run's");
        }
    }
}
