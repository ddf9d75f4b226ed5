//! The simulator's column of tune-farm: the same synthetic farm ([`graph`]) on the same
//! number of ranks, run by `dps::Runtime::simulate` in this process with the options
//! `--simulate` gives every app (`dps_harness::simulate`, from the platform file).
//!
//! PDEXEC (the default) skips each task's busy loop and charges its exact length (kernel
//! [`graph::SPIN`], whose cost is its work in seconds, not a platform table): the
//! prediction is then deterministic, and everything else an operation does (the emitter's
//! allocations, the collector) costs nothing. DE runs the busy loops and charges every
//! operation's CPU time, as the real run pays it (warm-up call, then the median of the
//! repetitions, as measured).

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Result};
use dps::{Runtime, SimMode, SimOptions};
use dps_harness::simulate::{Mode, Simulate, Support};

use super::graph::{self, Call, Work};

/// What tune-farm supports of the simulator.
const SUPPORT: Support = Support {
    program: "dps-bench tune-farm",
    modes: &[SimMode::De, SimMode::Pdexec],
    why_not: "its synthetic farm does not leave out its payloads",
    kernels: &[],
};

/// The simulator's options on `ranks` virtual ranks, with the busy loop's cost (bad input
/// as `--simulate`: a platform file without a DPS link, a mode tune-farm has not, 0 cores);
/// `cores` per rank as `--sim-cores`.
pub(super) fn options(ranks: usize, mode: Mode, platform: &Path, cores: Option<usize>) -> Result<SimOptions> {
    let sim = Simulate {
        simulate: Some(ranks),
        sim_mode: Some(mode),
        platform: Some(platform.to_path_buf()),
        sim_cores: cores,
    };
    let mut opts = sim.options(ranks, &SUPPORT)?;
    let tables = opts.kernels.clone();
    opts.kernels =
        Arc::new(move |name, dims, work| if name == graph::SPIN { Some(work) } else { tables(name, dims, work) });
    Ok(opts)
}

/// Simulates every point `(n, k, items)` of the grid with `item_ns` and `payload` per item:
/// one call per point in PDEXEC, a warm-up and `reps` calls (median time, items per worker
/// summed) in DE.
pub(super) fn simulate(
    ranks: usize,
    opts: SimOptions,
    item_ns: u64,
    payload: u64,
    reps: usize,
    points: &[(u64, u64, u64)],
) -> Result<Vec<Call>> {
    let exact = opts.mode != SimMode::De;
    let rt = Runtime::simulate(ranks, opts)?;
    let mut ns: Vec<u64> = points.iter().map(|p| p.0).collect();
    ns.dedup();
    let farms = ns.iter().map(|&n| Ok((n, graph::build(&rt, n as usize)?))).collect::<Result<Vec<_>>>()?;
    let mut calls = Vec::with_capacity(points.len());
    for &(n, k, items) in points {
        let farm = &farms.iter().find(|f| f.0 == n).expect("a farm per worker count").1;
        let work = Work { items, k, d0: payload, item_ns };
        let run = || graph::run_once(&rt, farm, n as usize, work);
        if exact {
            calls.push(run()?);
        } else {
            graph::run_once(&rt, farm, n as usize, Work { items: (items / 10).max(k), ..work })?;
            let runs = (0..reps).map(|_| run()).collect::<Result<Vec<_>>>()?;
            let times: Vec<f64> = runs.iter().map(|c| c.seconds).collect();
            let per_worker = (0..n as usize).map(|i| runs.iter().map(|c| c.per_worker[i]).sum()).collect();
            calls.push(Call { seconds: dps_harness::median(&times), per_worker });
        }
        // Past the end of the clock, the time is where it stopped, for this point and every
        // later one (the clock never comes back): no column to print.
        if rt.simulation().is_some_and(|s| s.clock_saturated) {
            bail!(
                "tune-farm: simulating {n} worker(s) at grain {k} ({items} items of {item_ns} ns) took the simulated \
                 clock past the end of its range (584 years): no prediction; check the platform file's costs"
            );
        }
    }
    rt.shutdown()?;
    Ok(calls)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The made-up platform (5 µs + s/5 GB/s) in a temporary file.
    fn platform() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dps_harness::simulate::made_up_platform_file(dir.path()).into();
        (dir, path)
    }

    /// A compute-bound item (200 µs, 1 KiB), grains 1 and 4, on one and two workers.
    const POINTS: [(u64, u64, u64); 4] = [(1, 1, 64), (1, 4, 64), (2, 1, 64), (2, 4, 64)];

    fn per_item_us(calls: &[Call]) -> Vec<f64> {
        calls.iter().zip(POINTS).map(|(c, (_, _, items))| c.seconds / items as f64 * 1e6).collect()
    }

    #[test]
    fn pdexec_is_deterministic_and_two_workers_serve_faster_than_one() {
        let (_dir, path) = platform();
        let run = || simulate(2, options(2, Mode::Pdexec, &path, None).unwrap(), 200_000, 1024, 3, &POINTS).unwrap();
        let (a, b) = (run(), run());
        let (ta, tb) = (per_item_us(&a), per_item_us(&b));
        assert_eq!(ta, tb, "the same inputs, another prediction");
        assert_eq!(
            a.iter().map(|c| &c.per_worker).collect::<Vec<_>>(),
            b.iter().map(|c| &c.per_worker).collect::<Vec<_>>()
        );
        // One worker: the busy loop (200 µs) plus the link, never less than the loop.
        assert!(ta[0] >= 200.0 && ta[1] >= 200.0 && ta[0] < 260.0, "{ta:?}");
        // Two workers: faster, at least half the items each way, and both took part.
        assert!(ta[2] < ta[0] && ta[3] < ta[1] && ta[2] >= 100.0, "{ta:?}");
        assert!(a[2].per_worker.iter().all(|&i| i > 0) && a[2].per_worker.iter().sum::<u64>() == 64, "{a:?}");
    }

    #[test]
    fn de_charges_the_busy_loop_its_cpu_time_and_two_workers_serve_faster() {
        let (_dir, path) = platform();
        let points = [(1, 2, 32), (2, 2, 32)];
        let calls = simulate(2, options(2, Mode::De, &path, None).unwrap(), 200_000, 1024, 1, &points).unwrap();
        let t: Vec<f64> = calls.iter().map(|c| c.seconds / 32.0 * 1e6).collect();
        // Under DE the loop runs for 200 µs of CPU time, whatever the machine's load: one
        // worker at least 200 µs per item, two at least half of it, and faster than one.
        assert!(t[0] >= 200.0 && t[1] >= 100.0 && t[1] < t[0], "{t:?}");
    }

    /// Issue 27: a grid point past the simulated clock's end is an error, not the capped
    /// time in the simulator's column.
    #[test]
    fn a_simulation_past_the_clock_is_an_error() {
        let (_dir, path) = platform();
        // 8 items of 146 years each on one worker: 1168 years.
        let opts = options(1, Mode::Pdexec, &path, None).unwrap();
        let e = simulate(1, opts, u64::MAX / 4, 8, 1, &[(1, 1, 8)]).unwrap_err().to_string();
        assert!(e.contains("1 worker(s) at grain 1") && e.contains("end of its range"), "{e}");
        // The same farm at 1 ms an item is an ordinary prediction.
        let calls = simulate(1, options(1, Mode::Pdexec, &path, None).unwrap(), 1_000_000, 8, 1, &[(1, 1, 8)]).unwrap();
        assert!(calls[0].seconds >= 8e-3 && calls[0].seconds < 1.0, "{calls:?}");
    }

    #[test]
    fn noalloc_is_refused() {
        let (_dir, path) = platform();
        let e = options(2, Mode::Noalloc, &path, None).unwrap_err().to_string();
        assert!(e.contains("--sim-mode noalloc") && e.contains("tune-farm"), "{e}");
    }
}
