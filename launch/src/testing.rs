//! What the tests of every crate share: MPI jobs that must not hang (a timeout is a failed
//! test), the ignored-test scenarios run on 1, 2 and 4 ranks, and the JSON record a run
//! printed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::{Finished, Job};

/// The test harness's arguments that run only the ignored test `scenario` of a test binary
/// (the scenarios a test launches under mpirun, every rank running the same binary).
pub fn scenario_args(scenario: &str) -> [&str; 5] {
    ["--ignored", "--exact", scenario, "--nocapture", "--test-threads=1"]
}

/// Runs the ignored test `scenario` of the calling test binary on 1, 2 and 4 ranks; each
/// rank's output goes to a file of its own (the merged stream interleaves lines), where the
/// test harness must report that it passed. Panics otherwise.
pub fn scenario_passes_on_1_2_4(scenario: &str) {
    for ranks in [1, 2, 4] {
        let dir = std::env::temp_dir().join(format!("dps-{scenario}-{ranks}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let exe = std::env::current_exe().unwrap();
        let job = mpirun_with(ranks, &["--output-filename", dir.to_str().unwrap()], &exe, &scenario_args(scenario));
        assert!(job.status.success(), "{scenario} on {ranks} ranks failed:\n{}\n{}", job.stdout, job.stderr);
        for rank in 0..ranks {
            let out = std::fs::read_to_string(dir.join(format!("1/rank.{rank}/stdout"))).unwrap_or_default();
            assert!(
                out.contains("test result: ok. 1 passed"),
                "{scenario} on {ranks} ranks: rank {rank} did not run it:\n{out}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The JSON record a run printed (its first line starting with `{`), for tests: panics,
/// showing the output, when there is none or it does not parse.
pub fn json_record(stdout: &str) -> serde_json::Value {
    let line = stdout.lines().find(|l| l.starts_with('{')).unwrap_or_else(|| panic!("no JSON line in:\n{stdout}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e} in the JSON line {line:?}"))
}

/// Runs `program args` on `ranks` ranks through `scripts/mpirun` under [`TEST_TIMEOUT_S`](crate::TEST_TIMEOUT_S),
/// with `RUST_BACKTRACE=0`.
///
/// # Panics
/// If the job cannot be started or times out (a hang fails the test).
pub fn mpirun(ranks: usize, program: &Path, args: &[&str]) -> Finished {
    test_job(Job::new(program).ranks(ranks).args(args))
}

/// As [`mpirun`], with options for mpirun itself.
///
/// # Panics
/// As [`mpirun`].
pub fn mpirun_with(ranks: usize, mpirun_options: &[&str], program: &Path, args: &[&str]) -> Finished {
    test_job(Job::new(program).ranks(ranks).launcher_options(mpirun_options).args(args))
}

/// As [`mpirun`], with environment variables for the job (set after `RUST_BACKTRACE=0`,
/// so they may override it).
///
/// # Panics
/// As [`mpirun`].
pub fn mpirun_env(ranks: usize, env: &[(&str, &str)], program: &Path, args: &[&str]) -> Finished {
    test_job(env.iter().fold(Job::new(program).ranks(ranks).args(args), |job, (k, v)| job.env(k, v)))
}

/// Runs a test's job: backtraces off unless the caller sets them, a hang is a failure.
///
/// # Panics
/// If the job cannot be started or times out.
pub fn test_job(job: Job) -> Finished {
    let mut job = job;
    job.env.insert(0, (OsString::from("RUST_BACKTRACE"), OsString::from("0")));
    let done = job.output().unwrap_or_else(|e| panic!("{e}"));
    assert!(!done.timed_out(), "job timed out after {} s (hang): {}\n{}", job.timeout_s, job.display(), done.stderr);
    done
}

/// Path of an example binary built by `cargo test` next to the running test binary.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.parent().and_then(Path::parent).expect("target/<profile>/deps").join("examples").join(name)
}

/// The largest peak resident set of the children this process waited for (`getrusage`'s
/// `RUSAGE_CHILDREN`), bytes: run jobs in order of ascending peaks and it is the last one's.
pub fn children_peak_rss() -> u64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_CHILDREN is a valid target.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) }, 0);
    usage.ru_maxrss as u64 * 1024
}

/// Runs `bin` with each argument list of `runs` (in order of ascending peaks: the children's
/// peak is then the last run's), with `env` set to `1`, and checks that the memory estimate
/// `estimate` reads from its standard error lies within 0.5-4× of the run's peak RSS.
///
/// # Panics
/// If a run fails, prints no estimate, or its estimate is out of that range.
pub fn memory_estimates_within_peaks(bin: &str, runs: &[&[&str]], env: &str, estimate: fn(&str) -> Option<u64>) {
    for args in runs {
        let out = std::process::Command::new(bin).args(*args).env(env, "1").output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        let estimate = estimate(&stderr).unwrap_or_else(|| panic!("{args:?}: no estimate in {stderr}"));
        let peak = children_peak_rss();
        let ratio = estimate as f64 / peak as f64;
        eprintln!("{args:?}: estimate {estimate} B, peak {peak} B: {ratio:.2}");
        assert!((0.5..=4.0).contains(&ratio), "{args:?}: estimate {estimate} B, peak {peak} B: {ratio:.2}");
    }
}

/// Runs the shell command line `command` in a private mount namespace where `dir` is a
/// tmpfs of `size` (as `mount -o size=`, e.g. `"16k"`), filled by a file `filler`, then
/// lists `dir` on standard output (one name per line) and exits with the command's code.
/// `None`, after saying so, where a private mount namespace cannot be made (no root or no
/// `unshare`): the caller skips its test.
pub fn on_a_full_disk(dir: &Path, size: &str, command: &str) -> Option<std::process::Output> {
    let probe = std::process::Command::new("unshare").args(["-m", "true"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: cannot make a private mount namespace (unshare -m) to mount a small tmpfs");
        return None;
    }
    let d = dir.display();
    let script = format!(
        "mount -t tmpfs -o size={size} tmpfs {d} && (dd if=/dev/zero of={d}/filler bs=1M count=64 2>/dev/null; true) \
         && {command}; code=$?; ls -A {d}; exit $code"
    );
    Some(std::process::Command::new("unshare").args(["-m", "sh", "-c", &script]).output().unwrap())
}
