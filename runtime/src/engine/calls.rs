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
    waiting: HashMap<u64, Sender<CallResult>>,
    failure: Option<String>,
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
        let id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let mut slots = self.slots.lock().unwrap();
        match &slots.failure {
            Some(msg) => {
                let _ = tx.send(Err(msg.clone()));
            }
            None => {
                slots.waiting.insert(id, tx);
            }
        }
        (id, rx)
    }

    /// Delivers the output of call `call`.
    pub(super) fn reply(&self, call: u64, payload: Payload) {
        if let Some(slot) = self.slots.lock().unwrap().waiting.remove(&call) {
            let _ = slot.send(Ok(payload));
        }
    }

    /// Records a failure (single-rank jobs): every pending and future call returns it.
    pub(super) fn fail(&self, message: String) {
        let mut slots = self.slots.lock().unwrap();
        slots.failure.get_or_insert(message.clone());
        for (_, slot) in slots.waiting.drain() {
            let _ = slot.send(Err(message.clone()));
        }
    }

    /// A new split-merge instance id, unique in the job.
    pub(super) fn new_instance(&self) -> InstanceId {
        InstanceId { rank: self.rank, seq: self.next_instance.fetch_add(1, Ordering::Relaxed) }
    }
}
