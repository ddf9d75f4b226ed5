//! Transports move encoded frames between ranks. The engine sees only this trait. A waiting
//! caller drives the transport, and the [`Reader`]s of imported services, itself.

pub(crate) mod mpi;
pub(crate) mod watchdog;

use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// Something else a waiting caller drives beside the transport: an imported service's
/// connection, whose replies the caller reads from the socket itself (`service::client`),
/// sparing the hand-off from the connection's reader thread to the caller.
pub(crate) trait Reader: Send + Sync {
    /// A caller starts waiting eagerly: until [`Reader::end_help`] it reads what arrives
    /// ([`Reader::help`]), and the connection's reader thread keeps off the core.
    fn begin_help(&self);
    /// Reads and handles what has arrived, without waiting for more; false if nothing had
    /// (or another thread is reading).
    fn help(&self) -> bool;
    /// The caller stops helping; `gave_up`: it is about to block, so the reader thread must
    /// take over at once.
    fn end_help(&self, gave_up: bool);
    /// Whether calls through it are in flight (their replies may come any moment).
    fn awaited(&self) -> bool;
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

/// Receives a call's output from `rx`, driving `transport` (if any) and `readers` while it
/// waits, for a while, then blocking. `None`: the sender is gone.
pub(crate) fn recv_helping<T>(
    transport: Option<&dyn Transport>,
    readers: &[Arc<dyn Reader>],
    rx: &Receiver<T>,
) -> Option<T> {
    if let Some(t) = transport {
        t.begin_help();
    }
    for r in readers {
        r.begin_help();
    }
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
        let mut helped = transport.is_some_and(|t| t.help());
        for r in readers {
            helped |= r.help();
        }
        // While a service's reply may come any moment, no yield for a while (see READER_SPIN).
        let spinning = start.elapsed() < READER_SPIN && readers.iter().any(|r| r.awaited());
        if !helped && round.is_multiple_of(ROUNDS_PER_YIELD) && !spinning && !activity::yield_core() {
            break;
        }
    }
    if let Some(t) = transport {
        t.end_help(got.is_none());
    }
    for r in readers {
        r.end_help(got.is_none());
    }
    got.unwrap_or_else(|| rx.recv().ok())
}
