//! Graceful degradation (§2.8, RC-5): `supervise` runs the farm under `scripts/mpirun`; the
//! test kills a worker rank's process with SIGKILL (or stops it with SIGSTOP) mid-run; the
//! watchdog ends the job, relaunches it on fewer ranks, the job resumes from its result
//! file, and the final file is byte-identical to an uninterrupted run.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{generate, results, serial, BIN};
use dps_radiocontrol::shm;

/// Bytes of a record of the 12-watch data set.
const RECORD: u64 = 5780;

fn wait_for(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let t = Instant::now();
    while !ready() {
        assert!(t.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The pid rank `rank` wrote into `OUT/ranks/`.
fn rank_pid(out: &Path, rank: usize) -> Option<i32> {
    let text = std::fs::read_to_string(out.join("ranks").join(format!("rank-{rank}.pid"))).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Runs `supervise` over a 3-rank job, sends `signal` to rank 2 once the first record is
/// written, and returns the watchdog's standard error after checking the bytes.
fn supervise_and_signal(data: &Path, out: &Path, reference: &[u8], signal: &str, stall_seconds: &str) -> String {
    let (b, d, o) = (BIN, data.to_str().unwrap(), out.to_str().unwrap());
    let mpirun = dps_launch::MPIRUN;
    let shm_dir = Path::new(shm::SHM_DIR);
    let segments_before = shm::segments(shm_dir);
    let args = ["-k", "5", "90", b, "supervise", "--stall-seconds", stall_seconds, "--poll-ms", "50", "--"];
    let job = [mpirun, "-n", "3", b, "run", d, "--out", o, "--throttle-ms", "700"];
    let child = Command::new("timeout")
        .args(args)
        .args(job)
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Mid-run: the first job is in the file, rank 2 holds jobs of its own.
    let file = results(out);
    wait_for("the first record", Duration::from_secs(60), || {
        std::fs::metadata(&file).is_ok_and(|m| m.len() >= 64 + RECORD)
    });
    let pid = rank_pid(out, 2).expect("rank 2 wrote its pid");
    let len = std::fs::metadata(&file).unwrap().len();
    assert!(len < 64 + 6 * RECORD, "the job ended before the kill ({len} B)");
    let killed = Command::new("kill").args([signal, &pid.to_string()]).status().unwrap();
    assert!(killed.success());
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr).into_owned();
    assert!(done.status.success(), "supervise failed: {:?}\n{stderr}", done.status);
    assert!(stderr.contains("attempt 2") && stderr.contains(&format!("{mpirun} -n 2 ")), "{stderr}");
    assert!(stderr.contains("completed after 1 restarts"), "{stderr}");
    assert_eq!(std::fs::read(&file).unwrap(), reference, "the restarted run's bytes");
    // The killed attempt's shared-memory segments are gone (the last attempt ended cleanly).
    let left: Vec<_> = shm::segments(shm_dir).difference(&segments_before).cloned().collect();
    assert!(left.is_empty(), "Open MPI segments left in {}: {left:?}\n{stderr}", shm::SHM_DIR);
    // The restart resumed: the second attempt did not start from job 0.
    let stdout = String::from_utf8_lossy(&done.stdout);
    let resumed: Vec<&str> = stdout.lines().filter(|l| l.contains("resumed")).collect();
    assert!(resumed.iter().any(|l| !l.contains("(0 resumed)")), "{stdout}");
    // No rank is left running.
    wait_for("the killed rank to be gone", Duration::from_secs(10), || {
        !Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z"))
    });
    stderr
}

#[test]
fn a_killed_or_stopped_worker_rank_is_survived_with_the_same_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    generate(&data, 12, 3, 2, 1);
    let reference = serial(&data, &tmp.path().join("serial"));

    // kill -9: Open MPI aborts the job (exit 137 within about a second); the watchdog
    // sees the job die and one rank gone, and relaunches on 2 ranks.
    let stderr = supervise_and_signal(&data, &tmp.path().join("killed"), &reference, "-KILL", "60");
    assert!(stderr.contains("1 rank(s) found dead") && stderr.contains("exited on signal 9"), "{stderr}");

    // SIGSTOP: the job hangs without dying; no new results for 8 s is a stall, the
    // stopped rank counts as dead, and the whole job is killed and relaunched. (An attempt
    // writes its first record 1.3 s after its start on a loaded 2-core machine: 3 s left
    // little room, and a stall before the kill would restart the job on 3 ranks.)
    let stderr = supervise_and_signal(&data, &tmp.path().join("stopped"), &reference, "-STOP", "8");
    assert!(stderr.contains("no new results for 8 s") && stderr.contains("1 rank(s) found dead"), "{stderr}");
}
