//! The simulated clock, kept by the one OS thread that runs a simulation (see `sim`): the
//! time of the event being handled, and within an operation the time that operation has used
//! so far. Thread-local, because the simulator runs every operation of every virtual rank on
//! the thread that drives it; any other thread sees no simulation.
//!
//! An operation's time depends on the mode: in DE (direct execution) the thread's CPU time
//! spent in it, plus what was charged; in PDEXEC and NOALLOC only what was charged (kernel
//! costs from the platform file, per-message overheads), so the prediction is exactly
//! reproducible. The trace (`trace`) and the posts of an operation read the clock here.

use std::cell::RefCell;
use std::sync::Arc;

use crate::simtime;

/// How the simulator charges an operation's time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SimMode {
    /// Direct execution: each operation runs for real and its CPU time is charged.
    De,
    /// Partial direct execution: kernels the program marks with [`skip_kernel`] are not run;
    /// their calibrated cost is charged instead. The prediction is deterministic.
    Pdexec,
    /// As `Pdexec`, and programs that support it also leave out the data (tokens carry
    /// their sizes, not their contents).
    Noalloc,
}

impl SimMode {
    /// The mode's name on the command line: `de`, `pdexec`, `noalloc`.
    pub fn name(self) -> &'static str {
        match self {
            SimMode::De => "de",
            SimMode::Pdexec => "pdexec",
            SimMode::Noalloc => "noalloc",
        }
    }
}

/// The cost of a kernel call in seconds, from its name, dimensions and work
/// (`None`: the platform has no table for it).
pub type KernelCost = Arc<dyn Fn(&str, &[u64], f64) -> Option<f64> + Send + Sync>;

struct Clock {
    mode: SimMode,
    /// The time of the event being handled, ns.
    now: u64,
    op: Option<Op>,
    kernels: KernelCost,
}

/// The operation running now.
struct Op {
    /// The thread's CPU time when it started (DE), ns.
    cpu_start: u64,
    /// Time charged to it so far, ns.
    charged: u64,
    /// What each ns it uses counts for (1, or the host's co-run slowdown).
    factor: f64,
}

thread_local! {
    static CLOCK: RefCell<Option<Clock>> = const { RefCell::new(None) };
}

/// This thread's CPU time, ns (a u64 of ns holds 584 years of it).
fn thread_cpu_ns() -> u64 {
    crate::cpu_time::thread().as_nanos() as u64
}

fn with<R>(f: impl FnOnce(&mut Clock) -> R) -> Option<R> {
    CLOCK.with(|c| c.borrow_mut().as_mut().map(f))
}

/// Makes this thread the one that runs a simulation, at time 0.
pub(crate) fn install(mode: SimMode, kernels: KernelCost) {
    CLOCK.with(|c| *c.borrow_mut() = Some(Clock { mode, now: 0, op: None, kernels }));
}

/// Ends the simulation on this thread.
pub(crate) fn uninstall() {
    CLOCK.with(|c| *c.borrow_mut() = None);
}

/// Moves the clock to the time of the next event.
pub(crate) fn set_now(ns: u64) {
    with(|c| c.now = ns);
}

/// An operation starts now.
#[cfg(test)]
fn begin_op() {
    begin_slowed_op(1.0);
}

/// An operation starts now, slowed by `factor` (every time it uses counts `factor` times:
/// the cores of its host are shared, see `SimOptions::co_run_slowdown`).
pub(crate) fn begin_slowed_op(factor: f64) {
    with(|c| {
        let cpu_start = if c.mode == SimMode::De { thread_cpu_ns() } else { 0 };
        c.op = Some(Op { cpu_start, charged: 0, factor });
    });
}

/// Time the running operation has used so far, ns.
fn op_elapsed(c: &Clock) -> u64 {
    let (used, factor) = match &c.op {
        None => return 0,
        Some(op) if c.mode == SimMode::De => {
            (simtime::add(thread_cpu_ns().saturating_sub(op.cpu_start), op.charged), op.factor)
        }
        Some(op) => (op.charged, op.factor),
    };
    simtime::scale(used, factor)
}

/// The operation ends; its duration, ns.
pub(crate) fn end_op() -> u64 {
    with(|c| {
        let d = op_elapsed(c);
        c.op = None;
        d
    })
    .unwrap_or(0)
}

/// The simulated time now, ns (within an operation: its start plus what it used so far);
/// `None` outside a simulation.
pub(crate) fn now_ns() -> Option<u64> {
    with(|c| simtime::add(c.now, op_elapsed(c)))
}

/// Charges `ns` to the running operation (a per-message overhead).
pub(crate) fn charge_ns(ns: u64) {
    with(|c| {
        if let Some(op) = &mut c.op {
            op.charged = simtime::add(op.charged, ns);
        }
    });
}

/// The mode of the simulation this thread runs, if any: a program's operations may ask.
pub fn simulated() -> Option<SimMode> {
    with(|c| c.mode)
}

/// Pauses the running operation for `d`: sleeps on a real run; under simulation (any mode)
/// charges `d` to the operation instead, as the simulated time a real run would wait
/// (a sleep costs no CPU time, so DE would not see it).
///
/// ```
/// dps::pause(std::time::Duration::from_micros(10)); // a real run: it sleeps
/// ```
pub fn pause(d: std::time::Duration) {
    let charged =
        with(|c| c.op.as_mut().map(|op| op.charged = simtime::add(op.charged, simtime::from_duration(d))).is_some())
            .unwrap_or(false);
    if !charged {
        std::thread::sleep(d);
    }
}

/// In a PDEXEC or NOALLOC simulation, charges the calibrated cost of kernel `name` (of
/// dimensions `dims` doing `work`, as the platform file's tables count them) to the running
/// operation and returns true: the caller then skips the kernel. Otherwise (a real run, or
/// DE, where the kernel runs and is measured) returns false.
///
/// ```
/// let mut c = [0.0; 4];
/// if !dps::skip_kernel("gemm", &[2, 2, 2], 16.0) {
///     c.iter_mut().for_each(|x| *x += 1.0); // the real computation
/// }
/// assert_eq!(c, [1.0; 4]);
/// ```
///
/// # Panics
/// In PDEXEC or NOALLOC, if the platform has no cost table for `name` (programs check the
/// platform for the kernels they need before they start).
pub fn skip_kernel(name: &str, dims: &[u64], work: f64) -> bool {
    with(|c| {
        if c.mode == SimMode::De || c.op.is_none() {
            return false;
        }
        let seconds = (c.kernels)(name, dims, work)
            .unwrap_or_else(|| panic!("dps simulator: the platform file has no cost table for kernel '{name}'"));
        if let Some(op) = &mut c.op {
            op.charged = simtime::add(op.charged, simtime::from_seconds(seconds));
        }
        true
    })
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> KernelCost {
        Arc::new(|name, _, work| (name == "k").then_some(work * 1e-6))
    }

    #[test]
    fn pdexec_charges_kernels_and_nothing_else() {
        install(SimMode::Pdexec, table());
        set_now(1_000);
        begin_op();
        assert!(skip_kernel("k", &[1], 3.0));
        let spin = std::time::Instant::now();
        while spin.elapsed().as_millis() < 2 {}
        charge_ns(7);
        assert_eq!(now_ns(), Some(1_000 + 3_000 + 7));
        assert_eq!(end_op(), 3_007);
        uninstall();
        assert_eq!(now_ns(), None);
        assert!(!skip_kernel("k", &[1], 3.0), "no simulation: the kernel runs");
    }

    #[test]
    fn a_pause_is_charged_not_slept() {
        install(SimMode::De, table());
        begin_op();
        let wall = std::time::Instant::now();
        pause(std::time::Duration::from_secs(5));
        assert!(wall.elapsed().as_secs() < 1, "a simulated pause sleeps");
        let d = end_op();
        uninstall();
        assert!((5_000_000_000..5_100_000_000).contains(&d), "a 5 s pause charged as {d} ns");
    }

    #[test]
    fn de_measures_the_cpu_time() {
        install(SimMode::De, table());
        let wall = std::time::Instant::now();
        begin_op();
        assert!(!skip_kernel("k", &[1], 3.0), "DE runs every kernel");
        // Spins until the thread has used 2 ms of CPU: on a loaded machine a spin of fixed
        // wall time may get little of it (the bound on the wall time ends a broken clock).
        let start = thread_cpu_ns();
        while thread_cpu_ns() - start < 2_000_000 && wall.elapsed().as_secs() < 10 {}
        let d = end_op();
        let wall = wall.elapsed().as_nanos() as u64;
        uninstall();
        assert!(d >= 2_000_000 && d <= wall, "2 ms of CPU spent spinning measured as {d} ns ({wall} ns of wall time)");
    }
}
