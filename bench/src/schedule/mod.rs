//! `dps-bench schedule [FILE | --lu N --block R] --procs P [--platform FILE] [--gantt PNG]
//! [--lookahead EVENTS] [--compare]`: schedules a malleable task graph layer by layer (the
//! scheduling paper; `dps_model::schedule`) and prints the schedule, TIME, k, µ, the bound
//! its proof establishes, the ratio to the lower bound max(critical path at τ(P), W/P) and
//! CPA's, MCPA's and the static allocation's makespans; `--gantt` draws the schedule ([`gantt`]),
//! `--lookahead` pre-computes the schedule of each event and times the switch against a
//! reschedule from scratch, `--compare` prints the table of generated graphs and LU
//! ([`compare`]).

mod compare;
mod gantt;
mod report;

use std::path::PathBuf;

use anyhow::Result;
use dps_model::platform::Platform;
use dps_model::schedule::comm::Comm;
use dps_model::schedule::generate::{self, LuCosts};
use dps_model::schedule::graph::Family;
use dps_model::schedule::lookahead::Event;

/// The options of `schedule`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The task graph file (TOML; the format is in model/README.md).
    file: Option<PathBuf>,
    /// Instead of a file, the block LU factorisation of an N×N matrix.
    #[arg(long, value_name = "N")]
    lu: Option<usize>,
    /// LU's block size r (N must be a multiple of it).
    #[arg(long, value_name = "R", default_value_t = 324)]
    block: usize,
    /// Processors P.
    #[arg(long, value_name = "P")]
    procs: Option<usize>,
    /// The platform file: τ_comm from its DPS link and LU's kernel times from its tables
    /// (without it: no communication cost, LU's kernels at 20 Gflop/s).
    #[arg(long)]
    platform: Option<PathBuf>,
    /// Draws the schedule as a Gantt chart into this PNG file.
    #[arg(long, value_name = "PNG")]
    gantt: Option<PathBuf>,
    /// Anticipated events, comma-separated: lose:N, gain:N (processors), drop:TASK.
    #[arg(long, value_name = "EVENTS")]
    lookahead: Option<String>,
    /// Prints makespan / lower bound of the layered, CPA, MCPA and static schedules on generated
    /// graphs and LU n = 2592, r = 324 (on --procs, default 8).
    #[arg(long)]
    compare: bool,
}

/// The largest P (the τ tables' length).
const MAX_PROCS: usize = dps_model::schedule::file::MAX_PROCS;
/// The most LU blocks per dimension (m(m+1)/2 tasks).
const MAX_LU_BLOCKS: usize = 200;

/// What to schedule, checked.
struct Plan {
    family: Option<Family>,
    procs: usize,
    comm: Comm,
    link: String,
    lu_costs: LuCosts,
    events: Vec<Event>,
}

fn check(args: &Args) -> Result<Plan> {
    let procs = match (args.procs, args.compare) {
        (Some(p), _) if !(1..=MAX_PROCS).contains(&p) => {
            dps_harness::bad_input!("--procs {p} must be between 1 and {MAX_PROCS}")
        }
        (Some(p), _) => p,
        (None, true) => 8,
        (None, false) => dps_harness::bad_input!("--procs P is missing: on how many processors to schedule"),
    };
    match (&args.file, args.lu, args.compare) {
        (Some(_), Some(_), _) => dps_harness::bad_input!("give a task graph FILE or --lu N, not both"),
        (None, None, false) => dps_harness::bad_input!("give a task graph FILE, --lu N or --compare"),
        _ => {}
    }
    if let Some(n) = args.lu {
        let r = args.block;
        if r == 0 || n == 0 || !n.is_multiple_of(r) {
            dps_harness::bad_input!("--lu {n} must be a positive multiple of --block {r}");
        }
        if n / r > MAX_LU_BLOCKS {
            dps_harness::bad_input!("--lu {n} --block {r}: {} blocks per side, at most {MAX_LU_BLOCKS}", n / r);
        }
    }
    let events = match &args.lookahead {
        None => vec![],
        Some(text) => text
            .split(',')
            .map(|e| {
                Event::parse(e.trim()).map_err(|why| dps_harness::BadInput::new(format!("--lookahead: {why}")).into())
            })
            .collect::<Result<Vec<_>>>()?,
    };
    let platform = match &args.platform {
        None => None,
        Some(path) => Some(dps_harness::input(Platform::load(path).map_err(anyhow::Error::new))?),
    };
    let (comm, link) = match &platform {
        None => (Comm::FREE, "none (no --platform: redistribution is free)".to_string()),
        Some(p) => match Comm::from_platform(p) {
            Some(c) => (c, format!("DPS link l = {:.2} µs, b = {:.0} MB/s", c.latency_s * 1e6, c.bytes_per_s / 1e6)),
            None => dps_harness::bad_input!(
                "the platform file has no measured DPS link: run `dps-bench calibrate --ranks 2 --out FILE`"
            ),
        },
    };
    let lu_costs = LuCosts::at_block(platform.as_ref(), args.block);
    let family = if let Some(path) = &args.file {
        Some(dps_harness::input(dps_model::schedule::file::load(path).map_err(anyhow::Error::msg))?)
    } else if let Some(n) = args.lu {
        Some(Family::new(vec![generate::lu(n, args.block, lu_costs)], 0)?)
    } else {
        None
    };
    if let (Some(f), Some(Event::Drop(t))) = (&family, events.iter().find(|e| matches!(e, Event::Drop(_)))) {
        if f.root().task(t).is_none() {
            dps_harness::bad_input!("--lookahead drop:{t}: the graph has no task {t:?}");
        }
    }
    if events.iter().any(|e| matches!(e, Event::Lose(n) if *n >= procs)) {
        dps_harness::bad_input!("--lookahead: cannot lose all {procs} processors");
    }
    if let Some(Event::Gain(n)) = events.iter().find(|e| matches!(e, Event::Gain(n) if procs + n > MAX_PROCS)) {
        dps_harness::bad_input!("--lookahead gain:{n}: above {MAX_PROCS} processors");
    }
    Ok(Plan { family, procs, comm, link, lu_costs, events })
}

/// `dps-bench schedule`.
pub(crate) fn run(args: &Args) -> Result<()> {
    let plan = check(args)?;
    let gantt = args.gantt.as_ref().map(|p| dps_harness::OutputFile::create("--gantt", p)).transpose()?;
    if args.compare {
        crate::print_out(&compare::table(plan.procs, plan.comm, &plan.link, plan.lu_costs))?;
    }
    let Some(family) = &plan.family else { return Ok(()) };
    let result = report::schedule(family, plan.procs, plan.comm);
    crate::print_out(&report::text(family, &result, &plan.link))?;
    if !plan.events.is_empty() {
        crate::print_out(&report::lookahead(family, plan.procs, plan.comm, &plan.events)?)?;
    }
    if let Some(out) = gantt {
        let path = out.path().display().to_string();
        out.write_and_commit(&gantt::png(family, &result)?)?;
        crate::print_out(&format!("Gantt chart: {path}\n"))?;
    }
    Ok(())
}
