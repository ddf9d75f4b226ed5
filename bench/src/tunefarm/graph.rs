//! The synthetic farm: a split on rank 0 cuts `items` items into tasks of `k` items, each
//! carrying `k·d_0` bytes; `n` workers (thread `i` on rank `(i + 1) mod ranks`, so the first
//! is away from the emitter) busy-loop `k·t_f` and send the payload back; a merge on rank 0
//! counts the items per worker. Load-balanced routing with a window of 2 tasks per worker,
//! as dps-matmul's farm. The busy loop is the kernel [`SPIN`]: a PDEXEC simulation skips it
//! and charges its exact length (`simulated`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use dps::{route, Bulk, Graph, MergeFn, Node, Runtime};
use serde::{Deserialize, Serialize};

/// A task: `items` items, the busy time of one, and their payload.
#[derive(Debug, Serialize, Deserialize)]
struct Task {
    items: u32,
    /// The worker that ran it (set by the worker).
    worker: u32,
    item_ns: u64,
    payload: Bulk<u8>,
}

/// What a farm call is asked to do.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(super) struct Work {
    /// Items in all.
    pub(super) items: u64,
    /// Items per task.
    pub(super) k: u64,
    /// Bytes per item.
    pub(super) d0: u64,
    /// Busy time per item, ns.
    pub(super) item_ns: u64,
}

/// The kernel name of a task's busy loop (`dps::skip_kernel`): its work is its length in
/// seconds, which is also its cost.
pub(super) const SPIN: &str = "tune-farm-spin";

/// The mapping of `n` workers on `ranks` ranks: thread `i` on rank `(i + 1) mod ranks`.
pub(super) fn mapping(n: usize, ranks: usize) -> String {
    (0..n).map(|i| ((i + 1) % ranks).to_string()).collect::<Vec<_>>().join(" ")
}

/// Builds the farm with `n` workers (collective).
pub(super) fn build(rt: &Runtime, n: usize) -> Result<Graph<Work, Done>> {
    let main = rt.collection(&format!("farm-main-{n}"), "0", |_| ())?;
    let workers = rt.collection(&format!("farm-workers-{n}"), &mapping(n, rt.ranks()), |i| i as u32)?;
    let split = Node::split("emit", &main, route::fixed(0), |_: &mut (), w: Work| {
        let tasks = w.items.div_ceil(w.k);
        (0..tasks).map(move |t| {
            let items = w.k.min(w.items - t * w.k);
            Task {
                items: items as u32,
                worker: 0,
                item_ns: w.item_ns,
                payload: Bulk::recycled((items * w.d0) as usize),
            }
        })
    })
    .window(2 * n);
    // A node's route picks the thread that runs it: the tasks spread over the workers.
    let work = Node::leaf("work", &workers, route::load_balanced(), |index: &mut u32, mut t: Task| {
        let busy = Duration::from_nanos(t.item_ns * u64::from(t.items));
        if !dps::skip_kernel(SPIN, &[u64::from(t.items)], busy.as_secs_f64()) {
            spin(busy);
        }
        t.worker = *index;
        t
    });
    let count = Node::merge(
        "collect",
        &main,
        MergeFn::new(
            |_: &mut ()| Done::default(),
            |_, done: &mut Done, t: Task| {
                done.items += u64::from(t.items);
                *done.workers.entry(t.worker).or_default() += u64::from(t.items);
            },
            |_, done| done,
        ),
    );
    Ok(rt.graph(&format!("farm-{n}"), split >> work >> count)?)
}

/// Busy-waits `d`: a compute-bound item, not a sleep. Of wall-clock time in a real run (the
/// item's measured time); of this thread's CPU time in a DE simulation, which charges CPU
/// time: a wall-clock loop preempted on a busy machine would be charged less than `d`.
fn spin(d: Duration) {
    if dps::simulated() == Some(dps::SimMode::De) {
        let until = dps::cpu_time::thread() + d;
        while dps::cpu_time::thread() < until {
            std::hint::spin_loop();
        }
    } else {
        let until = Instant::now() + d;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
}

/// What a farm call did: the items, and how many each worker ran.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Done {
    items: u64,
    workers: BTreeMap<u32, u64>,
}

/// One farm call: its time and the items per worker.
#[derive(Clone, Debug)]
pub(super) struct Call {
    /// Seconds, on the runtime's clock (simulated under simulation).
    pub(super) seconds: f64,
    /// Items run by worker `i`, for `i` in `0..n`.
    pub(super) per_worker: Vec<u64>,
}

/// Runs `work` through `farm` (of `n` workers) once. An error unless every item came back
/// and every worker took part (a farm whose tasks all went to one worker would measure one
/// worker, whatever `n`).
pub(super) fn run_once(rt: &Runtime, farm: &Graph<Work, Done>, n: usize, work: Work) -> Result<Call> {
    let clock = rt.stopwatch();
    let done = rt.call(farm, work)?;
    let seconds = clock.seconds();
    ensure!(done.items == work.items, "the farm returned {} items instead of {}", done.items, work.items);
    let tasks = work.items.div_ceil(work.k);
    let expected = n.min(usize::try_from(tasks).unwrap_or(usize::MAX));
    ensure!(
        done.workers.len() == expected,
        "the farm's {tasks} tasks ran on {} of its {n} workers",
        done.workers.len()
    );
    let per_worker = (0..n as u32).map(|i| done.workers.get(&i).copied().unwrap_or(0)).collect();
    Ok(Call { seconds, per_worker })
}
