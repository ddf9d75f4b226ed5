//! A client of the parallel service that `service_server` exports (the DPS paper, Fig. 10):
//! its own split fans `--requests` ranges out to the service's `squares` graph, called as a
//! leaf on the `callers` collection (every rank by default), with up to `--window` calls in
//! flight; its merge checks every reply. With `--rtt N`, also times N calls one after the
//! other of the service's 8-byte `echo` graph against the same graph inside this application.
//!
//! ```text
//! DPS_SERVICES=/tmp/reg scripts/mpirun -n 2 target/debug/examples/service_client --requests 1000 --window 64
//! ```
#![deny(warnings)]

use std::time::Instant;

use dps::{route, Bulk, MergeFn, Node};

#[path = "service/types.rs"]
mod types;
use types::Range;

#[derive(clap::Parser)]
#[command(name = "service_client")]
struct Args {
    /// Prefix of the service names.
    #[arg(long, default_value = "demo")]
    name: String,
    /// Number of calls of `squares`.
    #[arg(long, default_value_t = 1000)]
    requests: u64,
    /// Request `i` asks for the squares of `i % numbers + 1` numbers (replies of 512
    /// numbers and more, 4 KiB, carry their squares as a bulk, which a service on this node
    /// lends).
    #[arg(long, default_value_t = 300)]
    numbers: u64,
    /// The split's flow-control window: calls in flight at most.
    #[arg(long, default_value_t = 64)]
    window: usize,
    /// Mapping of the collection whose threads call the service.
    #[arg(long, default_value = "all")]
    map: String,
    /// Also time this many 8-byte round trips (service against in-application).
    #[arg(long, default_value_t = 0)]
    rtt: u64,
    /// Import `echo` with the wrong request type (to see the error).
    #[arg(long)]
    wrong_types: bool,
    /// Create this file once the service is imported, as the calls begin.
    #[arg(long)]
    started: Option<std::path::PathBuf>,
    /// Pin the graph fingerprint of `squares`.
    #[arg(long)]
    pin: Option<String>,
    #[command(flatten)]
    runtime: dps::RuntimeArgs,
}

/// What the merge learns from the replies: their number, the sums of their first numbers
/// and of their lengths, each reply checked to be consecutive squares.
#[derive(Default, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Tally {
    replies: u64,
    starts: u64,
    lens: u64,
}

fn main() -> std::process::ExitCode {
    dps_harness::main(run)
}

/// The `i`-th request, of at most `numbers` numbers.
fn request(i: u64, numbers: u64) -> Range {
    Range { start: i * 7, len: (i % numbers) as u32 + 1 }
}

fn run(args: &Args) -> Result<(), dps::Error> {
    let rt = args.runtime.start()?;
    let main = rt.collection("main", "0", |_| ())?;
    let callers = rt.collection("callers", &args.map, |_| ())?;
    if args.wrong_types {
        rt.import::<u32, u64>(&format!("{}.echo", args.name))?;
    }
    let name = format!("{}.squares", args.name);
    let squares = match &args.pin {
        Some(fp) => rt.import_pinned::<Range, Bulk<u64>>(&name, fp)?,
        None => rt.import::<Range, Bulk<u64>>(&name)?,
    };

    let numbers = args.numbers.max(1);
    let split = Node::split("requests", &main, route::fixed(0), move |_: &mut (), n: u64| {
        (0..n).map(move |i| request(i, numbers))
    })
    .window(args.window);
    let call = squares.leaf("squares", &callers, route::round_robin());
    let merge = Node::merge(
        "check",
        &main,
        MergeFn::new(
            |_: &mut ()| Tally::default(),
            |_, t: &mut Tally, reply: Bulk<u64>| {
                let start = reply[0].isqrt();
                for (i, v) in reply.iter().enumerate() {
                    assert_eq!(*v, (start + i as u64).pow(2), "a reply must be consecutive squares");
                }
                t.replies += 1;
                t.starts += start;
                t.lens += reply.len() as u64;
            },
            |_, t| t,
        ),
    );
    let graph = rt.graph("fan out", split >> call >> merge)?;

    let echo = (args.rtt > 0).then(|| rt.import::<u64, u64>(&format!("{}.echo", args.name))).transpose()?;
    let (remote, local) = match &echo {
        Some(echo) => {
            let remote = rt.graph("remote echo", echo.leaf("echo", &main, route::fixed(0)))?;
            let local =
                rt.graph("local echo", Node::leaf("plus_one", &callers, route::fixed(0), |_: &mut (), x: u64| x + 1))?;
            (Some(remote), Some(local))
        }
        None => (None, None),
    };

    if rt.is_root() {
        let clock = Instant::now();
        let pending = rt.start(&graph, args.requests);
        if let Some(path) = &args.started {
            std::fs::write(path, b"").expect("--started: the file can be created");
        }
        let tally = pending.wait()?;
        let seconds = clock.elapsed().as_secs_f64();
        let expect = (0..args.requests).map(|i| request(i, numbers)).fold(Tally::default(), |mut t, r| {
            t.replies += 1;
            t.starts += r.start;
            t.lens += u64::from(r.len);
            t
        });
        assert_eq!(tally, expect, "every reply, each once");
        println!(
            "checked {} replies of {} ({} numbers) in {seconds:.3} s: {:.0} calls/s, window {}",
            tally.replies,
            squares.name(),
            tally.lens,
            tally.replies as f64 / seconds,
            args.window
        );
        if let (Some(remote), Some(local)) = (&remote, &local) {
            let time = |g: &dps::Graph<u64, u64>| -> Result<f64, dps::Error> {
                for x in 0..args.rtt.min(100) {
                    assert_eq!(rt.call(g, x)?, x + 1);
                }
                let clock = Instant::now();
                for x in 0..args.rtt {
                    assert_eq!(rt.call(g, x)?, x + 1);
                }
                Ok(clock.elapsed().as_secs_f64() / args.rtt as f64 * 1e6)
            };
            let (service_us, local_us) = (time(remote)?, time(local)?);
            println!(
                "8-byte round trip: service {service_us:.1} us, in-application {local_us:.1} us ({:.1}x), {} calls each",
                service_us / local_us,
                args.rtt
            );
        }
    }
    rt.shutdown()
}
