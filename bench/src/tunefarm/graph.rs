//! The synthetic farm: a split on rank 0 cuts `items` items into tasks of `k` items, each
//! carrying `k·d_0` bytes; `n` workers (thread `i` on rank `(i + 1) mod ranks`, so the first
//! is away from the emitter) busy-loop `k·t_f` and send the payload back; a merge on rank 0
//! counts the items. Load-balanced routing with a window of 2 tasks per worker, as
//! dps-matmul's farm.

use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use dps::{route, Bulk, Graph, MergeFn, Node, Runtime};
use serde::{Deserialize, Serialize};

/// A task: `items` items, the busy time of one, and their payload.
#[derive(Debug, Serialize, Deserialize)]
struct Task {
    items: u32,
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

/// The mapping of `n` workers on `ranks` ranks: thread `i` on rank `(i + 1) mod ranks`.
pub(super) fn mapping(n: usize, ranks: usize) -> String {
    (0..n).map(|i| ((i + 1) % ranks).to_string()).collect::<Vec<_>>().join(" ")
}

/// Builds the farm with `n` workers (collective).
pub(super) fn build(rt: &Runtime, n: usize) -> Result<Graph<Work, u64>> {
    let main = rt.collection(&format!("farm-main-{n}"), "0", |_| ())?;
    let workers = rt.collection(&format!("farm-workers-{n}"), &mapping(n, rt.ranks()), |_| ())?;
    let split = Node::split("emit", &main, route::load_balanced(), |_: &mut (), w: Work| {
        let tasks = w.items.div_ceil(w.k);
        (0..tasks).map(move |t| {
            let items = w.k.min(w.items - t * w.k);
            Task { items: items as u32, item_ns: w.item_ns, payload: Bulk::recycled((items * w.d0) as usize) }
        })
    })
    .window(2 * n);
    let work = Node::leaf("work", &workers, route::fixed(0), |_: &mut (), t: Task| {
        spin(Duration::from_nanos(t.item_ns * u64::from(t.items)));
        t
    });
    let count = Node::merge(
        "collect",
        &main,
        MergeFn::new(|_: &mut ()| 0u64, |_, n: &mut u64, t: Task| *n += u64::from(t.items), |_, n| n),
    );
    Ok(rt.graph(&format!("farm-{n}"), split >> work >> count)?)
}

/// Busy-waits `d`: a compute-bound item, not a sleep.
fn spin(d: Duration) {
    let until = Instant::now() + d;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// Runs `work` through `farm` once: the seconds of the call.
pub(super) fn run_once(rt: &Runtime, farm: &Graph<Work, u64>, work: Work) -> Result<f64> {
    let start = Instant::now();
    let done = rt.call(farm, work)?;
    let seconds = start.elapsed().as_secs_f64();
    ensure!(done == work.items, "the farm returned {done} items instead of {}", work.items);
    Ok(seconds)
}
