//! The client of the region service (the DPS paper's Figure 10 and Table 2).
//!
//! The paper's client is a separate application calling a graph the Game of Life exposes;
//! that is [`crate::viewer`] (`dps-life view`, and `--view-process`). Here the client is a
//! rank of the same job: with `--view WxH` the last rank of the job hosts no band and, from its own main
//! thread, calls the `region` graph for randomly placed `W×H` blocks every `--view-period-ms`
//! while rank 0 runs generations. It has the same effect as the paper's two programs: the
//! simulation runs its graphs and a concurrent caller on another rank runs the service graph
//! through the same bands, whose operations interleave with the generations'.
//!
//! Rank 0 runs a phase of generations without calls, then tells the client to start (the
//! `signal` graph, a leaf on the client's rank), runs the same number of generations with
//! calls, and tells it to stop; the stop signal returns the client's call times.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use dps::{route, Graph, Node, Runtime};
use dps_harness::OutputFile;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::graph::{Graphs, RegionRequest};
use crate::layout::Rect;
use crate::output::{self, Format};

/// What rank 0 tells the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Signal {
    /// Start calling the region service.
    Start,
    /// Stop, and report.
    Stop,
}

/// The client's measurements, returned by the stop signal.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ViewReport {
    /// Wall time of each region call, seconds.
    pub call_seconds: Vec<f64>,
    /// Time the bands spent reading each region (processing, not communication), seconds.
    pub read_seconds: Vec<f64>,
    /// Calls whose parts came from two different generations.
    pub straddling: usize,
}

const WAITING: u8 = 0;
const CALLING: u8 = 1;
const STOPPED: u8 = 2;

/// State shared by the client's main thread and its `signal` leaf.
#[derive(Debug, Default)]
struct Shared {
    phase: AtomicU8,
    report: Mutex<ViewReport>,
}

/// The client side: the signal graph and, on the client rank, its shared state.
#[derive(Debug)]
pub struct Client {
    /// Rank 0 signals the client through it.
    pub signal: Graph<Signal, ViewReport>,
    shared: Arc<Shared>,
    /// The client's rank.
    pub rank: usize,
}

/// Builds the signal graph (collective), with the client on rank `rank`.
///
/// # Errors
/// If the runtime rejects the collection or graph.
pub fn build(rt: &Runtime, rank: usize) -> Result<Client, dps::Error> {
    let shared = Arc::new(Shared::default());
    let viewer = rt.collection("viewer", &rank.to_string(), |_| ())?;
    let in_leaf = shared.clone();
    let leaf = Node::leaf("signal", &viewer, route::fixed(0), move |_: &mut (), s: Signal| {
        in_leaf.phase.store(if s == Signal::Start { CALLING } else { STOPPED }, Ordering::SeqCst);
        match s {
            Signal::Start => ViewReport::default(),
            Signal::Stop => std::mem::take(&mut *in_leaf.report.lock().unwrap()),
        }
    });
    let signal = rt.graph("life_signal", leaf)?;
    Ok(Client { signal, shared, rank })
}

/// What the client asks for.
#[derive(Clone, Debug)]
pub struct Requests {
    /// World size.
    pub world: (usize, usize),
    /// Block size.
    pub block: (usize, usize),
    /// Pause between calls.
    pub period: Duration,
    /// Where to write each block as PNG, if anywhere.
    pub png_dir: Option<PathBuf>,
    /// Seed of the block positions.
    pub seed: u64,
}

impl Client {
    /// The client rank's main loop: waits for the start signal, then calls the region
    /// service for random blocks until the stop signal.
    ///
    /// # Errors
    /// If a call fails or a PNG cannot be written.
    pub fn run(&self, rt: &Runtime, graphs: &Graphs, req: &Requests) -> Result<()> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(req.seed);
        while self.shared.phase.load(Ordering::SeqCst) == WAITING {
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut n = 0;
        while self.shared.phase.load(Ordering::SeqCst) == CALLING {
            let rect = Rect {
                x: rng.gen_range(0..=req.world.0 - req.block.0),
                y: rng.gen_range(0..=req.world.1 - req.block.1),
                width: req.block.0,
                height: req.block.1,
            };
            let start = Instant::now();
            let region = rt.call(&graphs.region, RegionRequest { from: self.rank, rect })?;
            let seconds = start.elapsed().as_secs_f64();
            {
                let mut report = self.shared.report.lock().unwrap();
                report.call_seconds.push(seconds);
                report.read_seconds.push(region.read_seconds);
                report.straddling += usize::from(region.generations.0 != region.generations.1);
            }
            if let Some(dir) = &req.png_dir {
                let path = output::block_path(dir, n, region.generations.0);
                // The directory was checked before the run: failing now is a failure.
                let file = OutputFile::create("--view-png", &path).map_err(|e| anyhow::anyhow!("{e:#}"))?;
                output::write(file, Format::Png, rect.width, rect.height, &region.cells)?;
            }
            n += 1;
            self.pause(req.period);
        }
        Ok(())
    }

    /// Sleeps `period`, in slices, so that a stop signal ends the pause (a long
    /// --view-period-ms must not hold up the end of the job).
    fn pause(&self, period: Duration) {
        let start = Instant::now();
        while self.shared.phase.load(Ordering::SeqCst) == CALLING {
            let Some(left) = period.checked_sub(start.elapsed()).filter(|d| !d.is_zero()) else { break };
            std::thread::sleep(left.min(Duration::from_millis(10)));
        }
    }
}
