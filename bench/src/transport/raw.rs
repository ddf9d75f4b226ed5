//! The raw rsmpi baseline: blocking ping-pong, and streaming with a window of immediate sends
//! acknowledged one by one. Both ranks call each function; the results are rank 0's.

use std::collections::VecDeque;
use std::time::Instant;

use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, Process, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Root};

use super::{calibration_messages, stream_messages, PINGPONG_ITERS, PINGPONG_TIME};
use dps_harness::median;

const WARMUP: usize = 5;
const CALIBRATION: usize = 5;

/// One round trip: rank 0 sends `buf` and receives it back, rank 1 the reverse.
fn round_trip(rank: i32, peer: &Process<'_>, buf: &mut [u8]) {
    if rank == 0 {
        peer.send(&buf[..]);
        peer.receive_into(buf);
    } else {
        peer.receive_into(&mut buf[..]);
        peer.send(&buf[..]);
    }
}

/// Ping-pong of `bytes`-byte messages: returns the median (over `reps` repetitions) of each
/// repetition's median round-trip time, in µs. Rank 0 picks the iteration count from a short
/// calibration and broadcasts it.
pub(super) fn pingpong(world: &SimpleCommunicator, bytes: usize, reps: usize) -> f64 {
    let rank = world.rank();
    let peer = world.process_at_rank(1 - rank);
    let mut buf = vec![1u8; bytes];
    for _ in 0..WARMUP {
        round_trip(rank, &peer, &mut buf);
    }
    let start = Instant::now();
    for _ in 0..CALIBRATION {
        round_trip(rank, &peer, &mut buf);
    }
    let per = start.elapsed().as_secs_f64() / CALIBRATION as f64;
    let mut iters =
        ((PINGPONG_TIME.as_secs_f64() / per) as u64).clamp(PINGPONG_ITERS.0 as u64, PINGPONG_ITERS.1 as u64);
    world.process_at_rank(0).broadcast_into(&mut iters);

    let mut medians = Vec::with_capacity(reps);
    let mut rtts = Vec::with_capacity(iters as usize);
    for _ in 0..reps {
        world.barrier();
        rtts.clear();
        for _ in 0..iters {
            let t = Instant::now();
            round_trip(rank, &peer, &mut buf);
            rtts.push(t.elapsed().as_secs_f64() * 1e6);
        }
        medians.push(median(&rtts));
    }
    median(&medians)
}

/// Rank 0 streams `k` messages of `bytes` bytes to rank 1, at most `window` immediate sends
/// outstanding: message `i + window` is sent once rank 1 acknowledged message `i`. Rank 0
/// picks `k` from a calibration run and broadcasts it. Returns `k` and the median time of
/// `reps` repetitions, in seconds.
pub(super) fn stream(world: &SimpleCommunicator, bytes: usize, window: usize, reps: usize) -> (usize, f64) {
    let k0 = calibration_messages(bytes);
    world.barrier();
    let seconds = stream_once(world, bytes, k0, window);
    let mut k = stream_messages(k0, seconds) as u64;
    world.process_at_rank(0).broadcast_into(&mut k);
    let k = k as usize;
    let times: Vec<f64> = (0..reps)
        .map(|_| {
            world.barrier();
            stream_once(world, bytes, k, window)
        })
        .collect();
    (k, median(&times))
}

/// The sender has one buffer per message in flight, as a stream of distinct data needs (the
/// DPS tokens are distinct vectors too); the receiver reuses one buffer. Buffers are
/// allocated and touched before the clock starts.
fn stream_once(world: &SimpleCommunicator, bytes: usize, k: usize, window: usize) -> f64 {
    let rank = world.rank();
    let peer = world.process_at_rank(1 - rank);
    if rank == 0 {
        let bufs: Vec<Vec<u8>> = (0..window).map(|_| vec![1u8; bytes]).collect();
        let start = Instant::now();
        mpi::request::scope(|scope| {
            let mut sends = VecDeque::with_capacity(window);
            for i in 0..k.min(window) {
                sends.push_back(peer.immediate_send(scope, &bufs[i % window][..]));
            }
            let mut ack = 0u32;
            for i in 0..k {
                peer.receive_into(&mut ack);
                debug_assert_eq!(ack as usize, i);
                sends.pop_front().expect("a send per message").wait_without_status();
                if i + window < k {
                    sends.push_back(peer.immediate_send(scope, &bufs[(i + window) % window][..]));
                }
            }
        });
        start.elapsed().as_secs_f64()
    } else {
        let mut buf = vec![1u8; bytes];
        let start = Instant::now();
        for i in 0..k {
            peer.receive_into(&mut buf[..]);
            peer.send(&(i as u32));
        }
        start.elapsed().as_secs_f64()
    }
}
