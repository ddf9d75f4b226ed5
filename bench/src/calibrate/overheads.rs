//! The CPU cost of a message between ranks, per side: what the simulator charges the
//! sending operation and the receiving rank's reception job (`dps::SimOptions::send_cpu`,
//! `receive_cpu`), as `µs per message + ns per byte`.
//!
//! Measured where it matters, on saturated cores: rank 0 (its calling thread) and the peer
//! (an operation) each run a gemm kernel for a while, first alone, then while DPS streams
//! messages from rank 0 to the peer. Each side counts the CPU time its process spent
//! besides the kernel's thread (the process's CPU clock less the kernel thread's), which is
//! what the transport, the stream's operations and the polling took from the cores. The
//! extra over the same count without a stream, per message moved meanwhile, is the side's
//! cost: rank 0's the send cost, the peer's the receive cost. CPU clocks, not the kernels'
//! slowdown: on a machine with fewer cores than busy threads the slowdown depends on where
//! the scheduler put each thread, the CPU time does not. Two message sizes separate the
//! cost per message from the cost per byte.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use dps::{cpu_time, route, Bulk, Graph, MergeFn, Node, Runtime};
use dps_harness::median;
use dps_model::platform::{Link, Overheads, TransferCost};

/// The two message sizes, bytes: a small one (cost per message) and one of the size of the
/// dense apps' blocks (cost per byte).
pub(super) const SMALL: usize = 64;
pub(super) const LARGE: usize = 256 << 10;
/// Tokens in flight in the stream.
const WINDOW: usize = 8;
/// The kernel: one `R`×`R` dgemm per call, on operands taken in turn from `SETS` pairs, so
/// that they come from memory, not from the cores' caches, as the apps' blocks do: 32 pairs
/// are 32 MiB per rank, twice a 32 MiB shared L3 with both ranks at work.
pub(super) const R: usize = 256;
const SETS: usize = 32;

/// Messages that reached their operation in this process (the peer's sink counts arrivals,
/// rank 0's merge counts the returns).
static MOVED: AtomicU64 = AtomicU64::new(0);

/// A CPU clock, seconds.
/// One side's kernel run: the CPU seconds its process spent besides the kernel's thread, and
/// the messages that moved meanwhile.
#[derive(Clone, Copy, Debug)]
struct Side {
    other_cpu: f64,
    moved: u64,
    /// The kernel's wall time, seconds.
    seconds: f64,
}

/// Runs `kernel` and counts what else this process did meanwhile.
fn side(kernel: impl FnOnce()) -> Side {
    let before = MOVED.load(Ordering::Relaxed);
    let (process, thread) = (cpu_time::process(), cpu_time::thread());
    let start = Instant::now();
    kernel();
    let seconds = start.elapsed().as_secs_f64();
    let thread = cpu_time::thread() - thread;
    let process = cpu_time::process() - process;
    Side {
        other_cpu: process.saturating_sub(thread).as_secs_f64(),
        moved: MOVED.load(Ordering::Relaxed) - before,
        seconds,
    }
}

/// The stream (rank 0 → peer, each message acknowledged back) and the peer's kernel.
pub(super) struct Streams {
    stream: Graph<(u64, usize), u64>,
    /// Runs the kernel `calls` times on the peer: what the peer did meanwhile.
    peer_kernel: Graph<u64, (f64, u64)>,
}

impl Streams {
    pub(super) fn build(rt: &Runtime, peer: usize) -> Result<Streams> {
        let home = rt.collection("transfer-home", "0", |_| ())?;
        let away = rt.collection("transfer-away", &peer.to_string(), |_| ())?;
        let busy = rt.collection("transfer-busy", &peer.to_string(), |_| Matrices::new())?;
        let emit = Node::split("emit", &home, route::fixed(0), |_: &mut (), (k, bytes): (u64, usize)| {
            (0..k).map(move |_| Bulk::<u8>::recycled(bytes))
        })
        .window(WINDOW);
        let sink = Node::leaf("sink", &away, route::fixed(0), |_: &mut (), b: Bulk<u8>| {
            drop(b);
            MOVED.fetch_add(1, Ordering::Relaxed);
            1u8
        });
        let count = Node::merge(
            "count",
            &home,
            MergeFn::new(
                |_: &mut ()| 0u64,
                |_, n: &mut u64, _: u8| {
                    MOVED.fetch_add(1, Ordering::Relaxed);
                    *n += 1
                },
                |_, n| n,
            ),
        );
        let stream = rt.graph("transfer-stream", emit >> sink >> count)?;
        let kernel = Node::leaf("kernel", &busy, route::fixed(0), |m: &mut Matrices, calls: u64| {
            let s = side(|| m.kernel(calls as usize));
            (s.other_cpu, s.moved)
        });
        let peer_kernel = rt.graph("transfer-kernel", kernel)?;
        Ok(Streams { stream, peer_kernel })
    }
}

/// The kernel's operands.
struct Matrices {
    sets: Vec<(Vec<f64>, Vec<f64>)>,
    c: Vec<f64>,
    next: usize,
}

impl Matrices {
    fn new() -> Matrices {
        let sets = (0..SETS as u64)
            .map(|i| {
                (dps_dense::gen::cols_major(2 * i + 1, 0..R, 0..R), dps_dense::gen::cols_major(2 * i + 2, 0..R, 0..R))
            })
            .collect();
        Matrices { sets, c: vec![0.0; R * R], next: 0 }
    }

    fn kernel(&mut self, calls: usize) {
        for _ in 0..calls {
            let (a, b) = &self.sets[self.next];
            self.next = (self.next + 1) % SETS;
            dps_dense::blas::gemm_col(R, R, R, -1e-3, a, R, b, R, 1.0, &mut self.c, R);
        }
    }
}

/// One measurement: both kernels at once, during a stream of `messages` of `bytes` each
/// (none if 0): rank 0's side and the peer's, or `None` if the stream ended before both
/// kernels did.
fn both_kernels(
    rt: &Runtime,
    streams: &Streams,
    mine: &mut Matrices,
    calls: usize,
    (messages, bytes): (u64, usize),
) -> Result<Option<[Side; 2]>> {
    let started = MOVED.load(Ordering::Relaxed);
    let pending = (messages > 0).then(|| rt.start(&streams.stream, (messages, bytes)));
    if pending.is_some() {
        std::thread::sleep(Duration::from_millis(2)); // let the stream reach its pace
    }
    let peer = rt.start(&streams.peer_kernel, calls as u64);
    let mine = side(|| mine.kernel(calls));
    let (other_cpu, moved) = peer.wait()?;
    let peer = Side { other_cpu, moved, seconds: 0.0 };
    let still_streaming = match pending {
        Some(p) => {
            let during_both = MOVED.load(Ordering::Relaxed) - started < messages;
            ensure!(p.wait()? == messages, "the stream lost messages");
            during_both
        }
        None => true,
    };
    Ok(still_streaming.then_some([mine, peer]))
}

/// Measures the send and receive costs with `reps` rounds of alone / small / large, each
/// kernel running about `time`.
pub(super) fn measure(rt: &Runtime, streams: &Streams, reps: usize, time: Duration, note: String) -> Result<Overheads> {
    let mut mine = Matrices::new();
    mine.kernel(3);
    let start = Instant::now();
    mine.kernel(5);
    let per_call = start.elapsed().as_secs_f64() / 5.0;
    let calls = ((time.as_secs_f64() / per_call.max(1e-9)) as usize).max(3);
    // The stream's pace per size, for message counts that outlast the kernels by a margin.
    let mut counts = [0u64; 2];
    for (count, bytes) in counts.iter_mut().zip([SMALL, LARGE]) {
        let probe = 4 * WINDOW as u64;
        let start = Instant::now();
        rt.call(&streams.stream, (probe, bytes))?;
        let per_message = start.elapsed().as_secs_f64() / probe as f64;
        *count = ((calls as f64 * per_call * 4.0) / per_message.max(1e-9)) as u64 + probe;
    }
    // Per side (rank 0, peer) and size, the extra CPU seconds per message moved.
    let mut extra: [[Vec<f64>; 2]; 2] = Default::default();
    // Rank 0's kernel with the peer's running at the same time, over rank 0's alone.
    let mut co_run = Vec::new();
    for _ in 0..reps {
        let alone = side(|| mine.kernel(calls)).seconds;
        let base = both_kernels(rt, streams, &mut mine, calls, (0, 0))?.expect("no stream to end");
        co_run.push(base[0].seconds / alone);
        for (size, bytes) in [SMALL, LARGE].into_iter().enumerate() {
            let messages = &mut counts[size];
            let during = loop {
                match both_kernels(rt, streams, &mut mine, calls, (*messages, bytes))? {
                    Some(d) => break d,
                    None if *messages < 1 << 24 => *messages *= 2, // the stream was too short
                    None => anyhow::bail!("calibrate: a stream of {messages} messages ended before the kernels"),
                }
            };
            for side in 0..2 {
                let Side { other_cpu, moved, .. } = during[side];
                let extra_cpu = (other_cpu - base[side].other_cpu).max(0.0);
                if moved > 0 {
                    extra[side][size].push(extra_cpu / moved as f64);
                }
            }
        }
    }
    let cost = |side: usize| {
        let med = |v: &Vec<f64>| if v.is_empty() { 0.0 } else { median(v) };
        let (small, large) = (med(&extra[side][0]), med(&extra[side][1]));
        // A message costs at least what a small one does; the bytes cost the rest.
        let per_message = small.min(large);
        TransferCost {
            us_per_message: per_message * 1e6,
            ns_per_byte: ((large - per_message) / (LARGE - SMALL) as f64).max(0.0) * 1e9,
        }
    };
    let co_run_slowdown = median(&co_run).clamp(1.0, 10.0);
    Ok(Overheads { measurable: true, note, send: cost(0), receive: cost(1), co_run_slowdown })
}

/// The transfer costs on nodes that have `share` of a core (a CPU quota: an emulated
/// cluster's), from `link`, the inter-node DPS link measured there: each side's measured cost
/// per byte, at most `share / b` (b the link's bandwidth for [`LARGE`] messages, its
/// stream's where measured), and nothing per message.
///
/// Why the bound: a node at `share` moving b bytes per second spends at most `share` CPU
/// seconds per second on it. Before the progress thread stopped polling for 5 ms under a
/// quota, the stream's extra CPU counted those polls while the quota-bound peer was slow to
/// answer, which grew with the message and read as a cost per byte (on 0.2-core nodes: 6.4
/// ns/byte received, at which the measured 0.26 GB/s link could not run), and each side was
/// charged the bound. Since, the measured costs are below it on the sending side (0.29 against
/// 0.42 ns/byte on 0.25-core nodes): a master that feeds several workers sends faster than one
/// receiver takes (docs/measurements/2026-11-29-sim-accuracy-stream-and-polling.md). Nothing
/// per message: under a quota the small stream's cost is the wait for the peer's slice.
pub(super) fn under_quota(share: f64, link: &Link, measured: &Overheads) -> Overheads {
    let bytes_per_us = link.bytes_per_us(LARGE as u64);
    let bound = share / bytes_per_us * 1e3;
    let cost = |c: TransferCost| TransferCost { us_per_message: 0.0, ns_per_byte: c.ns_per_byte.min(bound) };
    let was = |c: TransferCost| format!("{:.2} µs + {:.3} ns/byte", c.us_per_message, c.ns_per_byte);
    Overheads {
        measurable: true,
        note: format!(
            "under a CPU quota of {share} core: each side the stream measurement's ns/byte, at most {bound:.3} = \
             share / b of the inter-node DPS link ({bytes_per_us:.1} B/µs); measured: sending {}, receiving {} ({})",
            was(measured.send),
            was(measured.receive),
            measured.note
        ),
        send: cost(measured.send),
        receive: cost(measured.receive),
        co_run_slowdown: measured.co_run_slowdown,
    }
}
