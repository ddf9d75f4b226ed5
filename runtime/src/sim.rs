//! The simulator: P virtual ranks in one process, without MPI, the program's real graphs run
//! one operation at a time in the order of simulated time (the simulator paper's direct execution).
//!
//! Each virtual rank is an ordinary [`Engine`] whose posts come here ([`SimPost`]) instead
//! of going to its queues or a transport. A post made during an operation is stamped with
//! the operation's start plus the time it has used so far (`simclock`); a message to
//! another rank arrives `link(from, to, bytes)` later, one to the same rank at once. With
//! [`SimOptions::port_contention`], as in the simulator paper's network, a rank's messages
//! also take turns on its sending port and on their receiver's receiving port (first come,
//! first served, where the paper shares the bandwidth equally: the last of a burst arrives
//! at the same time). Events
//! (arrivals, ends of operations) are handled in the order of their time, ties broken by
//! the order they were created in (so messages between two ranks keep their order, as MPI
//! keeps it, even when a small one would arrive before a large one sent earlier), never by
//! the wall clock or by thread scheduling: the same operation times give the same run. A
//! rank runs up to `cores` operations at once (one per DPS thread, as its workers would,
//! capped by [`SimOptions::cores_per_rank`]); a DPS thread runs one at a time, its next
//! operation starting when the last one ends.
//!
//! Everything runs on the thread that waits for a call: [`Simulator::run`] handles events
//! until the call's output is there. A panic in an operation ends the simulation: the error
//! names the virtual rank, and every later call returns it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::engine::{Engine, Header, Outlet, Payload, SimCell, SimPost};
use crate::failure;
use crate::simclock::{self, KernelCost, SimMode};
use crate::simtime::{self, add};

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
    /// CPU time the sending rank spends on a message to another rank (charged to the
    /// operation that posts it).
    pub send_cpu: TransferCpu,
    /// CPU time the receiving rank spends on a message from another rank before its
    /// operation can see it: a job that takes one of the rank's cores (see `Simulator`).
    pub receive_cpu: TransferCpu,
    /// The most operations a rank runs at once (its cores); `None`: one per DPS thread it
    /// hosts, as many as its workers.
    pub cores_per_rank: Option<usize>,
    /// The cost of a kernel a program skips in PDEXEC and NOALLOC ([`crate::skip_kernel`]).
    pub kernels: KernelCost,
    /// The host of each rank: ranks of one host share its memory and caches.
    pub host_of: Arc<dyn Fn(usize) -> usize + Send + Sync>,
    /// The share of a core each rank's node gives it (a node of an emulated cluster, whose
    /// CPU quota is a fraction of a core): every operation and reception takes its time
    /// divided by this. 1: whole cores.
    pub cpu_share: f64,
    /// How much longer an operation takes when another one runs on its host as it starts
    /// (the cores' shared memory bandwidth and caches): its time is multiplied by this
    /// (1: no effect). Judged at the operation's start only.
    pub co_run_slowdown: f64,
    /// How long a message between ranks holds its sender's sending port and its receiver's
    /// receiving port (its bandwidth part, `bytes / b`): a rank then sends one message at
    /// a time and receives one at a time, as one progress thread and one network interface
    /// per rank do, and a master feeding many workers is bound by its own link. `None`:
    /// every message gets a whole link at once.
    pub port_contention: Option<LinkCost>,
}

impl std::fmt::Debug for SimOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimOptions")
            .field("mode", &self.mode)
            .field("send_cpu", &self.send_cpu)
            .field("receive_cpu", &self.receive_cpu)
            .field("cores_per_rank", &self.cores_per_rank)
            .field("cpu_share", &self.cpu_share)
            .field("co_run_slowdown", &self.co_run_slowdown)
            .field("port_contention", &self.port_contention.is_some())
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
            send_cpu: TransferCpu::FREE,
            receive_cpu: TransferCpu::FREE,
            cores_per_rank: None,
            kernels: Arc::new(|_, _, _| None),
            host_of: Arc::new(|_| 0),
            cpu_share: 1.0,
            co_run_slowdown: 1.0,
            port_contention: None,
        }
    }
}

/// The CPU cost of one side of a message between ranks: `per_message_s + bytes·per_byte_s`
/// (the transport's copies, packing and polling, which on a machine whose cores are all
/// busy computing are taken from the computation).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TransferCpu {
    /// Seconds per message.
    pub per_message_s: f64,
    /// Seconds per byte.
    pub per_byte_s: f64,
}

impl TransferCpu {
    /// No cost.
    pub const FREE: TransferCpu = TransferCpu { per_message_s: 0.0, per_byte_s: 0.0 };

    /// The cost of a message of `bytes` bytes, ns.
    fn ns(self, bytes: usize) -> u64 {
        simtime::from_seconds(self.per_message_s + bytes as f64 * self.per_byte_s)
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
    /// Per rank, the simulated CPU time its receptions took ([`SimOptions::receive_cpu`]).
    pub receive_s: Vec<f64>,
    /// Operations run.
    pub operations: u64,
    /// Messages between different ranks, and their bytes.
    pub messages: u64,
    /// Bytes of those messages.
    pub bytes: u64,
    /// The clock reached the end of its range (`u64` ns, about 584 years; see `simtime`):
    /// the times above are where it stopped, lower bounds, not predictions. The platform's
    /// costs (within their limits, `dps_model::platform::limits`) or the problem's size are
    /// too large to simulate.
    pub clock_saturated: bool,
}

/// A message between ranks.
struct Message {
    to: usize,
    header: Header,
    payload: Option<Payload>,
}

enum Event {
    /// A message reaches rank `to`, for its operations at once (`cpu` `None`: a message on
    /// one rank, or receptions are free) or after a reception job of `cpu` ns.
    Arrive { message: Message, cpu: Option<u64> },
    /// The reception job of a message is over: its operation can see it.
    Received { message: Message },
    /// The operation running on `cell` of `rank` ends.
    Done { rank: usize, cell: SimCell },
}

#[derive(Default)]
struct State {
    now: u64,
    seq: u64,
    /// By (time in ns, creation order).
    events: BTreeMap<(u64, u64), Event>,
    /// Per rank, its cores in use (operations and reception jobs).
    running: Vec<usize>,
    /// Per rank, messages waiting for their reception job (and its ns).
    receiving: Vec<std::collections::VecDeque<(Message, u64)>>,
    /// Per rank, whether a reception job runs: one at a time, as one progress thread
    /// receives (which also keeps the messages of a pair in order).
    in_reception: Vec<bool>,
    busy: Vec<u64>,
    receive: Vec<u64>,
    operations: u64,
    messages: u64,
    bytes: u64,
    failure: Option<String>,
    /// Per (from, to), when the last message arrives: messages between two ranks arrive in
    /// the order they were sent, as MPI keeps them (programs rely on it).
    last_arrival: HashMap<(usize, usize), u64>,
    /// Per rank, when its sending and its receiving port are free
    /// ([`SimOptions::port_contention`]).
    send_port_free: Vec<u64>,
    receive_port_free: Vec<u64>,
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

impl Simulator {
    /// `ranks` virtual ranks (all named after `host`), simulated on the calling thread.
    pub(crate) fn new(ranks: usize, host: &str, opts: SimOptions) -> Arc<Simulator> {
        simclock::install(opts.mode, opts.kernels.clone());
        let hosts = vec![host.to_string(); ranks];
        Arc::new_cyclic(|me: &Weak<Simulator>| {
            let engines: Vec<Arc<Engine>> = (0..ranks)
                .map(|r| {
                    let e = Arc::new(Engine::new(r, ranks, hosts.clone()));
                    e.connect(Outlet::Simulated(me.clone() as Weak<dyn SimPost>));
                    e
                })
                .collect();
            let state = State {
                running: vec![0; ranks],
                receiving: (0..ranks).map(|_| Default::default()).collect(),
                in_reception: vec![false; ranks],
                busy: vec![0; ranks],
                receive: vec![0; ranks],
                send_port_free: vec![0; ranks],
                receive_port_free: vec![0; ranks],
                ..State::default()
            };
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
                Event::Arrive { message, cpu: None } => {
                    let to = message.to;
                    self.engines[to].deliver(message.header, message.payload);
                    self.start_ops(to);
                }
                Event::Arrive { message, cpu: Some(cpu) } => {
                    let to = message.to;
                    self.state().receiving[to].push_back((message, cpu));
                    self.start_ops(to);
                }
                Event::Received { message } => {
                    let to = message.to;
                    {
                        let mut s = self.state();
                        s.running[to] -= 1;
                        s.in_reception[to] = false;
                    }
                    self.engines[to].deliver(message.header, message.payload);
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
        let workers = self.engines[rank].registry().local_threads().max(1);
        self.opts.cores_per_rank.map_or(workers, |c| c.min(workers)).max(1)
    }

    /// Starts the next reception job, then operations, on `rank` while it has a free core:
    /// a message's reception comes first, as the progress thread takes a core before the
    /// workers' next operations do.
    fn start_ops(&self, rank: usize) {
        let engine = &self.engines[rank];
        let cores = self.cores(rank);
        {
            let mut s = self.state();
            if s.running[rank] < cores && !s.in_reception[rank] {
                if let Some((message, cpu)) = s.receiving[rank].pop_front() {
                    s.running[rank] += 1;
                    s.in_reception[rank] = true;
                    s.receive[rank] = add(s.receive[rank], cpu);
                    let at = add(s.now, cpu);
                    s.push(at, Event::Received { message });
                }
            }
        }
        while self.state().running[rank] < cores {
            let Some(cell) = engine.sim_take() else { return };
            let factor = {
                let mut s = self.state();
                s.running[rank] += 1;
                let slowdown = if self.co_running(&s, rank) { self.opts.co_run_slowdown } else { 1.0 };
                slowdown / self.opts.cpu_share
            };
            failure::set_rank(rank);
            simclock::begin_slowed_op(factor);
            let result = engine.sim_run(&cell);
            let took = simclock::end_op();
            let mut s = self.state();
            s.busy[rank] = add(s.busy[rank], took);
            s.operations += 1;
            let at = add(s.now, took);
            s.push(at, Event::Done { rank, cell });
            if let Err(e) = result {
                s.failure.get_or_insert(e);
                return;
            }
        }
    }

    /// Whether another operation or reception than the one just started on `rank` runs on
    /// its host.
    fn co_running(&self, s: &State, rank: usize) -> bool {
        let host = (self.opts.host_of)(rank);
        let on_host: usize =
            (0..self.engines.len()).filter(|&r| (self.opts.host_of)(r) == host).map(|r| s.running[r]).sum();
        on_host > 1
    }

    /// What the simulation measured so far.
    pub(crate) fn report(&self) -> SimReport {
        let s = self.state();
        SimReport {
            mode: self.opts.mode,
            ranks: self.engines.len(),
            now_s: simtime::seconds(s.now),
            busy_s: s.busy.iter().map(|&b| simtime::seconds(b)).collect(),
            receive_s: s.receive.iter().map(|&b| simtime::seconds(b)).collect(),
            operations: s.operations,
            messages: s.messages,
            bytes: s.bytes,
            clock_saturated: [s.now].iter().chain(&s.busy).chain(&s.receive).any(|&t| t == simtime::BEYOND),
        }
    }

    /// The simulated time now, ns.
    pub(crate) fn now_ns(&self) -> u64 {
        self.state().now
    }
}

impl SimPost for Simulator {
    /// A message to another rank leaves when the posting operation has paid its send cost,
    /// and is received (a job of its receive cost on the receiving rank) so that, with a
    /// core free on both sides, it is there `link(from, to, bytes)` after the post began:
    /// the link's time, measured end to end, already contains both sides' CPU work (at the
    /// nodes' share of a core, where the calibration ran on such nodes).
    fn post(&self, from: usize, to: usize, header: Header, payload: Option<Payload>, bytes: usize) {
        let (send, receive) =
            if from == to { (0, 0) } else { (self.opts.send_cpu.ns(bytes), self.opts.receive_cpu.ns(bytes)) };
        simclock::charge_ns(send);
        let mut s = self.state();
        let sent = simclock::now_ns().unwrap_or(s.now).max(s.now);
        let message = Message { to, header, payload };
        if from == to {
            s.push(sent, Event::Arrive { message, cpu: None });
            return;
        }
        s.messages += 1;
        s.bytes += bytes as u64;
        let link = simtime::from_seconds((self.opts.link)(from, to, bytes as u64));
        // A link at the end of the range stays there, whatever its CPU share. The CPU work
        // takes 1 / share times its CPU time on the nodes the link was measured between.
        let cpu_wall = simtime::scale(add(send, receive), 1.0 / self.opts.cpu_share);
        let flight = if link == simtime::BEYOND { link } else { link.saturating_sub(cpu_wall) };
        let leaves = if let Some(holds) = &self.opts.port_contention {
            let occupies = simtime::from_seconds(holds(from, to, bytes as u64));
            let leaves = sent.max(s.send_port_free[from]).max(s.receive_port_free[to]);
            s.send_port_free[from] = add(leaves, occupies);
            s.receive_port_free[to] = add(leaves, occupies);
            leaves
        } else {
            sent
        };
        let last = s.last_arrival.entry((from, to)).or_insert(0);
        *last = add(leaves, flight).max(*last);
        let at = *last;
        // The reception is CPU work on the receiving node: it takes longer at a share of a core.
        let cpu =
            (self.opts.receive_cpu != TransferCpu::FREE).then(|| simtime::scale(receive, 1.0 / self.opts.cpu_share));
        s.push(at, Event::Arrive { message, cpu });
    }
}

impl Drop for Simulator {
    fn drop(&mut self) {
        simclock::uninstall();
    }
}
