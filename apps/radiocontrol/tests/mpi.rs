//! The farm on 1, 2 and 4 ranks against the serial reference, byte for byte, with
//! `--verify` (ground truth and a serial run); resuming a torn result file; a full disk.

mod common;

use std::path::Path;
use std::process::Command;

use common::{generate, results, serial, BIN};
use dps_launch::{json_record as record, mpirun};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn the_farm_writes_the_serial_bytes_on_1_2_and_4_ranks_and_resumes_torn_files() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    generate(&data, 12, 3, 2, 1);
    let reference = serial(&data, &tmp.path().join("serial"));
    // 64 B header + 6 jobs × (16 + 60·12·8 + 4) B.
    assert_eq!(reference.len(), 64 + 6 * 5780);

    for (ranks, depth) in [(1, "2"), (2, "2"), (4, "2"), (2, "1"), (4, "3")] {
        let out = tmp.path().join(format!("farm{ranks}-{depth}"));
        let done = mpirun(
            ranks,
            Path::new(BIN),
            &["run", s(&data), "--out", s(&out), "--verify", "--json", "--pipeline-depth", depth],
        );
        assert!(done.status.success(), "{ranks} ranks: {}", done.stderr);
        let rec = record(&done.stdout);
        assert_eq!(rec["verified"], true, "{rec}");
        assert_eq!(rec["ranks"], ranks);
        assert_eq!(rec["correlations"], 6 * 60 * 12);
        assert!(rec["seconds"].as_f64().unwrap() > 0.0 && rec["correlations_per_s"].as_f64().unwrap() > 0.0);
        let per_worker: Vec<u64> = serde_json::from_value(rec["per_worker"].clone()).unwrap();
        assert_eq!(per_worker.iter().sum::<u64>(), 6, "each job once: {per_worker:?}");
        assert_eq!(std::fs::read(results(&out)).unwrap(), reference, "{ranks} ranks, depth {depth}");
        let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
        assert_eq!(summary.lines().count(), 1 + 2 * 3, "{summary}");
    }

    // A torn last record (a run killed mid-write): cut, then resumed to the same bytes.
    let out = tmp.path().join("torn");
    std::fs::create_dir_all(&out).unwrap();
    let mut torn = reference[..64 + 2 * 5780 + 1000].to_vec();
    torn.extend_from_slice(&[0xAB; 17]);
    std::fs::write(results(&out), &torn).unwrap();
    let done = mpirun(2, Path::new(BIN), &["run", s(&data), "--out", s(&out), "--json"]);
    assert!(done.status.success(), "{}", done.stderr);
    let rec = record(&done.stdout);
    assert_eq!((rec["jobs_resumed"].as_u64(), rec["cut_bytes"].as_u64()), (Some(2), Some(1017)), "{rec}");
    assert_eq!(std::fs::read(results(&out)).unwrap(), reference);

    // A record whose bytes were damaged in the middle of the file: everything from it on is
    // recomputed (its checksum fails), the records before it are kept.
    let out = tmp.path().join("flipped");
    std::fs::create_dir_all(&out).unwrap();
    let mut flipped = reference.clone();
    flipped[64 + 3 * 5780 + 100] ^= 1;
    std::fs::write(results(&out), &flipped).unwrap();
    let done = Command::new(BIN).args(["run", s(&data), "--out", s(&out), "--serial", "--json"]).output().unwrap();
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    assert_eq!(record(&String::from_utf8_lossy(&done.stdout))["jobs_resumed"], 3);
    assert_eq!(std::fs::read(results(&out)).unwrap(), reference);

    // A disk that fills: a file-size limit makes the kernel refuse writes past 20 KiB
    // (EFBIG, as ENOSPC would), part-way through the fourth record: `ulimit -f` for the
    // serial run, the same limit set by rank 0 once MPI has started for the farm (a limit
    // before mpirun breaks MPI's own start). The run fails naming the file, the three
    // records before stay, and the next run resumes from them.
    for ranks in [0, 2] {
        let out = tmp.path().join(format!("full{ranks}"));
        std::fs::create_dir_all(&out).unwrap();
        let run = format!("run {} --out {}", s(&data), s(&out));
        let line = if ranks == 0 {
            format!("ulimit -f 20; exec {BIN} {run} --serial")
        } else {
            format!("exec timeout -k 5 60 {} -n {ranks} {BIN} {run} --file-size-limit 20480", dps_launch::MPIRUN)
        };
        let done = Command::new("bash").args(["-c", &line]).output().unwrap();
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("results.bin") && stderr.contains("File too large"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        let left = std::fs::read(results(&out)).unwrap();
        assert!(left.len() <= 20 * 1024 && left.len() > 64 + 3 * 5780, "{} bytes", left.len());
        assert_eq!(left[..64 + 3 * 5780], reference[..64 + 3 * 5780]);
        let done = Command::new(BIN).args(["run", s(&data), "--out", s(&out), "--serial", "--json"]).output().unwrap();
        assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
        assert_eq!(record(&String::from_utf8_lossy(&done.stdout))["jobs_resumed"], 3);
        assert_eq!(std::fs::read(results(&out)).unwrap(), reference);
    }
}
