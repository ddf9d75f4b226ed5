//! Failure is loud, never a hang: a panic anywhere names the operation, thread and rank, and
//! on a multi-rank job aborts every rank at once through `MPI_Abort`.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};

static ABORT_JOB_ON_PANIC: AtomicBool = AtomicBool::new(false);
static RANK: AtomicUsize = AtomicUsize::new(0);
static INSTALL: Once = Once::new();
static ABORTING: AtomicBool = AtomicBool::new(false);

/// What this rank's program is failing with, and the exit code that says so: when only some
/// ranks fail, the runtime's `Drop` ends the job before `main` could print the error.
static LAST_WORDS: Mutex<Option<(String, i32)>> = Mutex::new(None);

thread_local! {
    /// Overrides `RANK` on a thread that runs a simulation.
    static THREAD_RANK: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
    /// The operation this thread is running, as (operation, thread) names.
    static CURRENT_OP: RefCell<Option<(Arc<str>, Arc<str>)>> = const { RefCell::new(None) };
    /// The description of the last panic on this thread, for the worker that catches it.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Takes the description the hook recorded for the last panic on this thread.
pub(crate) fn take_last_panic() -> Option<String> {
    LAST_PANIC.with(|l| l.borrow_mut().take())
}

/// Records what this rank's program fails with (a message and its exit code) before the
/// error travels up to `main`. If the runtime is dropped on the way without `shutdown()` and
/// the other ranks do not shut down with it, the runtime prints this message, naming the
/// rank, and ends the job with this exit code, instead of a bare "dropped without shutdown".
pub fn last_words(message: impl Into<String>, exit_code: i32) {
    *LAST_WORDS.lock().unwrap_or_else(|p| p.into_inner()) = Some((message.into(), exit_code));
}

/// Takes the message and exit code [`last_words`] recorded, if any.
pub(crate) fn take_last_words() -> Option<(String, i32)> {
    LAST_WORDS.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// Exit code of a job ended by a panic.
const PANIC_EXIT_CODE: i32 = 101;

/// Installs the panic hook (once per process). With `abort_job`, a panic ends the MPI job.
pub(crate) fn install_hook(rank: usize, abort_job: bool) {
    RANK.store(rank, Ordering::SeqCst);
    ABORT_JOB_ON_PANIC.store(abort_job, Ordering::SeqCst);
    INSTALL.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let described = describe_panic(&panic_message(info.payload()));
            eprintln!("{described}");
            LAST_PANIC.with(|l| *l.borrow_mut() = Some(described));
            default(info);
            if ABORT_JOB_ON_PANIC.load(Ordering::SeqCst) {
                // One thread aborts the job; any other panicking thread waits to be killed.
                if ABORTING.swap(true, Ordering::SeqCst) {
                    loop {
                        std::thread::park();
                    }
                }
                crate::transport::mpi::abort_job(PANIC_EXIT_CODE);
            }
        }));
    });
}

/// The rank that panics on this thread name from now on: the simulator sets the virtual
/// rank of each operation it runs (on its own thread: simulations in parallel tests do not mix).
pub(crate) fn set_rank(rank: usize) {
    THREAD_RANK.with(|r| r.set(Some(rank)));
}

/// Stops aborting on panic (after a clean shutdown MPI is finalised).
pub(crate) fn disarm() {
    ABORT_JOB_ON_PANIC.store(false, Ordering::SeqCst);
}

/// "dps: rank R: operation 'x' on thread 'c[i]' panicked: msg", or "dps: rank R: panic: msg".
pub(crate) fn describe_panic(message: &str) -> String {
    let rank = THREAD_RANK.with(std::cell::Cell::get).unwrap_or_else(|| RANK.load(Ordering::SeqCst));
    CURRENT_OP.with(|c| match &*c.borrow() {
        Some((op, thread)) => format!("dps: rank {rank}: operation '{op}' on thread '{thread}' panicked: {message}"),
        None => format!("dps: rank {rank}: panic: {message}"),
    })
}

pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".into()
    }
}

/// Runs `f` as operation `op` on thread `thread`, so that a panic inside names them.
pub(crate) fn in_op<R>(op: &Arc<str>, thread: &Arc<str>, f: impl FnOnce() -> R) -> R {
    struct Reset(Option<(Arc<str>, Arc<str>)>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let prev = self.0.take();
            CURRENT_OP.with(|c| *c.borrow_mut() = prev);
        }
    }
    let prev = CURRENT_OP.with(|c| c.borrow_mut().replace((op.clone(), thread.clone())));
    let _reset = Reset(prev);
    f()
}
