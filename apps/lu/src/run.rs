//! Command-line options and the runner: loads or generates the matrix, builds the graphs,
//! times the factorization, verifies it (HPL residual, pivots against dgetrf) and reports.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::{Parser, ValueEnum};
use dps::{median, Repeat, RuntimeArgs};
use serde_json::json;

use crate::graph::{Columns, Graphs, Pipelining};
use crate::kernel::{self, Source};

/// Which schedule runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Variant {
    /// Streams: panel k+1 starts while the updates of step k go on (DPS paper, Fig. 12).
    Stream,
    /// A full merge, then a split, at every step (the paper's comparison).
    MergeSplit,
    /// LAPACK dgetrf in this process (`--blas-threads` threads), without DPS or MPI.
    Serial,
}

/// `dps-lu`: P·A = L·U with partial pivoting, by blocks of columns.
#[derive(Parser, Debug)]
#[command(name = "dps-lu", version, about)]
pub struct Args {
    /// Matrix order (random matrix; ignored with --file).
    #[arg(long, default_value_t = 1024)]
    pub n: usize,
    /// Block (column panel) width r.
    #[arg(long, default_value_t = 128)]
    pub block: usize,
    /// Schedule.
    #[arg(long, value_enum, default_value = "stream")]
    pub variant: Variant,
    /// A Matrix Market file (`array` or `coordinate`, `real general`, square) to factor.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Mapping of the column collection (one thread per rank by default).
    #[arg(long, default_value = "all")]
    pub map: String,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub repeat: Repeat,
    /// OpenBLAS threads of the `serial` variant.
    #[arg(long, default_value_t = 1)]
    pub blas_threads: usize,
    /// Seed of the random matrix.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Check the HPL scaled residual (< 16) and the pivots against a serial dgetrf.
    #[arg(long)]
    pub verify: bool,
    /// Print one JSON object instead of the human-readable line.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub runtime: RuntimeArgs,
}

/// Reads or describes the matrix, checking the options first.
fn source(args: &Args) -> Result<(usize, Source)> {
    let (n, src) = match &args.file {
        Some(path) => {
            let (n, a) = dps_dense::market::read_square(path).map_err(anyhow::Error::msg)?;
            (n, Source::Given(Arc::new(a)))
        }
        None => (args.n, Source::Random(args.seed)),
    };
    if n == 0 {
        bail!("the matrix order must be at least 1");
    }
    if args.block == 0 || args.block > n {
        bail!("--block {} must be between 1 and n = {n}", args.block);
    }
    args.repeat.check()?;
    Ok((n, src))
}

/// Runs the program.
///
/// # Errors
/// Bad options or input (before any work), a singular matrix, or a failed check.
pub fn run(args: &Args) -> Result<()> {
    let (n, src) = source(args)?;
    let r = args.block;
    let gflop = 2.0 / 3.0 * (n as f64).powi(3) / 1e9;
    let mut record = json!({
        "app": "lu", "variant": args.variant.to_possible_value().map(|v| v.get_name().to_string()),
        "n": n, "block": r, "reps": args.repeat.reps,
    });
    if args.variant == Variant::Serial {
        dps_dense::blas::set_threads(args.blas_threads);
        let mut times = Vec::new();
        for _ in 0..args.repeat.runs() {
            let mut a = src.matrix(n);
            let t = Instant::now();
            kernel::serial(&mut a, n);
            times.push(t.elapsed().as_secs_f64());
        }
        let secs = median(&times[args.repeat.warmup..]);
        record["ranks"] = json!(1);
        record["threads"] = json!(args.blas_threads);
        record["seconds"] = json!(secs);
        record["gflops"] = json!(gflop / secs);
        record["verified"] = serde_json::Value::Null;
        print_record(args, &record);
        return Ok(());
    }
    let how = if args.variant == Variant::Stream { Pipelining::Stream } else { Pipelining::MergeSplit };
    let rt = args.runtime.start()?;
    let main = rt.collection("main", "0", |_| ())?;
    let threads = rt.threads_in(&args.map)?;
    let columns = rt.collection("columns", &args.map, |t| Columns::new(n, r, src.clone(), t, threads))?;
    let panels = rt.collection("panels", "all", |_| ())?;
    let graphs = Graphs::build(&rt, (n, r), &main, &columns, &panels, how)?;
    let mut outcome = Ok(());
    if rt.is_root() {
        let mut times = Vec::new();
        let mut info = 0;
        let mut ipiv = Vec::new();
        for rep in 0..args.repeat.runs() {
            if rep > 0 {
                rt.call(&graphs.reload, ())?;
            }
            let t = Instant::now();
            rt.call(&graphs.factor, ())?;
            (ipiv, info) = rt.call(&graphs.finish, ())?;
            times.push(t.elapsed().as_secs_f64());
        }
        let secs = median(&times[args.repeat.warmup..]);
        record["ranks"] = json!(rt.ranks());
        record["threads"] = json!(threads);
        record["seconds"] = json!(secs);
        record["gflops"] = json!(gflop / secs);
        record["verified"] = serde_json::Value::Null;
        if info > 0 {
            outcome = Err(anyhow::anyhow!("the matrix is singular: U({info},{info}) is exactly zero"));
        } else if args.verify {
            let lu = rt.call(&graphs.gather, ())?;
            let check = kernel::check(&src.matrix(n), n, &lu, &ipiv);
            record["residual"] = json!(check.residual);
            record["pivots_match"] = json!(check.pivots_match);
            record["verified"] = json!(check.residual < 16.0);
            if check.residual >= 16.0 {
                outcome =
                    Err(anyhow::anyhow!("verification failed: scaled residual {:.3} is not below 16", check.residual));
            }
        }
        print_record(args, &record);
    }
    rt.shutdown()?;
    outcome
}

fn print_record(args: &Args, r: &serde_json::Value) {
    if args.json {
        println!("{r}");
        return;
    }
    let check = match (r.get("residual"), r.get("pivots_match")) {
        (Some(res), Some(p)) => format!(
            ", residual {:.3}, pivots {}",
            res.as_f64().unwrap_or(f64::NAN),
            if p == true { "match dgetrf" } else { "differ from dgetrf" }
        ),
        _ => String::new(),
    };
    println!(
        "lu {} n={} block={} ranks={} threads={}: {:.3} s, {:.1} GFLOP/s{check}",
        r["variant"].as_str().unwrap_or("?"),
        r["n"],
        r["block"],
        r["ranks"],
        r["threads"],
        r["seconds"].as_f64().unwrap_or(0.0),
        r["gflops"].as_f64().unwrap_or(0.0)
    );
}
