//! Launching jobs: one builder for every place that starts a program under `mpirun` or
//! `srun` (or alone), always inside `timeout`, so that a hung job is killed and reported
//! instead of stalling a test, a benchmark or a sweep.
//!
//! The command line is `timeout -k 5 SECS [LAUNCHER -n RANKS [OPTIONS]] PROGRAM ARGS`, where
//! the launcher is the workspace's `scripts/mpirun` (the one place that sets Open MPI's
//! environment for root and oversubscription), `srun --mpi=pmix` inside a Slurm allocation,
//! or nothing (a plain process, for programs that launch themselves or run on one rank).
//!
//! Two ways to run a [`Job`]: [`Job::output`] captures both outputs (tests, and callers that
//! need the child's own error message); [`Job::stream`] hands each line of standard output
//! to the caller as it comes and lets standard error through (benchmarks that print as they
//! go). Jobs of one process run one at a time: parallel MPI jobs on a small machine would
//! only slow each other down and make their timings meaningless.
//!
//! ```no_run
//! use dps_launch::Job;
//! let done = Job::new("target/release/dps-lu").ranks(2).args(["--n", "512", "--json"]).timeout_s(60).output()?;
//! assert!(done.status.success() && !done.timed_out());
//! # Ok::<(), dps_launch::LaunchError>(())
//! ```

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The workspace's mpirun wrapper: Open MPI's environment is set there and nowhere else.
pub const MPIRUN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/mpirun");

/// Seconds after which a test's job counts as hung and is killed.
pub const TEST_TIMEOUT_S: u64 = 120;

/// Seconds `timeout` waits after its TERM signal before it sends KILL.
const KILL_AFTER_S: u64 = 5;

/// Jobs run one at a time (see the module documentation).
static ONE_JOB_AT_A_TIME: Mutex<()> = Mutex::new(());

/// What starts the program's ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// The workspace's `scripts/mpirun` ([`MPIRUN`]).
    Mpirun,
    /// `srun --mpi=pmix`, inside a Slurm allocation.
    Srun,
    /// No launcher: the program runs as one plain process (it may launch its own job).
    None,
}

impl Launcher {
    /// `srun` inside a Slurm allocation (`SLURM_JOB_ID` is set), `mpirun` elsewhere.
    pub fn detect() -> Launcher {
        if std::env::var_os("SLURM_JOB_ID").is_some() {
            Launcher::Srun
        } else {
            Launcher::Mpirun
        }
    }

    /// The launcher's words before its own options, for `ranks` ranks.
    fn words(self, ranks: usize) -> Vec<OsString> {
        let ranks = ranks.to_string();
        match self {
            Launcher::Mpirun => vec![MPIRUN.into(), "-n".into(), ranks.into()],
            Launcher::Srun => vec!["srun".into(), "--mpi=pmix".into(), "-n".into(), ranks.into()],
            Launcher::None => Vec::new(),
        }
    }
}

/// A job to launch: ranks, program, arguments, environment, timeout and launcher.
#[derive(Debug, Clone)]
#[must_use = "a Job does nothing until it is run with output() or stream()"]
pub struct Job {
    launcher: Launcher,
    ranks: usize,
    launcher_options: Vec<OsString>,
    program: PathBuf,
    args: Vec<OsString>,
    pub(crate) env: Vec<(OsString, OsString)>,
    pub(crate) timeout_s: u64,
}

/// How a captured job ended, what it printed and how long it took.
#[derive(Debug)]
pub struct Finished {
    /// Exit status of `timeout` (that of the launcher, unless the job timed out).
    pub status: ExitStatus,
    /// Standard output of all ranks.
    pub stdout: String,
    /// Standard error of all ranks.
    pub stderr: String,
    /// Wall time of the job.
    pub elapsed: Duration,
    timeout_s: u64,
}

impl Finished {
    /// Whether `timeout` ended the job: its status 124, or 137 (KILL after TERM) once the
    /// time was up. A job that was killed early by someone else did not time out.
    pub fn timed_out(&self) -> bool {
        timed_out(self.status, self.elapsed, self.timeout_s)
    }
}

fn timed_out(status: ExitStatus, elapsed: Duration, timeout_s: u64) -> bool {
    match status.code() {
        Some(124) => true,
        Some(137) => elapsed >= Duration::from_secs(timeout_s),
        _ => false,
    }
}

/// Why a job could not be run, or (streamed) did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The command could not be started (no `timeout`, no program, no permission).
    #[error("cannot run {command}: {source}")]
    Start {
        /// The command line.
        command: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The job's standard output could not be read.
    #[error("cannot read the output of {command}: {source}")]
    Read {
        /// The command line.
        command: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The job did not finish in time and was killed (streamed jobs only).
    #[error("the job did not finish within {seconds} s and was killed")]
    TimedOut {
        /// The timeout.
        seconds: u64,
    },
    /// The job exited with a failure (streamed jobs only).
    #[error("the job failed: {status}")]
    Failed {
        /// Its exit status.
        status: ExitStatus,
    },
}

impl Job {
    /// `program` on one rank under [`Launcher::Mpirun`], killed after [`TEST_TIMEOUT_S`].
    pub fn new(program: impl Into<PathBuf>) -> Job {
        Job {
            launcher: Launcher::Mpirun,
            ranks: 1,
            launcher_options: Vec::new(),
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            timeout_s: TEST_TIMEOUT_S,
        }
    }

    /// The number of ranks (ignored by [`Launcher::None`]).
    pub fn ranks(mut self, ranks: usize) -> Job {
        self.ranks = ranks;
        self
    }

    /// The launcher.
    pub fn launcher(mut self, launcher: Launcher) -> Job {
        self.launcher = launcher;
        self
    }

    /// Options for the launcher itself (`-x VAR`, `--output-filename DIR`), after `-n RANKS`.
    pub fn launcher_options<S: Into<OsString>>(mut self, options: impl IntoIterator<Item = S>) -> Job {
        self.launcher_options.extend(options.into_iter().map(Into::into));
        self
    }

    /// One more argument of the program.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Job {
        self.args.push(arg.into());
        self
    }

    /// More arguments of the program.
    pub fn args<S: Into<OsString>>(mut self, args: impl IntoIterator<Item = S>) -> Job {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// An environment variable of the job (every rank, through the launcher).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Job {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Seconds after which the job is killed (at least 1: `timeout 0` would never kill it).
    pub fn timeout_s(mut self, seconds: u64) -> Job {
        self.timeout_s = seconds.max(1);
        self
    }

    /// The whole command line, `timeout` first.
    pub fn command_line(&self) -> Vec<OsString> {
        let mut words: Vec<OsString> =
            vec!["timeout".into(), "-k".into(), KILL_AFTER_S.to_string().into(), self.timeout_s.to_string().into()];
        let launcher = self.launcher.words(self.ranks);
        let has_launcher = !launcher.is_empty();
        words.extend(launcher);
        if has_launcher {
            words.extend(self.launcher_options.iter().cloned());
        }
        words.push(self.program.clone().into());
        words.extend(self.args.iter().cloned());
        words
    }

    /// The command line as one string, for messages.
    pub fn display(&self) -> String {
        self.command_line().iter().map(|w| w.to_string_lossy()).collect::<Vec<_>>().join(" ")
    }

    fn command(&self) -> Command {
        let words = self.command_line();
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..]).envs(self.env.iter().map(|(k, v)| (k, v))).stdin(Stdio::null());
        cmd
    }

    /// Runs the job and captures its outputs. A job that fails or times out is a
    /// [`Finished`] to inspect ([`Finished::timed_out`]), not an error.
    ///
    /// # Errors
    /// [`LaunchError::Start`] if the command cannot be run.
    pub fn output(&self) -> Result<Finished, LaunchError> {
        let _one = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let start = Instant::now();
        let out = self.command().output().map_err(|source| LaunchError::Start { command: self.display(), source })?;
        Ok(Finished {
            status: out.status,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            elapsed: start.elapsed(),
            timeout_s: self.timeout_s,
        })
    }

    /// Runs the job, calling `on_line` with each line of its standard output as it comes;
    /// its standard error goes straight through to this process's.
    ///
    /// # Errors
    /// The job cannot be started or read, times out, or exits with a failure.
    pub fn stream(&self, mut on_line: impl FnMut(&str)) -> Result<(), LaunchError> {
        let _one = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let start = Instant::now();
        let mut child = self
            .command()
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|source| LaunchError::Start { command: self.display(), source })?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let read = |source| LaunchError::Read { command: self.display(), source };
        for line in BufReader::new(stdout).lines() {
            match line {
                Ok(line) => on_line(&line),
                Err(e) => {
                    // Do not leave the job running behind an error.
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(read(e));
                }
            }
        }
        let status = child.wait().map_err(read)?;
        if timed_out(status, start.elapsed(), self.timeout_s) {
            Err(LaunchError::TimedOut { seconds: self.timeout_s })
        } else if status.success() {
            Ok(())
        } else {
            Err(LaunchError::Failed { status })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(job: &Job) -> Vec<String> {
        job.command_line().iter().map(|w| w.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn command_lines_put_timeout_then_launcher_then_program() {
        let job = Job::new("/bin/app").ranks(3).launcher_options(["-x", "A=1"]).args(["--n", "8"]).timeout_s(9);
        assert_eq!(words(&job), ["timeout", "-k", "5", "9", MPIRUN, "-n", "3", "-x", "A=1", "/bin/app", "--n", "8"]);
        let srun = job.clone().launcher(Launcher::Srun);
        assert_eq!(words(&srun)[4..8], ["srun", "--mpi=pmix", "-n", "3"]);
        let alone = job.launcher(Launcher::None).timeout_s(0);
        assert_eq!(words(&alone), ["timeout", "-k", "5", "1", "/bin/app", "--n", "8"], "no launcher, no options");
    }

    #[test]
    fn captured_and_streamed_jobs_report_how_they_ended() {
        let sh = |script: &str| Job::new("/bin/sh").launcher(Launcher::None).args(["-c", script]);
        let done = sh("echo out; echo err >&2; exit 3").output().unwrap();
        assert_eq!((done.status.code(), done.stdout.as_str(), done.stderr.as_str()), (Some(3), "out\n", "err\n"));
        assert!(!done.timed_out());
        let slow = sh("sleep 5").timeout_s(1).output().unwrap();
        assert!(slow.timed_out(), "{:?}", slow.status);

        let mut lines = Vec::new();
        sh("echo a; echo b").stream(|l| lines.push(l.to_string())).unwrap();
        assert_eq!(lines, ["a", "b"]);
        assert!(matches!(sh("exit 4").stream(|_| {}), Err(LaunchError::Failed { .. })));
        assert!(matches!(sh("sleep 5").timeout_s(1).stream(|_| {}), Err(LaunchError::TimedOut { seconds: 1 })));
        let missing = Job::new("/nonexistent/program").launcher(Launcher::None).output().unwrap();
        assert_eq!(missing.status.code(), Some(127), "timeout reports a missing program as 127");
    }
}
