//! `transport`: DPS against raw MPI on two ranks, ping-pong round trips and windowed
//! streaming bandwidth, for payloads from 8 B to 16 MiB.
//!
//! The worker measures raw rsmpi first, before the DPS runtime (and its progress thread)
//! starts, then the same two patterns as DPS graphs. Rank 0 prints one JSON [`Record`] per
//! payload size; the launcher prints them as JSON lines or as a table.

mod graphs;
mod raw;

use std::io::Write;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use clap::Args;
use mpi::topology::Communicator;
use serde::{Deserialize, Serialize};

use crate::launch;

/// Payload sizes: powers of 8 up to 256 KiB, then 1, 4 and 16 MiB.
const SIZES: [usize; 9] = [8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20];
/// Outstanding messages (raw MPI) or tokens in flight (DPS split window) when streaming.
const WINDOW: usize = 8;
/// A streaming repetition runs for about this long...
const STREAM_TIME: Duration = Duration::from_millis(100);
/// ...with at least this many and at most this many messages.
const STREAM_MESSAGES: (usize, usize) = (4 * WINDOW, 1_000_000);
/// The calibration run that sets the message count streams about this many bytes.
const STREAM_CALIBRATION_BYTES: usize = 16 << 20;
/// Ping-pong runs for about this long per repetition...
pub(crate) const PINGPONG_TIME: Duration = Duration::from_millis(100);
/// ...with at least this many and at most this many round trips.
pub(crate) const PINGPONG_ITERS: (usize, usize) = (10, 100_000);

/// Options shared by the launcher and the worker.
#[derive(Args, Clone, Debug)]
pub(crate) struct Options {
    /// Repetitions of each measurement (the median is reported; 1 to 10000).
    #[arg(long, default_value_t = 5)]
    pub(crate) reps: usize,
    /// Largest payload size in bytes (at least 8).
    #[arg(long, default_value_t = 16 << 20)]
    pub(crate) max_bytes: usize,
    /// Only these payload sizes, in bytes (comma-separated), instead of 8 B to --max-bytes.
    #[arg(long, value_delimiter = ',')]
    pub(crate) bytes: Vec<usize>,
}

/// The most repetitions `--reps` accepts.
pub(crate) const MAX_REPS: usize = 10_000;

impl Options {
    /// The payload sizes to measure, after checking the options (bad input).
    fn checked_sizes(&self) -> Result<Vec<usize>> {
        if !(1..=MAX_REPS).contains(&self.reps) {
            dps_harness::bad_input!("--reps {} must be between 1 and {MAX_REPS}", self.reps);
        }
        if self.bytes.contains(&0) {
            dps_harness::bad_input!("--bytes: every payload must be at least 1 byte");
        }
        if self.bytes.is_empty() && sizes(self.max_bytes).is_empty() {
            dps_harness::bad_input!("--max-bytes {}: below the smallest payload, {} bytes", self.max_bytes, SIZES[0]);
        }
        Ok(if self.bytes.is_empty() { sizes(self.max_bytes) } else { self.bytes.clone() })
    }

    /// Checks the options and that both ranks' buffers fit in this node's memory.
    fn check(&self) -> Result<Vec<usize>> {
        let sizes = self.checked_sizes()?;
        let largest = sizes.iter().copied().max().unwrap_or(0) as u64;
        // Per rank: the raw sender's window of buffers, DPS tokens in flight at both ends,
        // and the ping-pong buffers.
        let per_rank = largest.saturating_mul(2 * WINDOW as u64 + 4);
        let what = if self.bytes.is_empty() { "--max-bytes" } else { "--bytes" };
        dps_harness::check_memory(&format!("{what} {largest}"), per_rank.saturating_mul(2), 0)?;
        Ok(sizes)
    }

    fn to_args(&self) -> Vec<String> {
        let mut args = vec!["--reps".into(), self.reps.to_string(), "--max-bytes".into(), self.max_bytes.to_string()];
        if !self.bytes.is_empty() {
            args.push("--bytes".into());
            args.push(self.bytes.iter().map(usize::to_string).collect::<Vec<_>>().join(","));
        }
        args
    }
}

/// The results for one payload size. Bandwidths are in GB/s (1e9 bytes per second).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct Record {
    /// Payload size in bytes.
    bytes: usize,
    /// DPS streaming bandwidth, GB/s.
    dps_gbps: f64,
    /// Raw MPI streaming bandwidth, GB/s.
    mpi_gbps: f64,
    /// `dps_gbps / mpi_gbps` (1 = as fast as MPI).
    bw_ratio: f64,
    /// DPS ping-pong round-trip time (median), µs.
    dps_rtt_us: f64,
    /// Raw MPI ping-pong round-trip time (median), µs.
    mpi_rtt_us: f64,
    /// `dps_rtt_us / mpi_rtt_us` (1 = as fast as MPI).
    rtt_ratio: f64,
    /// Messages per raw MPI streaming repetition.
    mpi_stream_msgs: usize,
    /// Tokens per DPS streaming repetition.
    dps_stream_msgs: usize,
    /// Streaming window.
    window: usize,
    /// Repetitions per measurement.
    reps: usize,
}

/// The payload sizes measured with `max_bytes` as the largest.
fn sizes(max_bytes: usize) -> Vec<usize> {
    SIZES.iter().copied().filter(|&b| b <= max_bytes).collect()
}

/// Messages in the calibration run (also the warm-up) that sets a stream's message count.
pub(crate) fn calibration_messages(bytes: usize) -> usize {
    (STREAM_CALIBRATION_BYTES / bytes.max(1)).clamp(2 * WINDOW, 2_000)
}

/// Messages per streaming repetition, scaled from a calibration run of `k0` messages that
/// took `seconds`, so that a repetition takes about [`STREAM_TIME`].
pub(crate) fn stream_messages(k0: usize, seconds: f64) -> usize {
    let k = k0 as f64 * STREAM_TIME.as_secs_f64() / seconds.max(1e-9);
    (k as usize).clamp(STREAM_MESSAGES.0, STREAM_MESSAGES.1)
}

fn gbps(messages: usize, bytes: usize, seconds: f64) -> f64 {
    (messages * bytes) as f64 / seconds / 1e9
}

/// The launcher: one `mpirun -n 2` of `transport-worker`, then prints its records.
pub(crate) fn launch(opts: &Options, json: bool, timeout_s: u64) -> Result<()> {
    opts.check()?;
    launch::run_and_print::<Record>(2, "transport-worker", opts.to_args(), timeout_s, json)
}

/// The worker, on exactly two ranks: raw MPI first, then DPS; rank 0 prints the records.
pub(crate) fn worker(opts: &Options) -> Result<()> {
    let sizes = opts.checked_sizes()?;
    let (universe, _) =
        mpi::initialize_with_threading(mpi::Threading::Multiple).context("MPI was already initialised")?;
    let world = universe.world();
    ensure!(world.size() == 2, "transport-worker needs exactly 2 ranks, got {}", world.size());

    // Raw MPI, before DPS starts its progress thread. Values are meaningful on rank 0 only.
    let mut raw = Vec::new();
    for &bytes in &sizes {
        let rtt = raw::pingpong(&world, bytes, opts.reps);
        let (k, seconds) = raw::stream(&world, bytes, WINDOW, opts.reps);
        raw.push((rtt, k, seconds));
    }
    drop(world);

    let rt = dps::Runtime::from_universe(universe)?;
    let bench = graphs::Graphs::build(&rt, WINDOW)?;
    if rt.is_root() {
        let mut out = std::io::stdout().lock();
        for (&bytes, &(mpi_rtt_us, mpi_k, mpi_s)) in sizes.iter().zip(&raw) {
            let dps_rtt_us = bench.pingpong(&rt, bytes, opts.reps)?;
            let (dps_k, dps_s) = bench.stream(&rt, bytes, opts.reps)?;
            let (mpi_gbps, dps_gbps) = (gbps(mpi_k, bytes, mpi_s), gbps(dps_k, bytes, dps_s));
            let record = Record {
                bytes,
                dps_gbps,
                mpi_gbps,
                bw_ratio: dps_gbps / mpi_gbps,
                dps_rtt_us,
                mpi_rtt_us,
                rtt_ratio: dps_rtt_us / mpi_rtt_us,
                mpi_stream_msgs: mpi_k,
                dps_stream_msgs: dps_k,
                window: WINDOW,
                reps: opts.reps,
            };
            writeln!(out, "{}", serde_json::to_string(&record)?)?;
            out.flush()?;
        }
    }
    rt.shutdown()?;
    Ok(())
}
