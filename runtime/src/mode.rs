//! What kind of run this is: one rank, a rank of an MPI job, or a simulation of many ranks,
//! chosen once as the runtime starts ([`Mode`]), and the two things a program holds that
//! behave by it: a started call ([`Pending`]), whose caller drives the run while it waits,
//! and a [`Stopwatch`], which reads the wall clock or the simulated one.

use std::sync::Arc;

use crossbeam_channel::Receiver;

use crate::engine::{self, CallResult};
use crate::error::ErrorKind;
use crate::failure;
use crate::node::AnyToken;
use crate::sim::Simulator;
use crate::transport::{self, Helper, Transport};
use crate::wire::WireToken;
use crate::{simtime, Error, Token};

/// The kind of run; the `Runtime` matches on it once per feature.
pub(crate) enum Mode {
    /// One rank without MPI (`Runtime::single`).
    Single,
    /// A rank of an MPI job, which owns the job's MPI: its transport (`None` on a one-rank
    /// job, which has nobody to talk to) ends before its universe (see [`Mode::end`]).
    Mpi { universe: mpi::environment::Universe, transport: Option<Arc<dyn Transport>> },
    /// Every virtual rank of a simulation, in this process (`Runtime::simulate`); the
    /// runtime's engine is rank 0's.
    Simulated(Arc<Simulator>),
}

impl Mode {
    /// Ends a real run at shutdown: completes the transport's sends, waits for every rank,
    /// stops the progress thread and frees its communicator, then stops aborting the job on
    /// a panic, all before MPI is finalised (as the universe is dropped).
    pub(crate) fn end(self) {
        let universe = match self {
            Mode::Mpi { universe, transport } => {
                if let Some(transport) = transport {
                    transport.finish();
                }
                Some(universe)
            }
            Mode::Single | Mode::Simulated(_) => None,
        };
        failure::disarm();
        drop(universe);
    }

    /// A [`Pending`] for a call whose output comes on `rx`.
    /// `readers`: the connections of imported services, which the caller reads while it waits.
    pub(crate) fn pending<O>(
        &self,
        rx: Receiver<CallResult>,
        decode: fn(WireToken) -> AnyToken,
        readers: Vec<Arc<dyn Helper>>,
    ) -> Pending<O> {
        let driver = match self {
            Mode::Single | Mode::Mpi { transport: None, .. } => Driver::Nothing,
            Mode::Mpi { transport: Some(t), .. } => Driver::Transport(t.clone()),
            Mode::Simulated(sim) => Driver::Simulator(sim.clone()),
        };
        Pending { rx, driver, decode, readers, _out: std::marker::PhantomData }
    }

    /// A [`Stopwatch`] started now.
    pub(crate) fn stopwatch(&self) -> Stopwatch {
        let clock = match self {
            Mode::Simulated(sim) => Clock::Simulated { start_ns: sim.now_ns(), sim: sim.clone() },
            Mode::Single | Mode::Mpi { .. } => Clock::Wall(std::time::Instant::now()),
        };
        Stopwatch { clock }
    }
}

/// What the caller of [`Pending::wait`] drives while it waits.
enum Driver {
    /// Nothing: the workers run the call (one rank).
    Nothing,
    /// The transport (`transport::recv_helping`), which saves the round trip two hops
    /// between threads.
    Transport(Arc<dyn Transport>),
    /// The simulation, which runs on the waiting thread.
    Simulator(Arc<Simulator>),
}

/// A call started with [`Runtime::start`](crate::Runtime::start); [`wait`](Pending::wait)
/// for its output.
#[must_use = "a started call must be waited for"]
pub struct Pending<O> {
    rx: Receiver<CallResult>,
    driver: Driver,
    decode: fn(WireToken) -> AnyToken,
    readers: Vec<Arc<dyn Helper>>,
    _out: std::marker::PhantomData<fn() -> O>,
}

impl<O> std::fmt::Debug for Pending<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pending")
    }
}

impl<O: Token> Pending<O> {
    /// Blocks until the graph's output arrives.
    ///
    /// # Errors
    /// If an operation failed (on a one-rank job; on more ranks a failure aborts the job).
    pub fn wait(self) -> Result<O, Error> {
        // Polls briefly before sleeping: waking a sleeping caller would add microseconds to
        // every short call. Meanwhile the caller runs the transport itself, which saves a
        // round trip two hops between threads. It reads the replies of the services it
        // imports itself too, sparing the hop from their reader threads.
        let result = match &self.driver {
            Driver::Nothing if self.readers.is_empty() => engine::recv_eagerly(&self.rx),
            Driver::Nothing => transport::recv_helping(None, &self.readers, &self.rx),
            Driver::Transport(t) => transport::recv_helping(Some(&**t), &self.readers, &self.rx),
            Driver::Simulator(sim) => simulated_wait(sim, &self.rx)?,
        }
        .ok_or_else(|| Error::new(ErrorKind::Failed, "dps: the runtime stopped before the call finished"))?;
        let payload = result.map_err(|m| Error::new(ErrorKind::Failed, m))?;
        Ok(*payload.into_token(self.decode).downcast::<O>().expect("dps: graph output type"))
    }
}

/// Runs the simulation until the call's output is in `rx`.
fn simulated_wait(sim: &Simulator, rx: &Receiver<CallResult>) -> Result<Option<CallResult>, Error> {
    match sim.run(|| !rx.is_empty()) {
        Ok(true) => Ok(rx.try_recv().ok()),
        Ok(false) => Err(Error::new(
            ErrorKind::Failed,
            "dps simulator: no event is left and the call has not returned: the graph is stuck \
             (a merge waiting for tokens that never come, or a program waiting for another rank)",
        )),
        Err(e) => Err(Error::new(ErrorKind::Failed, format!("dps simulator: {e}"))),
    }
}

/// Measures the time of a program's work: the wall clock, or under simulation the
/// simulated clock ([`Runtime::stopwatch`](crate::Runtime::stopwatch)).
#[derive(Debug)]
pub struct Stopwatch {
    clock: Clock,
}

/// The clock a [`Stopwatch`] reads, and its reading at the start.
#[derive(Debug)]
enum Clock {
    Wall(std::time::Instant),
    Simulated { sim: Arc<Simulator>, start_ns: u64 },
}

impl Stopwatch {
    /// Seconds since the stopwatch was started. Under simulation the clock stops at the
    /// end of its range (584 years), and [`SimReport::clock_saturated`](crate::SimReport::clock_saturated)
    /// says it got there: the reading is then the whole range, not a prediction (never the
    /// difference of two stopped times, which would read 0 for a stopwatch started after
    /// the clock stopped).
    pub fn seconds(&self) -> f64 {
        match &self.clock {
            Clock::Simulated { sim, .. } if sim.now_ns() == simtime::BEYOND => simtime::seconds(simtime::BEYOND),
            Clock::Simulated { sim, start_ns } => simtime::seconds(sim.now_ns() - start_ns),
            Clock::Wall(start) => start.elapsed().as_secs_f64(),
        }
    }
}
