//! A flood of small tokens: a split of `--tokens N` tokens through a leaf on every rank to a
//! merge, with a flow-control window of `--window F`. Shows that a split of millions of
//! tokens runs in memory bounded by its window, and measures token throughput.
//!
//! ```text
//! scripts/mpirun -n 4 target/release/examples/flood --tokens 10000000 --window 256
//! ```
#![deny(warnings)]

use std::process::ExitCode;
use std::time::Instant;

use dps::{route, MergeFn, Node};

#[derive(clap::Parser)]
#[command(name = "flood", allow_negative_numbers = true)] // so that "-1" is a bad value, not an unknown option
struct Args {
    /// Number of tokens the split produces.
    #[arg(long, default_value_t = 1_000_000)]
    tokens: u64,
    /// Flow-control window: tokens in flight at most.
    #[arg(long, default_value_t = 256)]
    window: usize,
    /// Mapping of the leaf collection.
    #[arg(long, default_value = "all")]
    map: String,
    #[command(flatten)]
    runtime: dps::RuntimeArgs,
}

fn main() -> ExitCode {
    dps_harness::main(run)
}

fn run(args: &Args) -> Result<(), dps::Error> {
    let rt = args.runtime.start()?;
    let main = rt.collection("main", "0", |_| ())?;
    let workers = rt.collection("workers", &args.map, |_| ())?;

    let split = Node::split("emit", &main, route::fixed(0), |_: &mut (), n: u64| 0..n).window(args.window);
    let leaf = Node::leaf("touch", &workers, route::round_robin(), |_: &mut (), x: u64| x.wrapping_mul(2654435761) & 1);
    let merge = Node::merge(
        "count",
        &main,
        MergeFn::new(
            |_: &mut ()| (0u64, 0u64),
            |_, acc: &mut (u64, u64), odd: u64| *acc = (acc.0 + 1, acc.1 + odd),
            |_, acc| acc,
        ),
    );
    let graph = rt.graph("flood", split >> leaf >> merge)?;

    if rt.is_root() {
        let start = Instant::now();
        let (count, _odd) = rt.call(&graph, args.tokens)?;
        let seconds = start.elapsed().as_secs_f64();
        assert_eq!(count, args.tokens, "every token must be merged exactly once");
        let rss = max_rss_kib();
        println!(
            "merged {count} tokens on {} ranks in {seconds:.3} s ({:.0} tokens/s), window {}, peak RSS {rss} KiB",
            rt.ranks(),
            count as f64 / seconds,
            args.window
        );
    }
    rt.shutdown()?;
    Ok(())
}

/// Peak resident memory of this process, from /proc (0 where unavailable).
fn max_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}
