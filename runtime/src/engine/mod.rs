//! The per-rank execution engine: message delivery between DPS threads (moved locally, handed
//! to the transport otherwise), and the parts it is made of.
//!
//! | module | its one job |
//! | --- | --- |
//! | `schedule` | a thread's queue and the protocol that runs it on one worker at a time |
//! | `thread` | one thread's body: user state, split instances and their flow control, merges |
//! | `registry` | the collections, the cells of the threads this rank hosts, the graphs |
//! | `calls` | call slots and their failure, call and instance ids |
//! | `control` | the queue of control messages the collective protocols wait on |
//! | `messages` | what ranks and threads send each other |
//! | `migration` | moving a thread's state to another rank while the job runs |
//!
//! A rank has one worker per cell it hosts (up to a bound), so a long operation on one cell
//! never delays another. The one exception to "workers run cells": a token that arrives from
//! another rank for an idle cell, bound for a leaf known to be short, is handled at once on
//! the progress thread, which saves the wake-up of a worker.

mod calls;
mod control;
mod messages;
mod migration;
mod registry;
mod schedule;
mod thread;

use std::sync::{Arc, Mutex, OnceLock, Weak};

pub(crate) use calls::CallResult;
pub(crate) use messages::{Control, Header, Payload};
use messages::{Ctx, InstanceId, ThreadAddr};
pub(crate) use migration::StateCodec;
pub(crate) use schedule::recv_eagerly;

use calls::{callback_ns, Calls};
use control::ControlQueue;
use migration::Codecs;
use registry::Registry;
use schedule::{Cell, Scheduler};
use thread::ThreadBody;

use crate::activity::Activity;
use crate::bulk_vec::{self, Route};
use crate::failure;
use crate::node::{AnyToken, Encoder, Kind, OpImpl};
use crate::trace::Tracer;
use crate::transport::{Helper, Transport};
use crate::wire::WireToken;

/// Tokens for leaves that take at most this long (on average) may run on the progress thread.
const RUN_HERE_NS: u64 = 5_000;

struct Envelope {
    header: Header,
    payload: Option<Payload>,
}

/// A DPS thread as the workers see it.
type ThreadCell = Cell<Envelope, ThreadBody>;

/// A DPS thread with an operation the simulator runs ([`Engine::sim_take`]); what it holds
/// stays the engine's business.
pub(crate) struct SimCell(Arc<ThreadCell>);

/// One rank's engine: the parts below, and the delivery of messages between them.
pub(crate) struct Engine {
    rank: usize,
    ranks: usize,
    hosts: Vec<String>,
    /// By rank: whether it can map this rank's node-shared memory (`shm`).
    memory_peers: OnceLock<Vec<bool>>,
    registry: Registry,
    calls: Calls,
    control: ControlQueue,
    /// How to move the state of each movable collection (see `migration`).
    codecs: Codecs,
    scheduler: Scheduler<Envelope, ThreadBody>,
    /// The workers' activity, read by the transport's back-off (see `activity`).
    activity: Arc<Activity>,
    tracer: Tracer,
    /// Where posts for other ranks go; unset: nowhere (one rank). Set once as the run starts.
    outlet: OnceLock<Outlet>,
    /// The connections of the services this rank imports, whose replies a waiting caller
    /// reads itself (see `transport::recv_helping`).
    readers: Mutex<Vec<Weak<dyn Helper>>>,
}

/// Where an engine's posts go beside its own queues: one kind per run, chosen as it starts.
pub(crate) enum Outlet {
    /// A rank of a real job: messages for other ranks go through the transport. The runtime
    /// owns it (and ends it before MPI ends); the engine only borrows it for each send.
    Transport(Weak<dyn Transport>),
    /// A virtual rank of a simulation: every post, even to this rank, goes to the simulator,
    /// which delivers it in simulated time.
    Simulated(Weak<dyn SimPost>),
}

/// The simulator as an engine sees it (see `sim`): it takes every message an engine posts
/// and delivers it, in simulated time, with [`Engine::deliver`].
pub(crate) trait SimPost: Send + Sync {
    /// A message from rank `from` to rank `to`; `bytes`: its size on the wire (0 on one rank).
    fn post(&self, from: usize, to: usize, header: Header, payload: Option<Payload>, bytes: usize);
}

impl Engine {
    pub(crate) fn new(rank: usize, ranks: usize, hosts: Vec<String>) -> Self {
        Engine {
            rank,
            ranks,
            hosts,
            memory_peers: OnceLock::new(),
            registry: Registry::default(),
            calls: Calls::new(rank),
            control: ControlQueue::default(),
            codecs: Codecs::default(),
            scheduler: Scheduler::new(),
            activity: Arc::default(),
            tracer: Tracer::default(),
            outlet: OnceLock::new(),
            readers: Mutex::default(),
        }
    }

    /// Adds an imported service's connection to those a waiting caller reads (until it is
    /// dropped).
    pub(crate) fn add_reader(&self, reader: Weak<dyn Helper>) {
        let mut readers = self.readers.lock().unwrap();
        readers.retain(|r| r.strong_count() > 0);
        readers.push(reader);
    }

    /// The connections a caller waiting now reads (none on most runs).
    pub(crate) fn readers(&self) -> Vec<Arc<dyn Helper>> {
        self.readers.lock().unwrap().iter().filter_map(Weak::upgrade).collect()
    }

    /// This rank's number.
    pub(crate) fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks in the job.
    pub(crate) fn ranks(&self) -> usize {
        self.ranks
    }

    /// Every rank's host name, by rank.
    pub(crate) fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// Records, from every rank's memory domain (`shm::memory_domain`, by rank), which ranks
    /// share this one's node memory; once, before any message. None if shared memory is off.
    pub(crate) fn share_memory_by(&self, domains: &[String]) {
        let mine = &domains[self.rank];
        let on = crate::shared::enabled() && !mine.is_empty();
        let peers = domains.iter().map(|d| on && d == mine).collect();
        assert!(self.memory_peers.set(peers).is_ok(), "dps: memory peers are set once");
    }

    /// How node-shared bulks go to `rank`: lent where it maps this rank's memory.
    fn route_to(&self, rank: usize) -> Route {
        match self.memory_peers.get().and_then(|p| p.get(rank)) {
            Some(true) => Route::Lend,
            _ => Route::Bytes,
        }
    }

    /// The collections, the threads this rank hosts, the graphs.
    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The control messages the collective protocols wait on.
    pub(crate) fn control(&self) -> &ControlQueue {
        &self.control
    }

    /// How to move the state of each movable collection.
    pub(crate) fn codecs(&self) -> &Codecs {
        &self.codecs
    }

    /// The workers' activity, which the transport's back-off reads.
    pub(crate) fn activity(&self) -> &Arc<Activity> {
        &self.activity
    }

    /// This rank's trace events.
    pub(crate) fn tracer(&self) -> &Tracer {
        &self.tracer
    }

    /// Connects this engine to the other ranks of its run, once, before any message for
    /// them (a transport needs the engine to deliver to, so it comes second).
    pub(crate) fn connect(&self, outlet: Outlet) {
        assert!(self.outlet.set(outlet).is_ok(), "dps: an engine is connected once");
    }

    /// Sends a message to `rank`: moved into a local queue, or encoded for the transport.
    fn post(&self, rank: usize, header: Header, payload: Option<(AnyToken, Encoder)>) {
        self.post_from(rank, header, payload, false)
    }

    /// True in a simulation (`Outlet::Simulated`).
    pub(crate) fn simulated(&self) -> bool {
        matches!(self.outlet.get(), Some(Outlet::Simulated(_)))
    }

    /// [`Engine::post`]; `may_run_here`: a token for a short leaf of an idle thread of this
    /// rank may be handled at once on the calling thread ([`Engine::dispatch`]).
    fn post_from(&self, rank: usize, header: Header, payload: Option<(AnyToken, Encoder)>, may_run_here: bool) {
        let transport = match self.outlet.get() {
            Some(Outlet::Simulated(sim)) => {
                let sim = sim.upgrade().expect("dps simulator: the simulation ended");
                return self.post_simulated(&*sim, rank, header, payload);
            }
            Some(Outlet::Transport(transport)) => Some(transport),
            None => None,
        };
        if rank == self.rank {
            self.dispatch(header, payload.map(|(t, _)| Payload::Local(t)), may_run_here);
            return;
        }
        let route = self.route_to(rank);
        let token = payload.map(|(t, encode)| bulk_vec::routed(route, || encode(t)));
        let bytes = bincode::serialize(&header).expect("dps: header encoding");
        self.tracer.message(
            rank,
            bytes.len()
                + token.as_ref().map_or(0, |t| t.bytes.len() + t.bulks_out.iter().map(|b| b.len).sum::<usize>()),
        );
        match transport.and_then(Weak::upgrade) {
            Some(t) => t.send(rank, bytes, token),
            None => panic!("dps: no transport to reach rank {rank}"),
        }
    }

    /// A post under simulation. A token for another rank is encoded only to learn its size
    /// on the wire; the token itself travels (decoding it back would copy every bulk).
    fn post_simulated(&self, sim: &dyn SimPost, rank: usize, header: Header, payload: Option<(AnyToken, Encoder)>) {
        if rank == self.rank {
            sim.post(self.rank, rank, header, payload.map(|(t, _)| Payload::Local(t)), 0);
            return;
        }
        let token = payload.map(|(t, encode)| encode(t));
        let header_bytes = bincode::serialized_size(&header).expect("dps: header encoding") as usize;
        let bytes = header_bytes
            + token.as_ref().map_or(0, |t| t.bytes.len() + t.bulks_out.iter().map(|b| b.len).sum::<usize>());
        self.tracer.message(rank, bytes);
        let token = token.map(|t| Payload::Local(t.keep.expect("dps: an encoded token keeps its value")));
        sim.post(self.rank, rank, header, token, bytes);
    }

    /// Delivers a message the simulator took from [`SimPost::post`], at its arrival time.
    pub(crate) fn deliver(&self, header: Header, payload: Option<Payload>) {
        self.dispatch(header, payload, false);
    }

    /// Simulation: a cell ready to run, if any.
    pub(crate) fn sim_take(&self) -> Option<SimCell> {
        self.scheduler.try_take().map(SimCell)
    }

    /// Simulation: runs one message of `cell` (from [`Engine::sim_take`]), which stays
    /// scheduled until [`Engine::sim_release`]; a panic is returned as its description.
    pub(crate) fn sim_run(&self, cell: &SimCell) -> Result<(), String> {
        let mut failed = Ok(());
        self.scheduler.run_one(&cell.0, |body, env| {
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body.handle(self, env)));
            if let Err(payload) = run {
                let described = failure::take_last_panic();
                failed = Err(described.unwrap_or_else(|| failure::describe_panic(&failure::panic_message(&*payload))));
            }
        });
        failed
    }

    /// Simulation: the operation on `cell` is over (in simulated time).
    pub(crate) fn sim_release(&self, cell: &SimCell) {
        self.scheduler.release(&cell.0);
    }

    /// Called by the transport for every frame received.
    pub(crate) fn receive(&self, header: &[u8], token: Option<WireToken>) {
        let header: Header =
            bincode::deserialize(header).unwrap_or_else(|e| panic!("dps transport error: bad header: {e}"));
        self.dispatch(header, token.map(Payload::Wire), true);
    }

    /// Delivers a message on this rank. With `may_run_here` (the progress thread, a service's
    /// gateway or a client's reader), a token for an idle thread whose operation is known to
    /// be short is handled at once on this thread: handing it to a worker costs a wake-up that
    /// dominates short operations.
    fn dispatch(&self, header: Header, payload: Option<Payload>, may_run_here: bool) {
        match header {
            Header::Token { to, .. }
            | Header::Close { to, .. }
            | Header::Credit { to, .. }
            | Header::Move { to, .. }
            | Header::Install { to, .. } => {
                let cell = self.cell_for(&header, to);
                let env = Envelope { header, payload };
                let env = if may_run_here && self.is_short(&env.header) {
                    self.scheduler.try_run_here(&cell, env, |body, env| self.run(body, env))
                } else {
                    Some(env)
                };
                match env {
                    Some(env) if matches!(env.header, Header::Token { first: true, .. }) => {
                        // Behind the urgent tokens, the tokens of its own operation (so
                        // that each operation's tokens keep their order) and every message
                        // of the runtime's own.
                        let Header::Token { graph, node, .. } = env.header else { unreachable!() };
                        let holds_back = |e: &Envelope| match e.header {
                            Header::Token { first: false, graph: g, node: n, .. } => (g, n) == (graph, node),
                            _ => true,
                        };
                        self.scheduler.enqueue_first(&cell, env, holds_back);
                    }
                    Some(env) => self.scheduler.enqueue(&cell, env),
                    None => {}
                }
            }
            Header::Reply { call, .. } => self.calls.reply(call, payload.expect("dps: reply without token")),
            Header::Failed { call, message } => self.calls.fail_one(call, message),
            Header::Control(c) => self.control.push(c),
            Header::Located { thread, rank, epoch } => self.located(thread, rank, epoch),
        }
    }

    /// A token for a leaf that is known to be short. Only leaves: a merge's or stream's last
    /// token runs its `finish`, and a split creates a whole window of tokens, either of which
    /// may take long, and the progress thread must stay free to communicate.
    fn is_short(&self, header: &Header) -> bool {
        match header {
            Header::Token { graph, node, .. } => {
                let g = self.registry.graph(*graph);
                let n = &g.nodes[*node as usize];
                // A remote leaf writes to a socket, which may block: never on the progress thread.
                n.kind == Kind::Leaf && !matches!(n.op, OpImpl::Remote(_)) && n.is_cheaper_than(RUN_HERE_NS)
            }
            _ => false,
        }
    }

    pub(crate) fn send_control(&self, rank: usize, c: Control) {
        self.post(rank, Header::Control(c), None);
    }

    /// Makes one worker leave `worker_loop`.
    pub(crate) fn stop_one_worker(&self) {
        self.scheduler.stop_one_worker();
    }

    /// Runs one message on a worker; a panic fails the calls of this rank (reached only when
    /// the panic hook does not end the job: on one rank).
    fn run(&self, body: &mut ThreadBody, env: Envelope) {
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body.handle(self, env)));
        if let Err(payload) = run {
            let described = failure::take_last_panic();
            self.calls.fail(described.unwrap_or_else(|| failure::describe_panic(&failure::panic_message(&*payload))));
        }
    }
}

/// A worker: runs scheduled cells until it is stopped (`Engine::stop_one_worker`).
pub(crate) fn worker_loop(engine: Arc<Engine>) {
    let wake = || {
        if let Some(Outlet::Transport(transport)) = engine.outlet.get() {
            if let Some(transport) = transport.upgrade() {
                transport.wake();
            }
        }
    };
    engine.scheduler.work(&engine.activity, |body, env| engine.run(body, env), wake);
}
