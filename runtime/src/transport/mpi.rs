//! The MPI transport: one progress thread per rank owns every MPI call.
//!
//! Workers queue frames on a channel; the progress thread packs the frames queued for the
//! same rank into one packet (coalescing small messages), sends it with `MPI_Isend`, then
//! sends each bulk payload of those frames as a message of its own straight from the token's
//! memory. Incoming messages are found with `MPI_Improbe` (any source, any tag) and received
//! with `MPI_Mrecv`; since MPI keeps the order of messages from one source, the bulk messages
//! of a packet are the next ones from its source, and are received straight into freshly
//! allocated vectors. A frame with bulk data is sent at once by the thread that queued it when
//! the transport is free (runtime/README.md, "Bulk data leaves from the posting thread").
//! When idle the thread polls (yielding the core every few polls), then
//! waits on its channel in short steps; while the rank's workers fill its share of the
//! cores it polls for much less time and waits longer and longer, since every poll would
//! then be taken from a computation. On a node whose CPU quota bounds the rank (an emulated
//! cluster's node), an idle thread polls only briefly too: its polls spend the quota the
//! workers need once their next input arrives.
//!
//! A caller waiting for a call's output drives the transport itself for a while
//! (`Helper::help`, `transport::recv_helping`) and the progress thread keeps off the core
//! meanwhile: a short call then costs no hop between threads on its rank. On 2 ranks of a
//! 2-core node the 8-byte round trip of `dps-bench transport` went from about 11 µs to 4-5 µs:
//! the caller and the progress thread no longer take turns on one core, a context switch
//! per turn. The state and every MPI call are behind one mutex (`Shared::progress`), taken by
//! the progress thread for each round and by a helping caller with `try_lock`.
//!
//! The thread also runs the stall watchdog (`transport::watchdog`): heartbeats around a ring
//! of ranks, so that a rank that stops answering ends the job with its name instead of a hang.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use mpi::point_to_point::{Destination, MatchedReceiveVec, Source};
use mpi::request::{Request, StaticScope};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;

use super::watchdog::{Verdict, Watchdog};
use super::{Helper, Transport};
use crate::activity::{self, Activity};
use crate::binding::Binding;
use crate::wire::{self, InFrame, WireToken};

const TAG_PACKET: i32 = 1;
const TAG_BULK: i32 = 2;
/// An empty message that only says "this rank is alive" (see `transport::watchdog`).
const TAG_HEARTBEAT: i32 = 3;
/// Exit code of a job ended by the stall watchdog.
const STALL_EXIT_CODE: i32 = 102;
/// The watchdog's clock is read every this many rounds of the loop, and after every wait.
const ROUNDS_PER_CHECK: u32 = 16;
/// After the shutdown barrier, how long the last heartbeats may take to leave.
const LAST_SENDS_TIMEOUT: Duration = Duration::from_secs(5);
/// A packet is sent once it holds this many bytes, even if more frames are queued.
const PACKET_LIMIT: usize = 256 * 1024;
/// How long an idle progress thread keeps polling before it waits on its channel (polls
/// yield the core every few: on a small or oversubscribed node the thread that must run next
/// may need it; a yield that finds the core busy ends the polls, `activity::yield_core`). A
/// waiting thread only sees MPI messages when it wakes, so this covers the usual gap between
/// the steps of an iterative computation. Not where a CPU quota bounds the rank
/// (`CoreShare::throttled`): there it polls `BUSY_POLLS` times, then waits in `IDLE_WAIT`
/// steps. On 8 emulated nodes at a quarter of a core, 5 ms of polls per wait took a node's
/// whole slice of a 10 ms period: Game of Life (4096², 512 generations) took 0.64-0.67 s on
/// 2 nodes and 0.40-0.46 s on 4, and 0.43-0.45 s and 0.29-0.32 s without them; LU and
/// matmul did not change beyond their noise (10-30 % between runs there)...
const POLL_FOR: Duration = Duration::from_millis(5);
const POLLS_PER_YIELD: u32 = 4;
const IDLE_WAIT: Duration = Duration::from_micros(100);
/// ...and while this rank's workers already fill its share of the cores, when every poll
/// takes time from a computation: poll briefly, then wait, doubling the wait from
/// `BUSY_WAIT` to `BUSY_WAIT_MAX` while nothing happens and no send is in flight. Every
/// wake-up preempts a computation: Game of Life at 16384² on 2 ranks of 2 cores made
/// 1.19e11 cell updates/s against 1.09e11 with fixed 50 µs waits (medians of 5 alternating
/// runs); LU, matmul and the round trip did not change. A worker that goes idle during such
/// a doze wakes the thread (`Transport::wake`), so an input that arrived meanwhile is not
/// left waiting with a core free.
const BUSY_POLLS: u32 = 64;
const BUSY_WAIT: Duration = Duration::from_micros(50);
const BUSY_WAIT_MAX: Duration = Duration::from_millis(2);
/// While a caller drives the transport (`Helper::help`), the progress thread looks every
/// this long whether it still does. A caller that gives up wakes it at once; one whose output
/// arrived does not (a wake-up is a system call on its way back to the application), so
/// this is how long the transport may go unserved after a short call returns.
const HELPED_WAIT: Duration = Duration::from_micros(100);

/// How busy this rank's workers are, against its share of the node's cores.
#[derive(Clone, Debug)]
pub(crate) struct CoreShare {
    /// Kept by the workers; the progress thread dozes through it (see `activity`).
    pub(crate) activity: Arc<Activity>,
    /// This rank's cores: the node's cores divided among the node's ranks.
    pub(crate) cores: usize,
    /// Where the progress thread runs (`crate::binding`).
    pub(crate) binding: Arc<Binding>,
    /// A CPU quota of less than a core per rank on the node bounds this rank (an emulated
    /// cluster's node; not a container's quota of whole cores): every poll is then taken
    /// from its workers' quota.
    pub(crate) throttled: bool,
}

impl CoreShare {
    fn saturated(&self) -> bool {
        self.activity.saturated(self.cores)
    }
}

enum Outgoing {
    Frame { dest: usize, header: Vec<u8>, token: Option<WireToken> },
    Wake,
    Finish,
}

/// Ends the whole MPI job (from the panic hook).
pub(crate) fn abort_job(code: i32) -> ! {
    SimpleCommunicator::world().abort(code)
}

pub(crate) struct MpiTransport {
    tx: Sender<Outgoing>,
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// What the progress thread shares with the callers that help it (`Helper::help`).
struct Shared {
    /// The transport's state and every MPI call, taken by one thread at a time.
    progress: Mutex<Progress>,
    /// Callers waiting eagerly for a call's output, driving the transport meanwhile.
    helpers: AtomicUsize,
}

type Deliver = Arc<dyn Fn(&[u8], Option<WireToken>) + Send + Sync>;

impl MpiTransport {
    /// Starts the progress thread; `stall_timeout` (`None`: no watchdog) as in
    /// `transport::watchdog`.
    pub(crate) fn start(
        comm: SimpleCommunicator,
        deliver: Deliver,
        share: CoreShare,
        stall_timeout: Option<Duration>,
    ) -> Self {
        let (tx, rx) = crossbeam_channel::unbounded();
        let binding = share.binding.clone();
        let progress = Progress::new(comm, rx.clone(), deliver, stall_timeout);
        let shared = Arc::new(Shared { progress: Mutex::new(progress), helpers: AtomicUsize::new(0) });
        let thread_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("dps-progress".into())
            .spawn(move || run(&thread_shared, &rx, &share))
            .expect("dps: cannot spawn the progress thread");
        binding.pin(&thread);
        MpiTransport { tx, shared, thread: Mutex::new(Some(thread)) }
    }
}

impl Transport for MpiTransport {
    fn send(&self, dest: usize, header: Vec<u8>, token: Option<WireToken>) {
        let bulky = token.as_ref().is_some_and(|t| !t.bulks_out.is_empty() || t.lends);
        self.tx.send(Outgoing::Frame { dest, header, token }).expect("dps transport error: progress thread is gone");
        // A token with bulk data leaves at once from the posting thread when the transport is
        // free: the progress thread may be dozing while this rank's workers compute, and a
        // dense app's block then waited milliseconds for it (LU's panel, 2 ranks on 2 cores).
        // So does a token that lends node memory (3-4 ms for dps-matmul's job to rank 1).
        // Small frames stay queued, to be packed together by the next round.
        if bulky {
            if let Ok(mut progress) = self.shared.progress.try_lock() {
                progress.send_queued();
            }
        }
    }

    fn finish(&self) {
        let _ = self.tx.send(Outgoing::Finish);
        if let Some(t) = self.thread.lock().unwrap().take() {
            t.thread().unpark();
            t.join().expect("dps transport error: progress thread panicked");
        }
    }

    fn wake(&self) {
        let _ = self.tx.send(Outgoing::Wake);
    }
}

impl Helper for MpiTransport {
    fn begin_help(&self) {
        self.shared.helpers.fetch_add(1, Ordering::SeqCst);
    }

    fn help(&self) -> bool {
        match self.shared.progress.try_lock() {
            Ok(mut progress) => progress.round(),
            Err(_) => false,
        }
    }

    fn end_help(&self, gave_up: bool) {
        self.shared.helpers.fetch_sub(1, Ordering::SeqCst);
        if gave_up {
            // The caller is about to block: the progress thread takes over at once (a park
            // that starts after this returns at once too).
            if let Some(t) = self.thread.lock().unwrap().as_ref() {
                t.thread().unpark();
            }
        }
    }
}

/// Memory an in-flight send reads from, freed when the send completes.
enum Keep {
    Packet(#[allow(dead_code)] Vec<u8>),
    Token(#[allow(dead_code)] Arc<WireToken>),
    /// A heartbeat: a static empty buffer.
    Nothing,
}

/// The transport's state: every MPI handle of the rank, used under `Shared::progress` only.
struct Progress {
    comm: SimpleCommunicator,
    rx: Receiver<Outgoing>,
    deliver: Deliver,
    /// Per destination: the packet being filled and the tokens whose bulks follow it.
    packets: Vec<(Vec<u8>, Vec<WireToken>)>,
    sends: Vec<(Request<'static, [u8], StaticScope>, Keep)>,
    /// Per source: frames received, waiting for their bulk messages (with the count received).
    incoming: Vec<VecDeque<(InFrame, usize)>>,
    watchdog: Option<Watchdog>,
    /// `Outgoing::Finish` was taken from the channel (by whichever thread ran the round).
    finishing: bool,
    /// Rounds run, for the watchdog's clock.
    rounds: u32,
}

// SAFETY: `Progress` holds MPI handles (the communicator, send requests), which are not `Send`
// only because they are raw MPI handles. It lives in `Shared::progress`, so one thread at a
// time uses them, and the mutex orders those uses; MPI is initialised with `Serialized` or
// `Multiple` (`Runtime::start_on` checks), which allows MPI calls from any thread so long as
// they are not concurrent. The handles are never used outside that mutex.
unsafe impl Send for Progress {}

impl Progress {
    fn new(
        comm: SimpleCommunicator,
        rx: Receiver<Outgoing>,
        deliver: Deliver,
        stall_timeout: Option<Duration>,
    ) -> Self {
        let n = comm.size() as usize;
        let rank = comm.rank() as usize;
        let watchdog = stall_timeout.filter(|_| n > 1).map(|t| Watchdog::new(rank, n, t, Instant::now()));
        Progress {
            comm,
            rx,
            deliver,
            packets: (0..n).map(|_| (Vec::new(), Vec::new())).collect(),
            sends: Vec::new(),
            incoming: (0..n).map(|_| VecDeque::new()).collect(),
            watchdog,
            finishing: false,
            rounds: 0,
        }
    }

    /// One round of the transport: takes the queued frames and sends them, receives and
    /// delivers what arrived, completes sends. True if anything happened.
    fn round(&mut self) -> bool {
        self.rounds = self.rounds.wrapping_add(1);
        if self.rounds.is_multiple_of(ROUNDS_PER_CHECK) {
            self.watch();
        }
        let mut busy = self.take_queued();
        for dest in 0..self.packets.len() {
            self.flush(dest);
        }
        busy |= self.receive_all();
        busy |= self.complete_sends();
        busy
    }

    /// Sends what is queued (a round without the receptions, which may deliver tokens and
    /// so must not run inside an operation).
    fn send_queued(&mut self) {
        self.take_queued();
        for dest in 0..self.packets.len() {
            self.flush(dest);
        }
        self.complete_sends();
    }

    /// Takes every frame queued on the channel, in order.
    fn take_queued(&mut self) -> bool {
        let mut any = false;
        while !self.finishing {
            match self.rx.try_recv() {
                Ok(out) => {
                    any = true;
                    self.take(out);
                }
                Err(TryRecvError::Disconnected) => self.finishing = true,
                Err(TryRecvError::Empty) => break,
            }
        }
        any
    }

    /// Handles one message from the channel.
    fn take(&mut self, out: Outgoing) {
        match out {
            Outgoing::Frame { dest, header, token } => self.queue_frame(dest, &header, token),
            Outgoing::Wake => {}
            Outgoing::Finish => self.finishing = true,
        }
    }
}

/// The progress thread. Rounds of the transport, polled then waited for as described in the
/// module doc; while callers help (`Helper::help`), it keeps off their core.
fn run(shared: &Shared, rx: &Receiver<Outgoing>, share: &CoreShare) {
    let mut barrier: Option<Request<'static, ()>> = None;
    let mut idle: u32 = 0;
    let mut idle_since = Instant::now();
    let mut within_poll_time = true;
    // False once a yield between polls found the core busy, until the next activity.
    let mut core_free = true;
    let mut busy_wait = BUSY_WAIT;
    let poll_for = if share.throttled { Duration::ZERO } else { POLL_FOR };
    {
        // The clock started with the watchdog: tell the next rank at once.
        let mut progress = shared.progress.lock().unwrap();
        if progress.watchdog.is_some() {
            progress.heartbeat();
        }
    }
    loop {
        if shared.helpers.load(Ordering::SeqCst) > 0 {
            // A caller drives the transport while it waits for its call's output: polling
            // here too would take turns with it on the core, and every turn costs a
            // context switch. It wakes this thread when it gives up (`end_help`).
            std::thread::park_timeout(HELPED_WAIT);
            idle = 0;
            continue;
        }
        let mut progress = shared.progress.lock().unwrap();
        let busy = progress.round();
        let finishing = progress.finishing;
        if finishing && progress.sends.is_empty() {
            // Every rank has completed its sends once the barrier completes.
            match barrier.take() {
                None => {
                    barrier = Some(progress.comm.immediate_barrier());
                    // From now on the previous rank may leave at any time.
                    if let Some(w) = &mut progress.watchdog {
                        w.stop_watching();
                    }
                }
                Some(b) => match b.test() {
                    Ok(_) => {
                        progress.receive_all();
                        progress.complete_last_sends();
                        return;
                    }
                    Err(b) => barrier = Some(b),
                },
            }
        }
        let sending = !progress.sends.is_empty();
        drop(progress);
        if busy {
            (idle, busy_wait) = (0, BUSY_WAIT);
            continue;
        }
        if idle == 0 {
            idle_since = Instant::now();
            (within_poll_time, core_free) = (true, true);
        }
        idle = idle.saturating_add(1);
        let saturated = share.saturated();
        // The clock is read every 64 polls only: reading it costs about as much as a poll.
        if idle.is_multiple_of(64) {
            within_poll_time = idle_since.elapsed() < poll_for;
        }
        // Polls on a busy core would each take a time slice's turn from the computation
        // there (`activity::yield_core`): the thread waits instead.
        let polling = core_free && if saturated { idle < BUSY_POLLS } else { within_poll_time };
        if polling || finishing {
            // A few polls between yields: a yield is a system call, slower than a poll.
            if idle.is_multiple_of(POLLS_PER_YIELD) {
                core_free = activity::yield_core();
            }
            continue;
        }
        if !saturated {
            busy_wait = BUSY_WAIT;
        }
        let dozing = saturated && busy_wait > BUSY_WAIT && share.activity.doze(share.cores);
        let wait = if dozing {
            busy_wait
        } else if saturated {
            BUSY_WAIT
        } else {
            IDLE_WAIT
        };
        // Waits until a message is queued without taking it: the next round takes it, so
        // that frames leave in the order they were queued whoever runs the round.
        let woken = ready_within(rx, wait);
        if dozing {
            share.activity.wake_up();
        }
        if woken {
            (idle, busy_wait) = (0, BUSY_WAIT);
        } else if saturated && !sending {
            busy_wait = (busy_wait * 2).min(BUSY_WAIT_MAX);
        }
        shared.progress.lock().unwrap().watch();
    }
}

/// True if `rx` holds a message (or is disconnected) within `timeout`; takes nothing.
fn ready_within<T>(rx: &Receiver<T>, timeout: Duration) -> bool {
    let mut select = crossbeam_channel::Select::new();
    select.recv(rx);
    select.ready_timeout(timeout).is_ok()
}

impl Progress {
    /// Runs the watchdog's check: sends a heartbeat when one is due, ends the job when the
    /// watched rank has been silent for too long.
    fn watch(&mut self) {
        let Some(w) = &mut self.watchdog else { return };
        match w.check(Instant::now()) {
            Verdict::Fine => {}
            Verdict::Beat => self.heartbeat(),
            Verdict::Stalled(line) => {
                eprintln!("{line}");
                abort_job(STALL_EXIT_CODE)
            }
        }
    }

    fn heartbeat(&mut self) {
        let Some(w) = &self.watchdog else { return };
        static NOTHING: [u8; 0] = [];
        let next = self.comm.process_at_rank(w.next as i32);
        self.sends.push((next.immediate_send_with_tag(StaticScope, &NOTHING[..], TAG_HEARTBEAT), Keep::Nothing));
    }

    /// Completes the sends still in flight after the shutdown barrier: heartbeats sent while
    /// it was pending (a request must not be dropped before it completes). A heartbeat is an
    /// empty message, so this takes no time unless the next rank is gone; then they are
    /// left to MPI rather than holding up the exit.
    fn complete_last_sends(&mut self) {
        let start = Instant::now();
        while !self.sends.is_empty() && start.elapsed() < LAST_SENDS_TIMEOUT {
            self.complete_sends();
            std::thread::yield_now();
        }
        // Leaked together: MPI may still read a buffer that `keep` owns (see `as_static`).
        for (request, keep) in self.sends.drain(..) {
            std::mem::forget(request);
            std::mem::forget(keep);
        }
    }

    fn queue_frame(&mut self, dest: usize, header: &[u8], token: Option<WireToken>) {
        let (packet, tokens) = &mut self.packets[dest];
        wire::push_frame(packet, header, token.as_ref());
        if let Some(t) = token.filter(|t| !t.bulks_out.is_empty()) {
            tokens.push(t);
        }
        if packet.len() >= PACKET_LIMIT {
            self.flush(dest);
        }
    }

    fn flush(&mut self, dest: usize) {
        let (packet, tokens) = std::mem::take(&mut self.packets[dest]);
        if packet.is_empty() {
            return;
        }
        if let Some(w) = &mut self.watchdog {
            w.sent_to(dest);
        }
        let target = self.comm.process_at_rank(dest as i32);
        // SAFETY: `packet` is moved into the `Keep::Packet` pushed beside the request; moving a
        // `Vec` does not move its heap buffer, which is dropped only once the request completed.
        let bytes = unsafe { as_static(packet.as_ptr(), packet.len()) };
        self.sends.push((target.immediate_send_with_tag(StaticScope, bytes, TAG_PACKET), Keep::Packet(packet)));
        for token in tokens {
            #[allow(clippy::arc_with_non_send_sync)] // only the progress thread holds it
            let token = Arc::new(token);
            for b in &token.bulks_out {
                assert!(
                    b.len <= i32::MAX as usize,
                    "dps transport error: a bulk of {} bytes exceeds MPI's 2 GiB message limit",
                    b.len
                );
                // SAFETY: `b` points into the heap buffers of `token.keep` (the token being
                // sent, see `wire::encode`); the `Arc` pushed beside the request keeps the token,
                // and so those buffers, alive and unmodified until the request completes.
                let bytes = unsafe { as_static(b.ptr, b.len) };
                self.sends
                    .push((target.immediate_send_with_tag(StaticScope, bytes, TAG_BULK), Keep::Token(token.clone())));
            }
        }
    }

    fn complete_sends(&mut self) -> bool {
        let before = self.sends.len();
        let pending = std::mem::take(&mut self.sends);
        for (request, keep) in pending {
            match request.test() {
                Ok(_) => drop(keep),
                Err(request) => self.sends.push((request, keep)),
            }
        }
        self.sends.len() != before
    }

    fn receive_all(&mut self) -> bool {
        let mut any = false;
        while let Some((msg, status)) = self.comm.any_process().immediate_matched_probe() {
            any = true;
            let src = status.source_rank() as usize;
            if let Some(w) = &mut self.watchdog {
                w.heard_from(src);
            }
            match status.tag() {
                TAG_HEARTBEAT => {
                    let _ = (msg, status).matched_receive_vec::<u8>();
                    continue;
                }
                TAG_PACKET => {
                    let (packet, _) = (msg, status).matched_receive_vec::<u8>();
                    let frames = wire::parse_packet(&packet)
                        .unwrap_or_else(|e| panic!("dps transport error: from rank {src}: {e}"));
                    self.incoming[src].extend(frames.into_iter().map(|f| (f, 0)));
                }
                TAG_BULK => {
                    let (frame, filled) = self.incoming[src]
                        .iter_mut()
                        .find(|(f, filled)| f.token.as_ref().is_some_and(|t| *filled < t.bulks_in.len()))
                        .unwrap_or_else(|| panic!("dps transport error: unexpected bulk message from rank {src}"));
                    let buf = frame.token.as_mut().unwrap().bulks_in[*filled].as_bytes_mut();
                    let expected = buf.len();
                    let got = status.count(<u8 as mpi::datatype::Equivalence>::equivalent_datatype()) as usize;
                    assert_eq!(
                        got, expected,
                        "dps transport error: bulk from rank {src} has {got} bytes, expected {expected}"
                    );
                    msg.matched_receive_into(buf);
                    *filled += 1;
                }
                tag => panic!("dps transport error: unknown tag {tag} from rank {src}"),
            }
            let queue = &mut self.incoming[src];
            while queue.front().is_some_and(|(f, filled)| f.token.as_ref().map_or(0, |t| t.bulks_in.len()) == *filled) {
                let (frame, _) = queue.pop_front().unwrap();
                (self.deliver)(&frame.header, frame.token);
            }
        }
        any
    }
}

/// Views `len` bytes at `ptr` as a `'static` slice, the lifetime `MPI_Isend` with
/// [`StaticScope`] asks for: MPI reads the buffer until the request completes, which no
/// borrow can express.
///
/// # Safety
/// Only the progress thread calls it, to start a send. The caller must guarantee that:
/// - `ptr` points to `len` initialised bytes of one heap allocation (a `Vec`'s buffer: it
///   does not move when its owner moves);
/// - that allocation outlives the send: its owner is stored as the `Keep` beside the
///   request in `Progress::sends` and dropped only after the request has completed (or is
///   leaked with it, `complete_last_sends`);
/// - nobody writes to those bytes until then (the owner is never mutated while kept).
///
/// The returned slice must not be used for anything but that one send.
unsafe fn as_static(ptr: *const u8, len: usize) -> &'static [u8] {
    // SAFETY: the caller guarantees that `ptr..ptr + len` is one live, initialised and
    // unaliased-for-writes allocation for as long as the slice is used (see `# Safety`).
    unsafe { std::slice::from_raw_parts(ptr, len) }
}
