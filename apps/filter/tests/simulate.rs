//! `dps-filter --simulate P`: on 2 and 3 virtual ranks, `gather` writes the same PNG and
//! `median` the same stored image (read back to PNG) as a real run on one rank, byte for
//! byte, and both pass --verify; an emulated disk's waits are charged to the prediction, not
//! slept; NOALLOC predicts what PDEXEC does without the image. No mpirun for the simulated
//! runs: the simulator runs in one process.

use std::path::Path;
use std::process::Command;

use dps_launch::json_record;

const BIN: &str = env!("CARGO_BIN_EXE_dps-filter");

/// A simulated run's record.
fn simulated(args: &[&str], ranks: &str, platform: &str) -> serde_json::Value {
    let out = Command::new(BIN).args(args).args(["--simulate", ranks, "--platform", platform, "--json"]).output();
    let out = out.unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let r = json_record(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(r["simulated_ranks"].as_u64().unwrap().to_string(), ranks, "{r}");
    let mode = ["pdexec", "noalloc"].into_iter().find(|m| args.contains(m)).unwrap_or("de");
    assert_eq!((r["sim_mode"].as_str(), r["predicted_seconds"].as_f64()), (Some(mode), r["seconds"].as_f64()));
    r
}

/// A real run on one rank, under the launcher's timeout.
fn real(args: &[&str]) {
    let job = dps_launch::mpirun(1, Path::new(BIN), args);
    assert_eq!(job.status.code(), Some(0), "{args:?}: {}", job.stderr);
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn simulated_outputs_equal_a_real_runs() {
    let _alone = dps_harness::simulate::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let [platform, ..] = dps_harness::simulate::test_platforms(dir.path());
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    // gather: a blurred random image, the input of the median's store.
    let gather = ["gather", "--random", "300", "200", "--tiles", "64", "--seed", "3", "--verify"];
    real(&[&gather[..], &["-o", &path("real.png")]].concat());
    let (store, real_store) = (path("store"), path("real-store"));
    for s in [&store, &real_store] {
        std::fs::create_dir(s).unwrap();
        let stored =
            Command::new(BIN).args(["store", &path("real.png"), "--tiles", "48", "--disks", "3", "--dir", s]).output();
        assert!(stored.unwrap().status.success());
    }
    real(&["median", "--dir", &real_store, "--verify"]);
    real(&["load", &real_store, "--name", "image-median", "-o", &path("real-median.png")]);
    for ranks in ["2", "3"] {
        let png = path(&format!("sim{ranks}.png"));
        let r = simulated(&[&gather[..], &["-o", &png]].concat(), ranks, &platform);
        assert_eq!(r["verified"], true, "gather on {ranks} virtual ranks: {r}");
        assert!(read(Path::new(&png)) == read(&dir.path().join("real.png")), "gather on {ranks}: another PNG");
        let r = simulated(&["median", "--dir", &store, "--verify"], ranks, &platform);
        assert_eq!(r["verified"], true, "median on {ranks} virtual ranks: {r}");
        let out = path(&format!("sim{ranks}-median.png"));
        let load = Command::new(BIN).args(["load", &store, "--name", "image-median", "-o", &out]).output().unwrap();
        assert!(load.status.success());
        assert!(read(Path::new(&out)) == read(&dir.path().join("real-median.png")), "median on {ranks}: another image");
    }
}

#[test]
fn emulated_disk_waits_are_charged_not_slept() {
    let _alone = dps_harness::simulate::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let [platform, ..] = dps_harness::simulate::test_platforms(dir.path());
    // 20 tiles on 2 disks, each read from its file once and written back once: 20 accesses
    // of 200 ms on each disk's thread, 4 s of simulated time at least, which a simulation
    // that slept would also take in wall time. The medians overlap the waits, so the bound
    // is 4 s, not 4 s more than the run without latency.
    let median = ["median", "--random", "300", "200", "--tiles", "64", "--storage", "disk", "--disks", "2"];
    let scratch = ["--scratch", dir.path().to_str().unwrap()];
    let fast = simulated(&[&median[..], &scratch].concat(), "2", &platform)["seconds"].as_f64().unwrap();
    let start = std::time::Instant::now();
    let slow = simulated(&[&median[..], &scratch, &["--disk-latency-ms", "200"]].concat(), "2", &platform);
    let wall = start.elapsed().as_secs_f64();
    let slow = slow["seconds"].as_f64().unwrap();
    assert!(slow >= 4.0 && slow > fast, "200 ms per tile access predicted {slow} s against {fast} s without");
    assert!(wall < 2.0, "the simulation slept: {wall} s of wall time for a prediction of {slow} s");
}

/// PDEXEC: the median charged from the platform's table (1 ns per pixel in the made-up one),
/// the same prediction every time, at least the busier rank's share of the pixels.
#[test]
fn pdexec_predictions_are_reproducible_and_follow_the_median_table() {
    let _alone = dps_harness::simulate::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let [platform, ..] = dps_harness::simulate::test_platforms(dir.path());
    let predict = |ranks: &str| {
        let args = ["median", "--random", "512", "384", "--tiles", "128", "--sim-mode", "pdexec", "--reps", "2"];
        simulated(&args, ranks, &platform)["seconds"].as_f64().unwrap()
    };
    let (one, two) = (predict("1"), predict("2"));
    assert_eq!(two, predict("2"), "two PDEXEC simulations of the same run differ");
    // 12 tiles on 2 disks, 6 per rank, each 128² pixels at 1 ns (charged in whole ns: on
    // one rank, exactly every pixel's nanosecond).
    assert_eq!((one * 1e9).round(), 512.0 * 384.0, "P=1: {one} s");
    assert!(two >= 6.0 * 128.0 * 128.0 * 1e-9 && two < one, "P=1: {one} s, P=2: {two} s");
}

/// NOALLOC: the same charges as PDEXEC (the medians from the table, the tiles and strips at
/// their full size on the wire, the emulated disk's waits through the same tile cache),
/// with neither the image nor a store made: the same prediction, in memory that does not
/// grow with the image.
#[test]
fn noalloc_predicts_what_pdexec_does_without_the_image() {
    let _alone = dps_harness::simulate::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let [platform, ..] = dps_harness::simulate::test_platforms(dir.path());
    let scratch = dir.path().to_str().unwrap();
    let on_disk = ["--storage", "disk", "--disks", "3", "--disk-latency-ms", "2", "--scratch", scratch];
    for storage in [&[][..], &on_disk[..]] {
        let run = |mode: &str| {
            let median = ["median", "--random", "700", "500", "--tiles", "128", "--reps", "2", "--sim-mode", mode];
            simulated(&[&median[..], storage].concat(), "2", &platform)
        };
        let (pdexec, noalloc) = (run("pdexec"), run("noalloc"));
        for field in ["predicted_seconds", "sim_busy_seconds", "sim_operations", "sim_messages", "reads"] {
            assert_eq!(noalloc[field], pdexec[field], "{storage:?} {field}: NOALLOC charges what PDEXEC does");
        }
    }
    // A 16384² image is 256 MiB; PDEXEC would hold it on every virtual rank.
    let image = |side| ["median", "--random", side, side, "--sim-mode", "noalloc"];
    let predict = |args: &[&str]| simulated(args, "2", &platform);
    dps_harness::simulate::assert_peak_memory_is_flat(predict, ("512²", &image("512")), ("16384²", &image("16384")));
}
