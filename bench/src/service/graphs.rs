//! The graphs of the `service` benchmark. The served pair (`echo`: 8 bytes in, 8 out;
//! `produce`: a byte count in, a `Bulk<u8>` of that many bytes out) is built the same way
//! by the serving process (on its one rank) and by the worker (on rank 1, and on rank 0),
//! so that the service and the in-application calls run the same leaves; the worker wraps
//! each in the same split → leaf → merge for bandwidth.

use std::time::Instant;

use anyhow::{ensure, Result};
use dps::{route, Bulk, Collection, Graph, MergeFn, Node, Path, Runtime};

use crate::transport::{calibration_messages, stream_messages, PINGPONG_ITERS, PINGPONG_TIME};
use dps_harness::median;

const WARMUP: usize = 20;

/// The echo leaf: the number plus one (8 bytes each way).
pub(super) fn echo<S: Send + 'static>(on: &Collection<S>) -> Node<u64, u64> {
    Node::leaf("echo", on, route::fixed(0), |_: &mut S, x: u64| x + 1)
}

/// The producing leaf: `n` bytes (from the runtime's buffer pool) for a request of `n`.
pub(super) fn produce<S: Send + 'static>(on: &Collection<S>) -> Node<u64, Bulk<u8>> {
    Node::leaf("produce", on, route::fixed(0), |_: &mut S, n: u64| Bulk::<u8>::recycled(n as usize))
}

/// `(count, bytes)` in: `count` requests of `bytes` each through `call`, `window` in flight;
/// the bytes received out.
fn stream(main: &Collection<()>, call: Node<u64, Bulk<u8>>, window: usize) -> Path<(u64, u64), u64> {
    let split =
        Node::split("requests", main, route::fixed(0), |_: &mut (), (k, bytes): (u64, u64)| (0..k).map(move |_| bytes))
            .window(window);
    let count = Node::merge(
        "count",
        main,
        MergeFn::new(|_: &mut ()| 0u64, |_, n: &mut u64, b: Bulk<u8>| *n += b.len() as u64, |_, n| n),
    );
    split >> call >> count
}

/// One way to reach the served leaves: an 8-byte call and a stream of bulk replies.
pub(super) struct Route {
    echo: Graph<u64, u64>,
    stream: Graph<(u64, u64), u64>,
}

impl Route {
    /// The leaves of this application on `on` (called from `main`, thread 0 on rank 0).
    pub(super) fn in_app(
        rt: &Runtime,
        name: &str,
        main: &Collection<()>,
        on: &Collection<()>,
        window: usize,
    ) -> Result<Self> {
        Ok(Route {
            echo: rt.graph(&format!("{name} echo"), echo(on))?,
            stream: rt.graph(&format!("{name} stream"), stream(main, produce(on), window))?,
        })
    }

    /// The leaves of the service `prefix`.echo and `prefix`.produce, imported.
    pub(super) fn service(rt: &Runtime, prefix: &str, main: &Collection<()>, window: usize) -> Result<Self> {
        let echo = rt.import::<u64, u64>(&format!("{prefix}.echo"))?;
        let produce = rt.import::<u64, Bulk<u8>>(&format!("{prefix}.produce"))?;
        Ok(Route {
            echo: rt.graph("service echo", echo.leaf("echo", main, route::fixed(0)))?,
            stream: rt.graph("service stream", stream(main, produce.leaf("produce", main, route::fixed(0)), window))?,
        })
    }

    /// 8-byte round trips one after the other: the median over `reps` of each repetition's
    /// median, in µs.
    pub(super) fn rtt(&self, rt: &Runtime, reps: usize) -> Result<f64> {
        for x in 0..WARMUP as u64 {
            ensure!(rt.call(&self.echo, x)? == x + 1, "the echo answered wrong");
        }
        let mut medians = Vec::with_capacity(reps);
        for _ in 0..reps {
            let mut rtts = Vec::new();
            let start = Instant::now();
            while rtts.len() < PINGPONG_ITERS.1 && (rtts.len() < PINGPONG_ITERS.0 || start.elapsed() < PINGPONG_TIME) {
                let x = rtts.len() as u64;
                let t = Instant::now();
                let y = rt.call(&self.echo, x)?;
                rtts.push(t.elapsed().as_secs_f64() * 1e6);
                ensure!(y == x + 1, "the echo answered {y} to {x}");
            }
            medians.push(median(&rtts));
        }
        Ok(median(&medians))
    }

    /// Streams replies of `bytes` bytes, as many as take about the target time (from a
    /// calibration run): returns their count and the median time over `reps`, in seconds.
    pub(super) fn bandwidth(&self, rt: &Runtime, bytes: usize, reps: usize) -> Result<(usize, f64)> {
        let k0 = calibration_messages(bytes);
        let start = Instant::now();
        let got = rt.call(&self.stream, (k0 as u64, bytes as u64))?;
        ensure!(got == (k0 * bytes) as u64, "{got} bytes received instead of {}", k0 * bytes);
        let k = stream_messages(k0, start.elapsed().as_secs_f64());
        let mut times = Vec::with_capacity(reps);
        for _ in 0..reps {
            let start = Instant::now();
            let got = rt.call(&self.stream, (k as u64, bytes as u64))?;
            times.push(start.elapsed().as_secs_f64());
            ensure!(got == (k * bytes) as u64, "{got} bytes received instead of {}", k * bytes);
        }
        Ok((k, median(&times)))
    }
}
