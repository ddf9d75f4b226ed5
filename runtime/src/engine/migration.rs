//! Moving a DPS thread (its state and the messages queued for it) to another rank while the
//! job runs. The protocol is described in `runtime/README.md` ("Migration"); in short:
//!
//! - A move is a `Move` message addressed to the thread itself, so it is handled between two
//!   of the thread's operations, in order with its other messages. If the thread has a
//!   split, stream or merge instance under way, the move waits until it has none.
//! - The thread's body then sends its encoded state (`Install`) to the new rank, records the
//!   new rank in this rank's view of the collection, and stays behind as a *forwarder*: every
//!   message still queued for it, or arriving later, is sent on to wherever this rank
//!   believes the thread lives. MPI keeps the order of one rank's messages to another, so
//!   what the old rank forwards arrives after the state.
//! - The new rank installs the state, tells every rank where the thread now lives
//!   (`Located`, numbered by the thread's move count so that a late announcement never
//!   overrides a newer one) and acknowledges the move to the rank that asked for it.
//!
//! A message is never dropped: it is handled by the body that holds the state or forwarded
//! by one that does not, and a rank's view only ever points to a rank that hosted the thread
//! after this rank's own last move of it. None is duplicated: each message is queued at one
//! cell, and that cell either handles or forwards it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::messages::{Control, Header, ThreadAddr};
use super::thread::ThreadBody;
use super::{Engine, Envelope, ThreadCell};
use crate::collection::CollInfo;
use crate::error::{Error, ErrorKind};
use crate::node::{AnyToken, Encoder};
use crate::wire::WireToken;

/// How long a move may take before the requester reports it (a thread that never stops
/// having an instance under way cannot move).
const MOVE_TIMEOUT: Duration = Duration::from_secs(120);

/// How the state of a movable collection crosses ranks.
#[derive(Clone, Copy)]
pub(crate) struct StateCodec {
    pub(crate) encode: Encoder,
    pub(crate) decode: fn(WireToken) -> AnyToken,
}

/// The state codecs of the movable collections, and the ids of this rank's move requests.
#[derive(Default)]
pub(crate) struct Codecs {
    codecs: RwLock<HashMap<u32, StateCodec>>,
    next_move: AtomicU64,
}

impl Codecs {
    /// Makes collection `coll` movable.
    pub(crate) fn register(&self, coll: u32, codec: StateCodec) {
        self.codecs.write().unwrap().insert(coll, codec);
    }

    fn get(&self, coll: u32) -> Option<StateCodec> {
        self.codecs.read().unwrap().get(&coll).copied()
    }
}

/// A thread's body's side of migration: whether the state is here, how often it moved, and
/// the moves asked of it that wait for its instances to end.
#[derive(Default)]
pub(super) struct Moving {
    gone: bool,
    epoch: u32,
    pending: VecDeque<Order>,
}

/// A move asked of a thread.
struct Order {
    dest: usize,
    requester: u32,
    id: u64,
}

/// Handles the migration side of a message for `body`: installs an arriving state, forwards
/// messages for a thread that moved away, queues move requests. Returns the messages the
/// thread's operations handle.
pub(super) fn arrive(body: &mut ThreadBody, engine: &Engine, env: Envelope) -> Option<Envelope> {
    match env.header {
        Header::Install { to, epoch, requester, id } => {
            assert!(body.moving.gone, "dps: rank {}: thread {to:?} arrived where it already lives", engine.rank);
            let codec = engine.codecs.get(to.coll).expect("dps: a state arrived for a collection that cannot move");
            body.state = env.payload.expect("dps: a moving thread without its state").into_token(codec.decode);
            (body.moving.gone, body.moving.epoch) = (false, epoch);
            engine.registry.collection(to.coll).relocate(to.index as usize, engine.rank, epoch);
            for rank in (0..engine.ranks).filter(|&r| r != engine.rank) {
                let located = Header::Located { thread: to, rank: engine.rank as u32, epoch };
                engine.post(rank, located, None);
            }
            engine.send_control(requester as usize, Control::Moved { id });
            None
        }
        _ if body.moving.gone => {
            forward(engine, env);
            None
        }
        Header::Move { dest, requester, id, .. } => {
            body.moving.pending.push_back(Order { dest: dest as usize, requester, id });
            None
        }
        _ => Some(env),
    }
}

/// After each message: carries out the moves asked of the thread once it is quiet.
pub(super) fn after_message(body: &mut ThreadBody, engine: &Engine) {
    while !body.moving.gone && body.is_quiet() {
        let Some(order) = body.moving.pending.pop_front() else { return };
        if order.dest == engine.rank {
            engine.send_control(order.requester as usize, Control::Moved { id: order.id });
            continue;
        }
        let addr = body.addr;
        let codec = engine.codecs.get(addr.coll).expect("dps: the requester checked that the collection can move");
        let state = std::mem::replace(&mut body.state, Box::new(()));
        let epoch = body.moving.epoch + 1;
        body.moving.gone = true;
        // The state is queued before this rank's view points at the new rank: another thread
        // of this rank that reads the new view then queues its messages behind the state (a
        // message ahead of it would reach a rank that does not host the thread yet).
        let install = Header::Install { to: addr, epoch, requester: order.requester, id: order.id };
        engine.post(order.dest, install, Some((state, codec.encode)));
        engine.registry.collection(addr.coll).relocate(addr.index as usize, order.dest, epoch);
        // Later moves follow the thread (after its state, in MPI's order).
        for later in body.moving.pending.drain(..) {
            let again = Header::Move { to: addr, dest: later.dest as u32, requester: later.requester, id: later.id };
            engine.post(order.dest, again, None);
        }
    }
}

/// Sends a message for a thread that moved away on to where this rank believes it lives.
fn forward(engine: &Engine, env: Envelope) {
    let to = match &env.header {
        Header::Token { to, .. } | Header::Close { to, .. } | Header::Credit { to, .. } | Header::Move { to, .. } => {
            *to
        }
        _ => unreachable!("dps: only thread messages reach a thread"),
    };
    let rank = engine.registry.rank_of(to);
    assert_ne!(rank, engine.rank, "dps: rank {}: thread {to:?} moved away to an unknown rank", engine.rank);
    let payload = match (&env.header, env.payload) {
        (_, None) => None,
        (Header::Token { graph, node, .. }, Some(payload)) => {
            let g = engine.registry.graph(*graph);
            let n = &g.nodes[*node as usize];
            Some((payload.into_token(n.decode), n.encode))
        }
        _ => unreachable!("dps: only tokens and states carry payloads"),
    };
    engine.post(rank, env.header, payload);
}

impl Engine {
    /// The cell a thread message goes to: the thread's cell, created as a forwarder (about
    /// to receive the state) when a thread moves here for the first time.
    pub(super) fn cell_for(&self, header: &Header, to: ThreadAddr) -> Arc<ThreadCell> {
        if let Some(cell) = self.registry.cell(to) {
            return cell;
        }
        if let Header::Install { .. } = header {
            let coll = self.registry.collection(to.coll);
            return self.registry.cell_or_insert(to, || {
                let mut body = ThreadBody::new(to, format!("{}[{}]", coll.name, to.index), Box::new(()));
                body.moving.gone = true;
                body
            });
        }
        panic!("dps: rank {} received a message for thread {to:?}, which it does not host", self.rank)
    }

    /// Applies another rank's announcement that `thread` now lives on `rank`.
    pub(super) fn located(&self, thread: ThreadAddr, rank: u32, epoch: u32) {
        self.registry.collection(thread.coll).relocate(thread.index as usize, rank as usize, epoch);
    }

    /// Moves thread `index` of `coll` to rank `dest` for each `(index, dest)` of `moves`, and
    /// waits until every one has arrived. Everything is checked before anything moves.
    ///
    /// # Errors
    /// If the collection's state cannot move (not created movable), an index is out of range,
    /// a rank does not exist, or a move does not complete within `MOVE_TIMEOUT`.
    pub(crate) fn move_threads(&self, coll: &CollInfo, moves: &[(usize, usize)]) -> Result<(), Error> {
        let mut waiting = self.request_moves(coll, moves)?;
        while !waiting.is_empty() {
            let arrived = self.control.wait(Some(MOVE_TIMEOUT), |c| match c {
                Control::Moved { id } if waiting.contains(id) => Some(*id),
                _ => None,
            });
            match arrived {
                Some(id) => waiting.remove(&id),
                None => {
                    return Err(Error::new(
                        ErrorKind::Failed,
                        format!("collection \"{}\": {} thread move(s) did not complete within {MOVE_TIMEOUT:?} (a thread moves only between instances: does it always have a split or merge under way?)", coll.name, waiting.len()),
                    ))
                }
            };
        }
        Ok(())
    }

    /// Takes the arrivals of `waiting`'s moves that are here, without waiting (a simulation
    /// delivers them while its driver runs).
    pub(crate) fn take_moved(&self, waiting: &mut HashSet<u64>) {
        loop {
            let arrived = self.control.wait(Some(Duration::ZERO), |c| match c {
                Control::Moved { id } if waiting.contains(id) => Some(*id),
                _ => None,
            });
            let Some(id) = arrived else { return };
            waiting.remove(&id);
        }
    }

    /// Checks the moves (as [`Engine::move_threads`]) and asks each thread to move; returns
    /// the ids of the moves, whose arrivals come back as `Control::Moved`.
    pub(crate) fn request_moves(&self, coll: &CollInfo, moves: &[(usize, usize)]) -> Result<HashSet<u64>, Error> {
        let name = &coll.name;
        if self.codecs.get(coll.id as u32).is_none() {
            return Err(Error::new(
                ErrorKind::Usage,
                format!("collection \"{name}\": its threads cannot move: create it with Runtime::movable_collection, whose state type is serializable"),
            ));
        }
        for &(index, dest) in moves {
            if index >= coll.ranks.len() {
                return Err(Error::new(
                    ErrorKind::Usage,
                    format!(
                        "collection \"{name}\" has {} threads: there is no thread {index} to move",
                        coll.ranks.len()
                    ),
                ));
            }
            if dest >= self.ranks {
                return Err(Error::mapping(format!(
                    "collection \"{name}\": cannot move thread {index} to rank {dest}, which does not exist: the job has {} rank{} (0..={})",
                    self.ranks,
                    if self.ranks == 1 { "" } else { "s" },
                    self.ranks - 1
                )));
            }
        }
        let mut waiting = HashSet::new();
        for &(index, dest) in moves {
            let id = self.codecs.next_move.fetch_add(1, Ordering::Relaxed);
            let to = ThreadAddr { coll: coll.id as u32, index: index as u32 };
            let request = Header::Move { to, dest: dest as u32, requester: self.rank as u32, id };
            self.post(coll.rank_of(index), request, None);
            waiting.insert(id);
        }
        Ok(waiting)
    }
}
