//! `dps-tsp bench`: every instance of a directory (and optional random ones) solved with
//! `--verify` (variant `fast` unless `--extra` says otherwise) on 1 and on 2 ranks, each run
//! launched as this executable under `scripts/mpirun` inside a `timeout`
//! ([`dps_launch`]), one after the
//! other in the same invocation (`--repeat` times, median kept); writes a markdown table
//! with nodes, seconds, proven optimality and the speedup of the last rank count over the
//! first. Times include the first tour (local search), which runs on rank 0 alone.
//!
//! Everything is checked before the first run is launched: the options, the output path,
//! every instance, and every run's arguments (including `--extra`) parsed as a run would
//! parse them. A run that fails anyway is reported with its own error message.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Parser;
use dps_harness::{BadInput, OutputFile};
use dps_launch::Job;
use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::{check_options, run_bytes, Cli, Variant};
use crate::kernel::instance::MAX_CITIES;
use crate::record::Record;
use crate::tsplib;

/// Most ranks one run of the bench may have.
pub const MAX_RANKS: usize = 64;

/// Options of `dps-tsp bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Directory of `.tsp` files; known optima are read from the table in its README.md.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/data"))]
    pub dir: PathBuf,
    /// Also random instances of these sizes (comma separated).
    #[arg(long, value_delimiter = ',')]
    pub random: Vec<usize>,
    /// Seeds of the random instances.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub seeds: Vec<u64>,
    /// Rank counts to run, 1 to 64 (the speedup column compares the last with the first).
    #[arg(long, value_delimiter = ',', default_value = "1,2", allow_negative_numbers = true)]
    pub ranks: Vec<usize>,
    /// Seconds after which one run is killed (at least 1).
    #[arg(long, default_value_t = 300, allow_negative_numbers = true)]
    pub timeout: u64,
    /// Where to write the markdown table (also printed).
    #[arg(long, default_value = "results/tsp-bench.md")]
    pub out: PathBuf,
    /// Runs per instance and rank count (at least 1); the table shows the median time.
    #[arg(long, default_value_t = 3, allow_negative_numbers = true)]
    pub repeat: usize,
    /// Extra options for every run (e.g. "--steps 64"); runs write no files, so not
    /// --tour-out, --plot or --trace.
    #[arg(long, allow_hyphen_values = true, default_value = "")]
    pub extra: String,
}

/// Known optima from a README table `| name | cities | type | optimum |`.
fn known_optima(dir: &Path) -> Vec<(String, i64)> {
    let text = std::fs::read_to_string(dir.join("README.md")).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).filter(|c| !c.is_empty()).collect();
            let opt = cells.last()?.parse().ok()?;
            Some((cells.first()?.to_string(), opt))
        })
        .collect()
}

/// One instance: its name, size, the arguments that select it and its known optimum.
struct Case {
    name: String,
    n: usize,
    args: Vec<String>,
    optimum: Option<i64>,
}

/// Checks the bench's own options.
fn check(b: &BenchArgs) -> Result<()> {
    if b.ranks.is_empty() {
        dps_harness::bad_input!("--ranks: give at least one rank count");
    }
    if let Some(r) = b.ranks.iter().find(|&&r| !(1..=MAX_RANKS).contains(&r)) {
        dps_harness::bad_input!("--ranks {r}: each rank count must be 1 to {MAX_RANKS}");
    }
    if b.repeat == 0 {
        dps_harness::bad_input!("--repeat 0: give at least 1 run per instance");
    }
    if b.timeout == 0 {
        dps_harness::bad_input!("--timeout 0: give at least 1 second (0 would turn the timeout off)");
    }
    if b.seeds.is_empty() && !b.random.is_empty() {
        dps_harness::bad_input!("--seeds: give at least one seed for --random");
    }
    let most_ranks = b.ranks.iter().copied().max().unwrap_or(1);
    for &n in &b.random {
        if !(3..=MAX_CITIES).contains(&n) {
            dps_harness::bad_input!("--random {n}: give 3 to {MAX_CITIES} cities");
        }
        // The runs are launched one at a time, on this node: the largest needs this much.
        let (rank0, other) = run_bytes(n, Variant::Fast, 1);
        let need = rank0.saturating_add(other.saturating_mul(most_ranks as u64 - 1));
        dps_harness::check_memory(&format!("--random {n} on {most_ranks} ranks"), need, need)?;
    }
    let extra: Vec<&str> = b.extra.split_whitespace().collect();
    if let Some(o) = extra.iter().find(|o| ["--tour-out", "--plot", "--trace"].iter().any(|w| o.starts_with(w))) {
        dps_harness::bad_input!("--extra \"{}\": {o}: the bench's runs write no files", b.extra);
    }
    Ok(())
}

/// Checks a run's arguments as the run itself would parse and check them.
fn check_run(args: &[String], extra: &str) -> Result<()> {
    let argv = std::iter::once("dps-tsp")
        .chain(args.iter().map(String::as_str))
        .chain(["--json", "--verify"])
        .chain(extra.split_whitespace());
    let refuse = |why: String| match extra.trim() {
        "" => BadInput::new(format!("the run \"{}\": {why}", args.join(" "))),
        _ => BadInput::new(format!("--extra \"{extra}\": {why}")),
    };
    let cli = Cli::try_parse_from(argv).map_err(|e| {
        let text = e.render().to_string();
        refuse(text.lines().next().unwrap_or_default().trim_start_matches("error: ").to_string())
    })?;
    if cli.command.is_some() {
        return Err(refuse("a run takes no subcommand".into()).into());
    }
    if cli.solve.standard.sim.simulate.is_some() {
        return Err(refuse("the bench measures real runs: a run takes no --simulate".into()).into());
    }
    check_options(&cli.solve).map_err(|e| refuse(format!("{e:#}")))?;
    Ok(())
}

fn cases(b: &BenchArgs) -> Result<Vec<Case>> {
    let optima = known_optima(&b.dir);
    let mut cases = Vec::new();
    let entries = std::fs::read_dir(&b.dir).map_err(|e| BadInput::new(format!("--dir {}: {e}", b.dir.display())))?;
    for entry in entries {
        let path = entry.map_err(|e| BadInput::new(format!("--dir {}: {e}", b.dir.display())))?.path();
        if path.extension().is_some_and(|e| e == "tsp") {
            let inst = tsplib::read(&path).map_err(|e| BadInput::new(e.to_string()))?;
            let optimum = optima.iter().find(|(n, _)| *n == inst.name).map(|o| o.1);
            cases.push(Case { name: inst.name, n: inst.n, args: vec![path.display().to_string()], optimum });
        }
    }
    for &n in &b.random {
        for &seed in &b.seeds {
            let args = vec!["--random".into(), n.to_string(), "--seed".into(), seed.to_string()];
            cases.push(Case { name: format!("random{n} seed {seed}"), n, args, optimum: None });
        }
    }
    if cases.is_empty() {
        dps_harness::bad_input!("--dir {} has no .tsp files and no --random sizes are given", b.dir.display());
    }
    for case in &cases {
        check_run(&case.args, &b.extra)?;
    }
    cases.sort_by(|a, b| (a.n, &a.name).cmp(&(b.n, &b.name)));
    Ok(cases)
}

/// The lines of a failed run's standard error that are the program's own messages (not
/// mpirun's banner about the failed process); if there is none, the last line with words
/// in it (not a row of dashes or stars).
fn child_error(stderr: &str) -> String {
    let own: Vec<&str> =
        stderr.lines().filter(|l| l.starts_with("dps-tsp:") || l.starts_with("error:")).map(str::trim).collect();
    if own.is_empty() {
        let words = |l: &&str| l.chars().any(char::is_alphanumeric);
        stderr.lines().rev().find(words).unwrap_or("no message").trim().to_string()
    } else {
        own.join("; ")
    }
}

/// Runs one solve on `ranks` ranks and returns its JSON record.
fn run_one(ranks: usize, case: &Case, b: &BenchArgs) -> Result<Record> {
    let exe = std::env::current_exe().context("cannot locate the dps-tsp executable")?;
    let out = Job::new(exe)
        .ranks(ranks)
        .args(&case.args)
        .args(["--json", "--verify"])
        .args(b.extra.split_whitespace())
        .timeout_s(b.timeout)
        .output()?;
    if !out.status.success() {
        let what = format!("{} on {ranks} ranks", case.name);
        if out.timed_out() {
            bail!("{what} timed out after {} s (--timeout)", b.timeout);
        }
        match out.status.code() {
            Some(2) => return Err(BadInput::new(format!("{what}: {}", child_error(&out.stderr))).into()),
            _ => bail!("{what} failed ({}): {}", out.status, child_error(&out.stderr)),
        }
    }
    let what = || format!("{} on {ranks} ranks", case.name);
    let line =
        out.stdout.lines().rev().find(|l| l.starts_with('{')).with_context(|| format!("{}: no JSON line", what()))?;
    serde_json::from_str(line).with_context(|| format!("{}: its JSON record", what()))
}

/// Runs the table and writes it.
///
/// # Errors
/// [`BadInput`] for unusable options, an unreadable instance or output path (before any
/// run); other errors if a run fails or the table cannot be written.
pub fn run(b: &BenchArgs) -> Result<()> {
    check(b)?;
    if let Some(dir) = b.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            BadInput::new(format!("--out {}: cannot create the directory {}: {e}", b.out.display(), dir.display()))
        })?;
    }
    let out = OutputFile::create("--out", &b.out)?;
    let cases = cases(b)?;
    if dps_harness::launch_rank().is_some() {
        // Open MPI refuses to start mpirun from a process mpirun started.
        dps_harness::bad_input!("bench launches its own mpirun jobs: run `dps-tsp bench` directly, not under mpirun");
    }
    let mut table = String::from("| instance | n | known optimum | length | proven optimal | verified |");
    for r in &b.ranks {
        let _ = write!(table, " nodes ({r}r) | seconds ({r}r) |");
    }
    table.push_str(" speedup |\n|---|---|---|---|---|---|");
    table.push_str(&"---|---|".repeat(b.ranks.len()));
    table.push_str("---|\n");
    let progress = progress_bar((cases.len() * b.ranks.len() * b.repeat) as u64);
    for case in cases {
        let mut runs = Vec::new();
        for &r in &b.ranks {
            let mut reps = Vec::new();
            for rep in 1..=b.repeat {
                progress.set_message(format!("{} on {r} ranks, run {rep} of {}", case.name, b.repeat));
                let rec = run_one(r, &case, b)?;
                progress.println(format!("{} on {r} ranks: {}", case.name, serde_json::to_string(&rec)?));
                progress.inc(1);
                reps.push(rec);
            }
            // The run with the median time stands for all of them.
            reps.sort_by(|a, b| a.common.seconds.total_cmp(&b.common.seconds));
            runs.push(reps.swap_remove(reps.len() / 2));
        }
        let last = runs.last().context("--ranks is empty")?;
        let proven = runs.iter().all(|r| r.optimal);
        let verified = runs.iter().all(|r| r.common.verified == Some(true));
        let agree = runs.iter().all(|r| r.length == last.length);
        let known = case.optimum.map_or("-".to_string(), |o| o.to_string());
        // No tour found (before a time limit) is shown as "-", and is wrong if the optimum is known.
        let length = last.length.map_or("-".to_string(), |l| l.to_string());
        let mark = match case.optimum {
            Some(o) if Some(o) != last.length => " (WRONG)",
            _ if !agree => " (runs disagree)",
            _ => "",
        };
        let yes = |b: bool| if b { "yes" } else { "no" };
        let _ = write!(
            table,
            "| {} | {} | {known} | {length}{mark} | {} | {} |",
            case.name,
            case.n,
            yes(proven),
            yes(verified)
        );
        for r in &runs {
            let _ = write!(table, " {} | {:.3} |", r.nodes, r.common.seconds);
        }
        let _ = writeln!(table, " {:.2} |", runs[0].common.seconds / last.common.seconds);
    }
    progress.finish_and_clear();
    print!("{table}");
    out.write_and_commit(table.as_bytes())?;
    eprintln!("wrote {}", b.out.display());
    Ok(())
}

/// A bar of the runs done on standard error, with each run's record above it; on a
/// terminal only (a log gets the table alone).
fn progress_bar(runs: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template("[{pos}/{len}] {wide_msg} {elapsed}").expect("the template is valid");
    ProgressBar::new(runs).with_style(style)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_run_shows_its_own_message_not_mpiruns_banner() {
        let stderr = "dps-tsp: x.tsp: line 3: DIMENSION 0: a tour needs at least 3 cities\n\
                      --------------------------------------------------------------------------\n\
                      prterun detected that one or more processes exited with non-zero status,\n\
                      --------------------------------------------------------------------------\n";
        assert_eq!(child_error(stderr), "dps-tsp: x.tsp: line 3: DIMENSION 0: a tour needs at least 3 cities");
        assert_eq!(child_error("something\nelse\n\n"), "else");
        let recursive = "\n*****\n\nmpirun does not support recursive calls\n\n*****\n";
        assert_eq!(child_error(recursive), "mpirun does not support recursive calls");
        assert_eq!(child_error(""), "no message");
    }

    #[test]
    fn forwarded_options_are_checked_as_the_run_checks_them() {
        let args = vec!["--random".to_string(), "10".to_string()];
        check_run(&args, "--steps 64").unwrap();
        let e = check_run(&args, "--bogus").unwrap_err();
        assert!(e.is::<BadInput>() && e.to_string().contains("--bogus"), "{e}");
        let e = check_run(&args, "--steps 0").unwrap_err();
        assert!(e.to_string().contains("--steps 0"), "{e}");
        assert!(check_run(&args, "--json").is_err(), "--json twice");
    }
}
