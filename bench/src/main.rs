//! `dps-bench`: benchmarks of the DPS runtime on two MPI ranks.
//!
//! * `dps-bench transport [--json]`: DPS against raw MPI, ping-pong round trips and streaming
//!   bandwidth for payloads of 8 B to 16 MiB.
//! * `dps-bench service [--json] [--bytes N] [--tcp]`: a service exported by one process and
//!   called from another on the same node, beside the same graphs inside one application:
//!   8-byte round trips and the bandwidth of bulk replies (see `service`).
//! * `dps-bench overlap [--json]`: the gain of a pipelined graph over the same work done
//!   communication-then-computation, against the paper's potential gain.
//!
//! * `dps-bench topology [--ranks] [--bind cores]`: the machine as hwloc sees it and, under
//!   mpirun with `--ranks`, where each rank's threads may run (see `topology`).
//! * `dps-bench calibrate --out FILE [--quick] [--ranks N]`: measures latency and bandwidth
//!   (DPS tokens and raw MPI), the CPU cost of transfers and the kernels' costs, and writes
//!   the platform file the simulator and `tune-farm` read (see `calibrate`).
//! * `dps-bench tune-farm --item-us T --payload BYTES [--platform FILE] [--ranks P]`: a
//!   farm's worker count and grain from the P3L cost model, checked on a synthetic farm
//!   (see `tunefarm`).
//! * `dps-bench sim-accuracy --platform FILE`: the simulator's predictions against real
//!   runs on 1 and 2 ranks, or at P = 2, 4, 8 on an emulated cluster (see `simaccuracy`).
//! * `dps-bench peak [--json]`: the double-precision peak of the machine's cores, measured
//!   (see `peak`).
//! * `dps-bench schedule [FILE | --lu N] --procs P [--platform FILE] [--gantt PNG]
//!   [--lookahead EVENTS] [--compare]`: a malleable task graph scheduled layer by layer (the
//!   scheduling paper), against CPA, MCPA and the lower bound (see `schedule`).
//! * `dps-bench table`: JSON lines on stdin to a markdown table.
//! * `dps-bench sweep [EXPERIMENT…]`: the experiments of `bench/experiments.toml`, with
//!   tables beside the published numbers and plots (see `sweep`).
//!
//! Each command launches itself once under `scripts/mpirun -n 2` (hidden `*-worker`
//! subcommands) and prints what rank 0 reports.

mod calibrate;
mod launch;
mod overlap;
mod peak;
mod schedule;
mod service;
mod simaccuracy;
mod sweep;
mod table;
mod topology;
mod transport;
mod tunefarm;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};
use dps_harness::options::Output;

#[derive(Parser, Debug)]
#[command(name = "dps-bench", about = "Benchmarks of the DPS runtime on two MPI ranks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `--json` of the benchmarks, which print several records.
const JSON_HELP: &str = "One JSON object per line instead of a table";

#[derive(Subcommand, Debug)]
enum Command {
    /// DPS against raw MPI: ping-pong round-trip time and streaming bandwidth per payload size.
    #[command(mut_arg("json", |a| a.help(JSON_HELP)))]
    Transport {
        #[command(flatten)]
        output: Output,
        /// Seconds after which the MPI job is killed (1 to 604800).
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
    /// A parallel service called from another process on the same node, beside the same
    /// graphs inside one application: 8-byte round-trip time and bulk-reply bandwidth.
    #[command(mut_arg("json", |a| a.help("One JSON object instead of the table")))]
    Service {
        #[command(flatten)]
        output: Output,
        /// Seconds after which the processes are killed (1 to 604800).
        #[arg(long, default_value_t = 300)]
        timeout: u64,
        #[command(flatten)]
        opts: service::Options,
    },
    /// The worker of `service` (run under mpirun on 2 ranks).
    #[command(hide = true)]
    ServiceWorker {
        #[command(flatten)]
        opts: service::Options,
    },
    /// The serving process of `service` (a plain process).
    #[command(hide = true)]
    ServiceServer {
        /// Serve until this file exists.
        #[arg(long)]
        until: std::path::PathBuf,
    },
    /// Pipelined against phased (communication, then computation) graphs, per block size.
    #[command(mut_arg("json", |a| a.help(JSON_HELP)))]
    Overlap {
        #[command(flatten)]
        output: Output,
        /// Seconds after which the MPI job is killed (1 to 604800).
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
    /// Measures this machine (latency, bandwidth, transfer CPU overheads, kernel costs) and
    /// writes the platform file the simulator and tune-farm read.
    #[command(mut_arg("json", |a| a.help("Print the platform file as one JSON line instead of a summary")))]
    Calibrate {
        #[command(flatten)]
        output: Output,
        /// Seconds after which the MPI job is killed (1 to 604800).
        #[arg(long, default_value_t = 600)]
        timeout: u64,
        #[command(flatten)]
        args: calibrate::Launch,
    },
    /// The worker of `calibrate` (run under mpirun).
    #[command(hide = true)]
    CalibrateWorker {
        #[command(flatten)]
        opts: calibrate::Options,
        /// Only the links (ping-pongs) and the transfers' CPU costs, as one JSON record.
        #[arg(long)]
        transfers_only: bool,
    },
    /// Proposes a farm's worker count and grain from the P3L cost model and the platform
    /// file, then measures a synthetic farm over a grid of both.
    #[command(mut_arg("json", |a| a.help("One JSON record instead of the table")))]
    TuneFarm {
        #[command(flatten)]
        output: Output,
        /// Seconds after which the MPI job is killed (1 to 604800).
        #[arg(long, default_value_t = 600)]
        timeout: u64,
        #[command(flatten)]
        args: tunefarm::Launch,
    },
    /// The worker of `tune-farm` (run under mpirun).
    #[command(hide = true)]
    TuneFarmWorker {
        #[command(flatten)]
        args: tunefarm::WorkerArgs,
    },
    /// The simulator against real runs on 1 and 2 ranks, or `--ranks` on an emulated
    /// `--cluster` (matmul, LU, Life): the error of each prediction and the fraction within
    /// ±4/±6/±12 % beside the simulator paper's.
    SimAccuracy(simaccuracy::Args),
    /// The double-precision peak of this machine's cores, measured with FMA loops on the
    /// widest vectors: what a BLAS rate is set against.
    Peak(peak::Options),
    /// Schedules a malleable task graph (a file, or block LU) layer by layer on P processors
    /// (the scheduling paper) and prints the schedule, its bound, and CPA's and MCPA's makespans.
    Schedule(schedule::Args),
    /// Reads JSON lines (as printed with --json) on stdin and prints a markdown table.
    Table,
    /// The machine as hwloc sees it: packages, cores, hardware threads, caches, NUMA nodes;
    /// with --ranks (under mpirun) each rank's binding and its threads' CPUs.
    Topology(topology::Options),
    /// Runs named experiments of bench/experiments.toml and writes their tables and plots.
    Sweep(sweep::SweepArgs),
}

/// Writes `text` to standard output. A reader that stopped reading (`dps-bench ... | head`)
/// is not an error; any other failure to write is (never a panic, as `print!` would).
pub(crate) fn print_out(text: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(e).context("cannot write to standard output"))
        }
        _ => Ok(()),
    }
}

/// The longest `--timeout` accepted: a week. (`timeout 0` would disable the timeout.)
const MAX_TIMEOUT_S: u64 = 7 * 24 * 3600;

/// Checks a launcher's `--timeout`.
fn check_timeout(timeout: u64) -> Result<()> {
    dps_harness::options::check_timeout(timeout, MAX_TIMEOUT_S)
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Transport { output, timeout, opts } => {
            check_timeout(timeout)?;
            transport::launch(&opts, output.json, timeout)
        }
        Command::TransportWorker { opts } => transport::worker(&opts),
        Command::Overlap { output, timeout, opts } => {
            check_timeout(timeout)?;
            overlap::launch(&opts, output.json, timeout)
        }
        Command::OverlapWorker { opts } => overlap::worker(&opts),
        Command::Service { output, timeout, opts } => {
            check_timeout(timeout)?;
            service::launch(&opts, output.json, timeout)
        }
        Command::ServiceWorker { opts } => service::worker(&opts),
        Command::ServiceServer { until } => service::server(&until),
        Command::Calibrate { output, timeout, args } => {
            check_timeout(timeout)?;
            calibrate::launch(&args, output.json, timeout)
        }
        Command::CalibrateWorker { opts, transfers_only } => calibrate::worker(&opts, transfers_only),
        Command::TuneFarm { output, timeout, args } => {
            check_timeout(timeout)?;
            tunefarm::launch(&args, output.json, timeout)
        }
        Command::TuneFarmWorker { args } => tunefarm::worker(&args),
        Command::SimAccuracy(args) => simaccuracy::run(&args),
        Command::Peak(opts) => peak::run(&opts),
        Command::Schedule(args) => schedule::run(&args),
        Command::Table => table::print_from_stdin(),
        Command::Topology(opts) => topology::run(&opts),
        Command::Sweep(args) => sweep::run(&args),
    }
}

/// Large operands on huge pages, as in the dense apps: the kernel tables measure what they run
/// (`dps_dense::huge`).
#[global_allocator]
static ALLOC: dps_dense::huge::HugePages = dps_dense::huge::HugePages;

fn main() -> ExitCode {
    dps_dense::kernel_choice::use_the_best_core(); // before MPI: it may start the program again
    let cli = dps_harness::parse_args::<Cli>();
    dps_harness::finish("dps-bench", run(cli.command))
}
