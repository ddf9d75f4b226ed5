//! Command line and runners: `generate`, `run` (the farm on DPS, or `--serial`), `supervise`
//! (the watchdog) and `bench-kernel`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use dps_harness::options::{Check, Output};
use dps_harness::simulate::{Simulate, Support};
use dps_harness::{bad_input, Common, OutputFile};

use crate::data::{DataSet, MINUTES};
use crate::generate;
use crate::graph::{Farm, Start};
use crate::job::{correlate_job, WatchHour};
use crate::record::{Record, THESIS_SERIAL_HOURS};
use crate::results::{self, ResultFile};
use crate::speed::PAPER_DAY_CORRELATIONS;
use crate::supervise::{self, Supervise};
use crate::verify;

/// `dps-radiocontrol`: radio listening rates (thesis ch. 9) on DPS.
#[derive(Parser, Debug)]
#[command(name = "dps-radiocontrol", version, about)]
pub struct Args {
    #[command(subcommand)]
    #[allow(missing_docs)]
    pub command: Command,
}

/// What to do.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Write a synthetic data set with its ground truth (§2.10 formats).
    Generate(GenerateArgs),
    /// Correlate a data set into OUT/results.bin (resuming what is there), on any number of ranks.
    Run(RunArgs),
    /// Run a job and restart it on the surviving ranks when it dies or stops writing results.
    Supervise(Supervise),
    /// Time the direct and the FFT correlation kernels on one core.
    BenchKernel(BenchKernelArgs),
}

/// `generate`.
#[derive(clap::Args, Debug)]
pub struct GenerateArgs {
    /// Watches.
    #[arg(long, default_value_t = 20)]
    pub watches: usize,
    /// Radio stations.
    #[arg(long, default_value_t = 5)]
    pub stations: usize,
    /// Hours (from midnight).
    #[arg(long, default_value_t = 2)]
    pub hours: usize,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Directory to write (created if missing).
    #[arg(long)]
    pub dir: PathBuf,
}

/// `run`.
#[derive(clap::Args, Debug)]
#[command(mut_arg("verify", |a| a.help("Check the results against the ground truth and a serial run, byte for byte")))]
pub struct RunArgs {
    /// The data set directory.
    pub data: PathBuf,
    /// Output directory: results.bin, summary.csv, ranks/ (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// The serial reference: the §2.4 loops in one process, no MPI.
    #[arg(long)]
    pub serial: bool,
    /// Start a new result file, discarding OUT/results.bin (default: resume it).
    #[arg(long)]
    pub fresh: bool,
    /// Jobs queued per worker (the thesis's PipelineDepth).
    #[arg(long, default_value_t = 2)]
    pub pipeline_depth: usize,
    /// Test pacing: each job also sleeps this long on its worker, so that a test can kill
    /// a rank mid-run on a tiny data set. Not for production.
    #[arg(long, default_value_t = 0, hide = true)]
    pub throttle_ms: u64,
    /// Test of a full disk under MPI: once MPI has started (its shared-memory files are
    /// made), rank 0 sets its file-size limit (RLIMIT_FSIZE) to this many bytes, so the
    /// kernel refuses the result file's writes beyond it. (`ulimit -f` before mpirun would
    /// also break MPI's own start.) Not for production.
    #[arg(long, hide = true)]
    pub file_size_limit: Option<u64>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub check: Check,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub output: Output,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub runtime: dps::RuntimeArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub sim: Simulate,
}

/// What the simulator supports of dps-radiocontrol: direct execution only.
const SIMULATION: Support = Support {
    program: "dps-radiocontrol",
    modes: &[],
    why_not: "its correlation kernel is not charged from the platform file's tables (they have none for it)",
    kernels: &[],
};

/// The options a simulated run cannot have, refused before any work: the serial reference
/// (no graph) and the tests of failures, which a simulation has none of.
fn check_simulation(r: &RunArgs) -> Result<()> {
    let Some(p) = r.sim.simulate else { return Ok(()) };
    if r.serial {
        bad_input!("--simulate {p}: --serial runs no DPS graph to simulate");
    }
    if r.throttle_ms > 0 {
        bad_input!("--simulate {p}: --throttle-ms paces a real run so that a test can kill a rank; a simulation has no rank to kill");
    }
    if r.file_size_limit.is_some() {
        bad_input!("--simulate {p}: --file-size-limit tests a full disk under MPI; a simulation runs without MPI");
    }
    Ok(())
}

/// `bench-kernel`.
#[derive(clap::Args, Debug)]
pub struct BenchKernelArgs {
    /// Watches per station minute.
    #[arg(long, default_value_t = 1000)]
    pub watches: usize,
    /// Station minutes per sample.
    #[arg(long, default_value_t = 2)]
    pub minutes: usize,
    /// Samples (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub output: Output,
}

/// Runs the program.
///
/// # Errors
/// Bad input (exit 2, before any work) or a failed run.
pub fn run(args: &Args) -> Result<()> {
    match &args.command {
        Command::Generate(g) => {
            let t = Instant::now();
            let m = generate::generate(&g.dir, g.watches, g.stations, g.hours, g.seed)?;
            println!(
                "wrote {}: {} watches, {} stations, {} hours ({} jobs) in {:.1} s",
                g.dir.display(),
                m.watches,
                m.stations,
                m.hours,
                m.jobs(),
                t.elapsed().as_secs_f64()
            );
            Ok(())
        }
        Command::Run(r) => run_correlation(r),
        Command::Supervise(s) => supervise::run(s),
        Command::BenchKernel(b) => {
            if b.watches == 0 || b.minutes == 0 || b.reps == 0 {
                bad_input!("--watches, --minutes and --reps must be at least 1");
            }
            let s = crate::speed::measure(b.watches, b.minutes, b.reps);
            if b.output.json {
                println!("{}", serde_json::to_string(&s)?);
            } else {
                println!(
                    "direct ({}) {:.2} µs, FFT {:.2} µs per correlation on one core ({:.0}/s direct); \
                     paper-scale day on 2 cores: {:.1} min",
                    s.direct_path, s.direct_us, s.fft_us, s.direct_per_s, s.paper_day_minutes_2_cores
                );
            }
            Ok(())
        }
    }
}

/// The checks every rank makes before any work: the data set, the output directory, and
/// the result file's header.
fn check_input(r: &RunArgs, rank: usize) -> Result<DataSet> {
    if r.pipeline_depth == 0 {
        bad_input!("--pipeline-depth must be at least 1");
    }
    let data = DataSet::open(&r.data)?;
    let out = &r.out;
    let ranks_dir = out.join("ranks");
    if let Err(e) = std::fs::create_dir_all(&ranks_dir) {
        bad_input!("--out {}: cannot create {}: {e}", out.display(), ranks_dir.display());
    }
    // Each rank's pid and host, for the watchdog (and the operator).
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let pid_file = ranks_dir.join(format!("rank-{rank}.pid"));
    if let Err(e) = std::fs::write(&pid_file, format!("{} {}\n", std::process::id(), host.trim())) {
        bad_input!("--out {}: cannot write {}: {e}", out.display(), pid_file.display());
    }
    let path = results::path_in(out);
    if path.is_dir() {
        bad_input!("--out {}: {} is a directory, so no result file can be kept there", out.display(), path.display());
    }
    if r.check.verify {
        // Read now as well as at the end: a malformed truth file is bad input, found before
        // hours of correlation, not after them.
        generate::read_truth(&data.dir).map_err(|e| dps_harness::BadInput::new(format!("--verify: {e:#}")))?;
    }
    if r.fresh && rank == 0 {
        if let Err(e) = std::fs::remove_file(&path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                bad_input!("--fresh: cannot remove {}: {e}", path.display());
            }
        }
    }
    // The header only: the file may be huge, or a device that never ends (/dev/full).
    // (Not with --fresh: rank 0 is removing the file.)
    if let Some(file) = std::fs::File::open(&path).ok().filter(|_| !r.fresh) {
        let mut head = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::Read::take(file, results::HEADER as u64), &mut head);
        if head.iter().any(|&b| b != 0) {
            if let Some(why) = results::check_header(&data.manifest, &head) {
                bad_input!("--out: {} {why}", path.display());
            }
        }
    }
    if rank == 0 {
        // Proves the directory writable for the summary (no partial file is left).
        drop(OutputFile::create("--out", &out.join("summary.csv"))?);
    }
    Ok(data)
}

fn run_correlation(r: &RunArgs) -> Result<()> {
    check_simulation(r)?;
    ignore_file_size_signal();
    if r.serial {
        let data = check_input(r, 0)?;
        let mut file = ResultFile::open(&results::path_in(&r.out), &data.manifest)?;
        let (first, cut) = (file.done, file.cut);
        let t = Instant::now();
        serial(&data, &mut file, r.throttle_ms)?;
        let seconds = t.elapsed().as_secs_f64();
        let mut rec = record(&data, "serial", 1, seconds, first, cut);
        rec.per_worker = vec![rec.jobs_run];
        return finish(r, &data, rec);
    }
    let rank = dps_harness::launch_rank().unwrap_or(0);
    let data = check_input(r, rank)?;
    dps_harness::options::check_trace(&r.runtime)?;
    let rt = r.sim.start(&r.runtime, &SIMULATION)?;
    let farm = Farm::build(&rt, &data, r.pipeline_depth, r.throttle_ms)?;
    let mut outcome = Ok(());
    if rt.is_root() {
        if let Some(bytes) = r.file_size_limit {
            limit_file_size(bytes)?;
        }
        outcome = (|| {
            let file = ResultFile::open(&results::path_in(&r.out), &data.manifest)?;
            let (first, cut) = (file.done, file.cut);
            if let (Some(p), true) = (r.sim.simulate, first > 0) {
                // Resuming is how a real run restarts after a failure; a prediction is of a
                // whole run (and of none at all once every job is done).
                bad_input!(
                    "--simulate {p}: {} already holds {first} of the {} jobs, and the run would resume after them; \
                     give --fresh (or another --out) to predict the whole run",
                    results::path_in(&r.out).display(),
                    data.manifest.jobs()
                );
            }
            farm.master.lock().unwrap().file = Some(file);
            let t = rt.stopwatch();
            let summary = farm.run(&rt, Start { first, jobs: data.manifest.jobs() })?;
            let seconds = t.seconds();
            if let Some(e) = summary.error {
                bail!(
                    "{e} ({} jobs written by this run; the records before are intact: run again to resume from them)",
                    summary.written
                );
            }
            let mut rec = record(&data, "farm", rt.ranks(), seconds, first, cut).bound_by(&rt);
            rec.read_seconds = summary.read_s;
            rec.compute_seconds = summary.compute_s;
            rec.per_worker = summary.per_worker;
            finish(r, &data, rec)
        })();
    }
    rt.shutdown()?;
    outcome
}

trait BoundBy {
    fn bound_by(self, rt: &dps::Runtime) -> Self;
}

impl BoundBy for Record {
    fn bound_by(mut self, rt: &dps::Runtime) -> Self {
        self.common = self.common.bound_by(rt);
        self
    }
}

/// The serial reference: the jobs in order, one process (§2.4), appended to `file`.
///
/// # Errors
/// A failed read or append, naming the file.
pub fn serial(data: &DataSet, file: &mut ResultFile, throttle_ms: u64) -> Result<()> {
    let m = &data.manifest;
    let mut hour: Option<(usize, Vec<crate::kernel::Watch>)> = None;
    for j in file.done..m.jobs() {
        let (h, s) = m.job(j);
        if hour.as_ref().map(|x| x.0) != Some(h) {
            let recs = data.read_watch_hour(h)?;
            hour = Some((h, WatchHour::new(h, m.watches, &recs).prepare()));
        }
        let station = data.read_station_hour(s, h)?;
        let payload = correlate_job(&station, &hour.as_ref().expect("read above").1, m.watches);
        std::thread::sleep(std::time::Duration::from_millis(throttle_ms));
        file.append(&payload)?;
    }
    Ok(())
}

fn record(data: &DataSet, variant: &str, ranks: usize, seconds: f64, first: usize, cut: u64) -> Record {
    let m = &data.manifest;
    let jobs_run = m.jobs() - first;
    let correlations = (jobs_run * MINUTES * m.watches) as u64;
    let per_s = correlations as f64 / seconds;
    Record {
        common: Common::new("radiocontrol", variant, ranks, ranks, seconds, None),
        watches: m.watches,
        stations: m.stations,
        hours: m.hours,
        jobs: m.jobs(),
        jobs_resumed: first,
        jobs_run,
        correlations,
        correlations_per_s: per_s,
        seconds_per_job: seconds / jobs_run.max(1) as f64,
        paper_day_hours: PAPER_DAY_CORRELATIONS / per_s / 3600.0,
        model_9_20_hours: THESIS_SERIAL_HOURS / ranks as f64,
        read_seconds: 0.0,
        compute_seconds: 0.0,
        per_worker: Vec::new(),
        cut_bytes: cut,
    }
}

/// Rank 0 after the jobs: summary, verification, record.
fn finish(r: &RunArgs, data: &DataSet, mut rec: Record) -> Result<()> {
    let m = &data.manifest;
    let path = results::path_in(&r.out);
    let payloads = results::read_all(&path, m)?;
    let all = verify::decode_all(&payloads);
    OutputFile::create("--out", &r.out.join("summary.csv"))?
        .write_and_commit(verify::summary_csv(m, &all).as_bytes())?;
    let mut failure = None;
    if r.check.verify {
        let verdict = verify_all(r, data, &all, &path);
        rec.common.verified = Some(verdict.is_ok());
        failure = verdict.err();
    }
    dps_harness::print_record(&rec, r.output.json)?;
    match failure {
        Some(e) => Err(e.context("verification failed")),
        None => Ok(()),
    }
}

/// The ground truth, then a serial run into a scratch file compared byte for byte.
fn verify_all(r: &RunArgs, data: &DataSet, all: &[Vec<crate::kernel::Match>], path: &Path) -> Result<()> {
    let truth = generate::read_truth(&data.dir)?;
    verify::check_truth(&data.manifest, all, &truth)?;
    let scratch = r.out.join(".serial-check.bin");
    let _ = std::fs::remove_file(&scratch);
    let compared = (|| {
        let mut file = ResultFile::open(&scratch, &data.manifest)?;
        serial(data, &mut file, 0)?;
        drop(file);
        let (a, b) = (std::fs::read(path)?, std::fs::read(&scratch)?);
        if a != b {
            let at = a.iter().zip(&b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
            bail!("{} differs from the serial run's file from byte {at}", path.display());
        }
        Ok(())
    })();
    let _ = std::fs::remove_file(&scratch);
    compared.context("comparing with the serial reference")
}

fn limit_file_size(bytes: u64) -> Result<()> {
    let limit = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
    // SAFETY: setrlimit reads the struct we pass by reference and nothing else.
    if unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &limit) } != 0 {
        bail!("cannot set the file-size limit: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// A write beyond a file-size limit (`ulimit -f`) must fail with EFBIG like a full disk,
/// not kill the process with SIGXFSZ before it can say which file.
fn ignore_file_size_signal() {
    // SAFETY: setting a signal's disposition to SIG_IGN is async-signal-safe and has no
    // memory effects; no handler function is installed.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}
