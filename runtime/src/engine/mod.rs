//! The per-rank execution engine: thread cells with their input queues, the worker pool that
//! runs them, and message delivery (moved locally, handed to the transport otherwise).
//!
//! A DPS thread is a `Cell`: a FIFO queue plus a body holding the user state and the split and
//! merge bookkeeping. A cell with queued messages is scheduled on the ready queue exactly once
//! (the `scheduled` flag); a worker takes it, runs a batch of its messages, and schedules it
//! again if more arrived. So a thread runs one operation at a time and its state needs no lock.
//! A rank has one worker per cell it hosts (up to a bound), so a long operation on one cell
//! never delays another. The one exception to "workers run cells": a token that arrives from
//! another rank for an idle cell, bound for a leaf known to be short, is handled at once on
//! the progress thread, which saves the wake-up of a worker.

mod messages;
mod thread;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

pub(crate) use messages::{Control, Ctx, Header, InstanceId, Payload, ThreadAddr};
use thread::ThreadBody;

use crate::collection::CollInfo;
use crate::failure;
use crate::graph::GraphImpl;
use crate::node::{AnyState, AnyToken, Encoder, Kind};
use crate::trace::Tracer;
use crate::transport::Transport;
use crate::wire::WireToken;

/// Messages a worker handles from one cell before giving others a turn.
const BATCH: usize = 64;
/// Tokens for leaves that take at most this long (on average) may run on the progress thread.
const RUN_HERE_NS: u64 = 5_000;
/// Polls of `recv_eagerly` before it blocks. Each poll yields the core: spinning would keep
/// the thread about to be woken off an oversubscribed core.
const EAGER_POLLS: u32 = 200;

pub(crate) struct Envelope {
    pub(crate) header: Header,
    pub(crate) payload: Option<Payload>,
}

pub(crate) struct Cell {
    queue: Mutex<VecDeque<Envelope>>,
    scheduled: AtomicBool,
    body: Mutex<ThreadBody>,
}

type CallSlot = Sender<Result<Payload, String>>;

pub(crate) struct Engine {
    pub(crate) rank: usize,
    pub(crate) ranks: usize,
    pub(crate) hosts: Vec<String>,
    colls: RwLock<Vec<Arc<CollInfo>>>,
    cells: RwLock<HashMap<ThreadAddr, Arc<Cell>>>,
    graphs: RwLock<Vec<Arc<GraphImpl>>>,
    ready: Sender<Option<Arc<Cell>>>,
    transport: RwLock<Option<Arc<dyn Transport>>>,
    calls: Mutex<HashMap<u64, CallSlot>>,
    next_call: AtomicU64,
    next_instance: AtomicU64,
    control: Mutex<VecDeque<Control>>,
    control_signal: Condvar,
    failure: Mutex<Option<String>>,
    pub(crate) tracer: Tracer,
    /// Workers running an operation now (read by the transport's back-off).
    pub(crate) busy_workers: Arc<AtomicUsize>,
    /// The transport's progress thread dozes: a worker that goes idle wakes it.
    pub(crate) progress_dozing: Arc<AtomicBool>,
}

impl Engine {
    pub(crate) fn new(rank: usize, ranks: usize, hosts: Vec<String>, ready: Sender<Option<Arc<Cell>>>) -> Self {
        Engine {
            rank,
            ranks,
            hosts,
            colls: RwLock::default(),
            cells: RwLock::default(),
            graphs: RwLock::default(),
            ready,
            transport: RwLock::new(None),
            calls: Mutex::default(),
            next_call: AtomicU64::new(0),
            next_instance: AtomicU64::new(0),
            control: Mutex::default(),
            control_signal: Condvar::new(),
            failure: Mutex::new(None),
            tracer: Tracer::default(),
            busy_workers: Arc::default(),
            progress_dozing: Arc::default(),
        }
    }

    pub(crate) fn set_transport(&self, t: Option<Arc<dyn Transport>>) {
        *self.transport.write().unwrap() = t;
    }

    pub(crate) fn transport(&self) -> Option<Arc<dyn Transport>> {
        self.transport.read().unwrap().clone()
    }

    pub(crate) fn add_collection(&self, info: Arc<CollInfo>, mut init: impl FnMut(usize) -> Box<AnyState>) {
        let mut cells = self.cells.write().unwrap();
        for (index, &rank) in info.ranks.iter().enumerate() {
            if rank == self.rank {
                let addr = ThreadAddr { coll: info.id as u32, index: index as u32 };
                let name = format!("{}[{index}]", info.name);
                let body = ThreadBody::new(addr, name, init(index));
                cells.insert(
                    addr,
                    Arc::new(Cell {
                        queue: Mutex::default(),
                        scheduled: AtomicBool::new(false),
                        body: Mutex::new(body),
                    }),
                );
            }
        }
        self.colls.write().unwrap().push(info);
    }

    /// Number of DPS threads this rank hosts.
    pub(crate) fn local_threads(&self) -> usize {
        self.cells.read().unwrap().len()
    }

    pub(crate) fn collections(&self) -> usize {
        self.colls.read().unwrap().len()
    }

    pub(crate) fn add_graph(&self, g: Arc<GraphImpl>) {
        self.graphs.write().unwrap().push(g);
    }

    pub(crate) fn graph(&self, id: u32) -> Arc<GraphImpl> {
        self.graphs.read().unwrap()[id as usize].clone()
    }

    pub(crate) fn graph_count(&self) -> usize {
        self.graphs.read().unwrap().len()
    }

    pub(crate) fn new_instance(&self) -> InstanceId {
        InstanceId { rank: self.rank as u32, seq: self.next_instance.fetch_add(1, Ordering::Relaxed) }
    }

    pub(crate) fn rank_of(&self, addr: ThreadAddr) -> usize {
        self.colls.read().unwrap()[addr.coll as usize].ranks[addr.index as usize]
    }

    /// Sends a message to `rank`: moved into a local queue, or encoded for the transport.
    pub(crate) fn post(&self, rank: usize, header: Header, payload: Option<(AnyToken, Encoder)>) {
        if rank == self.rank {
            self.dispatch(header, payload.map(|(t, _)| Payload::Local(t)), false);
            return;
        }
        let token = payload.map(|(t, encode)| encode(t));
        let bytes = bincode::serialize(&header).expect("dps: header encoding");
        self.tracer.message(
            rank,
            bytes.len()
                + token.as_ref().map_or(0, |t| t.bytes.len() + t.bulks_out.iter().map(|b| b.len).sum::<usize>()),
        );
        match self.transport() {
            Some(t) => t.send(rank, bytes, token),
            None => panic!("dps: no transport to reach rank {rank}"),
        }
    }

    /// Called by the transport for every frame received.
    pub(crate) fn receive(&self, header: &[u8], token: Option<WireToken>) {
        let header: Header =
            bincode::deserialize(header).unwrap_or_else(|e| panic!("dps transport error: bad header: {e}"));
        self.dispatch(header, token.map(Payload::Wire), true);
    }

    /// Delivers a message on this rank. With `may_run_here` (the progress thread), a token for
    /// an idle thread whose operation is known to be short is handled at once on this thread:
    /// handing it to a worker costs a wake-up that dominates short operations.
    fn dispatch(&self, header: Header, payload: Option<Payload>, may_run_here: bool) {
        match header {
            Header::Token { to, .. } | Header::Close { to, .. } | Header::Credit { to, .. } => {
                let cell = self.cells.read().unwrap().get(&to).cloned();
                let Some(cell) = cell else {
                    panic!("dps: rank {} received a message for thread {to:?}, which it does not host", self.rank)
                };
                let env = Envelope { header, payload };
                let env =
                    if may_run_here && self.is_short(&env.header) { self.try_run_here(&cell, env) } else { Some(env) };
                if let Some(env) = env {
                    self.enqueue(&cell, env);
                }
            }
            Header::Reply { call, .. } => {
                if let Some(slot) = self.calls.lock().unwrap().remove(&call) {
                    let _ = slot.send(Ok(payload.expect("dps: reply without token")));
                }
            }
            Header::Control(c) => {
                self.control.lock().unwrap().push_back(c);
                self.control_signal.notify_all();
            }
        }
    }

    /// A token for a leaf that is known to be short. Only leaves: a merge's or stream's last
    /// token runs its `finish`, and a split creates a whole window of tokens, either of which
    /// may take long, and the progress thread must stay free to communicate.
    fn is_short(&self, header: &Header) -> bool {
        match header {
            Header::Token { graph, node, .. } => {
                let g = self.graph(*graph);
                let n = &g.nodes[*node as usize];
                n.kind == Kind::Leaf && n.is_cheaper_than(RUN_HERE_NS)
            }
            _ => false,
        }
    }

    /// Handles `env` on the calling thread if `cell` is idle; gives it back otherwise.
    fn try_run_here(&self, cell: &Arc<Cell>, env: Envelope) -> Option<Envelope> {
        let idle = cell.queue.lock().unwrap().is_empty();
        if !idle || cell.scheduled.swap(true, Ordering::AcqRel) {
            return Some(env);
        }
        cell.body.lock().unwrap_or_else(|p| p.into_inner()).handle(self, env);
        self.release(cell);
        None
    }

    /// Gives up `cell` after running it, scheduling it again if messages are waiting.
    fn release(&self, cell: &Arc<Cell>) {
        if !cell.queue.lock().unwrap().is_empty() {
            let _ = self.ready.send(Some(cell.clone()));
            return;
        }
        cell.scheduled.store(false, Ordering::Release);
        // A message may have arrived between the check and the store.
        if !cell.queue.lock().unwrap().is_empty() && !cell.scheduled.swap(true, Ordering::AcqRel) {
            let _ = self.ready.send(Some(cell.clone()));
        }
    }

    fn enqueue(&self, cell: &Arc<Cell>, env: Envelope) {
        cell.queue.lock().unwrap().push_back(env);
        if !cell.scheduled.swap(true, Ordering::AcqRel) {
            let _ = self.ready.send(Some(cell.clone()));
        }
    }

    /// Registers a call and returns its id and the receiver of its result.
    pub(crate) fn new_call(&self) -> (u64, Receiver<Result<Payload, String>>) {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let id = self.next_call.fetch_add(1, Ordering::Relaxed);
        if let Some(msg) = self.failure.lock().unwrap().clone() {
            let _ = tx.send(Err(msg));
        } else {
            self.calls.lock().unwrap().insert(id, tx);
        }
        (id, rx)
    }

    /// Records a failure (single-rank jobs): every pending and future call returns it.
    pub(crate) fn fail(&self, message: String) {
        self.failure.lock().unwrap().get_or_insert(message.clone());
        for (_, slot) in self.calls.lock().unwrap().drain() {
            let _ = slot.send(Err(message.clone()));
        }
    }

    pub(crate) fn send_control(&self, rank: usize, c: Control) {
        self.post(rank, Header::Control(c), None);
    }

    /// Waits for a control message matching `pick`, up to `timeout` (forever if `None`).
    pub(crate) fn wait_control<T>(
        &self,
        timeout: Option<Duration>,
        mut pick: impl FnMut(&Control) -> Option<T>,
    ) -> Option<T> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut queue = self.control.lock().unwrap();
        loop {
            if let Some(pos) = queue.iter().position(|c| pick(c).is_some()) {
                let c = queue.remove(pos).unwrap();
                return pick(&c);
            }
            queue = match deadline {
                None => self.control_signal.wait(queue).unwrap(),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return None;
                    }
                    self.control_signal.wait_timeout(queue, d - now).unwrap().0
                }
            };
        }
    }
}

/// A worker: runs scheduled cells until it receives `None`.
pub(crate) fn worker_loop(engine: Arc<Engine>, ready: Receiver<Option<Arc<Cell>>>) {
    while let Some(Some(cell)) = recv_eagerly(&ready) {
        engine.busy_workers.fetch_add(1, Ordering::Relaxed);
        {
            let mut body = cell.body.lock().unwrap_or_else(|p| p.into_inner());
            for _ in 0..BATCH {
                let Some(env) = cell.queue.lock().unwrap().pop_front() else { break };
                let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body.handle(&engine, env)));
                if let Err(payload) = run {
                    // Only reached when the job is not aborted by the hook (one rank).
                    let described = failure::take_last_panic();
                    engine
                        .fail(described.unwrap_or_else(|| failure::describe_panic(&failure::panic_message(&*payload))));
                }
            }
        }
        engine.busy_workers.fetch_sub(1, Ordering::SeqCst);
        if engine.progress_dozing.swap(false, Ordering::SeqCst) {
            if let Some(transport) = engine.transport() {
                transport.wake();
            }
        }
        engine.release(&cell);
    }
}

/// Receives from `rx`, polling briefly before blocking: a thread that sleeps in the kernel
/// costs a wake-up of several microseconds, which would dominate a token's round trip.
pub(crate) fn recv_eagerly<T>(rx: &Receiver<T>) -> Option<T> {
    for _ in 0..EAGER_POLLS {
        match rx.try_recv() {
            Ok(v) => return Some(v),
            Err(crossbeam_channel::TryRecvError::Disconnected) => return None,
            Err(crossbeam_channel::TryRecvError::Empty) => std::thread::yield_now(),
        }
    }
    rx.recv().ok()
}

impl Engine {
    /// Makes one worker exit its loop.
    pub(crate) fn stop_one_worker(&self) {
        let _ = self.ready.send(None);
    }
}
