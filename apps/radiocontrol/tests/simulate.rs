//! `dps-radiocontrol run --simulate P`: on 2 and 3 virtual ranks the farm writes the serial
//! reference's result file byte for byte and passes --verify (ground truth and a serial
//! run). No mpirun: the simulator runs in one process.

mod common;

use std::process::Command;

use common::{generate, results, serial, BIN};
use dps_launch::json_record;

#[test]
fn simulated_farms_write_the_serial_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let [platform, ..] = dps_harness::simulate::test_platforms(tmp.path());
    let data = tmp.path().join("data");
    generate(&data, 12, 3, 2, 1);
    let reference = serial(&data, &tmp.path().join("serial"));
    for ranks in ["2", "3"] {
        let out = tmp.path().join(format!("sim{ranks}"));
        let done = Command::new(BIN)
            .arg("run")
            .arg(&data)
            .arg("--out")
            .arg(&out)
            .args(["--verify", "--json", "--simulate", ranks, "--platform", &platform])
            .output()
            .unwrap();
        assert!(done.status.success(), "{ranks}: {}", String::from_utf8_lossy(&done.stderr));
        let rec = json_record(&String::from_utf8_lossy(&done.stdout));
        assert_eq!((&rec["verified"], &rec["correlations"]), (&true.into(), &(6 * 60 * 12).into()), "{rec}");
        assert_eq!(rec["simulated_ranks"].as_u64().unwrap().to_string(), ranks, "{rec}");
        assert_eq!(
            (rec["sim_mode"].as_str(), rec["predicted_seconds"].as_f64()),
            (Some("de"), rec["seconds"].as_f64())
        );
        let per_worker: Vec<u64> = serde_json::from_value(rec["per_worker"].clone()).unwrap();
        assert_eq!((per_worker.len().to_string(), per_worker.iter().sum::<u64>()), (ranks.to_string(), 6), "{rec}");
        assert_eq!(std::fs::read(results(&out)).unwrap(), reference, "{ranks} virtual ranks");
    }
}
