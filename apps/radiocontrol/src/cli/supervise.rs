//! `supervise`: its options and the job's command, checked into a [`SupervisePlan`]: the
//! watchdog's timings, the output directory it watches, the one the job writes, and the
//! hosts it may restart the job on.

use std::path::{Path, PathBuf};

use anyhow::Result;
use dps_harness::bad_input;

use crate::hosts::Hosts;
use crate::launcher::out_dir;

/// `supervise`.
#[derive(clap::Args, Debug, Clone)]
pub struct SuperviseArgs {
    /// Restart when the result file has not grown for this many seconds (the thesis: 20 min).
    #[arg(long, default_value_t = 1200.0)]
    pub stall_seconds: f64,
    /// How often to look, in milliseconds.
    #[arg(long, default_value_t = 250)]
    pub poll_ms: u64,
    /// Give up after this many restarts.
    #[arg(long, default_value_t = 5)]
    pub max_restarts: usize,
    /// Never restart with fewer ranks than this (the master needs one; 2 keeps a worker
    /// beside it on another rank).
    #[arg(long, default_value_t = 1)]
    pub min_ranks: usize,
    /// The run's output directory (default: the command's `--out`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The job's hosts (Open MPI's hostfile; default: the emulated cluster's, for
    /// `scripts/mpirun --cluster DIR` or `DPS_CLUSTER=DIR`; under srun, the Slurm allocation's
    /// nodes): after a failure the job restarts on the hosts that still answer.
    #[arg(long)]
    pub hostfile: Option<PathBuf>,
    /// How to ask a host whether it is alive: `PROBE HOST true` must exit 0 within 10 s
    /// (default: the cluster's launch agent, else `ssh -o BatchMode=yes -o ConnectTimeout=5`;
    /// under srun, Slurm's node state).
    #[arg(long)]
    pub probe: Option<String>,
    /// The job: `mpirun -n N dps-radiocontrol run DATA --out DIR` or `srun -n N ...`.
    #[arg(last = true, required = true, num_args = 1..)]
    pub command: Vec<String>,
}

/// A checked `supervise`.
#[derive(Debug, Clone)]
pub struct SupervisePlan {
    /// Restart when the result file has not grown for this many seconds.
    pub stall_seconds: f64,
    /// How often to look, in milliseconds.
    pub poll_ms: u64,
    /// Give up after this many restarts.
    pub max_restarts: usize,
    /// Never restart with fewer ranks than this.
    pub min_ranks: usize,
    /// The output directory the job writes and the watchdog watches.
    pub out: PathBuf,
    /// The job's command, as given.
    pub command: Vec<String>,
    /// The job's hosts, when they can be known.
    pub hosts: Option<Hosts>,
}

impl SuperviseArgs {
    /// Checks the timings and the job's command: its output directory (given, or found in
    /// the command, and the same if both), and no `--simulate`.
    ///
    /// # Errors
    /// A `dps_harness::BadInput` naming the option.
    pub fn plan(&self) -> Result<SupervisePlan> {
        let s = self;
        if s.stall_seconds.is_nan() || s.stall_seconds <= 0.0 || s.poll_ms == 0 || s.min_ranks == 0 {
            bad_input!("--stall-seconds, --poll-ms and --min-ranks must be positive");
        }
        let Some(out) = s.out.clone().or_else(|| out_dir(&s.command)) else {
            bad_input!("supervise: the command has no --out DIR and --out is not given: where are the results?");
        };
        if let (Some(given), Some(written)) = (&s.out, out_dir(&s.command)) {
            if !same_dir(given, &written) {
                bad_input!(
                    "supervise --out {}: the command writes its results to --out {}; supervise would watch a file \
                     the job never writes (give the same directory, or leave supervise's --out out)",
                    given.display(),
                    written.display()
                );
            }
        }
        if s.command.iter().any(|w| w == "--simulate" || w.starts_with("--simulate=")) {
            bad_input!(
                "supervise: the command has --simulate, and supervise restarts a job whose ranks fail; a simulation \
                 has no rank to fail: run it without supervise"
            );
        }
        Ok(SupervisePlan {
            stall_seconds: s.stall_seconds,
            poll_ms: s.poll_ms,
            max_restarts: s.max_restarts,
            min_ranks: s.min_ranks,
            out,
            command: s.command.clone(),
            hosts: Hosts::for_job(s.hostfile.as_deref(), s.probe.as_deref(), &s.command)?,
        })
    }
}

/// The same directory, however written (`R`, `./R`, `R/`; a symlink to it).
fn same_dir(a: &Path, b: &Path) -> bool {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.components().collect());
    canonical(a) == canonical(b)
}
