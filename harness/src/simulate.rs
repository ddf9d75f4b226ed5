//! `--simulate P [--sim-mode de|pdexec|noalloc] [--platform FILE] [--sim-cores N]`: run the
//! program on P virtual ranks in this process ([`dps::Runtime::simulate`]) with the costs
//! of a platform file (`dps-bench calibrate --out FILE`), and report the predicted time.
//!
//! A program flattens [`Simulate`] beside `dps::RuntimeArgs` and starts its runtime with
//! [`Simulate::start`], which checks everything (P, the mode against what the program
//! supports, the platform file and the kernels the mode needs) before any work: each
//! refusal is one line, exit 2. Programs time their work with `rt.stopwatch()`; the record's
//! [`Common::bound_by`](crate::Common::bound_by) then adds `predicted_seconds`,
//! `simulated_ranks`, `sim_mode` and the per-rank busy time.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use dps::{Runtime, RuntimeArgs, SimMode, SimOptions, TransferCpu};
use dps_model::fit::Segment;
use dps_model::platform::{
    Carrier, Header, Kernel, KernelPoint, Link, Machine, Overheads, PathKind, Platform, TransferCost,
};
use serde::{Deserialize, Serialize};

use crate::bad_input;

/// Where the platform file is looked for without `--platform`: `$DPS_PLATFORM`, else this
/// file in the working directory (as `dps-bench tune-farm` does).
pub const DEFAULT_PLATFORM: &str = "platform.toml";

/// The simulation modes on the command line.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Direct execution: every operation runs and its CPU time is charged.
    #[default]
    De,
    /// The program's kernels are skipped and their calibrated cost charged (deterministic).
    Pdexec,
    /// As pdexec, without the data.
    Noalloc,
}

impl From<Mode> for SimMode {
    fn from(m: Mode) -> SimMode {
        match m {
            Mode::De => SimMode::De,
            Mode::Pdexec => SimMode::Pdexec,
            Mode::Noalloc => SimMode::Noalloc,
        }
    }
}

/// The simulator's options.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Simulate {
    /// Simulate the run on P virtual ranks in this process, without MPI (run it without
    /// mpirun), and report the predicted time (`predicted_seconds`).
    #[arg(long, value_name = "P")]
    pub simulate: Option<usize>,
    /// How the simulator charges operations: `de` measures each one, `pdexec` charges the
    /// calibrated cost of the kernels and skips them, `noalloc` does too and leaves the data
    /// out (memory independent of the problem size).
    #[arg(long, value_enum, value_name = "de|pdexec|noalloc", requires = "simulate")]
    pub sim_mode: Option<Mode>,
    /// The platform file (`dps-bench calibrate --out FILE`); default $DPS_PLATFORM, else
    /// platform.toml.
    #[arg(long, value_name = "FILE", requires = "simulate")]
    pub platform: Option<PathBuf>,
    /// Cores of each virtual rank (operations it runs at once); default: this machine's CPUs
    /// shared among the P ranks, at least 1.
    #[arg(long, value_name = "N", requires = "simulate")]
    pub sim_cores: Option<usize>,
}

/// What a program supports of the simulator.
#[derive(Debug, Clone, Copy)]
pub struct Support<'a> {
    /// The program's name, for messages.
    pub program: &'a str,
    /// The modes it supports (DE is always possible).
    pub modes: &'a [SimMode],
    /// Why the others are not (the message's end), e.g. "its control flow depends on the data".
    pub why_not: &'a str,
    /// The kernels PDEXEC charges (the platform must have their tables).
    pub kernels: &'a [&'a str],
}

impl Simulate {
    /// The mode asked for.
    pub fn mode(&self) -> SimMode {
        self.sim_mode.unwrap_or_default().into()
    }

    /// A NOALLOC simulation is asked for (`--simulate` with `--sim-mode noalloc`): the
    /// program must allocate none of its large data.
    pub fn noalloc(&self) -> bool {
        self.simulate.is_some() && self.mode() == SimMode::Noalloc
    }

    /// The platform file's path: `--platform`, else `$DPS_PLATFORM`, else platform.toml.
    pub fn platform_path(&self) -> PathBuf {
        self.platform.clone().unwrap_or_else(|| {
            std::env::var_os("DPS_PLATFORM").map_or_else(|| PathBuf::from(DEFAULT_PLATFORM), PathBuf::from)
        })
    }

    /// Starts the runtime: simulated with `--simulate`, else `runtime.start()`.
    ///
    /// # Errors
    /// A bad input (exit 2, before any work): P is 0, the mode is one `support` does not
    /// list, the platform file is missing, stale, of another machine or version (the
    /// message names the command that makes one), or lacks a kernel the mode needs; and as
    /// `RuntimeArgs::start`.
    pub fn start(&self, runtime: &RuntimeArgs, support: &Support) -> Result<Runtime> {
        let Some(ranks) = self.simulate else { return Ok(runtime.start()?) };
        let opts = self.options(ranks, support)?;
        let mut rt = Runtime::simulate(ranks, opts)?;
        if let Some(path) = &runtime.trace {
            rt.trace_to(path).map_err(|e| crate::BadInput::new(format!("--trace {}: {e}", path.display())))?;
        }
        Ok(rt)
    }

    /// The simulator's options for `ranks` virtual ranks from the platform file, checked as
    /// [`Simulate::start`] checks them (its `start` without the runtime: for a program that
    /// runs simulations of its own, as `dps-bench tune-farm`).
    ///
    /// # Errors
    /// As [`Simulate::start`] (a bad input, exit 2).
    pub fn options(&self, ranks: usize, support: &Support) -> Result<SimOptions> {
        if ranks == 0 {
            bad_input!("--simulate 0: at least one rank to simulate");
        }
        crate::check_memory(&format!("--simulate {ranks}: the simulator"), simulator_bytes(ranks), 0)?;
        let launched = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
            .iter()
            .find_map(|v| std::env::var(v).ok()?.parse::<usize>().ok())
            .unwrap_or(1);
        if launched > 1 {
            bad_input!("--simulate {ranks}: the simulator runs in one process; start it without mpirun (here {launched} ranks)");
        }
        let mode = self.mode();
        if mode != SimMode::De && !support.modes.contains(&mode) {
            bad_input!(
                "--sim-mode {}: {} cannot be simulated in this mode: {}; use --sim-mode de",
                mode.name(),
                support.program,
                support.why_not
            );
        }
        if self.sim_cores == Some(0) {
            bad_input!("--sim-cores 0: a virtual rank needs at least one core");
        }
        let path = self.platform_path();
        let platform = Platform::load(&path).map_err(|e| {
            let from = if self.platform.is_some() { "" } else { "(no --platform given, so the default) " };
            crate::BadInput::new(format!("--simulate needs a platform file: {from}{e}"))
        })?;
        if mode != SimMode::De {
            if let Some(k) = support.kernels.iter().find(|k| platform.kernel(k).is_err()) {
                bad_input!(
                    "platform file {}: no cost table for kernel '{k}', which --sim-mode {} charges; \
                     recalibrate with `dps-bench calibrate --out {}`",
                    path.display(),
                    mode.name(),
                    path.display()
                );
            }
        }
        // Calibrated on a node with a share of one core (an emulated cluster's): each virtual
        // rank gets a node of its own with that share; else ranks fill nodes of this
        // machine's CPU count, one rank per CPU.
        let share = platform.header.cpu_share;
        let cpus = if share.is_some() { 1 } else { platform.header.cpus.max(1) as usize };
        let intra = platform.link(PathKind::IntraNode, Carrier::Dps).cloned();
        let inter = platform.link(PathKind::InterNode, Carrier::Dps).cloned().or_else(|| intra.clone());
        let Some(intra) = intra.or_else(|| inter.clone()) else {
            if ranks > 1 {
                bad_input!(
                    "platform file {}: no DPS link was measured (calibrated on one rank); \
                     recalibrate with `dps-bench calibrate --ranks 2 --out {}`",
                    path.display(),
                    path.display()
                );
            }
            let alone = SimOptions { cpu_share: share.unwrap_or(1.0), ..SimOptions::ideal(mode) };
            return Ok(self.finish(alone, cpus, ranks, platform));
        };
        let inter = inter.unwrap_or_else(|| intra.clone());
        let mut opts = SimOptions::ideal(mode);
        opts.cpu_share = share.unwrap_or(1.0);
        let (intra, inter) = (Arc::new(intra), Arc::new(inter));
        let link_between = move |a: usize, b: usize| if a / cpus == b / cpus { intra.clone() } else { inter.clone() };
        let holding = link_between.clone();
        opts.link = Arc::new(move |a, b, bytes| link_between(a, b).time_us(bytes) * 1e-6);
        // The simulator paper's network: a node's transfers share its link in each direction.
        let sides = (platform.overheads.send, platform.overheads.receive);
        opts.port_contention = Some(Arc::new(move |a, b, bytes| port_hold_s(&holding(a, b), bytes, sides, share)));
        let cpu =
            |c: TransferCost| TransferCpu { per_message_s: c.us_per_message * 1e-6, per_byte_s: c.ns_per_byte * 1e-9 };
        opts.send_cpu = cpu(platform.overheads.send);
        opts.receive_cpu = cpu(platform.overheads.receive);
        opts.co_run_slowdown = platform.overheads.co_run_slowdown;
        // Ranks fill nodes of `cpus` CPUs (as the links above assume).
        opts.host_of = Arc::new(move |r| r / cpus);
        Ok(self.finish(opts, cpus, ranks, platform))
    }

    fn finish(&self, mut opts: SimOptions, cpus: usize, ranks: usize, platform: Platform) -> SimOptions {
        opts.cores_per_rank = Some(self.sim_cores.unwrap_or((cpus / ranks.min(cpus)).max(1)));
        let platform = Arc::new(platform);
        opts.kernels = Arc::new(move |name, dims, work| platform.kernel(name).ok()?.seconds(dims, work));
        opts
    }
}

/// How long a message of `bytes` bytes holds its sender's sending port and its receiver's
/// receiving port, seconds: the link's stream time `bytes / b`. Under a CPU quota (a node of
/// an emulated cluster) each side's transfer is CPU work at the node's `share`, which the
/// simulator charges already (to the sending operation and the reception job), and the
/// stream was bound by the slower side's: the ports hold only the rest, the wire's part
/// (almost nothing on an unshaped link, nearly all of `bytes / b` on a shaped one). Holding
/// them for the whole stream time charged a master's sends twice: matmul on 8 nodes at 0.25
/// of a core predicted 0.49-0.60 s, 0.42-0.44 without (docs/measurements/
/// 2026-11-29-sim-accuracy-unthrottled-de.md).
fn port_hold_s(link: &Link, bytes: u64, (send, receive): (TransferCost, TransferCost), share: Option<f64>) -> f64 {
    let stream = link.transfer_us(bytes) * 1e-6;
    let Some(share) = share else { return stream };
    (stream - send.us(bytes).max(receive.us(bytes)) * 1e-6 / share).max(0.0)
}

/// What a simulated run adds to its record ([`crate::Common`]).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Simulation {
    /// The simulated time of what the program timed (its `seconds`).
    pub predicted_seconds: f64,
    /// Virtual ranks.
    pub simulated_ranks: usize,
    /// `de`, `pdexec` or `noalloc`.
    pub sim_mode: String,
    /// Per virtual rank, the simulated time its operations took over the whole run.
    pub sim_busy_seconds: Vec<f64>,
    /// The simulated time of the whole run (set-up, verification calls and all).
    pub sim_total_seconds: f64,
    /// Operations the simulator ran.
    pub sim_operations: u64,
    /// Messages between virtual ranks.
    pub sim_messages: u64,
    /// The simulator's peak resident memory so far (`VmHWM`), bytes: every virtual rank's
    /// data lives in this process.
    pub sim_peak_rss_bytes: Option<u64>,
    /// The simulated clock reached the end of its range (584 years): the times above are
    /// where it stopped, not a prediction (`dps::SimReport::clock_saturated`).
    #[serde(default)]
    pub sim_clock_saturated: bool,
}

/// This process's peak resident set (`VmHWM` of /proc/self/status), bytes.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

impl Simulation {
    /// The simulation of `rt`, if simulated, with `seconds` as the prediction.
    pub fn of(rt: &Runtime, seconds: f64) -> Option<Simulation> {
        let r = rt.simulation()?;
        Some(Simulation {
            predicted_seconds: seconds,
            simulated_ranks: r.ranks,
            sim_mode: r.mode.name().into(),
            sim_busy_seconds: r.busy_s,
            sim_total_seconds: r.now_s,
            sim_operations: r.operations,
            sim_messages: r.messages,
            sim_peak_rss_bytes: peak_rss(),
            sim_clock_saturated: r.clock_saturated,
        })
    }
}

/// The memory the simulator itself takes for `ranks` virtual ranks, besides the program's
/// data: the runtime's per-rank tables grow with the square of the rank count. Measured
/// with `dps-matmul --n 64 --simulate P` (peak RSS 9 MB at P = 1, 16 MB at 300, 295 MB at
/// 2000: 72 B per pair of ranks); rounded up, so that a run that passes never dies in the
/// allocator (`--simulate 100000` would need 745 GiB).
pub fn simulator_bytes(ranks: usize) -> u64 {
    const BASE: u64 = 16 << 20;
    const PER_PAIR: u64 = 80;
    let p = ranks as u64;
    BASE.saturating_add(p.saturating_mul(p).saturating_mul(PER_PAIR))
}

/// A platform file for this machine, dated now, with made-up round costs (a 5 µs, 5 GB/s
/// link; gemm, trsm and getrf at 10 GFLOP/s, copies at 5 GB/s, row swaps at 2 ns, the 5×5
/// median at 1 ns per pixel): for tests and examples that need a valid file without
/// measuring. Never use it to predict.
pub fn made_up_platform() -> Platform {
    let machine = Machine::this();
    let gemm = |r: u64| {
        let work = 2.0 * (r as f64).powi(3);
        KernelPoint { dims: vec![r; 3], seconds: work / 1e10, work }
    };
    let mut p = Platform {
        header: Header {
            format: dps_model::platform::FORMAT,
            dps_version: dps_model::platform::DPS_VERSION.into(),
            date: jiff::Timestamp::now().to_string(),
            hosts: vec![machine.hostname],
            cpu_model: machine.cpu_model,
            cpus: machine.cpus,
            cpu_share: None,
            blas: machine.blas.unwrap_or_default(),
            ranks: 2,
            quick: true,
            load_average: 0.0,
            warnings: vec!["made up for tests: not measured".into()],
            measured_hash: String::new(),
        },
        links: vec![Link {
            path: PathKind::IntraNode,
            carrier: Carrier::Dps,
            ranks: [0, 1],
            sizes: vec![1, 1 << 20],
            times_us: vec![5.0, 5.0 + (1 << 20) as f64 / 5000.0],
            fit: vec![Segment { from_bytes: 1, to_bytes: 1 << 20, latency_us: 5.0, bytes_per_us: 5000.0 }],
            stream: None,
        }],
        overheads: Overheads {
            measurable: false,
            note: "made up".into(),
            send: Default::default(),
            receive: Default::default(),
            co_run_slowdown: 1.0,
        },
        kernels: vec![
            Kernel {
                name: "gemm".into(),
                dims: "m,n,k".into(),
                work_unit: "flop".into(),
                points: vec![gemm(64), gemm(256)],
            },
            // The dense apps' other kernels at the same made-up 10 GFLOP/s; copies at 5 GB/s.
            Kernel {
                name: "trsm".into(),
                dims: "m,n".into(),
                work_unit: "flop".into(),
                points: vec![KernelPoint { dims: vec![64, 64], seconds: 64f64.powi(3) / 1e10, work: 64f64.powi(3) }],
            },
            Kernel {
                name: "getrf".into(),
                dims: "m,n".into(),
                work_unit: "flop".into(),
                points: vec![KernelPoint {
                    dims: vec![256, 64],
                    seconds: (256.0 * 64f64.powi(2) - 64f64.powi(3) / 3.0) / 1e10,
                    work: 256.0 * 64f64.powi(2) - 64f64.powi(3) / 3.0,
                }],
            },
            Kernel {
                name: "laswp".into(),
                dims: "swaps,cols".into(),
                work_unit: "element swap".into(),
                points: vec![KernelPoint { dims: vec![64, 64], seconds: 64.0 * 64.0 * 2e-9, work: 64.0 * 64.0 }],
            },
            Kernel {
                name: "copy".into(),
                dims: "bytes".into(),
                work_unit: "byte".into(),
                points: vec![KernelPoint {
                    dims: vec![1 << 20],
                    seconds: (1 << 20) as f64 / 5e9,
                    work: (1 << 20) as f64,
                }],
            },
            // The 5×5 median at 1 ns per pixel.
            Kernel {
                name: "median".into(),
                dims: "width,rows".into(),
                work_unit: "pixel".into(),
                points: [64u64, 512]
                    .map(|s| KernelPoint { dims: vec![s; 2], seconds: (s * s) as f64 * 1e-9, work: (s * s) as f64 })
                    .to_vec(),
            },
        ],
    };
    p.seal();
    p
}

/// [`made_up_platform`] written into `dir` as `platform.toml`; returns the file's path.
pub fn made_up_platform_file(dir: &std::path::Path) -> String {
    write_platform(dir, "platform.toml", &made_up_platform())
}

/// Writes a test's platform file `name` into `dir`; returns its path.
fn write_platform(dir: &std::path::Path, name: &str, p: &Platform) -> String {
    let path = dir.join(name);
    std::fs::write(&path, p.to_toml()).expect("the test's platform file is written");
    path.to_string_lossy().into_owned()
}

/// Platform files for the programs' bad-input tables, written into `dir`: a good one
/// ([`made_up_platform`]), one made by another dps version, one made on another host, and
/// the path of one that does not exist.
pub fn test_platforms(dir: &std::path::Path) -> [String; 4] {
    let write = |name: &str, edit: &dyn Fn(&mut Platform)| {
        let mut p = made_up_platform();
        edit(&mut p);
        p.seal();
        write_platform(dir, name, &p)
    };
    [
        write("good.toml", &|_| {}),
        write("old.toml", &|p| p.header.dps_version = "0.0.0".into()),
        write("elsewhere.toml", &|p| p.header.hosts = vec!["some-other-host".into()]),
        dir.join("none.toml").to_string_lossy().into_owned(),
    ]
}

/// [`made_up_platform`] with the kernels named in `rates` at those rates (work per second,
/// as each table counts work), written into `dir`: for tests that compare PDEXEC with DE and
/// so need this machine's rates for the kernels they charge. Returns the file's path.
pub fn platform_with_rates(dir: &std::path::Path, rates: &[(&str, f64)]) -> String {
    let mut p = made_up_platform();
    for k in &mut p.kernels {
        if let Some(&(_, rate)) = rates.iter().find(|(name, _)| *name == k.name) {
            k.points.iter_mut().for_each(|pt| pt.seconds = pt.work / rate);
        }
    }
    p.seal();
    write_platform(dir, "measured.toml", &p)
}

/// NOALLOC's promise, for the dense apps' tests: the simulator's peak memory for n = 16384
/// (where the matrices alone would take gigabytes) is within 64 MiB of that for n = 1024.
/// `predict` runs the app with the given options and returns its JSON record.
pub fn assert_noalloc_memory_is_flat(predict: impl Fn(&[&str]) -> serde_json::Value) {
    let sized = |n| ["--n", n, "--block", "1024", "--simulate", "2", "--sim-mode", "noalloc", "--reps", "1"];
    assert_peak_memory_is_flat(predict, ("n = 1024", &sized("1024")), ("n = 16384", &sized("16384")));
}

/// NOALLOC's promise: the simulator's peak memory with the options of `large` is within
/// 64 MiB of that with those of `small` (each a name for the message and the options,
/// NOALLOC among them). `predict` runs the app with options and returns its JSON record.
pub fn assert_peak_memory_is_flat(
    predict: impl Fn(&[&str]) -> serde_json::Value,
    small: (&str, &[&str]),
    large: (&str, &[&str]),
) {
    let peak = |args: &[&str]| {
        let r = predict(args);
        assert!(r["predicted_seconds"].as_f64().is_some_and(|s| s > 0.0), "{r}");
        r["sim_peak_rss_bytes"].as_u64().expect("the simulator reports its peak memory")
    };
    let (at_small, at_large) = (peak(small.1), peak(large.1));
    assert!(
        at_large < at_small + (64 << 20),
        "NOALLOC peak memory grew from {} MiB ({}) to {} MiB ({})",
        at_small >> 20,
        small.0,
        at_large >> 20,
        large.0
    );
}

/// Makes the tests of one test binary that call it run one at a time (hold the guard for
/// the test's length): a test timing kernels or DE runs was disturbed by another test's
/// simulations on the other core (a 2-core machine).
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|p| p.into_inner())
}

/// A prediction within a factor of 4 of direct execution, judged on a host whose speed
/// moves by up to 2x within seconds (docs/measurements): `ratio` times both afresh (the kernel
/// table measured in the test, then a DE run of the app) and returns prediction / DE. One
/// of 3 rounds within the factor is enough. What it catches: the main kernel of dps-matmul
/// or dps-life forgotten, which leaves a prediction under a tenth of DE in every round (the
/// tests that check each charge exactly use fixed tables instead). Why 4 and not 2: the
/// test's kernel calls and the DE run's operations drift apart for seconds at a time on
/// this host (cache-hot loops against the app's blocks, sharing the machine's caches with
/// other tenants): dps-matmul phased measured 0.47 of DE in all 3 rounds on the CI machine;
/// here dps-lu stream 0.43-0.46 and dps-life 0.37-0.40 in all 3; with a factor of 2, single
/// comparisons had failed 2 times in 8.
pub fn assert_near_de_in_one_of_three_rounds(what: &str, mut ratio: impl FnMut() -> f64) {
    let ratios: Vec<f64> = (0..3).map(|_| ratio()).collect();
    eprintln!("{what}: prediction / DE in 3 rounds: {ratios:?}");
    assert!(ratios.iter().any(|r| (0.25..=4.0).contains(r)), "{what}: prediction / DE {ratios:?}");
}

/// The median time of 7 calls of `f`, seconds: a kernel's rate for [`platform_with_rates`],
/// as DE will see it. (The fastest call, tried before, was the least disturbed moment of a
/// host whose speed moves by 2x within seconds, and made predictions 0.47-0.85 of DE.)
pub fn typical(mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..7)
        .map(|_| {
            let t = std::time::Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_made_up_platform_loads_on_this_machine() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(&path, made_up_platform().to_toml()).unwrap();
        let p = Platform::load(&path).unwrap();
        assert_eq!(p.kernel("gemm").unwrap().seconds(&[64, 64, 64], 1.0), Some(2.0 * 64f64.powi(3) / 1e10));
    }

    #[test]
    fn under_a_quota_the_ports_hold_a_message_only_for_what_the_sides_cpu_does_not_explain() {
        // A stream of 500 B/µs (2 ns/byte); sending 0.2 ns/byte, receiving 1 µs + 0.4 ns/byte.
        let link = made_up_platform().links[0].clone();
        let link = Link { stream: None, fit: vec![Segment { bytes_per_us: 500.0, ..link.fit[0] }], ..link };
        let cost = |us, ns| TransferCost { us_per_message: us, ns_per_byte: ns };
        let sides = (cost(0.0, 0.2), cost(1.0, 0.4));
        let mib = 1u64 << 20;
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        // Whole cores: the whole stream time, as before.
        assert!(close(port_hold_s(&link, mib, sides, None), mib as f64 * 2e-9));
        // At 0.25 of a core the receiver's CPU takes 1.6 ns of the 2 per byte (and 4 µs per
        // message): the wire's 0.4 ns per byte are left.
        assert!(close(port_hold_s(&link, mib, sides, Some(0.25)), mib as f64 * 0.4e-9 - 4e-6));
        // At 0.2 the CPU explains more than the stream: nothing is left.
        assert_eq!(port_hold_s(&link, mib, sides, Some(0.2)), 0.0);
    }
}
