//! Self-launch: runs this executable's hidden worker subcommand under `scripts/mpirun`, inside
//! a `timeout` ([`dps_launch::Job::stream`]), and hands each JSON line rank 0 prints
//! to the caller.

use anyhow::{Context, Result};
use dps_launch::{Job, Launcher};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::table;

/// Runs `dps-bench <args>` on `ranks` ranks, killed after `timeout_s` seconds, and calls
/// `on_record` for every line of its standard output that parses as a `T`. Other lines are
/// passed on to standard error; the workers' standard error goes straight through.
///
/// # Errors
/// If the job cannot start, times out or exits with a failure.
pub(crate) fn run_workers<T: DeserializeOwned>(
    ranks: usize,
    args: &[String],
    timeout_s: u64,
    on_record: impl FnMut(T),
) -> Result<()> {
    run_workers_with(Launcher::Mpirun, ranks, args, timeout_s, on_record)
}

/// As [`run_workers`], launched by `launcher` (`srun` spreads the ranks over the nodes of a
/// Slurm allocation, which is how `calibrate` reaches an inter-node path).
///
/// # Errors
/// As [`run_workers`].
pub(crate) fn run_workers_with<T: DeserializeOwned>(
    launcher: Launcher,
    ranks: usize,
    args: &[String],
    timeout_s: u64,
    mut on_record: impl FnMut(T),
) -> Result<()> {
    let exe = std::env::current_exe().context("cannot locate the dps-bench executable")?;
    let job = Job::new(exe).launcher(launcher).ranks(ranks).args(args).timeout_s(timeout_s);
    job.stream(|line| match serde_json::from_str::<T>(line) {
        Ok(record) => on_record(record),
        Err(_) => eprintln!("{line}"),
    })
    .with_context(|| format!("dps-bench {} on {ranks} ranks", args.join(" ")))
}

/// Runs the hidden subcommand `worker` with `options` as [`run_workers`] does and prints the
/// records: as JSON lines, or at the end as a markdown table.
///
/// # Errors
/// As [`run_workers`].
pub(crate) fn run_and_print<T: DeserializeOwned + Serialize>(
    ranks: usize,
    worker: &str,
    options: Vec<String>,
    timeout_s: u64,
    json: bool,
) -> Result<()> {
    let args: Vec<String> = std::iter::once(worker.to_string()).chain(options).collect();
    let mut rows = Vec::new();
    // The first failure to print is kept; the job still runs to its end.
    let mut printed: Result<()> = Ok(());
    run_workers(ranks, &args, timeout_s, |record: T| {
        let value = serde_json::to_value(&record).expect("a record serialises");
        if json {
            if printed.is_ok() {
                printed = crate::print_out(&format!("{value}\n"));
            }
        } else if let serde_json::Value::Object(row) = value {
            rows.push(row);
        }
    })?;
    printed?;
    crate::print_out(&table::markdown(&rows))
}
