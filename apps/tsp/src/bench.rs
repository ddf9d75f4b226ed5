//! `dps-tsp bench`: every instance of a directory (and optional random ones) solved with
//! `--verify` (variant `fast` unless `--extra` says otherwise) on 1 and on 2 ranks, each run
//! launched as this executable under `scripts/mpirun` inside a `timeout`, one after the
//! other in the same invocation (`--repeat` times, median kept); writes a markdown table
//! with nodes, seconds, proven optimality and the speedup of the last rank count over the
//! first. Times include the first tour (local search), which runs on rank 0 alone.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::tsplib::Instance;

/// The workspace's mpirun wrapper (Open MPI's environment for root and oversubscription).
const MPIRUN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/mpirun");

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
    /// Rank counts to run (the speedup column compares the last with the first).
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub ranks: Vec<usize>,
    /// Seconds after which one run is killed.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// Where to write the markdown table (also printed).
    #[arg(long, default_value = "results/tsp-bench.md")]
    pub out: PathBuf,
    /// Runs per instance and rank count; the table shows the median time.
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Extra options for every run (e.g. "--steps 64").
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

fn cases(b: &BenchArgs) -> Result<Vec<Case>> {
    let optima = known_optima(&b.dir);
    let mut cases = Vec::new();
    let entries = std::fs::read_dir(&b.dir).with_context(|| format!("cannot read {}", b.dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "tsp") {
            let inst = Instance::read(&path)?;
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
    cases.sort_by(|a, b| (a.n, &a.name).cmp(&(b.n, &b.name)));
    Ok(cases)
}

/// Runs one solve on `ranks` ranks and returns its JSON record.
fn run_one(ranks: usize, case: &Case, b: &BenchArgs) -> Result<Value> {
    let exe = std::env::current_exe().context("cannot locate the dps-tsp executable")?;
    let out = Command::new("timeout")
        .args(["-k", "5", &b.timeout.to_string(), MPIRUN, "-n", &ranks.to_string()])
        .arg(&exe)
        .args(&case.args)
        .args(["--json", "--verify"])
        .args(b.extra.split_whitespace())
        .output()
        .with_context(|| format!("cannot run {MPIRUN}"))?;
    if !out.status.success() {
        bail!(
            "{} on {ranks} ranks failed ({}): {}",
            case.name,
            out.status,
            String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rev().find(|l| l.starts_with('{')).context("no JSON line in the output")?;
    Ok(serde_json::from_str(line)?)
}

/// Runs the table and writes it.
///
/// # Errors
/// If an instance cannot be read, a run fails or the table cannot be written.
pub fn run(b: &BenchArgs) -> Result<()> {
    let mut table = String::from("| instance | n | known optimum | length | proven optimal | verified |");
    for r in &b.ranks {
        let _ = write!(table, " nodes ({r}r) | seconds ({r}r) |");
    }
    table.push_str(" speedup |\n|---|---|---|---|---|---|");
    table.push_str(&"---|---|".repeat(b.ranks.len()));
    table.push_str("---|\n");
    for case in cases(b)? {
        let mut runs = Vec::new();
        for &r in &b.ranks {
            let mut reps = Vec::new();
            for _ in 0..b.repeat.max(1) {
                let rec = run_one(r, &case, b)?;
                eprintln!("{} on {r} ranks: {rec}", case.name);
                reps.push(rec);
            }
            // The run with the median time stands for all of them.
            reps.sort_by(|a, b| a["seconds"].as_f64().unwrap_or(0.0).total_cmp(&b["seconds"].as_f64().unwrap_or(0.0)));
            runs.push(reps.swap_remove(reps.len() / 2));
        }
        let last = runs.last().context("--ranks is empty")?;
        let length = last["length"].as_i64().unwrap_or(-1);
        let proven = runs.iter().all(|r| r["optimal"] == true);
        let verified = runs.iter().all(|r| r["verified"] == true);
        let agree = runs.iter().all(|r| r["length"] == last["length"]);
        let known = case.optimum.map_or("-".to_string(), |o| o.to_string());
        let mark = match case.optimum {
            Some(o) if o != length => " (WRONG)",
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
            let _ = write!(table, " {} | {:.3} |", r["nodes"], r["seconds"].as_f64().unwrap_or(f64::NAN));
        }
        let secs = |r: &Value| r["seconds"].as_f64().unwrap_or(f64::NAN);
        let _ = writeln!(table, " {:.2} |", secs(&runs[0]) / secs(last));
    }
    print!("{table}");
    if let Some(dir) = b.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&b.out, &table).with_context(|| format!("cannot write {}", b.out.display()))?;
    eprintln!("wrote {}", b.out.display());
    Ok(())
}
