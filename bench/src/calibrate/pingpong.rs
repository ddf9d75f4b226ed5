//! Ping-pong between rank 0 and one peer over message sizes, through raw MPI (before the
//! runtime starts) and through DPS tokens (an echo leaf on the peer), giving the one-way
//! time per size: half the median round trip.

use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use dps::{route, Bulk, Graph, Node, Runtime};
use dps_harness::median;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Root};

/// How long and how often each size is measured.
#[derive(Clone, Copy, Debug)]
pub(super) struct Effort {
    /// Repetitions (the median of their medians is kept).
    pub(super) reps: usize,
    /// About this long per repetition...
    pub(super) time: Duration,
    /// ...with at least this many round trips.
    pub(super) min_iters: u64,
}

const WARMUP: usize = 3;

/// How long rank 0 and its peer exchange small messages before the first measurement: just
/// after start-up both busy-polling ranks may share a core until the OS moves one, and each
/// round trip then takes a scheduler time slice (4 ms here).
const SETTLE: Duration = Duration::from_millis(30);

/// Round trips of one byte until rank 0 has spent [`SETTLE`]; the byte says whether to go on.
fn settle(world: &SimpleCommunicator, peer: i32) {
    let rank = world.rank();
    if rank == 0 {
        let other = world.process_at_rank(peer);
        let start = Instant::now();
        loop {
            let go = u8::from(start.elapsed() < SETTLE);
            other.send(&go);
            let mut echo = 0u8;
            other.receive_into(&mut echo);
            if go == 0 {
                break;
            }
        }
    } else if rank == peer {
        let other = world.process_at_rank(0);
        loop {
            let mut go = 0u8;
            other.receive_into(&mut go);
            other.send(&go);
            if go == 0 {
                break;
            }
        }
    }
}

/// Raw MPI ping-pong between rank 0 and `peer`, for every size; collective (every rank
/// calls it; ranks other than 0 and `peer` only take part in the barriers). Returns the
/// one-way times in µs, meaningful on rank 0.
pub(super) fn raw(world: &SimpleCommunicator, peer: i32, sizes: &[usize], effort: Effort) -> Vec<f64> {
    let rank = world.rank();
    settle(world, peer);
    let mut out = Vec::with_capacity(sizes.len());
    for &bytes in sizes {
        world.barrier();
        let mut buf = vec![1u8; bytes];
        let active = rank == 0 || rank == peer;
        let other = world.process_at_rank(if rank == 0 { peer } else { 0 });
        let round_trip = |buf: &mut [u8]| {
            if rank == 0 {
                other.send(&buf[..]);
                other.receive_into(buf);
            } else {
                other.receive_into(&mut buf[..]);
                other.send(&buf[..]);
            }
        };
        let mut iters = effort.min_iters;
        if active {
            for _ in 0..WARMUP {
                round_trip(&mut buf);
            }
            let start = Instant::now();
            round_trip(&mut buf);
            let per = start.elapsed().as_secs_f64().max(1e-9);
            iters = ((effort.time.as_secs_f64() / per) as u64).clamp(effort.min_iters, 1_000_000);
        }
        world.process_at_rank(0).broadcast_into(&mut iters);
        let mut medians = Vec::with_capacity(effort.reps);
        for _ in 0..effort.reps {
            world.barrier();
            if !active {
                continue;
            }
            let mut rtts = Vec::with_capacity(iters as usize);
            for _ in 0..iters {
                let t = Instant::now();
                round_trip(&mut buf);
                rtts.push(t.elapsed().as_secs_f64() * 1e6);
            }
            medians.push(median(&rtts));
        }
        out.push(median(&medians) / 2.0);
    }
    out
}

/// The DPS echo graph to `peer`; every rank builds it, rank 0 calls it.
pub(super) fn echo_graph(rt: &Runtime, peer: usize) -> Result<Graph<Bulk<u8>, Bulk<u8>>> {
    let remote = rt.collection(&format!("echo-{peer}"), &peer.to_string(), |_| ())?;
    Ok(rt.graph(&format!("echo-{peer}"), Node::leaf("echo", &remote, route::fixed(0), |_: &mut (), b: Bulk<u8>| b))?)
}

/// DPS ping-pong through `echo` (on rank 0): the one-way time per size, µs. Each call sends
/// the next of [`payloads`]`(bytes)` payloads, in turn, so that a large one comes from
/// memory as an app's block does, not from the cache where the last round trip left it
/// (1 MiB one way: about 180 µs from memory on this VM, 120-500 µs hot, one or the other per
/// job). The payload that comes back takes its place, so rank 0 copies nothing.
pub(super) fn dps(rt: &Runtime, echo: &Graph<Bulk<u8>, Bulk<u8>>, sizes: &[usize], effort: Effort) -> Result<Vec<f64>> {
    let mut out = Vec::with_capacity(sizes.len());
    for &bytes in sizes {
        let mut set: Vec<Bulk<u8>> = (0..payloads(bytes)).map(|_| Bulk(vec![1u8; bytes])).collect();
        let mut next = 0;
        let mut round_trip = || -> Result<f64> {
            let t = Instant::now();
            let payload = std::mem::take(&mut set[next]);
            set[next] = rt.call(echo, payload)?;
            next = (next + 1) % set.len();
            Ok(t.elapsed().as_secs_f64() * 1e6)
        };
        for _ in 0..WARMUP {
            round_trip()?;
        }
        let mut medians = Vec::with_capacity(effort.reps);
        for _ in 0..effort.reps {
            let mut rtts = Vec::new();
            let start = Instant::now();
            while (rtts.len() as u64) < effort.min_iters || start.elapsed() < effort.time {
                rtts.push(round_trip()?);
            }
            medians.push(median(&rtts));
        }
        let short = set.iter().find(|p| p.len() != bytes);
        ensure!(short.is_none(), "the echo returned {} bytes instead of {bytes}", short.map_or(0, |p| p.len()));
        out.push(median(&medians) / 2.0);
    }
    Ok(out)
}

/// Bytes the payloads of one size span together, when they are large enough: twice a
/// 32 MiB L3 shared by the two ranks, so each is cold when its turn comes.
const COLD_SPAN: usize = 64 << 20;
/// At most this many payloads: small messages cost their latency, hot or cold.
const MAX_PAYLOADS: usize = 1024;

/// How many payloads of `bytes` a ping-pong takes in turn.
fn payloads(bytes: usize) -> usize {
    COLD_SPAN.div_ceil(bytes.max(1)).clamp(1, MAX_PAYLOADS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_payloads_span_twice_the_l3_and_small_ones_are_capped() {
        assert_eq!(payloads(1 << 20), 64);
        assert_eq!(payloads(4 << 20) * (4 << 20), COLD_SPAN);
        assert_eq!(payloads(1), MAX_PAYLOADS);
        assert_eq!(payloads(0), MAX_PAYLOADS);
        assert_eq!(payloads(256 << 20), 1);
    }
}
