//! A DPS run of `gather` or `median`: the runtime started, the collections and graphs
//! built on the input, and the end (shutdown).

use anyhow::Result;
use dps::{Collection, Runtime};
use dps_harness::options::Standard;
use dps_harness::simulate::Support;

use super::input::Input;
use crate::cli::source::Storage;
use crate::disk::Disk;
use crate::graph::{self, Compute, Graphs};

/// The collections and graphs of a run.
pub(super) struct Job {
    pub(super) rt: Runtime,
    pub(super) graphs: Graphs,
    /// Compute threads.
    pub(super) threads: usize,
    /// Tiles in flight (`in_flight` per compute thread).
    pub(super) window: usize,
    /// The client thread (rank 0), for graphs built past [`build`] (`serve`'s).
    pub(super) client: Collection<()>,
    /// The disk threads, likewise.
    pub(super) disks: Collection<Disk>,
}

/// Starts the runtime, simulated under `--simulate` as `support` allows; returns it with
/// the number of compute threads `map` gives.
pub(super) fn start(standard: &Standard, support: &Support, map: &str) -> Result<(Runtime, usize)> {
    let rt = standard.sim.start(&standard.runtime, support)?;
    let threads = rt.threads_in(map)?;
    Ok((rt, threads))
}

/// Builds the collections and graphs on the input (`name`: the input image's, `out_name`:
/// the output's in a stored input's store, `cache`: tiles cached per disk thread,
/// `in_flight`: tiles in flight per compute thread).
pub(super) fn build(
    rt: Runtime,
    map: &str,
    input: &Input,
    names: (&str, &str),
    cache: usize,
    in_flight: usize,
) -> Result<Job> {
    let (name, out_name) = names;
    let client = rt.collection("client", "0", |_| ())?;
    let compute = rt.collection("compute", map, |_| Compute)?;
    let threads = compute.len();
    let mapping = graph::disk_mapping(&compute, input.meta.disks);
    let disks = rt.collection("disks", &mapping, |k| match (&input.dir, &input.image, input.absent) {
        (Some(dir), _, _) => Disk::stored(k, input.meta.clone(), dir.clone(), (name, out_name), cache, input.throttle),
        (None, Some(image), _) => Disk::preloaded(k, input.meta.clone(), image),
        (None, None, Some(storage)) => {
            Disk::absent(k, input.meta.clone(), storage == Storage::Disk, cache, input.throttle)
        }
        (None, None, None) => unreachable!("an input is a store, an image or left out"),
    })?;
    let window = in_flight * threads;
    let graphs = graph::build(&rt, &client, &compute, &disks, window)?;
    Ok(Job { rt, graphs, threads, window, client, disks })
}

/// Ends the run on every rank: shuts the runtime down (a scratch store goes with the
/// input, when it is dropped).
pub(super) fn end(job: Job, outcome: Result<()>) -> Result<()> {
    let shutdown = job.rt.shutdown();
    outcome.and(shutdown.map_err(Into::into))
}
