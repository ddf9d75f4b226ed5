//! How busy a rank's workers are, and the doze/wake handshake between them and the progress
//! thread.
//!
//! While the workers fill the rank's share of the cores, the progress thread *dozes*: it
//! waits on its channel for longer and longer, since every poll would be taken from a
//! computation. A worker that goes idle during a doze must wake it, or an input that arrived
//! meanwhile waits with a core free. The handshake is two `SeqCst` flags, written in opposite
//! orders:
//!
//! - the progress thread raises `dozing`, *then* reads `busy_workers` ([`Activity::doze`]);
//! - a worker lowers `busy_workers`, *then* swaps `dozing` down ([`Activity::end_op`]).
//!
//! In the single total order of `SeqCst` operations, one of the two second steps comes after
//! the other thread's first step: either the progress thread sees the workers unsaturated and
//! does not doze, or the worker sees `dozing` and wakes it. A wake-up cannot be lost. A leaf
//! module: it imports nothing from the crate.
//!
//! Threads that wait by polling (idle workers, a caller helping the transport, the progress
//! thread) yield the core between polls with [`yield_core`], which also says whether the core
//! is busy: then they stop polling and block (see there).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A yield of the core that takes longer than this ran another thread's time slice, not
/// just other pollers' turns (a few µs each): the core is busy computing.
const BUSY_YIELD: Duration = Duration::from_micros(30);

/// Yields the core; false if the core is busy (the yield took longer than [`BUSY_YIELD`]).
/// A thread that polls with yields on a busy core gets a turn every time the computation
/// yields or is preempted, so its polls stretch over that many time slices and each takes a
/// slice from the computation: Game of Life's band, which yields every ~100 µs, kept three
/// idle workers, the progress thread and the waiting caller in turns on its core, 15-20% of
/// its time. A poller told the core is busy stops polling and blocks.
#[must_use = "a false result means the caller should stop polling and block"]
pub(crate) fn yield_core() -> bool {
    let start = Instant::now();
    std::thread::yield_now();
    start.elapsed() <= BUSY_YIELD
}

/// The workers' activity on one rank, shared by the workers and the progress thread.
#[derive(Debug, Default)]
pub(crate) struct Activity {
    /// Workers running an operation now.
    busy_workers: AtomicUsize,
    /// True while the progress thread waits with the workers saturated (raised by
    /// [`Activity::doze`], lowered by the worker that wakes it or by [`Activity::wake_up`]).
    dozing: AtomicBool,
}

impl Activity {
    /// A worker starts running a cell. `Relaxed`: a worker that becomes busy never needs to
    /// wake anyone, and the progress thread reads the count again before it dozes.
    pub(crate) fn begin_op(&self) {
        self.busy_workers.fetch_add(1, Ordering::Relaxed);
    }

    /// A worker stops running a cell. Returns true if the progress thread was dozing: the
    /// caller must then wake it (`Transport::wake`).
    #[must_use = "a true result means the progress thread must be woken"]
    pub(crate) fn end_op(&self) -> bool {
        self.busy_workers.fetch_sub(1, Ordering::SeqCst);
        between_steps();
        self.dozing.swap(false, Ordering::SeqCst)
    }

    /// True while the busy workers fill `cores`.
    pub(crate) fn saturated(&self, cores: usize) -> bool {
        // SeqCst, against `end_op`'s decrement then swap: one of the two sees the other.
        self.busy_workers.load(Ordering::SeqCst) >= cores
    }

    /// The progress thread is about to wait long: raises `dozing`, and returns true if the
    /// workers still fill `cores`. False (flag down again) if one went idle meanwhile: the
    /// thread must not doze. After a true result the thread calls [`Activity::wake_up`] when
    /// its wait ends, however it ends.
    pub(crate) fn doze(&self, cores: usize) -> bool {
        self.dozing.store(true, Ordering::SeqCst);
        between_steps();
        if self.saturated(cores) {
            return true;
        }
        self.dozing.store(false, Ordering::SeqCst);
        false
    }

    /// The progress thread's wait is over.
    pub(crate) fn wake_up(&self) {
        self.dozing.store(false, Ordering::SeqCst);
    }
}

/// Where the stress test pauses a thread for a random time between the two steps of its side
/// of the handshake, so that the other thread's steps fall in between as often as possible.
/// Nothing outside tests.
#[inline(always)]
fn between_steps() {
    #[cfg(test)]
    crate::stress::random_pause();
}

#[cfg(test)]
mod tests {
    //! Stress test of the handshake. In each round every worker starts an operation, then the
    //! progress thread tries to doze while the workers end theirs, each after a random delay;
    //! the round ends when all of them, the progress thread included, reach a barrier. So a
    //! doze that no `end_op` ends keeps the progress thread from the barrier: a lost wake-up
    //! shows as a wait of `LOST`, and fails the test. Sized to run in about a second in debug.

    use super::*;
    use crate::stress::Rng;
    use std::sync::atomic::AtomicU64;
    use std::sync::mpsc::{channel, RecvTimeoutError};
    use std::sync::{Arc, Barrier};

    /// Every worker ends its operation within microseconds of the doze: a wait this long
    /// means nobody woke the progress thread.
    const LOST: std::time::Duration = std::time::Duration::from_secs(2);

    /// Runs `rounds` rounds with `workers` workers on `cores` cores (`workers >= cores`, so
    /// that every round starts saturated).
    fn stress(workers: usize, cores: usize, rounds: u64) {
        let activity = Arc::new(Activity::default());
        let (wake_tx, wake_rx) = channel::<()>();
        let barrier = Arc::new(Barrier::new(workers + 1));
        let dozes = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..workers as u64)
            .map(|w| {
                let (activity, wake_tx, barrier) = (activity.clone(), wake_tx.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let mut rng = Rng::new(w * 7919);
                    for _ in 0..rounds {
                        activity.begin_op();
                        barrier.wait();
                        rng.pause();
                        if activity.end_op() {
                            wake_tx.send(()).unwrap();
                        }
                        barrier.wait();
                    }
                })
            })
            .collect();
        let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
        for round in 0..rounds {
            // A wake-up left over from the last round (a worker woke a doze that then saw it
            // must not happen) would hide a lost one. `dozing` is down here, so none for this
            // round can be queued yet.
            while wake_rx.try_recv().is_ok() {}
            barrier.wait();
            rng.pause();
            if activity.saturated(cores) && activity.doze(cores) {
                dozes.fetch_add(1, Ordering::Relaxed);
                let woken = wake_rx.recv_timeout(LOST);
                activity.wake_up();
                assert!(
                    !matches!(woken, Err(RecvTimeoutError::Timeout)),
                    "round {round}: a wake-up was lost: the progress thread dozed and no worker going idle woke it"
                );
            }
            barrier.wait();
        }
        for t in threads {
            t.join().unwrap();
        }
        assert!(dozes.load(Ordering::Relaxed) > 0, "the progress thread never dozed: the test tested nothing");
    }

    #[test]
    fn a_worker_going_idle_always_wakes_a_dozing_progress_thread() {
        stress(1, 1, 20_000);
    }

    #[test]
    fn the_last_of_several_workers_going_idle_wakes_a_dozing_progress_thread() {
        stress(3, 2, 10_000);
    }
}
