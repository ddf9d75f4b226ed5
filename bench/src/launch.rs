//! Self-launch: runs this executable's hidden worker subcommand under `scripts/mpirun`, inside
//! a `timeout`, and hands each JSON line rank 0 prints to the caller.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::table;

/// The workspace's mpirun wrapper (it sets Open MPI's root and oversubscription environment).
const MPIRUN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/mpirun");

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
    mut on_record: impl FnMut(T),
) -> Result<()> {
    let exe = std::env::current_exe().context("cannot locate the dps-bench executable")?;
    let mut child = Command::new("timeout")
        .args(["-k", "5", &timeout_s.to_string(), MPIRUN, "-n", &ranks.to_string()])
        .arg(&exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("cannot run timeout {MPIRUN} -n {ranks} {}", exe.display()))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    for line in BufReader::new(stdout).lines() {
        let line = line.context("cannot read the workers' output")?;
        match serde_json::from_str::<T>(&line) {
            Ok(record) => on_record(record),
            Err(_) => eprintln!("{line}"),
        }
    }
    let status = child.wait().context("cannot wait for mpirun")?;
    match status.code() {
        Some(0) => Ok(()),
        Some(124) | Some(137) => bail!("the MPI job did not finish within {timeout_s} s and was killed"),
        _ => bail!("the MPI job failed: {status}"),
    }
}

/// Runs the workers as [`run_workers`] does and prints their records: as JSON lines, or at the
/// end as a markdown table.
///
/// # Errors
/// As [`run_workers`].
pub(crate) fn run_and_print<T: DeserializeOwned + Serialize>(
    ranks: usize,
    args: &[String],
    timeout_s: u64,
    json: bool,
) -> Result<()> {
    let mut rows = Vec::new();
    // The first failure to print is kept; the job still runs to its end.
    let mut printed: Result<()> = Ok(());
    run_workers(ranks, args, timeout_s, |record: T| {
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
