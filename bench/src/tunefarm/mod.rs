//! `dps-bench tune-farm --item-us T --payload BYTES [--platform FILE] [--ranks P]`: proposes
//! a farm's worker count `n̂` and grain `k̂` (items per token) from the P3L cost model
//! (`dps_model::p3l`) and the platform file, then measures a synthetic DPS farm ([`graph`])
//! over a small grid of `(n, k)` on the ranks it runs on (repetitions in turns over the grid),
//! simulates the same farm on as many virtual ranks ([`simulated`]: PDEXEC by default, exact
//! and deterministic for its busy loop), and prints the model's, the simulator's and the real
//! service time per item side by side, and the measured best `(n*, k*)` against `(n̂, k̂)` and
//! the simulator's best.
//!
//! The model's parameters (spec §5.3): `g∞` and `N_{1/2}` from the raw MPI link's fit at the
//! item's size, `l` (the BSP barrier, which an asynchronous DPS farm does not have) as the
//! runtime's own cost per token: the DPS link's time minus MPI's at that size. Without
//! `--te-us` (a batch job: no arrival rate) the target `T_e` is the best service time the
//! machine's processors allow, plus `1/prec`: the plan is then the fewest workers, and the
//! smallest grain, within 10 % (prec = 10) of the best.

mod graph;
mod report;
mod simulated;

use std::path::PathBuf;

use anyhow::{anyhow, Result};
use clap::Args;
use dps_harness::simulate::Mode;
use dps_launch::Launcher;
use dps_model::p3l::{self, Bsp, Farm};
use dps_model::platform::{Carrier, Machine, PathKind, Platform};
use serde::{Deserialize, Serialize};

/// Options of the launcher (`tune-farm`).
#[derive(Args, Debug)]
pub(crate) struct Launch {
    /// The farm's measured compute time per item, µs.
    #[arg(long)]
    pub(crate) item_us: f64,
    /// The size of an item (and of its result), bytes.
    #[arg(long)]
    pub(crate) payload: u64,
    /// The platform file (default: $DPS_PLATFORM, else platform.toml).
    #[arg(long)]
    pub(crate) platform: Option<PathBuf>,
    /// Ranks to run the farm on.
    #[arg(long, default_value_t = 2)]
    pub(crate) ranks: usize,
    /// The stream's inter-arrival time, µs (default: a batch job, see the module docs).
    #[arg(long)]
    pub(crate) te_us: Option<f64>,
    /// The model's precision option `prec` (Case B: the emitter within 1 + 1/prec of its bound).
    #[arg(long, default_value_t = 10.0)]
    pub(crate) prec: f64,
    /// The largest grain the measured grid tries (powers of 2 up to it, and k̂).
    #[arg(long, default_value_t = 64)]
    pub(crate) max_grain: u64,
    /// About this many seconds per measured call (its item count follows from the model).
    #[arg(long, default_value_t = 0.2)]
    pub(crate) seconds: f64,
    /// Measured calls per grid point (the median is kept).
    #[arg(long, default_value_t = 3)]
    pub(crate) reps: usize,
    /// How the simulator column is computed: `pdexec` charges each busy loop its exact
    /// length (deterministic), `de` runs it and charges every operation's CPU time.
    #[arg(long, value_enum, value_name = "pdexec|de", default_value = "pdexec")]
    pub(crate) sim_mode: Mode,
    /// Cores of each virtual rank (operations it runs at once); default: this machine's
    /// CPUs shared among the ranks, at least 1 (as every app's `--sim-cores`).
    #[arg(long, value_name = "N")]
    pub(crate) sim_cores: Option<usize>,
}

/// The worker's arguments: the points to measure.
#[derive(Args, Clone, Debug)]
pub(crate) struct WorkerArgs {
    /// Busy time per item, ns.
    #[arg(long)]
    item_ns: u64,
    /// Bytes per item.
    #[arg(long)]
    payload: u64,
    /// Calls per point.
    #[arg(long)]
    reps: usize,
    /// Points as n:k:items, comma-separated.
    #[arg(long, value_delimiter = ',')]
    points: Vec<String>,
}

/// One measured point, as the worker prints it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Measured {
    n: u64,
    k: u64,
    items: u64,
    /// Median seconds of a call.
    seconds: f64,
    /// Items run by each worker, summed over the measured calls.
    per_worker: Vec<u64>,
}

/// Limits of the options.
const MAX_ITEM_US: f64 = 1e6;
const MAX_PAYLOAD: u64 = 64 << 20;
const MAX_RANKS: usize = 1024;
const MAX_GRAIN: u64 = 1 << 12;

/// The model's inputs, from the platform file and the options.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Inputs {
    /// Which link of the platform file: `intra-node` or `inter-node`.
    link: String,
    /// µs per byte.
    g_inf: f64,
    /// Bytes.
    n_half: f64,
    /// The runtime's cost per token, µs.
    l: f64,
    /// Processors for workers.
    processors: u64,
    /// The target per-item time, µs, and whether it was given.
    te_us: f64,
    te_given: bool,
}

/// The model's parameters from the platform file at item size `d0`.
fn bsp_from(platform: &Platform, d0: u64) -> Result<(Bsp, String)> {
    let pick =
        |carrier| platform.link(PathKind::IntraNode, carrier).or_else(|| platform.link(PathKind::InterNode, carrier));
    let (Some(mpi), Some(dps)) = (pick(Carrier::Mpi), pick(Carrier::Dps)) else {
        dps_harness::bad_input!(
            "the platform file has no measured link (calibrated on one rank?): run `dps-bench calibrate --ranks 2 --out FILE`"
        );
    };
    let segment = dps_model::fit::segment_for(&mpi.fit, d0.max(1));
    let dispatch = (dps.time_us(d0.max(1)) - mpi.time_us(d0.max(1))).max(0.0);
    let link = if mpi.path == PathKind::IntraNode { "intra-node" } else { "inter-node" };
    Ok((Bsp::from_link(segment.latency_us, segment.bytes_per_us, dispatch), link.to_string()))
}

/// Checks the options (bad input, before the platform file and the run).
fn check(args: &Launch) -> Result<()> {
    if !(args.item_us.is_finite() && args.item_us > 0.0 && args.item_us <= MAX_ITEM_US) {
        dps_harness::bad_input!("--item-us {} must be a time above 0 and at most {MAX_ITEM_US} µs", args.item_us);
    }
    if args.payload > MAX_PAYLOAD {
        dps_harness::bad_input!(
            "--payload {} is above the largest item this bench sends, {MAX_PAYLOAD} bytes",
            args.payload
        );
    }
    if !(1..=MAX_RANKS).contains(&args.ranks) {
        dps_harness::bad_input!("--ranks {} must be between 1 and {MAX_RANKS}", args.ranks);
    }
    if let Some(te) = args.te_us {
        if !(te.is_finite() && te > 0.0) {
            dps_harness::bad_input!("--te-us {te} must be a time above 0");
        }
    }
    if !(args.prec.is_finite() && args.prec >= 1.0) {
        dps_harness::bad_input!("--prec {} must be at least 1", args.prec);
    }
    if !(1..=MAX_GRAIN).contains(&args.max_grain) {
        dps_harness::bad_input!("--max-grain {} must be between 1 and {MAX_GRAIN}", args.max_grain);
    }
    if !(args.seconds.is_finite() && args.seconds > 0.0 && args.seconds <= 60.0) {
        dps_harness::bad_input!("--seconds {} must be above 0 and at most 60", args.seconds);
    }
    if !(1..=100).contains(&args.reps) {
        dps_harness::bad_input!("--reps {} must be between 1 and 100", args.reps);
    }
    Ok(())
}

/// The grain values measured: powers of 2 up to `max_grain`, and `k̂`.
fn grains(max_grain: u64, k_hat: u64) -> Vec<u64> {
    let mut ks: Vec<u64> = std::iter::successors(Some(1u64), |k| Some(k * 2)).take_while(|&k| k <= max_grain).collect();
    if k_hat <= max_grain && !ks.contains(&k_hat) {
        ks.push(k_hat);
        ks.sort_unstable();
    }
    ks
}

/// The launcher: the model's plan, the measured grid, the table (or `--json`, one record).
pub(crate) fn launch(args: &Launch, json: bool, timeout_s: u64) -> Result<()> {
    check(args)?;
    let path = args.platform.clone().unwrap_or_else(|| {
        std::env::var_os("DPS_PLATFORM").map_or_else(|| PathBuf::from("platform.toml"), PathBuf::from)
    });
    let platform = dps_harness::input(Platform::load(&path).map_err(anyhow::Error::new))?;
    let (bsp, link) = bsp_from(&platform, args.payload)?;
    // Workers get the cores of the machine, shared among the ranks on it (one host here).
    let cpus = Machine::this().cpus as u64;
    let processors = args.ranks as u64 * (cpus / args.ranks as u64).max(1);
    let farm0 = Farm { t_f: args.item_us, d0: args.payload as f64, t_e: f64::INFINITY };
    let t_e = args.te_us.unwrap_or_else(|| {
        let k = p3l::best_grain(&bsp, &farm0, processors, 0.0);
        p3l::farm_service(&bsp, &farm0, processors, k) * (1.0 + 1.0 / args.prec)
    });
    let farm = Farm { t_e, ..farm0 };
    let plan = p3l::plan_farm(&bsp, &farm, args.prec, processors);
    let exhaustive = p3l::smallest_feasible(&bsp, &farm, processors, MAX_GRAIN);
    let inputs = Inputs {
        link,
        g_inf: bsp.g_inf,
        n_half: bsp.n_half,
        l: bsp.l,
        processors,
        te_us: t_e,
        te_given: args.te_us.is_some(),
    };

    let sim_options = simulated::options(args.ranks, args.sim_mode, &path, args.sim_cores)?;

    let ns: Vec<u64> = (1..=processors.max(plan.chosen.0)).collect();
    let ks = grains(args.max_grain, plan.chosen.1);
    let mut points = Vec::new();
    for &n in &ns {
        for &k in &ks {
            let per_item = p3l::farm_service(&bsp, &farm, n, k);
            // Enough items for about --seconds, and at least 4 windows' worth of tasks.
            let items = ((args.seconds / (per_item * 1e-6)) as u64).max(8 * n * k).div_ceil(k) * k;
            points.push((n, k, items));
        }
    }
    let largest = ks.last().copied().unwrap_or(1) * args.payload * 2 * ns.len() as u64 * 4;
    dps_harness::check_memory("tune-farm's tasks in flight", largest, largest)?;
    let item_ns = (args.item_us * 1e3).round() as u64;
    let sim_clock = std::time::Instant::now();
    let simulated = simulated::simulate(args.ranks, sim_options, item_ns, args.payload, args.reps, &points)?;
    let sim_wall_s = sim_clock.elapsed().as_secs_f64();
    let worker = vec![
        "tune-farm-worker".to_string(),
        "--item-ns".into(),
        item_ns.to_string(),
        "--payload".into(),
        args.payload.to_string(),
        "--reps".into(),
        args.reps.to_string(),
        "--points".into(),
        points.iter().map(|(n, k, items)| format!("{n}:{k}:{items}")).collect::<Vec<_>>().join(","),
    ];
    let mut measured = Vec::new();
    crate::launch::run_workers_with(Launcher::detect(), args.ranks, &worker, timeout_s, |m: Measured| {
        measured.push(m)
    })?;
    if measured.len() != points.len() {
        return Err(anyhow!("tune-farm: {} of {} points were measured", measured.len(), points.len()));
    }
    let mut record = report::Record::new(args, &path, inputs, &bsp, &farm, &plan, exhaustive, &measured, &simulated);
    record.platform_warnings = platform.header.warnings.clone();
    record.sim_wall_s = sim_wall_s;
    if json {
        crate::print_out(&format!("{}\n", serde_json::to_string(&record)?))
    } else {
        crate::print_out(&record.text())
    }
}

/// The worker, on every rank: builds one farm per worker count, rank 0 measures each point.
pub(crate) fn worker(args: &WorkerArgs) -> Result<()> {
    let mut points = Vec::new();
    for p in &args.points {
        let parts: Vec<u64> = p.split(':').map(str::parse).collect::<Result<_, _>>()?;
        let [n, k, items] = parts[..] else { return Err(anyhow!("tune-farm-worker: bad point {p:?}")) };
        points.push((n, k, items));
    }
    let rt = dps::Runtime::init()?;
    let mut ns: Vec<u64> = points.iter().map(|p| p.0).collect();
    ns.dedup();
    let farms = ns.iter().map(|&n| Ok((n, graph::build(&rt, n as usize)?))).collect::<Result<Vec<_>>>()?;
    if rt.is_root() {
        // A warm-up call per point (a tenth of its items), then the repetitions taken in
        // turns over the grid, so that a slow spell of the machine is spread over every point
        // instead of falling on a few.
        let work = |&(n, k, items): &(u64, u64, u64)| {
            let farm = &farms.iter().find(|f| f.0 == n).expect("a farm per worker count").1;
            (farm, n as usize, graph::Work { items, k, d0: args.payload, item_ns: args.item_ns })
        };
        for point in &points {
            let (farm, n, w) = work(point);
            graph::run_once(&rt, farm, n, graph::Work { items: (w.items / 10).max(w.k), ..w })?;
        }
        let mut times = vec![Vec::with_capacity(args.reps); points.len()];
        let mut per_worker: Vec<Vec<u64>> = points.iter().map(|p| vec![0; p.0 as usize]).collect();
        for _ in 0..args.reps {
            for ((point, times), per_worker) in points.iter().zip(&mut times).zip(&mut per_worker) {
                let (farm, n, w) = work(point);
                let call = graph::run_once(&rt, farm, n, w)?;
                times.push(call.seconds);
                per_worker.iter_mut().zip(&call.per_worker).for_each(|(sum, i)| *sum += i);
            }
        }
        for ((&(n, k, items), times), per_worker) in points.iter().zip(&times).zip(per_worker) {
            let seconds = dps_harness::median(times);
            let m = Measured { n, k, items, seconds, per_worker };
            crate::print_out(&format!("{}\n", serde_json::to_string(&m)?))?;
        }
    }
    rt.shutdown()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grains_are_powers_of_two_and_k_hat() {
        assert_eq!(grains(8, 3), vec![1, 2, 3, 4, 8]);
        assert_eq!(grains(8, 4), vec![1, 2, 4, 8]);
        assert_eq!(grains(4, 100), vec![1, 2, 4]);
    }

    #[test]
    fn workers_start_away_from_the_emitter() {
        assert_eq!(graph::mapping(1, 2), "1");
        assert_eq!(graph::mapping(3, 2), "1 0 1");
        assert_eq!(graph::mapping(2, 1), "0 0");
    }
}
