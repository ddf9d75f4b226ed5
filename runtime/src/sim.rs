//! The simulator: P virtual ranks in one process, without MPI, the program's real graphs run
//! one operation at a time in the order of simulated time (seed 003's direct execution).
//!
//! Each virtual rank is an ordinary [`Engine`] whose posts come here ([`SimPost`]) instead
//! of going to its queues or a transport. A post made during an operation is stamped with
//! the operation's start plus the time it has used so far (`simclock`); a message to
//! another rank arrives `link(from, to, bytes)` later, one to the same rank at once. Events
//! (arrivals, ends of operations) are handled in the order of their time, ties broken by
//! the order they were created in (so messages between two ranks keep their order, as
//! MPI keeps it, even when a small one would arrive before a large one sent earlier), never by the wall clock or by thread scheduling: the
//! same operation times give the same run. A rank runs up to `cores` operations at once (one
//! per DPS thread, as its workers would, capped by [`SimOptions::cores_per_rank`]); a DPS
//! thread runs one at a time, its next operation starting when the last one ends.
//!
//! Everything runs on the thread that waits for a call: [`Simulator::run`] handles events
//! until the call's output is there. A panic in an operation ends the simulation: the error
//! names the virtual rank, and every later call returns it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::engine::{Engine, Header, Payload, SimPost, ThreadCell};
use crate::failure;
use crate::simclock::{self, KernelCost, SimMode};

/// The one-way time, seconds, of a message of `bytes` bytes from rank `from` to rank `to`.
pub type LinkCost = Arc<dyn Fn(usize, usize, u64) -> f64 + Send + Sync>;

/// What a simulation charges: the mode, the links, the per-message overheads, the cores of
/// a rank and the kernels' costs (programs build it from a platform file).
#[derive(Clone)]
pub struct SimOptions {
    /// How operations are charged (see [`SimMode`]).
    pub mode: SimMode,
    /// The time of a message between two ranks (`l + s/b` from the platform file).
    pub link: LinkCost,
    /// CPU time a rank spends per message it sends to another rank, seconds (charged to the
    /// operation that posts it).
    pub send_overhead_s: f64,
    /// The most operations a rank runs at once (its cores); `None`: one per DPS thread it
    /// hosts, as many as its workers.
    pub cores_per_rank: Option<usize>,
    /// The cost of a kernel a program skips in PDEXEC and NOALLOC ([`crate::skip_kernel`]).
    pub kernels: KernelCost,
}

impl std::fmt::Debug for SimOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimOptions")
            .field("mode", &self.mode)
            .field("send_overhead_s", &self.send_overhead_s)
            .field("cores_per_rank", &self.cores_per_rank)
            .finish_non_exhaustive()
    }
}

impl SimOptions {
    /// Free messages, no overheads, one core per DPS thread, no kernel tables: for tests
    /// and for what the operations alone cost.
    pub fn ideal(mode: SimMode) -> SimOptions {
        SimOptions {
            mode,
            link: Arc::new(|_, _, _| 0.0),
            send_overhead_s: 0.0,
            cores_per_rank: None,
            kernels: Arc::new(|_, _, _| None),
        }
    }
}

/// What a simulation measured so far ([`crate::Runtime::simulation`]).
#[derive(Clone, Debug, PartialEq)]
pub struct SimReport {
    /// The mode.
    pub mode: SimMode,
    /// Virtual ranks.
    pub ranks: usize,
    /// The simulated time now, seconds.
    pub now_s: f64,
    /// Per rank, the simulated time its operations took, seconds.
    pub busy_s: Vec<f64>,
    /// Operations run.
    pub operations: u64,
    /// Messages between different ranks, and their bytes.
    pub messages: u64,
    /// Bytes of those messages.
    pub bytes: u64,
}

enum Event {
    /// A message reaches rank `to`.
    Deliver { to: usize, header: Header, payload: Option<Payload> },
    /// The operation running on `cell` of `rank` ends.
    Done { rank: usize, cell: Arc<ThreadCell> },
}

#[derive(Default)]
struct State {
    now: u64,
    seq: u64,
    /// By (time in ns, creation order).
    events: BTreeMap<(u64, u64), Event>,
    running: Vec<usize>,
    busy: Vec<u64>,
    operations: u64,
    messages: u64,
    bytes: u64,
    failure: Option<String>,
    /// Per (from, to), when the last message arrives: messages between two ranks arrive in
    /// the order they were sent, as MPI keeps them (programs rely on it).
    last_arrival: HashMap<(usize, usize), u64>,
}

impl State {
    fn push(&mut self, at: u64, event: Event) {
        self.seq += 1;
        self.events.insert((at, self.seq), event);
    }
}

/// The virtual ranks and the event queue.
pub(crate) struct Simulator {
    engines: Vec<Arc<Engine>>,
    opts: SimOptions,
    state: Mutex<State>,
    /// Held by the thread running events: one driver at a time (calls waited for on
    /// several threads take turns, and each event still runs one operation at a time).
    driver: Mutex<()>,
}

impl std::fmt::Debug for Simulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Simulator")
    }
}

fn ns(seconds: f64) -> u64 {
    (seconds.max(0.0) * 1e9).round() as u64
}

impl Simulator {
    /// `ranks` virtual ranks (all named after `host`), simulated on the calling thread.
    pub(crate) fn new(ranks: usize, host: &str, opts: SimOptions) -> Arc<Simulator> {
        simclock::install(opts.mode, opts.kernels.clone());
        let hosts = vec![host.to_string(); ranks];
        Arc::new_cyclic(|me: &Weak<Simulator>| {
            let engines: Vec<Arc<Engine>> = (0..ranks)
                .map(|r| {
                    let e = Arc::new(Engine::new(r, ranks, hosts.clone()));
                    e.set_sim(me.clone() as Weak<dyn SimPost>);
                    e
                })
                .collect();
            let state = State { running: vec![0; ranks], busy: vec![0; ranks], ..State::default() };
            Simulator { engines, opts, state: Mutex::new(state), driver: Mutex::new(()) }
        })
    }

    pub(crate) fn engines(&self) -> &[Arc<Engine>] {
        &self.engines
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Handles events until `done()` (true) or none is left (false).
    ///
    /// # Errors
    /// The description of the panic that ended the simulation.
    pub(crate) fn run(&self, mut done: impl FnMut() -> bool) -> Result<bool, String> {
        let _driver = self.driver.lock().unwrap_or_else(|p| p.into_inner());
        // A call waited for on another thread than the one that started the simulation:
        // the clock moves to this thread (DE measures this thread's CPU time).
        if simclock::simulated().is_none() {
            simclock::install(self.opts.mode, self.opts.kernels.clone());
            simclock::set_now(self.now_ns());
        }
        loop {
            if let Some(f) = &self.state().failure {
                return Err(f.clone());
            }
            if done() {
                return Ok(true);
            }
            let next = {
                let mut s = self.state();
                let next = s.events.pop_first();
                if let Some(((at, _), _)) = &next {
                    s.now = *at;
                }
                next
            };
            let Some(((at, _), event)) = next else { return Ok(false) };
            simclock::set_now(at);
            match event {
                Event::Deliver { to, header, payload } => {
                    self.engines[to].deliver(header, payload);
                    self.start_ops(to);
                }
                Event::Done { rank, cell } => {
                    self.engines[rank].sim_release(&cell);
                    self.state().running[rank] -= 1;
                    self.start_ops(rank);
                }
            }
        }
    }

    /// The most operations `rank` runs at once.
    fn cores(&self, rank: usize) -> usize {
        let workers = self.engines[rank].registry.local_threads().max(1);
        self.opts.cores_per_rank.map_or(workers, |c| c.min(workers)).max(1)
    }

    /// Starts operations on `rank` while it has a free core and a ready DPS thread.
    fn start_ops(&self, rank: usize) {
        let engine = &self.engines[rank];
        while self.state().running[rank] < self.cores(rank) {
            let Some(cell) = engine.sim_take() else { return };
            self.state().running[rank] += 1;
            failure::set_rank(rank);
            simclock::begin_op();
            let result = engine.sim_run(&cell);
            let took = simclock::end_op();
            let mut s = self.state();
            s.busy[rank] += took;
            s.operations += 1;
            let at = s.now + took;
            s.push(at, Event::Done { rank, cell });
            if let Err(e) = result {
                s.failure.get_or_insert(e);
                return;
            }
        }
    }

    /// What the simulation measured so far.
    pub(crate) fn report(&self) -> SimReport {
        let s = self.state();
        SimReport {
            mode: self.opts.mode,
            ranks: self.engines.len(),
            now_s: s.now as f64 / 1e9,
            busy_s: s.busy.iter().map(|&b| b as f64 / 1e9).collect(),
            operations: s.operations,
            messages: s.messages,
            bytes: s.bytes,
        }
    }

    /// The simulated time now, ns.
    pub(crate) fn now_ns(&self) -> u64 {
        self.state().now
    }
}

impl SimPost for Simulator {
    fn post(&self, from: usize, to: usize, header: Header, payload: Option<Payload>, bytes: usize) {
        if from != to {
            simclock::charge_ns(ns(self.opts.send_overhead_s));
        }
        let mut s = self.state();
        let sent = simclock::now_ns().unwrap_or(s.now).max(s.now);
        let at = if from == to {
            sent
        } else {
            s.messages += 1;
            s.bytes += bytes as u64;
            let at = sent + ns((self.opts.link)(from, to, bytes as u64));
            let last = s.last_arrival.entry((from, to)).or_insert(0);
            *last = at.max(*last);
            *last
        };
        s.push(at, Event::Deliver { to, header, payload });
    }
}

impl Drop for Simulator {
    fn drop(&mut self) {
        simclock::uninstall();
    }
}
