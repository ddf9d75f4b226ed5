//! `dps-tsp --simulate P`: the simulated search on 2 and 3 virtual ranks finds the optimum
//! of the serial references (the dynamic program, TSPLIB's, a real run), in both variants, and reports a
//! prediction. No mpirun: the simulator runs in one process.

use std::process::Command;

use dps_launch::json_record;
use dps_tsp::kernel::{dp, instance::Instance};

const BIN: &str = env!("CARGO_BIN_EXE_dps-tsp");

fn run(args: &[&str]) -> serde_json::Value {
    let out = Command::new(BIN).args(args).arg("--json").output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    json_record(&String::from_utf8_lossy(&out.stdout))
}

#[test]
fn simulated_searches_find_the_serial_references_optimum() {
    let dir = tempfile::tempdir().unwrap();
    let [platform, ..] = dps_harness::simulate::test_platforms(dir.path());
    let bays29 = concat!(env!("CARGO_MANIFEST_DIR"), "/data/bays29.tsp");
    let (opt11, _) = dp::solve(&Instance::random(11, 5)).unwrap();
    // A real run on one rank: the optimum of 30 random cities.
    let real30 = dps_launch::mpirun(1, std::path::Path::new(BIN), &["--random", "30", "--kicks", "0", "--json"]);
    assert_eq!(real30.status.code(), Some(0), "{}", real30.stderr);
    let opt30 = json_record(&real30.stdout)["length"].as_i64().unwrap();
    // Tiny budgets and cut-offs: many jobs, re-queues, idle tokens and (thesis) job splits.
    let runs: [(&[&str], i64); 3] = [
        (&[bays29, "--steps", "2", "--cutoff", "1"], 2020), // TSPLIB's optimum
        (&["--random", "30", "--kicks", "0", "--steps", "2", "--cutoff", "1"], opt30),
        (
            &[
                "--random",
                "11",
                "--seed",
                "5",
                "--variant",
                "thesis",
                "--steps",
                "40",
                "--cutoff",
                "2",
                "--threads",
                "2",
            ],
            opt11,
        ),
    ];
    for ranks in ["2", "3"] {
        for (args, opt) in runs {
            let r = run(&[args, &["--verify", "--simulate", ranks, "--platform", &platform]].concat());
            let what = format!("{args:?} on {ranks} virtual ranks: {r}");
            assert_eq!(
                (r["length"].as_i64(), &r["optimal"], &r["verified"]),
                (Some(opt), &true.into(), &true.into()),
                "{what}"
            );
            assert!(r["jobs"].as_u64().unwrap() > 0 && r["sim_messages"].as_u64().unwrap() > 0, "{what}");
            assert_eq!(r["simulated_ranks"].as_u64().unwrap().to_string(), ranks, "{what}");
            assert_eq!((r["sim_mode"].as_str(), r["predicted_seconds"].as_f64()), (Some("de"), r["seconds"].as_f64()));
        }
    }
}
