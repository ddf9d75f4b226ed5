//! Scheduling of DPS threads on the worker pool: each thread's input queue, and the protocol
//! that hands a thread to one worker at a time.
//!
//! A DPS thread is a [`Cell`]: a FIFO queue plus a body (the user state, the split and
//! merge bookkeeping). A cell with queued messages is on the ready queue exactly once,
//! guarded by its `scheduled` flag: whoever sets the flag from false to true sends the cell
//! to the ready queue (or runs it at once, [`Scheduler::try_run_here`]); a worker takes it,
//! handles a batch of its messages, then [`releases`](Scheduler::release) it, scheduling it
//! again if more arrived. So a thread runs one operation at a time and its state needs no
//! lock of its own (the body's mutex is never contended: debug builds check it). A cell may
//! also come off the ready queue with nothing queued: an `enqueue` whose message a running
//! worker took, and handled, before that `enqueue` raised the flag; the worker runs an
//! empty batch. Generic over the message and body types so that the stress tests below
//! drive the real protocol.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use crossbeam_channel::{Receiver, Sender};

use crate::activity::{self, Activity};

/// Messages a worker handles from one cell before giving others a turn.
const BATCH: usize = 64;
/// Polls of `recv_eagerly` before it blocks. Each poll yields the core: spinning would keep
/// the thread about to be woken off an oversubscribed core. It blocks at once if a yield
/// finds the core busy (`activity::yield_core`).
const EAGER_POLLS: u32 = 200;

/// One DPS thread: its input queue and the body that handles the messages, one at a time.
#[derive(Debug)]
pub(super) struct Cell<M, B> {
    queue: Mutex<VecDeque<M>>,
    /// True from the moment the cell is sent to the ready queue (or run on the spot) until
    /// its runner released it with an empty queue.
    scheduled: AtomicBool,
    body: Mutex<B>,
}

impl<M, B> Cell<M, B> {
    pub(crate) fn new(body: B) -> Self {
        Cell { queue: Mutex::default(), scheduled: AtomicBool::new(false), body: Mutex::new(body) }
    }

    /// The body, for the one runner the `scheduled` flag admits.
    fn body(&self) -> MutexGuard<'_, B> {
        if cfg!(debug_assertions) {
            match self.body.try_lock() {
                Ok(body) => body,
                Err(TryLockError::Poisoned(p)) => p.into_inner(),
                Err(TryLockError::WouldBlock) => panic!("dps: a thread was scheduled on two workers at once"),
            }
        } else {
            self.body.lock().unwrap_or_else(|p| p.into_inner())
        }
    }
}

/// An entry of the ready queue: a cell to run, or `None`, which stops one worker.
type Ready<M, B> = Option<Arc<Cell<M, B>>>;

/// The ready queue of a rank's workers.
#[derive(Debug)]
pub(super) struct Scheduler<M, B> {
    tx: Sender<Ready<M, B>>,
    rx: Receiver<Ready<M, B>>,
}

impl<M, B> Scheduler<M, B> {
    pub(super) fn new() -> Self {
        let (tx, rx) = crossbeam_channel::unbounded();
        Scheduler { tx, rx }
    }

    /// Queues `msg` for `cell`, scheduling the cell unless it already is.
    pub(super) fn enqueue(&self, cell: &Arc<Cell<M, B>>, msg: M) {
        cell.queue.lock().unwrap().push_back(msg);
        self.schedule(cell);
    }

    /// Queues `msg` for `cell` just behind the last queued message that `holds_back`, ahead
    /// of all the others (at the front if none holds back), scheduling the cell unless it
    /// already is.
    pub(super) fn enqueue_first(&self, cell: &Arc<Cell<M, B>>, msg: M, holds_back: impl Fn(&M) -> bool) {
        {
            let mut queue = cell.queue.lock().unwrap();
            let at = queue.iter().rposition(holds_back).map_or(0, |i| i + 1);
            queue.insert(at, msg);
        }
        self.schedule(cell);
    }

    fn schedule(&self, cell: &Arc<Cell<M, B>>) {
        between_steps();
        if !cell.scheduled.swap(true, Ordering::AcqRel) {
            let _ = self.tx.send(Some(cell.clone()));
        }
    }

    /// Handles `msg` with `run` on the calling thread if `cell` is idle (nothing queued, not
    /// scheduled); gives it back otherwise.
    pub(super) fn try_run_here(&self, cell: &Arc<Cell<M, B>>, msg: M, run: impl FnOnce(&mut B, M)) -> Option<M> {
        let idle = cell.queue.lock().unwrap().is_empty();
        if !idle || cell.scheduled.swap(true, Ordering::AcqRel) {
            return Some(msg);
        }
        run(&mut cell.body(), msg);
        self.release(cell);
        None
    }

    /// Simulation: the next cell on the ready queue, without waiting.
    pub(super) fn try_take(&self) -> Option<Arc<Cell<M, B>>> {
        loop {
            match self.rx.try_recv() {
                Ok(Some(cell)) => return Some(cell),
                Ok(None) => continue,
                Err(_) => return None,
            }
        }
    }

    /// Simulation: handles one message of `cell`, taken from the ready queue; the cell stays
    /// scheduled (its operation lasts until the simulator [`release`](Scheduler::release)s it).
    pub(super) fn run_one(&self, cell: &Arc<Cell<M, B>>, handle: impl FnOnce(&mut B, M)) {
        let msg = cell.queue.lock().unwrap().pop_front();
        if let Some(msg) = msg {
            handle(&mut cell.body(), msg);
        }
    }

    /// Gives up `cell` after running it, scheduling it again if messages are waiting.
    pub(super) fn release(&self, cell: &Arc<Cell<M, B>>) {
        if !cell.queue.lock().unwrap().is_empty() {
            let _ = self.tx.send(Some(cell.clone()));
            return;
        }
        between_steps();
        cell.scheduled.store(false, Ordering::Release);
        // A message may have arrived between the check and the store: its `enqueue` saw the
        // flag still up and left the scheduling to us.
        if !cell.queue.lock().unwrap().is_empty() && !cell.scheduled.swap(true, Ordering::AcqRel) {
            let _ = self.tx.send(Some(cell.clone()));
        }
    }

    /// A worker's loop: runs scheduled cells, `handle` on each message, until it takes a
    /// `None` ([`Scheduler::stop_one_worker`]). Calls `wake` when it goes idle while the
    /// progress thread dozes (see `activity`).
    pub(super) fn work(&self, activity: &Activity, mut handle: impl FnMut(&mut B, M), wake: impl Fn()) {
        while let Some(Some(cell)) = recv_eagerly(&self.rx) {
            activity.begin_op();
            {
                let mut body = cell.body();
                for _ in 0..BATCH {
                    let Some(msg) = cell.queue.lock().unwrap().pop_front() else { break };
                    handle(&mut body, msg);
                }
            }
            if activity.end_op() {
                wake();
            }
            self.release(&cell);
        }
    }

    /// Makes one worker leave [`Scheduler::work`].
    pub(super) fn stop_one_worker(&self) {
        let _ = self.tx.send(None);
    }
}

/// Receives from `rx`, polling briefly before blocking: a thread that sleeps in the kernel
/// costs a wake-up of several microseconds, which would dominate a token's round trip. On a
/// busy core it blocks after the first poll: each poll would take a time slice's turn from
/// the computation there.
pub(crate) fn recv_eagerly<T>(rx: &Receiver<T>) -> Option<T> {
    poll_then_block(rx, activity::yield_core)
}

/// [`recv_eagerly`] with the yield between polls given (the tests count them): `yield_core`
/// returns false when the core is busy.
fn poll_then_block<T>(rx: &Receiver<T>, mut yield_core: impl FnMut() -> bool) -> Option<T> {
    for _ in 0..EAGER_POLLS {
        match rx.try_recv() {
            Ok(v) => return Some(v),
            Err(crossbeam_channel::TryRecvError::Disconnected) => return None,
            Err(crossbeam_channel::TryRecvError::Empty) if yield_core() => {}
            Err(crossbeam_channel::TryRecvError::Empty) => break,
        }
    }
    rx.recv().ok()
}

/// Where the stress tests pause a thread for a random time, so that another thread's steps
/// fall between the steps of `enqueue` and `release` as often as possible. Nothing outside
/// tests.
#[inline(always)]
fn between_steps() {
    #[cfg(test)]
    crate::stress::random_pause();
}

#[cfg(test)]
mod tests {
    //! Stress tests of enqueue/run/release: producers (standing in for the progress thread,
    //! some running cells on the spot) send tokens to cells; each handled token hops on to
    //! another random cell from inside its handler, so tokens are handed between workers.
    //! Asserted: every token hop is handled exactly once (none lost, none run twice), each
    //! cell sees each sender's tokens in order, and no cell runs on two threads at once (the
    //! debug check in `Cell::body`). Sized to run in a second or two in debug mode.

    use super::*;
    use crate::stress::Rng;
    use std::sync::atomic::{AtomicU32, AtomicUsize};
    use std::sync::Barrier;
    use std::time::{Duration, Instant};

    const CELLS: usize = 8;
    const WORKERS: usize = 4;
    const PRODUCERS: usize = 3;
    const HOPS: u32 = 3;
    /// With tokens still to handle, no progress for this long means some are lost (stuck in
    /// a queue whose cell nobody will run).
    const STALL: Duration = Duration::from_secs(5);

    /// A token: its id, the hops left, its sender (producer or cell) and its sequence number
    /// from that sender to this cell.
    #[derive(Debug)]
    struct Msg {
        id: usize,
        hops: u32,
        from: usize,
        seq: u64,
    }

    struct Body {
        index: usize,
        rng: Rng,
        /// Per sender: the last sequence number received.
        last_seq: Vec<Option<u64>>,
        /// Per destination cell: the next sequence number to send.
        next_seq: Vec<u64>,
    }

    type TestCell = Cell<Msg, Body>;

    struct World {
        scheduler: Scheduler<Msg, Body>,
        cells: Vec<Arc<TestCell>>,
        /// Per token and hop: how often it was handled.
        handled: Vec<AtomicU32>,
        /// Handlers that have not returned yet.
        in_handlers: AtomicUsize,
    }

    impl World {
        fn handle(&self, body: &mut Body, msg: Msg) {
            self.in_handlers.fetch_add(1, Ordering::SeqCst);
            let last = &mut body.last_seq[msg.from];
            if let Some(last) = *last {
                assert!(msg.seq > last, "cell {}: tokens from {} out of order", body.index, msg.from);
            }
            *last = Some(msg.seq);
            self.handled[msg.id * (HOPS as usize + 1) + msg.hops as usize].fetch_add(1, Ordering::SeqCst);
            body.rng.pause();
            if msg.hops > 0 {
                let to = body.rng.below(CELLS as u64) as usize;
                let seq = body.next_seq[to];
                body.next_seq[to] += 1;
                let next = Msg { id: msg.id, hops: msg.hops - 1, from: PRODUCERS + body.index, seq };
                self.scheduler.enqueue(&self.cells[to], next);
            }
            self.in_handlers.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Runs `rounds` rounds; in each, every producer sends `per_round` tokens, and the round
    /// ends once all their hops are handled. Every round ends with the cells idle: a token
    /// stranded in a queue would not be picked up by a later token, and stalls the run.
    fn run(rounds: usize, per_round: usize) {
        let senders = PRODUCERS + CELLS;
        let cells = (0..CELLS)
            .map(|index| {
                Arc::new(Cell::new(Body {
                    index,
                    rng: Rng::new(index as u64 * 31),
                    last_seq: vec![None; senders],
                    next_seq: vec![0; CELLS],
                }))
            })
            .collect();
        let tokens_per_producer = rounds * per_round;
        let total = PRODUCERS * tokens_per_producer;
        let handled = (0..total * (HOPS as usize + 1)).map(|_| AtomicU32::new(0)).collect();
        let world = Arc::new(World { scheduler: Scheduler::new(), cells, handled, in_handlers: AtomicUsize::new(0) });
        let activity = Arc::new(Activity::default());
        let workers: Vec<_> = (0..WORKERS)
            .map(|_| {
                let (world, activity) = (world.clone(), activity.clone());
                std::thread::spawn(move || world.scheduler.work(&activity, |b, m| world.handle(b, m), || {}))
            })
            .collect();
        let round_start = Arc::new(Barrier::new(PRODUCERS + 1));
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let (world, round_start) = (world.clone(), round_start.clone());
                std::thread::spawn(move || {
                    let mut rng = Rng::new(p as u64 * 1013 + 7);
                    let mut next_seq = [0u64; CELLS];
                    for i in 0..tokens_per_producer {
                        if i % per_round == 0 {
                            round_start.wait();
                        }
                        let to = rng.below(CELLS as u64) as usize;
                        let msg = Msg { id: p * tokens_per_producer + i, hops: HOPS, from: p, seq: next_seq[to] };
                        next_seq[to] += 1;
                        let cell = &world.cells[to];
                        // Producer 0 runs idle cells on the spot, as the progress thread does.
                        let msg = if p == 0 {
                            world.scheduler.try_run_here(cell, msg, |b, m| world.handle(b, m))
                        } else {
                            Some(msg)
                        };
                        if let Some(msg) = msg {
                            world.scheduler.enqueue(cell, msg);
                        }
                        rng.pause();
                    }
                })
            })
            .collect();
        let count = || world.handled.iter().map(|h| h.load(Ordering::SeqCst) as usize).sum::<usize>();
        let mut stalled = None;
        for round in 0..rounds {
            round_start.wait();
            let expected = (round + 1) * PRODUCERS * per_round * (HOPS as usize + 1);
            let (mut seen, mut since) = (count(), Instant::now());
            while seen < expected {
                if since.elapsed() > STALL {
                    stalled = Some(format!("round {round}: {} of {expected} token hops handled", seen));
                    break;
                }
                std::thread::yield_now();
                let now = count();
                if now != seen {
                    (seen, since) = (now, Instant::now());
                }
            }
            if stalled.is_some() {
                break;
            }
        }
        assert!(stalled.is_none(), "tokens were lost: {}", stalled.unwrap());
        for p in producers {
            p.join().unwrap();
        }
        // Every hop is handled, but a handler may still be inside `enqueue` of a token that
        // another worker has already handled, about to schedule its cell again (with nothing
        // queued: harmless, a worker runs an empty batch). Stopping the workers before that
        // would leave the cell marked scheduled behind their stop messages.
        let since = Instant::now();
        while world.in_handlers.load(Ordering::SeqCst) > 0 {
            assert!(since.elapsed() < STALL, "a handler never returned");
            std::thread::yield_now();
        }
        for _ in 0..WORKERS {
            world.scheduler.stop_one_worker();
        }
        for w in workers {
            w.join().unwrap();
        }
        let lost = world.handled.iter().filter(|h| h.load(Ordering::SeqCst) == 0).count();
        let twice = world.handled.iter().filter(|h| h.load(Ordering::SeqCst) > 1).count();
        assert_eq!((lost, twice), (0, 0), "{lost} token hops were lost and {twice} run more than once");
        for cell in &world.cells {
            assert!(cell.queue.lock().unwrap().is_empty(), "a cell kept messages");
            assert!(!cell.scheduled.load(Ordering::SeqCst), "an idle cell is still marked scheduled");
        }
    }

    #[test]
    fn no_token_is_lost_or_run_twice_when_workers_hand_tokens_around() {
        run(500, 2);
    }

    #[test]
    fn a_first_message_goes_behind_those_that_hold_it_back_and_ahead_of_the_rest() {
        // Messages: (name, holds back). A queue of plain "p" messages, with runtime
        // messages "r" and earlier urgent ones "u" that a new urgent one must not pass.
        let scheduler: Scheduler<(&str, bool), ()> = Scheduler::new();
        let queued = |cell: &Arc<Cell<(&'static str, bool), ()>>| -> Vec<&str> {
            cell.queue.lock().unwrap().iter().map(|m| m.0).collect()
        };
        let cell = Arc::new(Cell::new(()));
        scheduler.enqueue_first(&cell, ("u1", true), |m| m.1);
        assert_eq!(queued(&cell), ["u1"], "an empty queue");
        assert_eq!(scheduler.try_take().map(|c| Arc::ptr_eq(&c, &cell)), Some(true), "scheduled once");
        for m in [("p1", false), ("r1", true), ("p2", false), ("p3", false)] {
            scheduler.enqueue(&cell, m);
        }
        scheduler.enqueue_first(&cell, ("u2", true), |m| m.1);
        scheduler.enqueue_first(&cell, ("u3", true), |m| m.1);
        assert_eq!(queued(&cell), ["u1", "p1", "r1", "u2", "u3", "p2", "p3"]);
        let plain = Arc::new(Cell::new(()));
        for m in [("p1", false), ("p2", false)] {
            scheduler.enqueue(&plain, m);
        }
        scheduler.enqueue_first(&plain, ("u1", true), |m| m.1);
        assert_eq!(queued(&plain), ["u1", "p1", "p2"], "ahead of every plain message");
        assert!(scheduler.try_take().is_some() && scheduler.try_take().is_none(), "each cell scheduled once");
    }

    #[test]
    fn polls_while_the_core_is_free_and_blocks_once_it_is_busy() {
        // A free core: polls until the message comes (sent at the 10th yield).
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut yields = 0;
        let got = poll_then_block(&rx, || {
            yields += 1;
            if yields == 10 {
                tx.send(7).unwrap();
            }
            true
        });
        assert_eq!((got, yields), (Some(7), 10));
        // A busy core: one poll, then it blocks (the message, sent during that yield, is
        // then received by the blocking receive, not by a second poll).
        let mut yields = 0;
        let got = poll_then_block(&rx, || {
            yields += 1;
            tx.send(8).unwrap();
            false
        });
        assert_eq!((got, yields), (Some(8), 1));
        // Nothing comes: every poll is made, then it blocks until the sender is gone.
        let (tx, rx) = crossbeam_channel::unbounded::<u8>();
        let mut yields = 0;
        let mut tx = Some(tx);
        let got = poll_then_block(&rx, || {
            yields += 1;
            if yields == EAGER_POLLS {
                tx = None;
            }
            true
        });
        assert_eq!((got, yields, tx.is_none()), (None, EAGER_POLLS, true));
    }
}
