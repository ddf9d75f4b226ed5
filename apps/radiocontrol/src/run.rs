//! The runner: executes a checked [`Plan`]: `generate` writes a data set, `run` correlates
//! one (the farm on DPS, or `--serial`) and verifies it, `supervise` runs the watchdog and
//! `bench-kernel` times the kernels.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use dps_harness::simulate::Support;
use dps_harness::{bad_input, Common, OutputFile};

use crate::cli::bench_kernel::BenchKernelPlan;
use crate::cli::generate::GeneratePlan;
use crate::cli::run::RunPlan;
use crate::cli::{Args, Command, Plan};
use crate::data::{read_truth, DataSet, MINUTES};
use crate::graph::{Farm, Start};
use crate::job::serial;
use crate::kernel::Match;
use crate::record::{Record, THESIS_SERIAL_HOURS};
use crate::results::{self, ResultFile};
use crate::speed::PAPER_DAY_CORRELATIONS;
use crate::{generate, speed, supervise, verify};

/// What the simulator supports of dps-radiocontrol: direct execution only.
const SIMULATION: Support = Support {
    program: "dps-radiocontrol",
    modes: &[],
    why_not: "its correlation kernel is not charged from the platform file's tables (they have none for it)",
    kernels: &[],
};

/// The program: checks the options into a plan, then executes it.
///
/// # Errors
/// Bad input (exit 2, before any work) or a failed run.
pub fn run(args: &Args) -> Result<()> {
    if let Command::Run(_) = args.command {
        // Before the checks, which write the output directory's files.
        ignore_file_size_signal();
    }
    execute(&args.plan()?)
}

/// Executes a plan.
///
/// # Errors
/// A failed run, or a bad input found only once the run started (a simulation asked to
/// resume a result file).
pub fn execute(plan: &Plan) -> Result<()> {
    match plan {
        Plan::Generate(g) => write_data_set(g),
        Plan::Run(r) => run_correlation(r),
        Plan::Supervise(s) => supervise::run(s),
        Plan::BenchKernel(b) => bench_kernel(b),
    }
}

/// `generate`: writes the data set and says what it wrote.
fn write_data_set(g: &GeneratePlan) -> Result<()> {
    let t = Instant::now();
    generate::generate(&g.dir, &g.manifest)?;
    let m = &g.manifest;
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

/// `bench-kernel`: times the kernels and prints the figures.
fn bench_kernel(b: &BenchKernelPlan) -> Result<()> {
    let s = speed::measure(b.watches, b.minutes, b.reps, b.path);
    if b.json {
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

/// `run`: the serial reference in this process, or the farm on the DPS runtime (rank 0
/// keeps the result file and reports).
fn run_correlation(r: &RunPlan) -> Result<()> {
    let data = &r.data;
    if r.serial {
        let mut file = ResultFile::open(&results::path_in(&r.out), &data.manifest)?;
        let (first, cut) = (file.done, file.cut);
        let t = Instant::now();
        serial(data, &mut file, r.throttle_ms)?;
        let seconds = t.elapsed().as_secs_f64();
        let mut rec = record(data, "serial", 1, seconds, first, cut);
        rec.per_worker = vec![rec.jobs_run];
        return finish(r, rec);
    }
    let rt = r.standard.sim.start(&r.standard.runtime, &SIMULATION)?;
    let farm = Farm::build(&rt, data, r.pipeline_depth, r.throttle_ms)?;
    let mut outcome = Ok(());
    if rt.is_root() {
        if let Some(bytes) = r.file_size_limit {
            limit_file_size(bytes)?;
        }
        outcome = (|| {
            let file = ResultFile::open(&results::path_in(&r.out), &data.manifest)?;
            let (first, cut) = (file.done, file.cut);
            if let (Some(p), true) = (r.standard.simulated_ranks(), first > 0) {
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
            let mut rec = record(data, "farm", rt.ranks(), seconds, first, cut).bound_by(&rt);
            rec.read_seconds = summary.read_s;
            rec.compute_seconds = summary.compute_s;
            rec.per_worker = summary.per_worker;
            finish(r, rec)
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
fn finish(r: &RunPlan, mut rec: Record) -> Result<()> {
    let (data, m) = (&r.data, &r.data.manifest);
    let path = results::path_in(&r.out);
    let payloads = results::read_all(&path, m)?;
    let all = verify::decode_all(&payloads);
    OutputFile::create("--out", &r.out.join("summary.csv"))?
        .write_and_commit(verify::summary_csv(m, &all).as_bytes())?;
    let mut failure = None;
    if r.standard.verify() {
        let verdict = verify_all(r, data, &all, &path);
        rec.common.verified = Some(verdict.is_ok());
        failure = verdict.err();
    }
    dps_harness::print_record(&rec, r.standard.json())?;
    match failure {
        Some(e) => Err(e.context("verification failed")),
        None => Ok(()),
    }
}

/// The ground truth, then a serial run into a scratch file compared byte for byte.
fn verify_all(r: &RunPlan, data: &DataSet, all: &[Vec<Match>], path: &Path) -> Result<()> {
    let truth = read_truth(data)?;
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
