//! Test support: launches MPI jobs through the workspace's `scripts/mpirun`, under a
//! timeout (a hang fails the test instead of stalling CI), one job at a time.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub mod bad_input;
pub use bad_input::{case, case_on, check_table, Case};

/// Jobs run one at a time: parallel `mpirun`s on 2 cores would only slow each other down.
static ONE_JOB_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Seconds after which a job counts as hung and is killed.
pub const JOB_TIMEOUT_S: u64 = 120;

/// What a finished job printed, how it ended and how long it took.
#[derive(Debug)]
pub struct Job {
    /// Exit status of mpirun.
    pub status: std::process::ExitStatus,
    /// Standard output of all ranks.
    pub stdout: String,
    /// Standard error of all ranks.
    pub stderr: String,
    /// Wall time of the job.
    pub elapsed: Duration,
}

/// The workspace's mpirun wrapper.
pub fn mpirun_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/mpirun")
}

/// Runs `program args` on `ranks` ranks under `timeout`.
pub fn mpirun(ranks: usize, program: &std::path::Path, args: &[&str]) -> Job {
    mpirun_with(ranks, &[], program, args)
}

/// As [`mpirun`], with extra options for mpirun itself.
pub fn mpirun_with(ranks: usize, mpirun_options: &[&str], program: &std::path::Path, args: &[&str]) -> Job {
    launch(ranks, mpirun_options, &[], program, args)
}

/// As [`mpirun`], with extra environment variables for the job.
pub fn mpirun_env(ranks: usize, env: &[(&str, &str)], program: &std::path::Path, args: &[&str]) -> Job {
    launch(ranks, &[], env, program, args)
}

fn launch(
    ranks: usize,
    mpirun_options: &[&str],
    env: &[(&str, &str)],
    program: &std::path::Path,
    args: &[&str],
) -> Job {
    let _one = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let start = Instant::now();
    let Output { status, stdout, stderr } = Command::new("timeout")
        .args(["-k", "5", &JOB_TIMEOUT_S.to_string()])
        .arg(mpirun_script())
        .args(["-n", &ranks.to_string()])
        .args(mpirun_options)
        .arg(program)
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .envs(env.iter().copied())
        .output()
        .expect("cannot run timeout/mpirun");
    let job = Job {
        status,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        elapsed: start.elapsed(),
    };
    assert_ne!(job.status.code(), Some(124), "job timed out after {JOB_TIMEOUT_S} s (hang):\n{}", job.stderr);
    job
}

/// Path of an example binary built by `cargo test` next to the test binary.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().join("examples").join(name)
}
