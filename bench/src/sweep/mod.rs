//! `dps-bench sweep`: runs the named experiments of `bench/experiments.toml` (each a grid of
//! parameters × rank counts, repeated, median kept), under `scripts/mpirun` locally or `srun`
//! inside a Slurm allocation, and writes per experiment `results/<name>/<timestamp>/`:
//! the raw JSON lines, a CSV, a markdown table beside the published numbers, and PNG plots.
//! A run that fails or times out is recorded with its error and the sweep goes on.

mod cluster;
mod config;
mod path;
mod plot;
mod record;
mod table;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use dps_harness::{BadInput, OutputFile};
use dps_launch::{Job, Launcher};
use serde::Serialize;

use config::{Experiment, Experiments, Point};
use indicatif::{ProgressBar, ProgressStyle};
use record::RunRecord;

/// Options of `dps-bench sweep`.
#[derive(Args, Debug)]
pub(crate) struct SweepArgs {
    /// Experiments to run (all if none).
    pub(crate) names: Vec<String>,
    /// The experiments file.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments.toml"))]
    pub(crate) file: PathBuf,
    /// `mpirun` or `srun` (default: srun inside a Slurm allocation, else mpirun).
    #[arg(long)]
    pub(crate) launcher: Option<String>,
    /// Where results go.
    #[arg(long, default_value = "results")]
    pub(crate) out: PathBuf,
    /// The quick version of each experiment (its `quick` table: smaller sizes, fewer runs),
    /// as the main job runs by default.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Runs per point (overrides each experiment's `repeat`; 1 to 1000).
    #[arg(long)]
    pub(crate) repeat: Option<usize>,
    /// Also write a report of these experiments (markdown with the tables and plots).
    #[arg(long)]
    pub(crate) report: Option<PathBuf>,
    /// List the experiments and exit.
    #[arg(long)]
    pub(crate) list: bool,
}

/// The serial reference time of each parameter point.
pub(crate) type References = Vec<(Point, Option<f64>)>;

/// One point of an experiment: parameters, ranks, and the run kept (median time).
#[derive(Debug, Serialize, Clone)]
pub(crate) struct Row {
    pub(crate) params: Vec<(String, String)>,
    pub(crate) ranks: usize,
    pub(crate) oversubscribed: bool,
    pub(crate) seconds: Option<f64>,
    /// The spread of the point's run times, (slowest − fastest) / median, if it ran twice
    /// or more.
    pub(crate) spread: Option<f64>,
    pub(crate) status: String,
    /// The run kept, if any succeeded.
    pub(crate) record: Option<RunRecord>,
}

/// The output files of one experiment, opened (as temporary files beside their paths)
/// before the sweep starts, so that a bad path fails at once and a failed sweep leaves no
/// partial file.
struct Outputs {
    runs: OutputFile,
    table: OutputFile,
    csv: OutputFile,
    time_png: OutputFile,
    speedup_png: OutputFile,
}

impl Outputs {
    fn create(dir: &Path) -> Result<Self> {
        let file = |name: &str| OutputFile::create("--out", &dir.join(name));
        Ok(Outputs {
            runs: file("runs.jsonl")?,
            table: file("table.md")?,
            csv: file("summary.csv")?,
            time_png: file("time.png")?,
            speedup_png: file("speedup.png")?,
        })
    }
}

/// Checks the options that do not need the experiments file.
fn check_args(args: &SweepArgs) -> Result<()> {
    if let Some(r) = args.repeat {
        if !(1..=config::MAX_REPEAT).contains(&r) {
            dps_harness::bad_input!("--repeat {r} must be between 1 and {}", config::MAX_REPEAT);
        }
    }
    Ok(())
}

/// Runs the sweep.
///
/// # Errors
/// Bad input (before any run): a bad experiments file or name, a missing app binary, an
/// output path that cannot be written. Afterwards, results that cannot be written. Failed
/// runs are not errors: they are recorded.
pub(crate) fn run(args: &SweepArgs) -> Result<()> {
    check_args(args)?;
    let file = Experiments::load(&args.file)?;
    if args.list {
        let list: String = file.experiment.iter().map(|e| format!("{:<24} {}\n", e.name, e.title)).collect();
        return crate::print_out(&list);
    }
    let selected = file.select(&args.names)?;
    let launcher = choose_launcher(args.launcher.as_deref())?;
    let bin_dir = std::env::current_exe()?.parent().context("no executable directory")?.to_path_buf();
    for e in &selected {
        if !bin_dir.join(&e.app).is_file() {
            dps_harness::bad_input!(
                "experiment {:?}: its app {} is not in {} (build it: cargo build --release --bins)",
                e.name,
                e.app,
                bin_dir.display()
            );
        }
    }
    let mut report = args.report.as_ref().map(|p| OutputFile::create("--report", p)).transpose()?;
    let stamp = timestamp();
    let mut planned = Vec::new();
    for e in selected {
        let e = if args.quick { e.quick() } else { e };
        let e = Experiment { repeat: args.repeat.unwrap_or(e.repeat), ..e };
        let dir = RunDir::create(&args.out.join(&e.name), &stamp).map_err(|why| {
            BadInput::new(format!("--out {}: cannot create a directory for {}: {why}", args.out.display(), e.name))
        })?;
        let outputs = Outputs::create(&dir.0)?;
        planned.push((e, dir, outputs));
    }
    let mut sections = Vec::new();
    let mut failed = Vec::new();
    for (e, run_dir, out) in planned {
        let dir = run_dir.0.clone();
        let started = Instant::now();
        let mut runs = out.runs;
        let mut raw = BufWriter::new(runs.file());
        let (rows, references) = run_experiment(&e, &launcher, &bin_dir, &mut raw)?;
        failed.extend(failures(&e, &rows, &references));
        raw.flush().with_context(|| format!("cannot write {}", dir.join("runs.jsonl").display()))?;
        drop(raw);
        runs.commit()?;
        let md = table::markdown(&e, &rows, &references);
        out.table.write_and_commit(md.as_bytes())?;
        out.csv.write_and_commit(table::csv(&rows)?.as_bytes())?;
        let plots = plot::draw(&e, &rows, &references, [out.time_png, out.speedup_png])?;
        crate::print_out(&format!("\n{md}\n"))?;
        sections.push(Section { dir, md, plots, seconds: started.elapsed().as_secs_f64() });
    }
    if let (Some(path), Some(out)) = (&args.report, report.take()) {
        out.write_and_commit(report_text(path, &sections).as_bytes())?;
        eprintln!("sweep: wrote {}", path.display());
    }
    if !failed.is_empty() {
        bail!("{} run(s) failed (recorded in their tables):\n{}", failed.len(), failed.join("\n"));
    }
    Ok(())
}

/// One line per failed point of `e` (a row or a serial reference): what ran, and why.
fn failures(e: &Experiment, rows: &[Row], references: &References) -> Vec<String> {
    let label = |params: &[(String, String)]| params.iter().map(|(k, v)| format!(" {k}={v}")).collect::<String>();
    let rows = rows
        .iter()
        .filter(|r| r.status != "ok" && !r.status.starts_with("skipped"))
        .map(|r| format!("  {}{} ranks={}: {}", e.name, label(&r.params), r.ranks, r.status));
    let references = references.iter().filter(|(_, seconds)| seconds.is_none()).map(|(point, _)| {
        let params: Vec<(String, String)> = point.iter().map(|(k, v)| (k.clone(), config::arg(v))).collect();
        format!("  {} reference{}: failed", e.name, label(&params))
    });
    rows.chain(references).collect()
}

/// An experiment's results directory, `<out>/<name>/<timestamp>`, made for this sweep alone
/// (`-2`, `-3`... after the timestamp when another sweep of the same second made it first),
/// and removed again if the sweep ends before anything was written into it.
struct RunDir(PathBuf);

impl RunDir {
    fn create(parent: &Path, stamp: &str) -> std::io::Result<RunDir> {
        std::fs::create_dir_all(parent)?;
        for n in 1.. {
            let dir = parent.join(if n == 1 { stamp.to_string() } else { format!("{stamp}-{n}") });
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(RunDir(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        unreachable!("some suffix is free")
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        // Only an empty directory goes: a committed file keeps it.
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// What the report shows of one experiment.
struct Section {
    /// Its results directory.
    dir: PathBuf,
    /// Its markdown table.
    md: String,
    plots: Vec<PathBuf>,
    /// How long its runs took, in seconds.
    seconds: f64,
}

fn report_text(path: &Path, sections: &[Section]) -> String {
    let base = path.parent().unwrap_or(Path::new("."));
    let mut text = format!("# DPS reproduction report ({})\n\n", timestamp());
    for s in sections {
        text += &s.md;
        for p in &s.plots {
            let rel = p.strip_prefix(base).unwrap_or(p);
            text += &format!("\n![{}]({})\n", p.file_stem().and_then(|s| s.to_str()).unwrap_or("plot"), rel.display());
        }
        text += &format!("\nRaw runs: `{}` ({:.0} s)\n\n", s.dir.join("runs.jsonl").display(), s.seconds);
    }
    text
}

/// The current time in UTC, as `20250131T235959Z`: results directories sort by it.
fn timestamp() -> String {
    jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ").to_string()
}

/// The launcher of the experiments' MPI runs: `--launcher`, or srun inside a Slurm
/// allocation and mpirun elsewhere.
fn choose_launcher(name: Option<&str>) -> Result<Launcher> {
    match name {
        Some("mpirun") => Ok(Launcher::Mpirun),
        Some("srun") => Ok(Launcher::Srun),
        Some(other) => dps_harness::bad_input!("--launcher must be mpirun or srun, not {other:?}"),
        None => Ok(Launcher::detect()),
    }
}

/// A bar of an experiment's points on standard error, the run going on as its message;
/// only on a terminal (a log gets the tables alone).
fn progress_bar(points: usize) -> ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template("[{pos}/{len}] {wide_msg} {elapsed}").expect("the template is valid");
    ProgressBar::new(points as u64).with_style(style)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Where an experiment's jobs run: the launcher of its MPI runs, and the emulated cluster
/// if it has one.
struct Placement<'a> {
    launcher: Launcher,
    cluster: Option<&'a Path>,
    /// The master has a node of its own (the cluster's `master`).
    master_node: bool,
}

impl Placement<'_> {
    /// The job of `app` on `ranks` ranks, launched by `launch`, on the cluster if any.
    fn job(&self, launch: Launcher, app: &Path, ranks: usize) -> Job {
        let job = Job::new(app).launcher(launch).ranks(ranks);
        match self.cluster {
            Some(dir) => job.env("DPS_CLUSTER", dir),
            None => job,
        }
    }

    /// The job of a row of P `workers`: with a master node, P + 1 ranks, rank 0 alone on
    /// n1 and the workers mapped to ranks 1..=P.
    fn row_job(&self, launch: Launcher, app: &Path, workers: usize) -> Job {
        if !self.master_node {
            return self.job(launch, app, workers);
        }
        self.job(launch, app, workers + 1).args(["--map".to_string(), config::Cluster::worker_map(workers)])
    }

    /// The serial reference's job: on n1, or with a master node on n2 (a worker's node).
    fn reference_job(&self, launch: Launcher, app: &Path) -> Job {
        let job = self.job(launch, app, 1);
        if self.master_node {
            job.launcher_options(["--host", "n2"])
        } else {
            job
        }
    }
}

/// Runs every point of `e` (on its emulated cluster, stood up for it, if it has one);
/// returns its rows and the reference time of each parameter point.
fn run_experiment(
    e: &Experiment,
    launcher: &Launcher,
    bin_dir: &Path,
    raw: &mut impl Write,
) -> Result<(Vec<Row>, References)> {
    let Some(spec) = &e.cluster else {
        return run_points(e, &Placement { launcher: *launcher, cluster: None, master_node: false }, bin_dir, raw);
    };
    if *launcher != Launcher::Mpirun {
        return Ok(not_run(e, "failed: an emulated cluster's runs are launched with mpirun, not srun"));
    }
    let nodes = e.ranks.iter().copied().max().unwrap_or(1);
    match cluster::Up::stand_up(spec, nodes, cores()) {
        Ok(up) => {
            let placement =
                Placement { launcher: *launcher, cluster: Some(up.dir()), master_node: spec.master.is_some() };
            run_points(e, &placement, bin_dir, raw)
        }
        Err(cluster::NotUp::Unavailable(why)) => {
            eprintln!("sweep: {}: skipped, no emulated cluster on this machine: {why}", e.name);
            Ok(not_run(e, &format!("skipped: no emulated cluster here ({why})")))
        }
        Err(cluster::NotUp::Failed(why)) => Ok(not_run(e, &format!("failed: {why}"))),
    }
}

/// The rows of an experiment none of whose points ran, each with `status`.
fn not_run(e: &Experiment, status: &str) -> (Vec<Row>, References) {
    let rows = config::grid(&e.params)
        .iter()
        .flat_map(|point| {
            let params: Vec<(String, String)> = point.iter().map(|(k, v)| (k.clone(), config::arg(v))).collect();
            e.ranks.iter().map(move |&ranks| Row {
                params: params.clone(),
                ranks,
                oversubscribed: false,
                seconds: None,
                spread: None,
                status: status.to_string(),
                record: None,
            })
        })
        .collect();
    (rows, Vec::new())
}

/// Runs every point of `e` where `placement` says.
fn run_points(
    e: &Experiment,
    placement: &Placement,
    bin_dir: &Path,
    raw: &mut impl Write,
) -> Result<(Vec<Row>, References)> {
    let app = bin_dir.join(&e.app);
    let points = config::grid(&e.params);
    let progress = progress_bar(points.len() * (e.ranks.len() + usize::from(e.reference.is_some())));
    let mpi = e.launcher == "mpi";
    let (mut rows, mut references) = (Vec::new(), Vec::new());
    for point in &points {
        let point_args: Vec<String> = config::command_line(point);
        if let Some(reference) = &e.reference {
            let shared: Point = point.iter().filter(|(k, _)| !e.reference_ignores.contains(k)).cloned().collect();
            let known = references
                .iter()
                .find(|(p, _)| config::same_reference(p, point, &e.reference_ignores))
                .map(|(_, s)| *s);
            let seconds = match known {
                Some(s) => s,
                None => {
                    let args: Vec<String> = reference.iter().cloned().chain(config::command_line(&shared)).collect();
                    // On a cluster, the reference runs on node n1 (mpirun's first host; n2
                    // beside a master's node), at the same CPU share as the ranks; elsewhere,
                    // as a plain process.
                    let launch = if placement.cluster.is_some() && mpi { placement.launcher } else { Launcher::None };
                    let job = placement.reference_job(launch, &app).args(&args);
                    measure(e, job, &shared, 1, Run::Reference, raw, &progress)?.seconds
                }
            };
            progress.inc(1);
            references.push((point.clone(), seconds));
        }
        for &ranks in &e.ranks {
            let args: Vec<String> = e.args.iter().cloned().chain(point_args.clone()).collect();
            let launch = if mpi { placement.launcher } else { Launcher::None };
            let job = placement.row_job(launch, &app, ranks).args(&args);
            let mut row = measure(e, job, point, ranks, Run::Row, raw, &progress)?;
            // On a cluster, the nodes' shares together fit the machine's cores.
            row.oversubscribed =
                placement.launcher == Launcher::Mpirun && mpi && placement.cluster.is_none() && ranks > cores();
            progress.inc(1);
            rows.push(row);
        }
    }
    progress.finish_and_clear();
    Ok((rows, references))
}

/// The line of a failed run's standard error that is its own: the last that the app
/// (`dps-lu: ...`) or the runtime (`dps: rank 1: ...`) printed, else the first that is not
/// blank or a rule: mpirun's banner about the exit code comes after the app's words.
fn own_error_line<'a>(stderr: &'a str, app: &str) -> &'a str {
    let own = format!("{app}:");
    let lines = || stderr.lines().map(str::trim).filter(|l| !l.is_empty());
    lines()
        .rev()
        .find(|l| l.starts_with(&own) || l.starts_with("dps:"))
        .or_else(|| lines().find(|l| !l.chars().all(|c| c == '-')))
        .unwrap_or("no output")
}

/// Why a simulated run whose clock reached the end of its range makes no row.
const SATURATED: &str = "the simulated clock reached the end of its range (584 years): no prediction";

/// What a measured run is for: a row of the table (its record must have the experiment's
/// columns), or the serial reference (only its time is used).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Run {
    Row,
    Reference,
}

/// Runs `job` (one point) `e.repeat` times; keeps the run with the median time.
fn measure(
    e: &Experiment,
    job: Job,
    point: &Point,
    ranks: usize,
    kind: Run,
    raw: &mut impl Write,
    progress: &ProgressBar,
) -> Result<Row> {
    let params: Vec<(String, String)> = point.iter().map(|(k, v)| (k.clone(), config::arg(v))).collect();
    let mut runs: Vec<RunRecord> = Vec::new();
    let mut status = "ok".to_string();
    let label = params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ");
    for rep in 0..e.repeat {
        let reference = if kind == Run::Reference { "reference " } else { "" };
        let run = format!("{reference}{label} ranks={ranks} run {}/{}", rep + 1, e.repeat);
        progress.set_message(format!("{} {run}", e.name));
        let job = job.clone().arg("--json").timeout_s(e.timeout_s);
        let started = Instant::now();
        let out = job.output()?;
        let stdout = &out.stdout;
        let record = stdout
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(l).ok());
        match (out.status.code(), record) {
            (Some(0), Some(object)) => {
                let columns = if kind == Run::Row { e.columns.as_slice() } else { &[] };
                let r = RunRecord::read(e, &run, object, started.elapsed().as_secs_f64(), columns)?;
                writeln!(raw, "{}", serde_json::json!({"params": params, "ranks": ranks, "record": r}))?;
                if r.clock_saturated() {
                    // Its time is where the clock stopped: a row must not show it as a prediction.
                    status = format!("failed: {SATURATED}");
                    break;
                }
                runs.push(r);
            }
            (_, _) => {
                let why = if out.timed_out() {
                    format!("timed out after {} s", e.timeout_s)
                } else {
                    own_error_line(&out.stderr, &e.app).to_string()
                };
                status = format!("failed: {why}");
                writeln!(raw, "{}", serde_json::json!({"params": params, "ranks": ranks, "error": status}))?;
                break;
            }
        }
    }
    runs.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    let spread = match (runs.first(), runs.last()) {
        (Some(fastest), Some(slowest)) if runs.len() > 1 => {
            Some((slowest.seconds - fastest.seconds) / runs[runs.len() / 2].seconds)
        }
        _ => None,
    };
    let median = (!runs.is_empty()).then(|| runs.swap_remove(runs.len() / 2));
    Ok(Row {
        params,
        ranks,
        oversubscribed: false,
        seconds: median.as_ref().map(|r| r.seconds),
        spread,
        status: if median.is_some() {
            status
        } else if status == "ok" {
            "failed: no JSON output".into()
        } else {
            status
        },
        record: median,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_runs_own_line_is_found_before_mpiruns_banner() {
        let under_mpirun = "dps-lu: the argument '--n <N>' cannot be used with '--file <FILE>'\n\
            ------------------------------------------------\n\
            Primary job  terminated normally, but 1 process returned\n\
            ------------------------------------------------\n  Exit code:    2\n\
            ------------------------------------------------\n";
        assert_eq!(
            own_error_line(under_mpirun, "dps-lu"),
            "dps-lu: the argument '--n <N>' cannot be used with '--file <FILE>'"
        );
        let panicked = "dps: rank 1: operation 'f' on thread 'w[0]' panicked: boom\n---------\nMPI_ABORT was invoked\n";
        assert_eq!(own_error_line(panicked, "dps-lu"), "dps: rank 1: operation 'f' on thread 'w[0]' panicked: boom");
        assert_eq!(own_error_line("-----\nsomething else\n-----\n", "dps-lu"), "something else");
        assert_eq!(own_error_line("\n  \n", "dps-lu"), "no output");
    }

    /// A run whose record says the simulated clock saturated is a failed row, not a time.
    #[test]
    fn a_run_past_the_simulated_clock_is_a_failed_row() {
        let e: Experiment = toml::from_str("name = \"x\"\ntitle = \"x\"\napp = \"dps-x\"").unwrap();
        let run = |record: &str| {
            let job = Job::new("sh").launcher(Launcher::None).args(["-c", &format!("echo '{record}'")]);
            let mut raw = Vec::new();
            let row = measure(&e, job, &Vec::new(), 1, Run::Row, &mut raw, &ProgressBar::hidden()).unwrap();
            (row, String::from_utf8(raw).unwrap())
        };
        let (row, raw) = run(r#"{"seconds": 18446744073.709553, "sim_clock_saturated": true}"#);
        assert_eq!((row.seconds, row.status.as_str()), (None, format!("failed: {SATURATED}").as_str()));
        assert!(raw.contains("\"sim_clock_saturated\":true"), "the record is kept as printed: {raw}");
        assert_eq!(failures(&e, &[row], &Vec::new()).len(), 1, "the sweep lists it and exits 1");
        let (row, _) = run(r#"{"seconds": 0.5, "sim_clock_saturated": false}"#);
        assert_eq!((row.seconds, row.status.as_str()), (Some(0.5), "ok"));
    }

    #[test]
    fn a_run_directory_is_unique_and_goes_when_nothing_was_written() {
        let top = tempfile::tempdir().unwrap();
        let (a, b) = (RunDir::create(top.path(), "T").unwrap(), RunDir::create(top.path(), "T").unwrap());
        assert_eq!((a.0.file_name().unwrap(), b.0.file_name().unwrap()), ("T".as_ref(), "T-2".as_ref()));
        std::fs::write(b.0.join("table.md"), "x").unwrap();
        let (a_path, b_path) = (a.0.clone(), b.0.clone());
        drop((a, b));
        assert!(!a_path.exists(), "the empty directory stays");
        assert!(b_path.join("table.md").exists(), "a written directory is removed");
    }
}
