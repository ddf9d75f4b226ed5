//! A parallel service (the DPS paper, §4 and Fig. 10): exports two graphs under
//! `--name`.squares and `--name`.echo, then serves other applications until the file
//! `--until` appears (or `--seconds` pass), and prints what it served.
//!
//! - `NAME.squares`: a `Range` in, the squares of its numbers out (a `Bulk<u64>`), computed
//!   by a split over the `work` collection (every rank) and merged back in order.
//! - `NAME.echo`: an 8-byte request in, the number plus one out: one leaf, for round trips.
//!
//! ```text
//! DPS_SERVICES=/tmp/reg scripts/mpirun -n 2 target/debug/examples/service_server --until /tmp/stop &
//! DPS_SERVICES=/tmp/reg scripts/mpirun -n 2 target/debug/examples/service_client --requests 1000
//! touch /tmp/stop
//! ```
#![deny(warnings)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dps::{route, Bulk, MergeFn, Node};
use serde::{Deserialize, Serialize};

#[path = "service/types.rs"]
mod types;
use types::Range;

#[derive(clap::Parser)]
#[command(name = "service_server")]
struct Args {
    /// Prefix of the exported names.
    #[arg(long, default_value = "demo")]
    name: String,
    /// Serve until this file exists.
    #[arg(long)]
    until: Option<PathBuf>,
    /// Serve at most this long.
    #[arg(long, default_value_t = 60.0)]
    seconds: f64,
    /// Each chunk of a `squares` request takes this long (to keep calls in flight).
    #[arg(long, default_value_t = 0)]
    slow_ms: u64,
    /// Numbers per chunk: a `squares` request is split into chunks of this many.
    #[arg(long, default_value_t = 64)]
    chunk: u32,
    /// The flow-control window of the split into chunks.
    #[arg(long, default_value_t = dps::DEFAULT_WINDOW)]
    window: usize,
    #[command(flatten)]
    runtime: dps::RuntimeArgs,
}

/// One number's square, with its place in the range.
#[derive(Serialize, Deserialize)]
struct Square {
    at: u32,
    value: u64,
}

fn main() -> std::process::ExitCode {
    dps_harness::main(run)
}

fn run(args: &Args) -> Result<(), dps::Error> {
    let rt = args.runtime.start()?;
    let main = rt.collection("main", "0", |_| ())?;
    let work = rt.collection("work", "all", |_| ())?;
    let slow = Duration::from_millis(args.slow_ms);

    // Chunks of numbers, so a large range spreads over the ranks. The split and the merge
    // run on rank 0, which counts the chunks that exist (pulled from the split's iterator,
    // not yet merged): the client's window F1 times this split's window F2 bounds those in
    // flight, and each open instance pulls one more ahead, so F1·(F2 + 1) bounds these.
    let chunk = args.chunk.max(1);
    let (in_flight, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (up, high) = (in_flight.clone(), most.clone());
    let split = Node::split("chunks", &main, route::fixed(0), move |_: &mut (), r: Range| {
        let (up, high) = (up.clone(), high.clone());
        (0..r.len).step_by(chunk as usize).map(move |at| {
            high.fetch_max(up.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
            (r, at)
        })
    })
    .window(args.window)
    .merge_on(|_, _| 0);
    let square = Node::leaf("square", &work, route::round_robin(), move |_: &mut (), (r, at): (Range, u32)| {
        std::thread::sleep(slow);
        (at..(at + chunk).min(r.len))
            .map(|i| Square { at: i, value: (r.start + u64::from(i)).pow(2) })
            .collect::<Vec<_>>()
    });
    let down = in_flight.clone();
    let merge = Node::merge(
        "collect",
        &main,
        MergeFn::new(
            |_: &mut ()| Vec::new(),
            move |_, acc: &mut Vec<u64>, part: Vec<Square>| {
                down.fetch_sub(1, Ordering::SeqCst);
                for s in part {
                    if acc.len() <= s.at as usize {
                        acc.resize(s.at as usize + 1, 0);
                    }
                    acc[s.at as usize] = s.value;
                }
            },
            |_, acc| Bulk::from(acc),
        ),
    );
    let squares = rt.graph("squares", split >> square >> merge)?;
    let echo = rt.graph("echo", Node::leaf("plus_one", &work, route::fixed(0), |_: &mut (), x: u64| x + 1))?;

    let exported =
        [rt.export(&format!("{}.squares", args.name), &squares)?, rt.export(&format!("{}.echo", args.name), &echo)?];
    let start = Instant::now();
    let stop = || args.until.as_ref().is_some_and(|f| f.exists()) || start.elapsed().as_secs_f64() > args.seconds;
    while !stop() {
        std::thread::sleep(Duration::from_millis(20));
    }
    // A client that died leaves nothing behind: its calls complete and its connection ends.
    let settle = Instant::now();
    while exported.iter().any(|e| e.in_flight() > 0 || e.connections() > 0 || e.lent_bytes() > 0)
        && settle.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    if rt.is_root() {
        println!("at most {} chunks in flight", most.load(Ordering::SeqCst));
        for e in &exported {
            println!(
                "{}: served {} calls ({} lent); {} bytes lent, {} connections, {} calls in flight left",
                e.name(),
                e.served(),
                e.lent_replies(),
                e.lent_bytes(),
                e.connections(),
                e.in_flight()
            );
        }
    }
    rt.shutdown()
}
