//! The collective protocols: what the runtimes of all ranks agree on, each step with a timeout
//! so that a rank that does not take part ends in an error that says so, not in a hang.
//!
//! - **init**: every rank learns every rank's host name (an MPI all-gather, before the
//!   progress thread starts), for mappings such as `"nodeA*2 nodeB"`.
//! - **graph agreement**: each rank sends rank 0 the description of the graph it built;
//!   rank 0 answers all with one verdict, naming the first difference if any.
//! - **trace agreement**: rank 0 tells every rank whether it can write the trace file.
//! - **shutdown**: each rank tells rank 0 it is done; once all are, rank 0 tells them to shut
//!   down; then every rank's trace events are gathered on rank 0.
//!
//! After init, the messages are `Control` messages; each protocol takes its own from the
//! engine's control queue.

use std::time::Duration;

use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;

use crate::engine::{Control, Engine};
use crate::error::ErrorKind;
use crate::graph;
use crate::Error;

/// How long a rank waits for the others to build the same graph before giving up.
const GRAPH_AGREEMENT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long rank 0 waits for the other ranks' trace events at shutdown.
const TRACE_TIMEOUT: Duration = Duration::from_secs(30);

/// Every rank's host name, gathered on all ranks (before the progress thread starts).
pub(crate) fn gather_host_names(world: &SimpleCommunicator) -> Vec<String> {
    gather_strings(world, &host_name())
}

/// Every rank's `name` (up to 256 bytes), by rank.
pub(crate) fn gather_strings(world: &SimpleCommunicator, name: &str) -> Vec<String> {
    const LEN: usize = 256;
    let mut mine = [0u8; LEN];
    let n = name.len().min(LEN);
    mine[..n].copy_from_slice(&name.as_bytes()[..n]);
    let mut all = vec![0u8; LEN * world.size() as usize];
    world.all_gather_into(&mine[..], &mut all[..]);
    all.chunks(LEN).map(|c| String::from_utf8_lossy(c).trim_end_matches('\0').to_string()).collect()
}

fn host_name() -> String {
    mpi::environment::processor_name()
        .map(|s| s.trim_end_matches('\0').to_string())
        .unwrap_or_else(|_| "localhost".into())
}

/// Checks that every rank built graph `id` with the same `description`; on every rank, the
/// same verdict.
pub(crate) fn agree_on_graph(engine: &Engine, id: u32, description: &str) -> Result<(), Error> {
    if engine.ranks() == 1 {
        return Ok(());
    }
    let timeout = Some(GRAPH_AGREEMENT_TIMEOUT);
    if engine.rank() != 0 {
        let from = engine.rank() as u32;
        engine.send_control(0, Control::Fingerprint { graph: id, from, description: description.to_string() });
        let verdict = engine.control().wait(timeout, |c| match c {
            Control::Verdict { graph, error } if *graph == id => Some(error.clone()),
            _ => None,
        });
        return match verdict {
            Some(None) => Ok(()),
            Some(Some(e)) => Err(Error::graph(e)),
            None => Err(Error::graph(format!("graph #{id}: rank 0 did not confirm it within {timeout:?}: all ranks must build the same graphs in the same order"))),
        };
    }
    let mut error = None;
    for _ in 1..engine.ranks() {
        let got = engine.control().wait(timeout, |c| match c {
            Control::Fingerprint { graph, from, description } if *graph == id => Some((*from, description.clone())),
            _ => None,
        });
        match got {
            Some((from, d)) if d != description && error.is_none() => {
                error = Some(format!(
                    "ranks built different graphs: graph #{id} on rank {from} differs from rank 0: {}",
                    graph::first_difference(&d, description)
                ))
            }
            Some(_) => {}
            None => {
                error = Some(format!("graph #{id}: not every rank built it within {timeout:?}: all ranks must build the same graphs in the same order"));
                break;
            }
        }
    }
    for r in 1..engine.ranks() {
        engine.send_control(r, Control::Verdict { graph: id, error: error.clone() });
    }
    error.map_or(Ok(()), |e| Err(Error::graph(e)))
}

/// Rank 0's `verdict` on the trace file, on every rank (`None`: rank 0 can write it).
pub(crate) fn agree_on_trace_file(engine: &Engine, verdict: Option<String>) -> Option<String> {
    let answer = root_says(
        engine,
        verdict,
        |error| Control::TraceReady { error },
        |c| match c {
            Control::TraceReady { error } => Some(error.clone()),
            _ => None,
        },
    );
    answer.unwrap_or_else(|| {
        Some(format!("rank 0 did not answer within {GRAPH_AGREEMENT_TIMEOUT:?}: every rank must call trace_to"))
    })
}

/// Rank 0's `verdict` on exporting a service, on every rank (`None`: it is exported).
pub(crate) fn agree_on_export(engine: &Engine, verdict: Option<String>) -> Option<String> {
    let answer = root_says(
        engine,
        verdict,
        |error| Control::Exported { error },
        |c| match c {
            Control::Exported { error } => Some(error.clone()),
            _ => None,
        },
    );
    answer.unwrap_or_else(|| {
        Some(format!("rank 0 did not answer within {GRAPH_AGREEMENT_TIMEOUT:?}: every rank must call export"))
    })
}

/// Rank 0 sends its `verdict` to every rank; the others wait for it (`None`: it did not come).
fn root_says(
    engine: &Engine,
    verdict: Option<String>,
    wrap: impl Fn(Option<String>) -> Control,
    unwrap: impl Fn(&Control) -> Option<Option<String>>,
) -> Option<Option<String>> {
    if engine.rank() == 0 {
        for r in 1..engine.ranks() {
            engine.send_control(r, wrap(verdict.clone()));
        }
        return Some(verdict);
    }
    engine.control().wait(Some(GRAPH_AGREEMENT_TIMEOUT), unwrap)
}

/// Returns once every rank has called it; with a `timeout`, gives up if the others do not.
pub(crate) fn shut_down_together(engine: &Engine, timeout: Option<Duration>) -> Result<(), Error> {
    let (rank, ranks) = (engine.rank(), engine.ranks());
    if ranks == 1 {
        return Ok(());
    }
    let gave_up = || {
        Error::new(ErrorKind::Failed, format!("dps: rank {rank}: the other ranks did not shut down within {timeout:?}"))
    };
    if rank == 0 {
        for _ in 1..ranks {
            engine.control().wait(timeout, |c| matches!(c, Control::Done { .. }).then_some(())).ok_or_else(gave_up)?;
        }
        for r in 1..ranks {
            engine.send_control(r, Control::Shutdown);
        }
    } else {
        engine.send_control(0, Control::Done { from: rank as u32 });
        engine.control().wait(timeout, |c| matches!(c, Control::Shutdown).then_some(())).ok_or_else(gave_up)?;
    }
    Ok(())
}

/// Gathers every rank's trace events (`mine` on this rank) on rank 0: `Some` there, with the
/// ranks that answered within `TRACE_TIMEOUT`; `None` on the others.
pub(crate) fn gather_traces(engine: &Engine, mine: String) -> Option<Vec<String>> {
    if engine.rank() != 0 {
        engine.send_control(0, Control::Trace { from: engine.rank() as u32, events: mine });
        return None;
    }
    let mut all = vec![mine];
    for _ in 1..engine.ranks() {
        match engine.control().wait(Some(TRACE_TIMEOUT), |c| match c {
            Control::Trace { events, .. } => Some(events.clone()),
            _ => None,
        }) {
            Some(events) => all.push(events),
            None => break,
        }
    }
    Some(all)
}
