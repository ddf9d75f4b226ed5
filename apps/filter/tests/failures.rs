//! Issue 27: failures during `median` are errors, not panics, and leave nothing behind.
//! - A tile file that cannot be read mid-run (truncated under the running job, so that the
//!   check before work passed) ends the job with exit 1 and one line naming the file and the
//!   error, on 1 and 2 ranks; the output is not committed.
//! - The same in `gather` (the reads of process-and-gather): exit 1, one line, no panic.
//! - A `--storage disk` run killed with -9 leaves its scratch store; the next run in the
//!   same scratch directory removes it, and its own.
//! - A scratch disk without room for the random image's store is refused before anything is
//!   written (exit 2, the figures), and leaves no scratch directory.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use dps_launch::Job;

const BIN: &str = env!("CARGO_BIN_EXE_dps-filter");

fn store(dir: &Path, disks: &str) {
    let png = dir.join("in.png");
    image::GrayImage::from_fn(128, 128, |x, y| image::Luma([((x * 7 + y * 13) % 251) as u8])).save(&png).unwrap();
    let store = dir.join("store");
    std::fs::create_dir(&store).unwrap();
    let out = Command::new(BIN)
        .args(["store", png.to_str().unwrap(), "--tiles", "32", "--disks", disks, "--dir", store.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "store: {}", String::from_utf8_lossy(&out.stderr));
}

/// The tile file of disk `d` of `image` in the store.
fn tile_file(store: &Path, d: usize) -> std::path::PathBuf {
    let disk = store.join(format!("disk{d}"));
    let entry = std::fs::read_dir(&disk).unwrap().map(|e| e.unwrap().path()).find(|p| {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        name.starts_with("image.") && name.ends_with(".tiles")
    });
    entry.unwrap()
}

/// Runs `dps-filter SUBCOMMAND --dir STORE ARGS` on `ranks` ranks of a fresh store,
/// truncates one tile file 1.5 s in, and checks that the job ends with exit 1 and one line
/// naming the file, the read error and `words`, without a panic.
fn fails_when_a_tile_is_truncated(ranks: usize, dir: &Path, subcommand: &str, args: &[&str], words: &[&str]) {
    store(dir, &ranks.to_string());
    let store_dir = dir.join("store");
    let victim = tile_file(&store_dir, ranks - 1);
    let job = Job::new(BIN)
        .ranks(ranks)
        .env("RUST_BACKTRACE", "0")
        .args([subcommand, "--dir", store_dir.to_str().unwrap()])
        .args(args.iter().copied())
        .spawn_logged(dir, subcommand);
    std::thread::sleep(Duration::from_millis(1500));
    let file = std::fs::OpenOptions::new().write(true).open(&victim).unwrap();
    file.set_len(100).unwrap();
    let (status, _, stderr) = job.wait();
    assert_eq!(status.code(), Some(1), "{ranks} ranks: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("dps-filter")).collect();
    assert_eq!(lines.len(), 1, "{ranks} ranks: one line expected: {stderr}");
    let victim = victim.display().to_string();
    for words in [&victim[..], "cannot read tile", "failed to fill whole buffer"].iter().chain(words) {
        assert!(lines[0].contains(words), "{ranks} ranks: {words:?} not in {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{ranks} ranks: {stderr}");
}

#[test]
fn a_tile_file_that_fails_mid_run_ends_median_with_exit_1_naming_it_on_1_and_2_ranks() {
    for ranks in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        // 16 tiles, about 6 reads each at 50 ms with no cache: seconds, on every disk.
        let args = ["--cache", "0", "--disk-latency-ms", "50"];
        fails_when_a_tile_is_truncated(ranks, dir.path(), "median", &args, &["not replaced"]);
        let committed = dir.path().join("store/image-median.json").exists();
        assert!(!committed, "{ranks} ranks: the output was committed");
    }
}

#[test]
fn a_tile_file_that_fails_mid_run_ends_gather_with_exit_1_naming_it_on_1_and_2_ranks() {
    for ranks in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        // 16 tiles read at 50 ms each, 20 times over (gather has no cache): seconds.
        fails_when_a_tile_is_truncated(ranks, dir.path(), "gather", &["--reps", "20", "--disk-latency-ms", "50"], &[]);
    }
}

/// The scratch stores in `base`.
fn scratch_stores(base: &Path) -> Vec<String> {
    std::fs::read_dir(base).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

#[test]
fn a_killed_runs_scratch_store_is_removed_by_the_next_run() {
    let base = tempfile::tempdir().unwrap();
    let scratch = base.path().to_str().unwrap();
    let slow = ["median", "--random", "256", "256", "--tiles", "32", "--storage", "disk", "--scratch", scratch];
    let mut child = Command::new(BIN).args(slow).args(["--disk-latency-ms", "100", "--cache", "0"]).spawn().unwrap();
    let start = Instant::now();
    while scratch_stores(base.path()).is_empty() {
        assert!(start.elapsed() < Duration::from_secs(60), "no scratch store made");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap(); // SIGKILL: nothing of the program runs
    child.wait().unwrap();
    let left = scratch_stores(base.path());
    assert_eq!(left.len(), 1, "{left:?}");
    let out = Command::new(BIN).args(slow).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(scratch_stores(base.path()), Vec::<String>::new(), "the killed run's store or this run's is left");
}

/// A full scratch disk: a 64 KiB tmpfs, filled, mounted in a private mount namespace (needs
/// root and `unshare`; skipped, saying so, where they are missing).
#[test]
fn a_full_scratch_disk_is_refused_before_work_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let command = format!("{BIN} median --random 1024 1024 --storage disk --scratch {d}");
    let start = Instant::now();
    let Some(run) = dps_launch::on_a_full_disk(dir.path(), "64k", &command) else { return };
    let (stdout, stderr) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("needs 1.0 MiB of disk space") && stderr.contains(&format!("{d}/")), "{stderr}");
    assert_eq!(stdout.trim(), "filler", "a scratch store left on the full disk");
    assert!(start.elapsed() < Duration::from_secs(10), "refused after {:?}", start.elapsed());
}
