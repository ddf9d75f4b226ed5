//! `α_out`, `α_in` (spec §5.1): the slowdown of a compute kernel on rank 0 while DPS streams
//! messages from rank 0 to a peer, or from the peer to rank 0, against the kernel alone.
//!
//! The simulator's rule (spec §3.4) is `cpu_avail = 1 − α_out·n_out − α_in·n_in`; with one
//! transfer at a time, `α = 1 − T_alone/T_during`. The CPU time per message is the kernel's
//! extra time over the messages that moved while it ran (counted on rank 0). The values only
//! mean per-message CPU cost when every thread involved has a core of its own: rank 0's
//! kernel, both progress threads and the peer's worker. Otherwise the kernel shares a core
//! and the slowdown measures the sharing; the file then says `measurable = false`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use dps::{route, Bulk, Graph, MergeFn, Node, Runtime};
use dps_harness::median;
use dps_model::platform::Overheads;

/// Messages of the streams, bytes.
const MESSAGE: usize = 64 << 10;
/// Tokens in flight per stream.
const WINDOW: usize = 8;
/// The kernel: one `R`×`R` dgemm per call.
const R: usize = 128;

/// Messages that reached their rank-0 operation, and the time of the last, in ns since
/// [`epoch`].
static ARRIVALS: AtomicU64 = AtomicU64::new(0);
static LAST_NS: AtomicU64 = AtomicU64::new(0);

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn arrived() {
    ARRIVALS.fetch_add(1, Ordering::Relaxed);
    LAST_NS.store(epoch().elapsed().as_nanos() as u64, Ordering::Relaxed);
}

/// The two streams: rank 0 → peer (`out`), peer → rank 0 (`into`). Collective.
pub(super) struct Streams {
    out: Graph<u64, u64>,
    into: Graph<u64, u64>,
}

impl Streams {
    pub(super) fn build(rt: &Runtime, peer: usize) -> Result<Streams> {
        let home = rt.collection("alpha-home", "0", |_| ())?;
        let away = rt.collection("alpha-away", &peer.to_string(), |_| ())?;
        let emit = |coll| {
            Node::split("emit", coll, route::fixed(0), |_: &mut (), k: u64| {
                (0..k).map(|_| Bulk::<u8>::recycled(MESSAGE))
            })
            .window(WINDOW)
        };
        let count = |coll, on_home: bool| {
            Node::merge(
                "count",
                coll,
                MergeFn::new(
                    |_: &mut ()| 0u64,
                    move |_, n: &mut u64, _: u8| {
                        if on_home {
                            arrived();
                        }
                        *n += 1
                    },
                    |_, n| n,
                ),
            )
        };
        let sink = |coll, on_home: bool| {
            Node::leaf("sink", coll, route::fixed(0), move |_: &mut (), b: Bulk<u8>| {
                drop(b);
                if on_home {
                    arrived();
                }
                1u8
            })
        };
        let out = rt.graph("alpha-out", emit(&home) >> sink(&away, false) >> count(&home, true))?;
        let into = rt.graph("alpha-in", emit(&away) >> sink(&home, true) >> count(&away, false))?;
        Ok(Streams { out, into })
    }
}

/// The kernel's time for `calls` calls, seconds.
fn kernel(calls: usize, a: &[f64], b: &[f64], c: &mut [f64]) -> f64 {
    let start = Instant::now();
    for _ in 0..calls {
        dps_dense::blas::gemm_col(R, R, R, -1e-3, a, R, b, R, 1.0, c, R);
    }
    start.elapsed().as_secs_f64()
}

/// One measurement during a stream: the kernel's time and the messages that arrived while it
/// ran, or `None` if the stream ended before the kernel did.
fn during(
    rt: &Runtime,
    graph: &Graph<u64, u64>,
    messages: u64,
    run: &mut dyn FnMut() -> f64,
) -> Result<Option<(f64, u64)>> {
    let pending = rt.start(graph, messages);
    std::thread::sleep(Duration::from_millis(2)); // let the stream reach its pace
    let before = ARRIVALS.load(Ordering::Relaxed);
    let seconds = run();
    let end_ns = epoch().elapsed().as_nanos() as u64;
    let moved = ARRIVALS.load(Ordering::Relaxed) - before;
    ensure!(pending.wait()? == messages, "the stream lost messages");
    Ok((LAST_NS.load(Ordering::Relaxed) > end_ns).then_some((seconds, moved)))
}

/// Measures the overheads on rank 0 with `reps` alternations of alone / sending /
/// receiving, the kernel running about `time` each. `measurable` says whether each thread
/// has a core of its own (see the module documentation).
pub(super) fn measure(
    rt: &Runtime,
    streams: &Streams,
    reps: usize,
    time: Duration,
    measurable: bool,
    note: String,
) -> Result<Overheads> {
    let a = dps_dense::gen::cols_major(1, 0..R, 0..R);
    let b = dps_dense::gen::cols_major(2, 0..R, 0..R);
    let mut c = vec![0.0; R * R];
    kernel(3, &a, &b, &mut c);
    let per_call = kernel(5, &a, &b, &mut c) / 5.0;
    let calls = ((time.as_secs_f64() / per_call.max(1e-9)) as usize).max(3);
    // The stream's pace, for a message count that outlasts the kernel by a margin.
    let start = Instant::now();
    let probe = 4 * WINDOW as u64;
    rt.call(&streams.out, probe)?;
    let per_message = start.elapsed().as_secs_f64() / probe as f64;
    let mut messages = ((calls as f64 * per_call * 3.0) / per_message.max(1e-9)) as u64 + probe;

    let (mut alone, mut sending, mut receiving) = (Vec::new(), Vec::new(), Vec::new());
    let (mut sent, mut received) = (Vec::new(), Vec::new());
    let mut run = || kernel(calls, &a, &b, &mut c);
    for _ in 0..reps {
        alone.push(run());
        for (graph, times, counts) in
            [(&streams.out, &mut sending, &mut sent), (&streams.into, &mut receiving, &mut received)]
        {
            loop {
                match during(rt, graph, messages, &mut run)? {
                    Some((seconds, moved)) => {
                        times.push(seconds);
                        counts.push(moved as f64);
                        break;
                    }
                    None if messages < 1 << 24 => messages *= 2, // the stream was too short
                    None => anyhow::bail!("calibrate: a stream of {messages} messages ended before the kernel"),
                }
            }
        }
    }
    let (t0, t_out, t_in) = (median(&alone), median(&sending), median(&receiving));
    let alpha = |t: f64| (1.0 - t0 / t).clamp(0.0, 1.0);
    let per_message_us = |t: f64, n: f64| if n > 0.0 { ((t - t0).max(0.0) / n) * 1e6 } else { 0.0 };
    Ok(Overheads {
        measurable,
        note,
        alpha_out: alpha(t_out),
        alpha_in: alpha(t_in),
        send_us_per_message: per_message_us(t_out, median(&sent)),
        receive_us_per_message: per_message_us(t_in, median(&received)),
        message_bytes: MESSAGE as u64,
    })
}
