//! The control queue: messages between the runtimes of different ranks (graph fingerprints
//! and verdicts, shutdown, traces), queued as they arrive and taken by the collective
//! protocols (module `collectives`) in the order they need them.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use super::messages::Control;

/// Control messages in arrival order, with a condition variable to wait for one.
#[derive(Default)]
pub(crate) struct ControlQueue {
    queue: Mutex<VecDeque<Control>>,
    arrived: Condvar,
}

impl ControlQueue {
    pub(super) fn push(&self, c: Control) {
        self.queue.lock().unwrap().push_back(c);
        self.arrived.notify_all();
    }

    /// Waits for a control message matching `pick`, up to `timeout` (forever if `None`).
    pub(crate) fn wait<T>(&self, timeout: Option<Duration>, mut pick: impl FnMut(&Control) -> Option<T>) -> Option<T> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut queue = self.queue.lock().unwrap();
        loop {
            if let Some(pos) = queue.iter().position(|c| pick(c).is_some()) {
                let c = queue.remove(pos).unwrap();
                return pick(&c);
            }
            queue = match deadline {
                None => self.arrived.wait(queue).unwrap(),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return None;
                    }
                    self.arrived.wait_timeout(queue, d - now).unwrap().0
                }
            };
        }
    }
}
