//! Runs `serve`: the image's tiles on the ranks' disk threads, the window-reading graph
//! exported under `--service` until `--until FILE` exists, `--serve-seconds` pass, or the
//! process gets SIGINT or SIGTERM; then the export is withdrawn and the job ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::input::Input;
use super::job::{self, Job};
use crate::cli::memory::Footprint;
use crate::cli::serve::ServePlan;
use crate::graph::window::{self, WindowPixels, WindowRequest};

/// How often every rank looks for a reason to stop.
const POLL: Duration = Duration::from_millis(50);
/// How long the end waits for the calls in flight to be answered.
const SETTLE: Duration = Duration::from_secs(10);

/// Set by SIGINT or SIGTERM.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    SIGNALLED.store(true, Ordering::SeqCst);
}

/// SIGINT and SIGTERM stop the service cleanly (the export withdrawn) instead of killing
/// the process.
fn catch_stop_signals() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe { libc::signal(signal, handler) };
    }
}

/// Executes a `serve` plan on every rank.
///
/// # Errors
/// Bad input (the input checked on every rank), a name already exported or a registry that
/// cannot be written, a failed run.
pub(super) fn execute(plan: &ServePlan) -> Result<()> {
    catch_stop_signals();
    let rt = plan.runtime.start()?;
    let threads = rt.threads_in(&plan.map)?;
    let footprint = Footprint::window_reads(rt.ranks(), threads, 0);
    let (_, input) = Input::prepare(&plan.source, &footprint, rt.rank(), false)?;
    let job = job::build(rt, &plan.map, &input, (&plan.source.name, "unused"), 0, crate::cli::THESIS_IN_FLIGHT)?;
    let outcome = serve(plan, &job, &input);
    job::end(job, outcome)
}

fn serve(plan: &ServePlan, job: &Job, input: &Input) -> Result<()> {
    let (tiling, depth) = (input.meta.tiling(), input.meta.depth());
    let path = window::serve_path(&job.client, &job.disks, tiling, depth, job.window);
    let graph: dps::Graph<WindowRequest, WindowPixels> = job.rt.graph("filter_window", path)?;
    let export = job.rt.export(&plan.service, &graph)?;
    let root = job.rt.is_root();
    if root {
        println!(
            "serving {} ({}x{}, {} bits, {} tiles of {} on {} disks) as service \"{}\" on {} ranks",
            plan.source.name,
            tiling.width,
            tiling.height,
            depth.bits(),
            tiling.count(),
            tiling.tile,
            tiling.disks,
            plan.service,
            job.rt.ranks()
        );
    }
    let start = Instant::now();
    let why = loop {
        if SIGNALLED.load(Ordering::SeqCst) {
            break "a signal";
        }
        if plan.until.as_ref().is_some_and(|f| f.exists()) {
            break "--until";
        }
        if plan.serve_seconds.is_some_and(|s| start.elapsed().as_secs_f64() >= s) {
            break "--serve-seconds";
        }
        std::thread::sleep(POLL);
    };
    // The calls already started are answered (a client that went away leaves none).
    let settle = Instant::now();
    while export.in_flight() > 0 && settle.elapsed() < SETTLE {
        std::thread::sleep(Duration::from_millis(10));
    }
    if root {
        println!("served {} windows as \"{}\"; stopped by {why}", export.served(), plan.service);
    }
    Ok(())
}
