//! `dps-bench calibrate --out FILE`: measures this platform for the simulator and the tuners
//! and writes the platform file (format: `dps_model::platform`, documented in bench/README.md).
//!
//! Launched on `--ranks` ranks (2 by default) by `scripts/mpirun`, or by `srun` inside a
//! Slurm allocation (which spreads them over its nodes). The ranks' host names say which
//! paths exist:
//! rank 0 and the first rank on its host (intra-node), rank 0 and the first rank on another
//! host (inter-node). For each path: ping-pong over message sizes (1 B to 64 MiB; `--quick`:
//! 1 B to 4 MiB by powers of 4) through raw MPI first, then through DPS tokens, and the fit of
//! each to `t(s) = l + s/b` (`dps_model::fit`). Then the CPU overheads of transfers with the
//! first peer ([`overheads`]) and the kernel cost tables on rank 0 ([`kernels`]). Rank 0
//! prints the result as one JSON line. The launcher runs [`TRANSFER_JOBS`] − 1 more jobs that
//! measure the links and overheads only, keeps the medians, seals the file (the hash of what
//! was measured) and writes it whole, or nothing.

mod kernels;
mod overheads;
mod pingpong;
mod stream;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use clap::Args;
use dps_harness::OutputFile;
use dps_launch::Launcher;
use dps_model::platform::{
    Carrier, Header, Link, Machine, Overheads, PathKind, Platform, Stream, TransferCost, DPS_VERSION, FORMAT,
};
use mpi::topology::Communicator;
use mpi::traits::CommunicatorCollectives;

/// Options of the launcher (`calibrate`).
#[derive(Args, Debug)]
pub(crate) struct Launch {
    /// The platform file to write (TOML; written whole or not at all).
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Ranks to measure on (1: kernels only; more: the paths between rank 0 and the first
    /// rank on its host and on another host).
    #[arg(long, default_value_t = 2)]
    pub(crate) ranks: usize,
    #[command(flatten)]
    pub(crate) opts: Options,
}

/// Options shared by the launcher and the worker.
#[derive(Args, Clone, Debug)]
pub(crate) struct Options {
    /// A quick calibration (a few seconds): fewer sizes and blocks, shorter measurements.
    #[arg(long)]
    pub(crate) quick: bool,
}

/// The most ranks `--ranks` accepts.
const MAX_RANKS: usize = 4096;

/// Jobs that measure the links and the transfers' CPU costs; each size's time and each cost is
/// the median of theirs. A job's transfer rate can be one of two, 4× apart, for the whole job
/// (1 MiB one way in 120 or 500 µs on the 2-core VM of
/// docs/measurements/2026-11-24-simulator-accuracy.md, "What the traces show"); the apps' jobs
/// meet either, so one job's ping-pong is a coin flip, and so are its CPU costs (0.12 to 0.30
/// ns per byte received in three quick calibrations of one hour).
const TRANSFER_JOBS: usize = 3;

/// What the extra jobs measure: the links and the transfers' CPU costs.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Transfers {
    links: Vec<Link>,
    overheads: Overheads,
}

/// Jobs whose one-way times differ by more than this factor at the largest size get a
/// warning in the platform file.
const LINK_SPREAD_WARNING: f64 = 2.0;

/// What one calibration measures, and how long.
struct Plan {
    sizes: Vec<usize>,
    pingpong: pingpong::Effort,
    blocks: Vec<usize>,
    gemm_extra: Option<usize>,
    kernel: kernels::Effort,
    /// Sizes of the copy table, bytes.
    copies: Vec<usize>,
    life: (usize, usize, Vec<usize>),
    transfer: (usize, Duration),
}

impl Plan {
    fn new(quick: bool) -> Plan {
        let cpu_clock = dps::cpu_quota::share().is_some();
        if quick {
            Plan {
                sizes: (0..12).map(|i| 1usize << (2 * i)).collect(),
                pingpong: pingpong::Effort { reps: 3, time: Duration::from_millis(5), min_iters: 5 },
                blocks: vec![64, 128, 256],
                gemm_extra: None,
                kernel: kernels::Effort { time: Duration::from_millis(20), min_calls: 2, cpu_clock },
                copies: vec![1 << 16, 1 << 20, 1 << 23],
                life: (4096, 128, vec![1, 8]),
                transfer: (11, Duration::from_millis(50)),
            }
        } else {
            Plan {
                sizes: (0..=26).map(|i| 1usize << i).collect(),
                pingpong: pingpong::Effort { reps: 5, time: Duration::from_millis(40), min_iters: 10 },
                // The apps' defaults and the experiments' block sizes.
                blocks: vec![32, 64, 125, 128, 256, 512, 1024],
                gemm_extra: Some(2048),
                kernel: kernels::Effort { time: Duration::from_millis(150), min_calls: 3, cpu_clock },
                copies: vec![1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26],
                life: (16384, 1024, vec![1, 2, 4, 8]),
                transfer: (15, Duration::from_millis(100)),
            }
        }
    }
}

/// The launcher: checks the options and the output path, runs the worker under mpirun,
/// writes the sealed platform file and prints a summary (`--json`: the file as JSON).
pub(crate) fn launch(args: &Launch, json: bool, timeout_s: u64) -> Result<()> {
    if !(1..=MAX_RANKS).contains(&args.ranks) {
        dps_harness::bad_input!("--ranks {} must be between 1 and {MAX_RANKS}", args.ranks);
    }
    let largest = Plan::new(args.opts.quick).sizes.iter().copied().max().unwrap_or(0) as u64;
    dps_harness::check_memory("calibrate's ping-pong", largest.saturating_mul(4), largest.saturating_mul(4))?;
    let out = OutputFile::create("--out", &args.out)?;
    let mut worker = vec!["calibrate-worker".to_string()];
    if args.opts.quick {
        worker.push("--quick".into());
    }
    let mut platform = None;
    crate::launch::run_workers_with(Launcher::detect(), args.ranks, &worker, timeout_s, |p: Platform| {
        platform = Some(p)
    })?;
    let mut platform = platform.ok_or_else(|| anyhow!("calibrate: rank 0 printed no measurements"))?;
    if !platform.links.is_empty() {
        let mut jobs = vec![Transfers { links: platform.links.clone(), overheads: platform.overheads.clone() }];
        worker.push("--transfers-only".into());
        for _ in 1..TRANSFER_JOBS {
            let mut transfers = None;
            crate::launch::run_workers_with(Launcher::detect(), args.ranks, &worker, timeout_s, |t: Transfers| {
                transfers = Some(t)
            })?;
            jobs.push(transfers.ok_or_else(|| anyhow!("calibrate: rank 0 printed no transfers"))?);
        }
        let (job_links, job_overheads): (Vec<_>, Vec<_>) = jobs.into_iter().map(|j| (j.links, j.overheads)).unzip();
        let (links, spread) = median_links(&job_links)?;
        platform.links = links;
        platform.overheads = median_overheads(&job_overheads);
        platform.header.warnings.extend(spread);
    }
    let inter_node = platform.link(PathKind::InterNode, Carrier::Dps).cloned();
    if let (Some(share), Some(link), true) = (platform.header.cpu_share, inter_node, platform.overheads.measurable) {
        platform.overheads = overheads::under_quota(share, &link, &platform.overheads);
    }
    // Judged on the links the file keeps (the jobs' medians), not the first job's.
    let judged = suspicions(&platform);
    platform.header.warnings.splice(0..0, judged);
    platform.seal();
    out.write_and_commit(platform.to_toml().as_bytes())?;
    if json {
        for w in &platform.header.warnings {
            eprintln!("dps-bench calibrate: warning: {w}; measure again on a quiet machine");
        }
        crate::print_out(&format!("{}\n", serde_json::to_string(&platform)?))
    } else {
        crate::print_out(&summary(&platform, &args.out))
    }
}

/// Every rank's host name, in rank order.
fn host_names(world: &mpi::topology::SimpleCommunicator) -> Vec<String> {
    const WIDTH: usize = 256;
    let mut mine = [0u8; WIDTH];
    let name = Machine::this().hostname;
    let len = name.len().min(WIDTH);
    mine[..len].copy_from_slice(&name.as_bytes()[..len]);
    let mut all = vec![0u8; WIDTH * world.size() as usize];
    world.all_gather_into(&mine[..], &mut all[..]);
    all.chunks(WIDTH).map(|c| String::from_utf8_lossy(c).trim_end_matches('\0').to_string()).collect()
}

/// The paths to measure: rank 0 with the first rank on its host, and with the first rank on
/// another host.
fn peers(hosts: &[String]) -> Vec<(PathKind, usize)> {
    let intra = (1..hosts.len()).find(|&r| hosts[r] == hosts[0]).map(|r| (PathKind::IntraNode, r));
    let inter = (1..hosts.len()).find(|&r| hosts[r] != hosts[0]).map(|r| (PathKind::InterNode, r));
    intra.into_iter().chain(inter).collect()
}

/// The links of several jobs (the same paths and sizes, in the same order) as one: each
/// size's median time, fitted again; and a warning per link whose jobs' times at its
/// largest size differ by more than [`LINK_SPREAD_WARNING`].
fn median_links(jobs: &[Vec<Link>]) -> Result<(Vec<Link>, Vec<String>)> {
    let first = jobs.first().ok_or_else(|| anyhow!("calibrate: no links measured"))?;
    let (mut links, mut warnings) = (Vec::new(), Vec::new());
    for (i, l) in first.iter().enumerate() {
        let same: Vec<&Link> = jobs.iter().filter_map(|job| job.get(i)).collect();
        let alike = |o: &&Link| o.path == l.path && o.carrier == l.carrier && o.sizes == l.sizes;
        if same.len() != jobs.len() || !same.iter().all(alike) {
            return Err(anyhow!("calibrate: the link-measuring jobs measured different paths or sizes"));
        }
        let times = medians_per_size(&same.iter().map(|o| &o.times_us[..]).collect::<Vec<_>>());
        let last: Vec<f64> = same.iter().filter_map(|o| o.times_us.last().copied()).collect();
        let (lo, hi) = last.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &t| (lo.min(t), hi.max(t)));
        if hi > LINK_SPREAD_WARNING * lo {
            let each = last.iter().map(|t| format!("{t:.0}")).collect::<Vec<_>>().join(", ");
            warnings.push(format!(
                "{} {} one-way times of {} took {each} µs in {} jobs: a run's transfers may be {:.1}× faster or \
                 slower than the median predicts",
                kebab(&l.path),
                kebab(&l.carrier),
                dps_harness::format_bytes(*l.sizes.last().unwrap_or(&0)),
                jobs.len(),
                hi / lo
            ));
        }
        let sizes: Vec<usize> = l.sizes.iter().map(|&s| s as usize).collect();
        let mut median_link = link(l.path, l.carrier, l.ranks[1] as usize, &sizes, times)?;
        let streams: Vec<&[f64]> = same.iter().filter_map(|o| Some(&o.stream.as_ref()?.times_us[..])).collect();
        if streams.len() == same.len() && !streams.is_empty() {
            median_link.stream = Some(streamed(&sizes, medians_per_size(&streams))?);
        }
        links.push(median_link);
    }
    Ok((links, warnings))
}

/// Each size's median over several jobs' times (the same sizes in each).
fn medians_per_size(jobs: &[&[f64]]) -> Vec<f64> {
    let sizes = jobs.first().map_or(0, |times| times.len());
    (0..sizes).map(|k| dps_harness::median(&jobs.iter().map(|times| times[k]).collect::<Vec<_>>())).collect()
}

/// The CPU costs of several jobs as one: each coefficient's median (the first job's note, and
/// the count of jobs). Jobs that could not measure them (one rank) give the first job's.
fn median_overheads(jobs: &[Overheads]) -> Overheads {
    let Some(first) = jobs.first() else { return no_overheads("not measured: no job") };
    if jobs.len() == 1 || !jobs.iter().all(|o| o.measurable) {
        return first.clone();
    }
    let med = |f: &dyn Fn(&Overheads) -> f64| dps_harness::median(&jobs.iter().map(f).collect::<Vec<_>>());
    let cost = |side: &dyn Fn(&Overheads) -> TransferCost| TransferCost {
        us_per_message: med(&|o| side(o).us_per_message),
        ns_per_byte: med(&|o| side(o).ns_per_byte),
    };
    Overheads {
        measurable: true,
        note: format!("{}; each value the median of {} jobs", first.note, jobs.len()),
        send: cost(&|o| o.send),
        receive: cost(&|o| o.receive),
        co_run_slowdown: med(&|o| o.co_run_slowdown),
    }
}

/// The worker, on every rank: raw MPI ping-pong, then the runtime, DPS ping-pong, overheads
/// and kernels; rank 0 prints the platform as one JSON line, without warnings (the launcher
/// judges the final file) (`transfers_only`: only the links and overheads, as [`Transfers`]).
pub(crate) fn worker(opts: &Options, transfers_only: bool) -> Result<()> {
    let plan = Plan::new(opts.quick);
    dps_dense::blas::set_threads(1);
    let (universe, _) =
        mpi::initialize_with_threading(mpi::Threading::Multiple).context("MPI was already initialised")?;
    let world = universe.world();
    let load_average = load_average();
    let hosts = host_names(&world);
    let peers = peers(&hosts);
    let raw: Vec<Vec<f64>> =
        peers.iter().map(|&(_, peer)| pingpong::raw(&world, peer as i32, &plan.sizes, plan.pingpong)).collect();
    drop(world);

    let rt = dps::Runtime::from_universe(universe)?;
    let echoes = peers.iter().map(|&(_, peer)| pingpong::echo_graph(&rt, peer)).collect::<Result<Vec<_>>>()?;
    let paced = peers.iter().map(|&(_, peer)| stream::graph(&rt, peer)).collect::<Result<Vec<_>>>()?;
    let streams = peers.first().map(|&(_, peer)| overheads::Streams::build(&rt, peer)).transpose()?;
    if rt.is_root() {
        let mut links = Vec::new();
        for (((&(path, peer), raw_times), echo), paced) in peers.iter().zip(&raw).zip(&echoes).zip(&paced) {
            let dps_times = pingpong::dps(&rt, echo, &plan.sizes, plan.pingpong)?;
            let stream_times = stream::per_message(&rt, paced, &plan.sizes, plan.pingpong)?;
            let mut dps = link(path, Carrier::Dps, peer, &plan.sizes, dps_times)?;
            dps.stream = Some(streamed(&plan.sizes, stream_times)?);
            links.push(dps);
            links.push(link(path, Carrier::Mpi, peer, &plan.sizes, raw_times.clone())?);
        }
        let overheads = match (&streams, peers.first()) {
            (Some(streams), Some(&(_, peer))) => {
                let note = format!(
                    "gemm {R}x{R} on rank 0 and on rank {peer} at once, alone and during DPS streams of \
                     {} and {} messages from rank 0 to rank {peer}",
                    dps_harness::format_bytes(overheads::SMALL as u64),
                    dps_harness::format_bytes(overheads::LARGE as u64),
                    R = overheads::R
                );
                overheads::measure(&rt, streams, plan.transfer.0, plan.transfer.1, note)?
            }
            _ => no_overheads("not measured: one rank, no transfers"),
        };
        if transfers_only {
            crate::print_out(&format!("{}\n", serde_json::to_string(&Transfers { links, overheads })?))?;
            rt.shutdown()?;
            return Ok(());
        }
        let machine = Machine::this();
        let mut kernels = vec![
            kernels::gemm(&[plan.blocks.clone(), plan.gemm_extra.into_iter().collect()].concat(), plan.kernel),
            kernels::trsm(&plan.blocks, plan.kernel),
            kernels::getrf(&plan.blocks, plan.kernel),
            kernels::laswp(&plan.blocks, plan.kernel),
            kernels::copy(&plan.copies, plan.kernel),
        ];
        let (width, rows, depths) = &plan.life;
        kernels.push(kernels::life(*width, *rows, depths, plan.kernel));
        kernels.push(kernels::median_filter(&[64, 256, 512], plan.kernel));
        let mut distinct: Vec<String> = Vec::new();
        for h in &hosts {
            if !distinct.contains(h) {
                distinct.push(h.clone());
            }
        }
        let platform = Platform {
            header: Header {
                format: FORMAT,
                dps_version: DPS_VERSION.into(),
                date: jiff::Timestamp::now().to_string(),
                hosts: distinct,
                cpu_model: machine.cpu_model,
                cpus: machine.cpus,
                cpu_share: dps::cpu_quota::share(),
                blas: machine.blas.unwrap_or_default(),
                ranks: hosts.len() as u32,
                quick: opts.quick,
                load_average,
                warnings: Vec::new(),
                measured_hash: String::new(),
            },
            links,
            overheads,
            kernels,
        };
        crate::print_out(&format!("{}\n", serde_json::to_string(&platform)?))?;
    }
    rt.shutdown()?;
    Ok(())
}

/// The 1-minute load average (`/proc/loadavg`), 0 if unknown.
fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(0.0)
}

/// What looks wrong in a calibration: a machine busier than its CPUs, an intra-node latency
/// no shared-memory path has (above [`INTRA_NODE_LATENCY_US`]: each round trip then waited for
/// a scheduler time slice), DPS tokens faster than the MPI messages they are made of.
fn suspicions(p: &Platform) -> Vec<String> {
    let mut found = Vec::new();
    let h = &p.header;
    if h.load_average > f64::from(h.cpus) {
        found.push(format!(
            "load average {:.1} on {} CPUs when the measurement started: the machine was shared, the times are pessimistic",
            h.load_average, h.cpus
        ));
    }
    for link in &p.links {
        let small = link.time_us(1);
        if link.path == PathKind::IntraNode && small > INTRA_NODE_LATENCY_US {
            found.push(format!(
                "intra-node {} latency {small:.0} µs: shared memory takes a few µs; the ranks waited for CPU time",
                kebab(&link.carrier)
            ));
        }
    }
    if let (Some(dps), Some(mpi)) =
        (p.link(PathKind::IntraNode, Carrier::Dps), p.link(PathKind::IntraNode, Carrier::Mpi))
    {
        if mpi.time_us(1) > 2.0 * dps.time_us(1) {
            found.push("raw MPI slower than DPS tokens for small messages, which DPS sends through MPI".into());
        }
        // What a message costs the two sides' CPUs should not exceed its one-way time by much:
        // the link's time includes that work.
        let (o, size) = (&p.overheads, 1u64 << 20);
        let (cpu, link) = (o.send.us(size) + o.receive.us(size), dps.time_us(size));
        if cpu > 2.0 * link {
            found.push(format!(
                "a 1 MiB message costs {cpu:.0} µs of CPU on its two ranks but takes {link:.0} µs end to end: \
                 the kernels of the measurement lost time to something else"
            ));
        }
    }
    found
}

/// Above this one-way time for a 1-byte message, an intra-node measurement is suspect, µs.
const INTRA_NODE_LATENCY_US: f64 = 100.0;

fn no_overheads(note: &str) -> dps_model::platform::Overheads {
    dps_model::platform::Overheads {
        measurable: false,
        note: note.into(),
        send: Default::default(),
        receive: Default::default(),
        co_run_slowdown: 1.0,
    }
}

/// A measured link with its fit.
fn link(path: PathKind, carrier: Carrier, peer: usize, sizes: &[usize], times_us: Vec<f64>) -> Result<Link> {
    let fit = fitted(sizes, &times_us, &format!("{carrier:?}"))?;
    let sizes = sizes.iter().map(|&s| s as u64).collect();
    Ok(Link { path, carrier, ranks: [0, peer as u32], sizes, times_us, fit, stream: None })
}

/// A stream's times per message with their fit.
fn streamed(sizes: &[usize], times_us: Vec<f64>) -> Result<Stream> {
    let fit = fitted(sizes, &times_us, "stream's")?;
    Ok(Stream { times_us, fit })
}

/// The fit of `times_us` over `sizes` (`what` names them in the error).
fn fitted(sizes: &[usize], times_us: &[f64], what: &str) -> Result<Vec<dps_model::fit::Segment>> {
    let points: Vec<(u64, f64)> = sizes.iter().map(|&s| s as u64).zip(times_us.iter().copied()).collect();
    dps_model::fit::fit(&points)
        .ok_or_else(|| anyhow!("calibrate: no line t = l + s/b fits the {what} times {times_us:?}"))
}

/// A path or carrier as the file writes it (`intra-node`, `dps`).
fn kebab(value: &impl serde::Serialize) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// The human summary: links with their fits, overheads, kernels.
fn summary(p: &Platform, out: &std::path::Path) -> String {
    let h = &p.header;
    let mut s = String::new();
    for w in &h.warnings {
        let _ = writeln!(s, "WARNING: {w}; measure again on a quiet machine");
    }
    let _ = write!(
        s,
        "platform file {}: {} rank(s) on {} ({}, {} CPUs){}\n\n",
        out.display(),
        h.ranks,
        h.hosts.join(", "),
        h.cpu_model,
        h.cpus,
        if h.quick { ", quick" } else { "" }
    );
    if !p.links.is_empty() {
        s.push_str(
            "| path | carrier | sizes | l (µs) | b (GB/s) | fit error (rms, worst) |\n|---|---|---|---:|---:|---:|\n",
        );
        for link in &p.links {
            let stream = link.stream.as_ref().map(|st| ("stream", &st.times_us, &st.fit));
            for (how, times, fit) in std::iter::once(("", &link.times_us, &link.fit)).chain(stream) {
                summary_rows(&mut s, link, how, times, fit);
            }
        }
        s.push('\n');
    }
    let o = &p.overheads;
    let _ = writeln!(
        s,
        "CPU per message: sending {:.2} µs + {:.3} ns/byte, receiving {:.2} µs + {:.3} ns/byte; \
         co-run slowdown {:.3} ({})\n",
        o.send.us_per_message,
        o.send.ns_per_byte,
        o.receive.us_per_message,
        o.receive.ns_per_byte,
        o.co_run_slowdown,
        o.note
    );
    s.push_str("| kernel | dims | seconds per call | rate |\n|---|---|---:|---:|\n");
    for k in &p.kernels {
        for point in &k.points {
            let dims: Vec<String> = point.dims.iter().map(u64::to_string).collect();
            let _ = writeln!(
                s,
                "| {} | {} = {} | {:.3e} | {:.3e} {}/s |",
                k.name,
                k.dims,
                dims.join(","),
                point.seconds,
                point.rate(),
                k.work_unit
            );
        }
    }
    s
}

/// The summary's rows of one fit of `link` (`how`: "" for the ping-pong, "stream").
fn summary_rows(s: &mut String, link: &Link, how: &str, times: &[f64], fit: &[dps_model::fit::Segment]) {
    let points: Vec<(u64, f64)> = link.sizes.iter().copied().zip(times.iter().copied()).collect();
    let worst = dps_model::fit::worst_error(fit, &points);
    let rms = dps_model::fit::rms_error(fit, &points);
    for g in fit {
        let _ = writeln!(
            s,
            "| {} | {}{}{how} | {}-{} | {:.2} | {:.2} | {:.0}%, {:.0}% |",
            kebab(&link.path),
            kebab(&link.carrier),
            if how.is_empty() { "" } else { " " },
            dps_harness::format_bytes(g.from_bytes),
            dps_harness::format_bytes(g.to_bytes),
            g.latency_us,
            g.bytes_per_us / 1e3,
            rms * 100.0,
            worst * 100.0
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(names: &[&str]) -> Vec<String> {
        names.iter().map(|h| h.to_string()).collect()
    }

    #[test]
    fn paths_are_found_from_host_names() {
        assert_eq!(peers(&hosts(&["a"])), vec![]);
        assert_eq!(peers(&hosts(&["a", "a"])), vec![(PathKind::IntraNode, 1)]);
        assert_eq!(peers(&hosts(&["a", "b"])), vec![(PathKind::InterNode, 1)]);
        assert_eq!(peers(&hosts(&["a", "b", "b", "a"])), vec![(PathKind::IntraNode, 3), (PathKind::InterNode, 1)]);
    }

    #[test]
    fn under_a_quota_each_side_pays_its_measured_cost_per_byte_at_most_the_share_over_the_bandwidth() {
        // Small messages at 5 ms (quota waits), large ones at 250 B/µs: 0.2 / 250 µs per KB.
        let sizes = [64, 1024, 16384, 65536, 262144, 1 << 20, 4 << 20];
        let times: Vec<f64> =
            sizes.iter().map(|&s| if s <= 16384 { 5000.0 } else { 9000.0 + s as f64 / 250.0 }).collect();
        let link = link(PathKind::InterNode, Carrier::Dps, 1, &sizes, times).unwrap();
        let measured = dps_model::platform::Overheads {
            measurable: true,
            note: "streams".into(),
            send: TransferCost { us_per_message: 1.0, ns_per_byte: 1.4 },
            receive: TransferCost { us_per_message: 87.0, ns_per_byte: 6.4 },
            co_run_slowdown: 1.1,
        };
        let o = overheads::under_quota(0.2, &link, &measured);
        assert!((o.send.ns_per_byte - 0.8).abs() < 1e-6, "{o:?}");
        assert_eq!((o.send, o.send.us_per_message, o.co_run_slowdown), (o.receive, 0.0, 1.1));
        assert!(o.note.contains("receiving 87.00 µs + 6.400 ns/byte") && o.note.contains("streams"), "{}", o.note);
        // A side measured below the bound keeps its own cost.
        let cheap_send = Overheads { send: TransferCost { us_per_message: 1.0, ns_per_byte: 0.3 }, ..measured };
        let o = overheads::under_quota(0.2, &link, &cheap_send);
        assert_eq!((o.send.ns_per_byte, o.send.us_per_message), (0.3, 0.0));
        assert!((o.receive.ns_per_byte - 0.8).abs() < 1e-6, "{o:?}");
    }

    #[test]
    fn a_busy_machine_and_impossible_latencies_are_flagged() {
        let times = |l: f64| -> Vec<f64> { [1u64, 1024, 1 << 20].iter().map(|&s| l + s as f64 / 5000.0).collect() };
        let link_of = |carrier, l| link(PathKind::IntraNode, carrier, 1, &[1, 1024, 1 << 20], times(l)).unwrap();
        let mut p = Platform {
            header: Header {
                format: FORMAT,
                dps_version: DPS_VERSION.into(),
                date: "2026-11-24T00:00:00Z".into(),
                hosts: vec!["h".into()],
                cpu_model: "c".into(),
                cpus: 2,
                cpu_share: None,
                blas: String::new(),
                ranks: 2,
                quick: true,
                load_average: 0.3,
                warnings: vec![],
                measured_hash: String::new(),
            },
            links: vec![link_of(Carrier::Dps, 5.0), link_of(Carrier::Mpi, 0.5)],
            overheads: no_overheads("test"),
            kernels: vec![],
        };
        assert_eq!(suspicions(&p), Vec::<String>::new());
        p.header.load_average = 11.0;
        p.links[1] = link_of(Carrier::Mpi, 4000.0);
        let found = suspicions(&p);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found[0].contains("load average 11.0 on 2 CPUs"), "{found:?}");
        assert!(found[1].contains("intra-node mpi latency 4000 µs"), "{found:?}");
        assert!(found[2].contains("raw MPI slower than DPS"), "{found:?}");
    }

    #[test]
    fn the_cpu_costs_of_several_jobs_are_each_coefficients_median() {
        let job = |receive_ns: f64, send_us: f64| Overheads {
            measurable: true,
            note: "n".into(),
            send: TransferCost { us_per_message: send_us, ns_per_byte: 0.05 },
            receive: TransferCost { us_per_message: 5.0, ns_per_byte: receive_ns },
            co_run_slowdown: 1.0 + receive_ns,
        };
        let o = median_overheads(&[job(0.30, 4.0), job(0.12, 15.0), job(0.22, 8.0)]);
        assert_eq!((o.receive.ns_per_byte, o.send.us_per_message, o.co_run_slowdown), (0.22, 8.0, 1.22));
        assert_eq!(o.note, "n; each value the median of 3 jobs");
        // A job without a peer measured nothing: the first job's values stand.
        let one = no_overheads("one rank");
        assert_eq!(median_overheads(&[one.clone(), one.clone()]), one);
    }

    #[test]
    fn links_of_several_jobs_are_their_medians_and_a_wide_spread_is_flagged() {
        let sizes = [1usize, 1024, 1 << 20];
        let job = |us_per_mib: f64| {
            let times = sizes.iter().map(|&s| 2.0 + s as f64 / (1 << 20) as f64 * us_per_mib).collect();
            vec![link(PathKind::IntraNode, Carrier::Dps, 1, &sizes, times).unwrap()]
        };
        // Two jobs at 500 µs per MiB, one at 120: the median is the slow rate, flagged.
        let (links, warnings) = median_links(&[job(500.0), job(120.0), job(500.0)]).unwrap();
        assert_eq!(links.len(), 1);
        assert!((links[0].times_us[2] - 502.0).abs() < 1e-9, "{:?}", links[0].times_us);
        assert!((links[0].time_us(1 << 20) - 502.0).abs() < 5.0, "the fit follows the medians");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("intra-node dps") && warnings[0].contains("4.1×"), "{warnings:?}");
        // Jobs within the factor: no warning.
        assert!(median_links(&[job(500.0), job(400.0), job(450.0)]).unwrap().1.is_empty());
        // Jobs that measured different sizes cannot be combined.
        let other = vec![link(PathKind::IntraNode, Carrier::Dps, 1, &[1, 2, 3], vec![1.0, 1.1, 1.2]).unwrap()];
        assert!(median_links(&[job(500.0), other]).is_err());
    }

    #[test]
    fn the_quick_plan_is_a_subset_of_the_full_one() {
        let (quick, full) = (Plan::new(true), Plan::new(false));
        assert!(quick.sizes.iter().all(|s| full.sizes.contains(s)));
        assert_eq!((quick.sizes[0], *full.sizes.last().unwrap()), (1, 64 << 20));
        assert!(quick.blocks.iter().all(|b| full.blocks.contains(b)));
    }
}
