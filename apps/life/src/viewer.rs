//! `dps-life view`: the DPS paper's Fig. 10 client as a program of its own, started
//! separately from the `dps-life --export-region` it watches (its own mpirun, or a plain
//! process). It imports `life.region` and `life.world`, and calls the region service as a
//! leaf of its own graph: each round, its split on rank 0 fans `--fan` requests for randomly
//! placed blocks out to the `callers` (one thread per rank, each rank with its own connection
//! to the service), and its merge on rank 0 collects the replies, so the round's calls are
//! in flight together (pipelined). It stops after --calls or --duration, when its standard
//! input closes (--until-eof), or when the served run ends (its calls then fail with "not
//! running": the viewer reports what it got and exits 0). With --until-eof, a `p` on its
//! standard input pauses its calls (it prints `paused N`, the calls made, once none is in
//! flight) and an `r` resumes them: `dps-life --view-process` alternates generations with
//! and without calls.

use std::collections::{HashMap, VecDeque};
use std::io::{Read as _, Write as _};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use dps::{route, ErrorKind, Graph, MergeFn, Node, Runtime};
use dps_harness::{bad_input, median, Common, OutputFile};
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::cli::viewer::{ViewPlan, REGION_SERVICE, WORLD_SERVICE};
use crate::graph::{Region, RegionRequest, WorldInfo};
use crate::layout::Rect;
use crate::output::{self, Format};
use crate::record::ViewerRecord;

/// A round: the blocks the split asks for.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Round {
    rects: Vec<Rect>,
}

/// A reply, with its call's time (split to merge, on rank 0).
#[derive(Debug, Serialize, Deserialize)]
struct Got {
    region: Region,
    seconds: f64,
}

/// When each request left the split, by its block's corner (the reply names its block).
type Sent = Arc<Mutex<HashMap<(usize, usize), VecDeque<Instant>>>>;

/// Runs a checked `dps-life view`: every rank imports the services and builds the graphs;
/// rank 0 calls them and prints the record.
///
/// # Errors
/// The service is not running or has other types, the block does not fit the served
/// world (bad input, exit 2), a call fails otherwise, or a PNG cannot be written.
pub fn execute(plan: &ViewPlan) -> Result<()> {
    let rt = plan.runtime.start()?;
    let outcome = connect_and_watch(&rt, plan);
    rt.shutdown()?;
    outcome
}

fn connect_and_watch(rt: &Runtime, plan: &ViewPlan) -> Result<()> {
    let region = rt.import::<RegionRequest, Region>(REGION_SERVICE)?;
    let world = rt.import::<(), WorldInfo>(WORLD_SERVICE)?;
    let main = rt.collection("main", "0", |_| ())?;
    let callers = rt.collection("callers", "all", |_| ())?;
    let info = rt.graph("world", world.leaf("world", &main, route::fixed(0)))?;
    let sent = Sent::default();
    let in_split = sent.clone();
    let split = Node::split("blocks", &main, route::fixed(0), move |_: &mut (), round: Round| {
        let sent = in_split.clone();
        round.rects.into_iter().map(move |rect| {
            sent.lock().unwrap().entry((rect.x, rect.y)).or_default().push_back(Instant::now());
            // `from` 0: the service's split and merge run on its rank 0, where the gateway is.
            RegionRequest { from: 0, rect }
        })
    })
    .window(plan.fan);
    let call = region.leaf("region", &callers, route::round_robin());
    let collect = Node::merge(
        "collect",
        &main,
        MergeFn::new(
            |_: &mut ()| Vec::new(),
            move |_, got: &mut Vec<Got>, region: Region| {
                let start = sent.lock().unwrap().get_mut(&(region.rect.x, region.rect.y)).and_then(VecDeque::pop_front);
                let seconds = start.map_or(f64::NAN, |s| s.elapsed().as_secs_f64());
                got.push(Got { region, seconds });
            },
            |_, got| got,
        ),
    );
    let fetch = rt.graph("view", split >> call >> collect)?;
    if !rt.is_root() {
        return Ok(());
    }
    let world = rt.call(&info, ())?;
    let (bw, bh) = plan.block;
    if bw > world.width || bh > world.height {
        bad_input!(
            "--block {bw}x{bh}: the world {REGION_SERVICE} serves is {}x{}, smaller than the block",
            world.width,
            world.height
        );
    }
    let record = Watch::new(plan, world).run(rt, &fetch, rt.ranks())?;
    dps_harness::print_record(&record, plan.json)
}

/// Rank 0's calls and what they returned.
struct Watch<'a> {
    plan: &'a ViewPlan,
    world: WorldInfo,
    calls: Vec<f64>,
    reads: Vec<f64>,
    straddling: usize,
    generations: Option<(u64, u64)>,
}

impl<'a> Watch<'a> {
    fn new(plan: &'a ViewPlan, world: WorldInfo) -> Self {
        Watch { plan, world, calls: vec![], reads: vec![], straddling: 0, generations: None }
    }

    fn run(mut self, rt: &Runtime, fetch: &Graph<Round, Vec<Got>>, ranks: usize) -> Result<ViewerRecord> {
        let plan = self.plan;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(plan.seed);
        let input = plan.until_eof.then(Input::read_stdin);
        let start = Instant::now();
        let (mut paused_for, mut answered) = (Duration::ZERO, 0);
        let stopped_by = loop {
            if let Some(input) = input.as_deref() {
                paused_for += input.wait_while_paused(self.calls.len(), &mut answered)?;
            }
            if plan.calls.is_some_and(|n| self.calls.len() as u64 >= n) {
                break "calls".to_string();
            }
            if plan.duration.is_some_and(|d| start.elapsed() >= d) {
                break "duration".to_string();
            }
            if input.as_ref().is_some_and(|i| i.closed()) {
                break "stdin".to_string();
            }
            let left = plan.calls.map_or(u64::MAX, |n| n - self.calls.len() as u64);
            let rects = (0..plan.fan.min(left as usize)).map(|_| self.place(&mut rng)).collect();
            match rt.call(fetch, Round { rects }) {
                Ok(got) => self.take(got)?,
                Err(e) if e.kind() == ErrorKind::Failed && e.to_string().contains("is not running") => {
                    eprintln!("dps-life view: {REGION_SERVICE} ended after {} calls ({e})", self.calls.len());
                    break "service ended".to_string();
                }
                Err(e) => return Err(e.into()),
            }
            pause(plan.period, input.as_deref());
        };
        // Calls per second count the time the viewer was calling, not its pauses.
        let seconds = (start.elapsed() - paused_for).as_secs_f64();
        let (bw, bh) = plan.block;
        let comm: Vec<f64> = self.calls.iter().zip(&self.reads).map(|(c, r)| c - r).collect();
        Ok(ViewerRecord {
            common: Common::new("life", "view", ranks, ranks, seconds, None),
            width: self.world.width,
            height: self.world.height,
            view_block: format!("{bw}x{bh}"),
            fan: plan.fan,
            view_calls: self.calls.len(),
            view_calls_per_s: self.calls.len() as f64 / seconds,
            view_call_median_s: median(&self.calls),
            view_read_median_s: median(&self.reads),
            view_comm_median_s: median(&comm),
            view_straddling_calls: self.straddling,
            view_generations: self.generations,
            stopped_by,
        })
    }

    /// A random block inside the world.
    fn place(&self, rng: &mut impl Rng) -> Rect {
        let (width, height) = self.plan.block;
        Rect {
            x: rng.gen_range(0..=self.world.width - width),
            y: rng.gen_range(0..=self.world.height - height),
            width,
            height,
        }
    }

    /// Counts a round's replies and writes them as PNG with --png.
    fn take(&mut self, got: Vec<Got>) -> Result<()> {
        for Got { region, seconds } in got {
            let (lo, hi) = region.generations;
            self.straddling += usize::from(lo != hi);
            self.generations = Some(self.generations.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
            if let Some(dir) = &self.plan.png_dir {
                let r = region.rect;
                let path = output::view_block_path(dir, self.calls.len(), r.x, r.y, region.generations);
                // The directory was checked before the run: failing now is a failure.
                let file = OutputFile::create("--png", &path).map_err(|e| anyhow::anyhow!("{e:#}"))?;
                output::write(file, Format::Png, r.width, r.height, &region.cells)?;
            }
            self.calls.push(seconds);
            self.reads.push(region.read_seconds);
        }
        Ok(())
    }
}

/// What standard input tells a viewer started with --until-eof: `p` pauses its calls, `r`
/// resumes them, and its end stops the viewer (read by a thread of its own). Requests are
/// counted, not just flagged: an `r` and the next `p` may arrive while the viewer waits,
/// and that `p` still gets its answer.
#[derive(Default)]
struct Input {
    state: Mutex<InputState>,
    changed: Condvar,
}

#[derive(Default)]
struct InputState {
    pauses: u64,
    resumes: u64,
    closed: bool,
}

impl InputState {
    fn paused(&self) -> bool {
        self.pauses > self.resumes && !self.closed
    }
}

impl Input {
    fn read_stdin() -> Arc<Input> {
        let input = Arc::new(Input::default());
        let reader = input.clone();
        std::thread::spawn(move || {
            let mut bytes = [0u8; 256];
            let mut stdin = std::io::stdin();
            while let Ok(n @ 1..) = stdin.read(&mut bytes) {
                for &b in &bytes[..n] {
                    match b {
                        b'p' => reader.set(|s| s.pauses += 1),
                        b'r' => reader.set(|s| s.resumes += 1),
                        _ => {}
                    }
                }
            }
            reader.set(|s| s.closed = true);
        });
        input
    }

    fn state(&self) -> std::sync::MutexGuard<'_, InputState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn set(&self, change: impl FnOnce(&mut InputState)) {
        change(&mut self.state());
        self.changed.notify_all();
    }

    fn closed(&self) -> bool {
        self.state().closed
    }

    /// Between two rounds (no call in flight): answers each pause asked for since the last
    /// answer (`answered` counts them) on standard output with the `calls` made (`paused
    /// 42`), and sleeps while paused (without waking: a paused viewer must not take the
    /// served job's cores). Returns how long it was paused.
    fn wait_while_paused(&self, calls: usize, answered: &mut u64) -> Result<Duration> {
        let start = Instant::now();
        let mut state = self.state();
        if !state.paused() && state.pauses == *answered {
            return Ok(Duration::ZERO);
        }
        loop {
            if state.pauses > *answered {
                *answered = state.pauses;
                let mut out = std::io::stdout().lock();
                writeln!(out, "paused {calls}")?;
                out.flush()?;
            }
            if !state.paused() {
                return Ok(start.elapsed());
            }
            let seen = *answered;
            state = self
                .changed
                .wait_while(state, |s| s.paused() && s.pauses == seen)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

/// Sleeps `period`, ending early once standard input closes or pauses the calls.
fn pause(period: Duration, input: Option<&Input>) {
    match input {
        Some(input) => drop(
            input
                .changed
                .wait_timeout_while(input.state(), period, |s| !s.paused() && !s.closed)
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        ),
        None => std::thread::sleep(period),
    }
}
