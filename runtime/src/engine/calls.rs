//! Calls made on this rank: the slot where each call's output arrives, the failure that ends
//! them all (one-rank jobs), and the ids of calls and of split instances.
//!
//! The failure is kept under the same lock as the slots: a call registered while a failure is
//! recorded must get it, never wait for a reply that will not come.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crossbeam_channel::{Receiver, Sender};

use super::messages::{InstanceId, Payload};

/// A call's outcome: its output, or the failure that ended it.
pub(crate) type CallResult = Result<Payload, String>;

/// The calls of this rank and the counters that name calls and instances.
pub(super) struct Calls {
    rank: u32,
    slots: Mutex<Slots>,
    next_call: AtomicU64,
    next_instance: AtomicU64,
}

#[derive(Default)]
struct Slots {
    waiting: HashMap<u64, Slot>,
    failure: Option<String>,
}

/// Where a call's outcome goes: a caller's receiver, or a function (a service's gateway).
enum Slot {
    Channel(Sender<CallResult>),
    Then(Box<dyn FnOnce(CallResult) + Send>),
}

impl Slot {
    fn send(self, result: CallResult) {
        match self {
            Slot::Channel(tx) => {
                let _ = tx.send(result);
            }
            Slot::Then(done) => {
                // Not the cost of the operation that produced the result (see `callback_ns`).
                let start = std::time::Instant::now();
                done(result);
                CALLBACK_NS.set(CALLBACK_NS.get() + start.elapsed().as_nanos() as u64);
            }
        }
    }
}

thread_local! {
    /// The time this thread has spent in the callbacks of calls ([`Calls::new_call_then`]).
    static CALLBACK_NS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The time the calling thread has spent, so far, in the callbacks that take calls'
/// outcomes (a service's gateway writing its reply to the client's socket): a leaf's
/// measured cost leaves out what this grew by while it ran, so that a short leaf of a
/// service counts as short (and runs on the gateway's thread, see `Engine::dispatch`).
pub(super) fn callback_ns() -> u64 {
    CALLBACK_NS.get()
}

impl Calls {
    pub(super) fn new(rank: usize) -> Self {
        Calls {
            rank: rank as u32,
            slots: Mutex::default(),
            next_call: AtomicU64::new(0),
            next_instance: AtomicU64::new(0),
        }
    }

    /// Registers a call and returns its id and the receiver of its result.
    pub(super) fn new_call(&self) -> (u64, Receiver<CallResult>) {
        let (tx, rx) = crossbeam_channel::bounded(1);
        (self.register(Slot::Channel(tx)), rx)
    }

    /// Registers a call whose result goes to `done`, and returns its id.
    pub(super) fn new_call_then(&self, done: Box<dyn FnOnce(CallResult) + Send>) -> u64 {
        self.register(Slot::Then(done))
    }

    fn register(&self, slot: Slot) -> u64 {
        let id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let mut slots = self.slots.lock().unwrap();
        match &slots.failure {
            Some(msg) => {
                let msg = msg.clone();
                drop(slots);
                slot.send(Err(msg));
            }
            None => {
                slots.waiting.insert(id, slot);
            }
        }
        id
    }

    /// Delivers the output of call `call`.
    pub(super) fn reply(&self, call: u64, payload: Payload) {
        let slot = self.slots.lock().unwrap().waiting.remove(&call);
        if let Some(slot) = slot {
            slot.send(Ok(payload));
        }
    }

    /// Ends call `call` with a failure (a service it called did not answer); the other
    /// calls go on. A later reply for it, if any, is dropped.
    pub(super) fn fail_one(&self, call: u64, message: String) {
        let slot = self.slots.lock().unwrap().waiting.remove(&call);
        if let Some(slot) = slot {
            slot.send(Err(message));
        }
    }

    /// Records a failure (single-rank jobs): every pending and future call returns it.
    pub(super) fn fail(&self, message: String) {
        let mut slots = self.slots.lock().unwrap();
        slots.failure.get_or_insert(message.clone());
        let waiting: Vec<Slot> = slots.waiting.drain().map(|(_, slot)| slot).collect();
        drop(slots);
        for slot in waiting {
            slot.send(Err(message.clone()));
        }
    }

    /// A new split-merge instance id, unique in the job.
    pub(super) fn new_instance(&self) -> InstanceId {
        InstanceId { rank: self.rank, seq: self.next_instance.fetch_add(1, Ordering::Relaxed) }
    }
}
