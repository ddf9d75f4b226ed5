//! `dps-life --simulate P`: the simulated world after the generations is the serial
//! reference's (--verify and the population), on 2 and 4 virtual ranks, both schedules;
//! the trace is written with a track per virtual rank. No mpirun.

use std::process::Command;

use dps_launch::json_record;

const BIN: &str = env!("CARGO_BIN_EXE_dps-life");

fn run(args: &[&str]) -> serde_json::Value {
    let out = Command::new(BIN).args(args).arg("--json").output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    json_record(&String::from_utf8_lossy(&out.stdout))
}

#[test]
fn simulated_worlds_equal_the_serial_one() {
    let dir = tempfile::tempdir().unwrap();
    let platform = dps_harness::simulate::made_up_platform_file(dir.path());
    let p = platform.as_str();
    let world = ["--random", "150", "90", "--generations", "21", "--seed", "5", "--wrap"];
    let serial = run(&[&world[..], &["--variant", "serial"]].concat());
    for ranks in ["2", "4"] {
        for variant in ["simple", "overlap"] {
            let trace = dir.path().join(format!("trace-{ranks}-{variant}.json"));
            let args = ["--variant", variant, "--simulate", ranks, "--platform", p, "--verify", "--trace"];
            let r = run(&[&world[..], &args, &[trace.to_str().unwrap()]].concat());
            assert_eq!(r["verified"], true, "{variant} on {ranks} virtual ranks: {r}");
            assert_eq!(r["population"], serial["population"], "{variant} on {ranks} virtual ranks");
            assert_eq!(r["simulated_ranks"].as_u64().unwrap().to_string(), ranks);
            let t: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
            let pids: std::collections::BTreeSet<u64> = t["traceEvents"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["ph"] == "X")
                .map(|e| e["pid"].as_u64().unwrap())
                .collect();
            assert_eq!(pids.len().to_string(), ranks, "a track per virtual rank");
        }
    }
}
