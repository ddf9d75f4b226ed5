//! Transports move encoded frames between ranks. The engine sees only this trait. A waiting
//! caller drives the transport, and the connections of imported services, itself
//! ([`Helper`]).

pub(crate) mod mpi;
pub(crate) mod watchdog;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, TryRecvError};

use crate::activity;

use crate::wire::WireToken;

pub(crate) trait Transport: Helper {
    /// Queues a frame (encoded header plus optional token) for `dest`. Never blocks.
    fn send(&self, dest: usize, header: Vec<u8>, token: Option<WireToken>);
    /// Completes every queued send, waits until all ranks got here, and stops.
    fn finish(&self);
    /// Ends a wait of the progress thread at once: a worker went idle while it dozed.
    fn wake(&self);
}

/// What a caller waiting eagerly for a call's output drives itself: the transport, whose
/// progress thread then keeps off the core (saving the two thread hops, caller to progress
/// thread and back, of a short call, each a context switch when they share a core), and an
/// imported service's connection (`service::client`), whose replies the caller then reads
/// from the socket itself, sparing the hand-off from the connection's reader thread.
pub(crate) trait Helper: Send + Sync {
    /// A caller starts waiting eagerly: until [`Helper::end_help`] it drives this
    /// ([`Helper::help`]), and the thread that otherwise does keeps off the core.
    fn begin_help(&self);
    /// One round on the calling thread (sends queued frames, handles what has arrived),
    /// without waiting for more; false if nothing happened or another thread is running one.
    fn help(&self) -> bool;
    /// The caller stops helping; `gave_up`: it is about to block, so the thread that
    /// otherwise drives this must take over at once.
    fn end_help(&self, gave_up: bool);
    /// Whether calls through it are in flight whose replies may come any moment (a
    /// service's connection; see `READER_SPIN`).
    fn awaited(&self) -> bool {
        false
    }
}

/// How many rounds a caller helps before it blocks (about as long as a worker polls for
/// work, `engine::recv_eagerly`), and how many between yields of the core. It blocks at once
/// if a yield finds the core busy (`activity::yield_core`).
const HELP_ROUNDS: u32 = 200;
const ROUNDS_PER_YIELD: u32 = 4;

/// How long a caller with a service's call in flight helps without yielding the core (about
/// a service's round trip on one node, as a connection's reader spins, `service::net`): on a
/// core other processes share, a yield hands it over for a time slice, and a yield that
/// finds it busy makes the caller block, its reply then taking the reader thread and two
/// wake-ups (runtime README, "Services": "The wake-up path").
const READER_SPIN: Duration = Duration::from_micros(20);

/// Receives a call's output from `rx`, driving `transport` (if any) and `readers` (imported
/// services' connections) while it waits, for a while, then blocking. `None`: the sender is
/// gone.
pub(crate) fn recv_helping<T>(
    transport: Option<&dyn Transport>,
    readers: &[Arc<dyn Helper>],
    rx: &Receiver<T>,
) -> Option<T> {
    let helpers = || transport.map(|t| t as &dyn Helper).into_iter().chain(readers.iter().map(|r| &**r));
    helpers().for_each(|h| h.begin_help());
    let mut got = None;
    let start = Instant::now();
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
        // Every one helps in each round (no short circuit).
        let helped = helpers().fold(false, |helped, h| h.help() | helped);
        // While a service's reply may come any moment, no yield for a while (see READER_SPIN).
        let spinning = start.elapsed() < READER_SPIN && helpers().any(|h| h.awaited());
        if !helped && round.is_multiple_of(ROUNDS_PER_YIELD) && !spinning && !activity::yield_core() {
            break;
        }
    }
    helpers().for_each(|h| h.end_help(got.is_none()));
    got.unwrap_or_else(|| rx.recv().ok())
}
