//! Transports move encoded frames between ranks. The engine sees only this trait.

pub(crate) mod mpi;
pub(crate) mod watchdog;

use crossbeam_channel::{Receiver, TryRecvError};

use crate::activity;

use crate::wire::WireToken;

pub(crate) trait Transport: Send + Sync {
    /// Queues a frame (encoded header plus optional token) for `dest`. Never blocks.
    fn send(&self, dest: usize, header: Vec<u8>, token: Option<WireToken>);
    /// Completes every queued send, waits until all ranks got here, and stops.
    fn finish(&self);
    /// Ends a wait of the progress thread at once: a worker went idle while it dozed.
    fn wake(&self);
    /// A caller starts waiting eagerly for a call's output: until [`Transport::end_help`] it
    /// drives the transport itself ([`Transport::help`]), and the progress thread keeps off
    /// the core. Saves the two thread hops (caller to progress thread and back) of a short
    /// call, each a context switch when they share a core.
    fn begin_help(&self);
    /// One round of the transport on the calling thread (sends queued frames, delivers what
    /// arrived); false if nothing happened or another thread is running one.
    fn help(&self) -> bool;
    /// The caller stops helping; `gave_up`: it is about to block, so the progress thread must
    /// take over at once.
    fn end_help(&self, gave_up: bool);
}

/// How many rounds a caller helps before it blocks (about as long as a worker polls for
/// work, `engine::recv_eagerly`), and how many between yields of the core. It blocks at once
/// if a yield finds the core busy (`activity::yield_core`).
const HELP_ROUNDS: u32 = 200;
const ROUNDS_PER_YIELD: u32 = 4;

/// Receives a call's output from `rx`, driving `transport` while it waits, for a while, then
/// blocking. `None`: the sender is gone.
pub(crate) fn recv_helping<T>(transport: &dyn Transport, rx: &Receiver<T>) -> Option<T> {
    transport.begin_help();
    let mut got = None;
    for round in 1..=HELP_ROUNDS {
        match rx.try_recv() {
            Ok(v) => {
                got = Some(Some(v));
                break;
            }
            Err(TryRecvError::Disconnected) => {
                got = Some(None);
                break;
            }
            Err(TryRecvError::Empty) => {}
        }
        if !transport.help() && round.is_multiple_of(ROUNDS_PER_YIELD) && !activity::yield_core() {
            break;
        }
    }
    transport.end_help(got.is_none());
    got.unwrap_or_else(|| rx.recv().ok())
}
