//! Streams of DPS tokens from rank 0 to one peer over message sizes: how long each message
//! holds the path while others follow (the simulator's port occupancy,
//! `dps_model::platform::Link::transfer_us`). A ping-pong measures a lone message end to
//! end; in a burst, as a farm's master sends its blocks, the copies of consecutive messages
//! overlap (on 4 emulated nodes at half a core, a 3 MiB block left every 3.2 ms where the
//! ping-pong took 5.2 ms for 4 MiB: docs/measurements/2026-11-29-sim-accuracy-by-cpu-share.md).

use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use dps::{route, Bulk, Graph, MergeFn, Node, Runtime};
use dps_harness::median;

use super::pingpong::Effort;

/// Tokens in flight: enough to keep the path busy, as the apps' windows do.
const WINDOW: usize = 8;
/// At least this many messages per measurement, so that the steady pace dominates.
const MIN_MESSAGES: u64 = 4 * WINDOW as u64;
/// At least this long per measurement: on a node with a CPU quota (an emulated cluster's,
/// 10 ms periods) a shorter stream falls inside or outside the node's slice by chance, a
/// longer one averages over several periods, as an app's transfers do.
const MIN_SPAN: Duration = Duration::from_millis(50);

/// What the merge learns: messages acknowledged, and the time from the first
/// acknowledgement to the last (the stream's steady part, without the pipeline's filling).
type Paced = (u64, Duration);

/// The stream graph to `peer` (every rank builds it, rank 0 calls it): `(k, bytes)` sends
/// `k` tokens of `bytes`, the peer acknowledges each with one byte.
pub(super) fn graph(rt: &Runtime, peer: usize) -> Result<Graph<(u64, usize), Paced>> {
    let home = rt.collection(&format!("stream-home-{peer}"), "0", |_| ())?;
    let away = rt.collection(&format!("stream-away-{peer}"), &peer.to_string(), |_| ())?;
    let emit = Node::split("emit", &home, route::fixed(0), |_: &mut (), (k, bytes): (u64, usize)| {
        (0..k).map(move |_| Bulk::<u8>::recycled(bytes))
    })
    .window(WINDOW);
    let sink = Node::leaf("sink", &away, route::fixed(0), |_: &mut (), b: Bulk<u8>| u8::from(!b.is_empty()));
    let count = Node::merge(
        "pace",
        &home,
        MergeFn::new(
            |_: &mut ()| (0u64, None::<Instant>, Duration::ZERO),
            |_, (n, first, span): &mut (u64, Option<Instant>, Duration), _: u8| {
                *n += 1;
                match first {
                    None => *first = Some(Instant::now()),
                    Some(t) => *span = t.elapsed(),
                }
            },
            |_, (n, _, span)| (n, span),
        ),
    );
    Ok(rt.graph(&format!("stream-{peer}"), emit >> sink >> count)?)
}

/// The time per message in a stream of each size, µs: the median over `effort.reps`
/// streams of about `effort.time` (at least [`MIN_SPAN`] and [`MIN_MESSAGES`] messages).
pub(super) fn per_message(
    rt: &Runtime,
    graph: &Graph<(u64, usize), Paced>,
    sizes: &[usize],
    effort: Effort,
) -> Result<Vec<f64>> {
    let pace = |k: u64, bytes: usize| -> Result<f64> {
        let (n, span) = rt.call(graph, (k, bytes))?;
        ensure!(n == k, "the stream acknowledged {n} of {k} messages");
        Ok(span.as_secs_f64() * 1e6 / (k - 1) as f64)
    };
    let span = effort.time.max(MIN_SPAN).as_secs_f64() * 1e6;
    let mut out = Vec::with_capacity(sizes.len());
    for &bytes in sizes {
        let probe = pace(MIN_MESSAGES, bytes)?;
        let k = ((span / probe.max(1e-3)) as u64).clamp(MIN_MESSAGES, 1 << 20);
        let times = (0..effort.reps).map(|_| pace(k, bytes)).collect::<Result<Vec<_>>>()?;
        out.push(median(&times));
    }
    Ok(out)
}
