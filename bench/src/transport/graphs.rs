//! The DPS side: an echo leaf on rank 1 (ping-pong) and a windowed split on rank 0 streaming
//! `Bulk<u8>` tokens to a leaf on rank 1 that drops them, counted by a merge on rank 0.

use std::time::Instant;

use anyhow::{ensure, Result};
use dps::{route, Bulk, Graph, MergeFn, Node, Runtime};

use super::{calibration_messages, stream_messages, PINGPONG_ITERS, PINGPONG_TIME};
use dps_harness::median;

const WARMUP: usize = 5;

/// The two benchmark graphs; every rank builds them, only rank 0 calls them.
pub(super) struct Graphs {
    echo: Graph<Bulk<u8>, Bulk<u8>>,
    stream: Graph<(u64, u64), u64>,
}

impl Graphs {
    /// Builds the graphs (collective).
    pub(super) fn build(rt: &Runtime, window: usize) -> Result<Self> {
        let main = rt.collection("main", "0", |_| ())?;
        let remote = rt.collection("remote", "1", |_| ())?;
        let echo = rt.graph("echo", Node::leaf("echo", &remote, route::fixed(0), |_: &mut (), b: Bulk<u8>| b))?;
        let split = Node::split("emit", &main, route::fixed(0), |_: &mut (), (k, bytes): (u64, u64)| {
            (0..k).map(move |_| Bulk::<u8>::recycled(bytes as usize))
        })
        .window(window);
        let sink = Node::leaf("sink", &remote, route::fixed(0), |_: &mut (), payload: Bulk<u8>| {
            drop(payload);
            1u8
        });
        let count =
            Node::merge("count", &main, MergeFn::new(|_: &mut ()| 0u64, |_, n: &mut u64, _: u8| *n += 1, |_, n| n));
        let stream = rt.graph("stream", split >> sink >> count)?;
        Ok(Graphs { echo, stream })
    }

    /// Ping-pong through the echo leaf: the median over `reps` of each repetition's median
    /// round-trip time, in µs. The returned payload is sent again, so nothing is copied on
    /// rank 0.
    pub(super) fn pingpong(&self, rt: &Runtime, bytes: usize, reps: usize) -> Result<f64> {
        let mut payload = Bulk(vec![1u8; bytes]);
        for _ in 0..WARMUP {
            payload = rt.call(&self.echo, payload)?;
        }
        let mut medians = Vec::with_capacity(reps);
        for _ in 0..reps {
            let mut rtts = Vec::new();
            let start = Instant::now();
            while rtts.len() < PINGPONG_ITERS.1 && (rtts.len() < PINGPONG_ITERS.0 || start.elapsed() < PINGPONG_TIME) {
                let t = Instant::now();
                payload = rt.call(&self.echo, payload)?;
                rtts.push(t.elapsed().as_secs_f64() * 1e6);
            }
            medians.push(median(&rtts));
        }
        ensure!(payload.len() == bytes, "the echo returned {} bytes instead of {bytes}", payload.len());
        Ok(median(&medians))
    }

    /// Streams tokens of `bytes` bytes, as many as take about the target time (from a
    /// calibration run): returns their count and the median time over `reps`, in seconds.
    pub(super) fn stream(&self, rt: &Runtime, bytes: usize, reps: usize) -> Result<(usize, f64)> {
        let k0 = calibration_messages(bytes);
        let start = Instant::now();
        ensure!(rt.call(&self.stream, (k0 as u64, bytes as u64))? == k0 as u64, "the merge lost tokens");
        let k = stream_messages(k0, start.elapsed().as_secs_f64());
        let mut times = Vec::with_capacity(reps);
        for _ in 0..reps {
            let start = Instant::now();
            let n = rt.call(&self.stream, (k as u64, bytes as u64))?;
            times.push(start.elapsed().as_secs_f64());
            ensure!(n == k as u64, "the merge counted {n} tokens instead of {k}");
        }
        Ok((k, median(&times)))
    }
}
