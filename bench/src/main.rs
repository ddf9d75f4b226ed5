//! `dps-bench`: benchmarks of the DPS runtime on two MPI ranks.
//!
//! * `dps-bench transport [--json]`: DPS against raw MPI, ping-pong round trips and streaming
//!   bandwidth for payloads of 8 B to 16 MiB.
//! * `dps-bench overlap [--json]`: the gain of a pipelined graph over the same work done
//!   communication-then-computation, against the paper's potential gain.
//!
//! * `dps-bench table`: JSON lines on stdin to a markdown table.
//! * `dps-bench sweep [EXPERIMENT…]`: the experiments of `bench/experiments.toml`, with
//!   tables beside the published numbers and plots (see `sweep`).
//!
//! Each command launches itself once under `scripts/mpirun -n 2` (hidden `*-worker`
//! subcommands) and prints what rank 0 reports.

mod launch;
mod overlap;
mod stats;
mod sweep;
mod table;
mod transport;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "dps-bench", about = "Benchmarks of the DPS runtime on two MPI ranks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// DPS against raw MPI: ping-pong round-trip time and streaming bandwidth per payload size.
    Transport {
        /// One JSON object per line instead of a table.
        #[arg(long)]
        json: bool,
        /// Seconds after which the MPI job is killed.
        #[arg(long, default_value_t = 300)]
        timeout: u64,
        #[command(flatten)]
        opts: transport::Options,
    },
    /// The worker of `transport` (run under mpirun on 2 ranks).
    #[command(hide = true)]
    TransportWorker {
        #[command(flatten)]
        opts: transport::Options,
    },
    /// Pipelined against phased (communication, then computation) graphs, per block size.
    Overlap {
        /// One JSON object per line instead of a table.
        #[arg(long)]
        json: bool,
        /// Seconds after which the MPI job is killed.
        #[arg(long, default_value_t = 300)]
        timeout: u64,
        #[command(flatten)]
        opts: overlap::Options,
    },
    /// The worker of `overlap` (run under mpirun on 2 ranks).
    #[command(hide = true)]
    OverlapWorker {
        #[command(flatten)]
        opts: overlap::Options,
    },
    /// Reads JSON lines (as printed with --json) on stdin and prints a markdown table.
    Table,
    /// Runs named experiments of bench/experiments.toml and writes their tables and plots.
    Sweep(sweep::SweepArgs),
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Transport { json, timeout, opts } => transport::launch(&opts, json, timeout),
        Command::TransportWorker { opts } => transport::worker(&opts),
        Command::Overlap { json, timeout, opts } => overlap::launch(&opts, json, timeout),
        Command::OverlapWorker { opts } => overlap::worker(&opts),
        Command::Table => table::print_from_stdin(),
        Command::Sweep(args) => sweep::run(&args),
    }
}
