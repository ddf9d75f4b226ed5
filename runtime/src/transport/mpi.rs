//! The MPI transport: one progress thread per rank owns every MPI call.
//!
//! Workers queue frames on a channel; the progress thread packs the frames queued for the
//! same rank into one packet (coalescing small messages), sends it with `MPI_Isend`, then
//! sends each bulk payload of those frames as a message of its own straight from the token's
//! memory. Incoming messages are found with `MPI_Improbe` (any source, any tag) and received
//! with `MPI_Mrecv`; since MPI keeps the order of messages from one source, the bulk messages
//! of a packet are the next ones from its source, and are received straight into freshly
//! allocated vectors. When idle the thread polls (yielding the core every few polls), then
//! waits on its channel in short steps; while the rank's workers fill its share of the
//! cores it polls for much less time and waits longer and longer, since every poll would
//! then be taken from a computation.
//!
//! The thread also runs the stall watchdog (`transport::watchdog`): heartbeats around a ring
//! of ranks, so that a rank that stops answering ends the job with its name instead of a hang.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use mpi::point_to_point::{Destination, MatchedReceiveVec, Source};
use mpi::request::{Request, StaticScope};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;

use super::watchdog::{Verdict, Watchdog};
use super::Transport;
use crate::activity::Activity;
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
/// may need it). A waiting thread only sees MPI messages when it wakes, so this covers the
/// usual gap between the steps of an iterative computation...
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

/// How busy this rank's workers are, against its share of the node's cores.
#[derive(Clone, Debug)]
pub(crate) struct CoreShare {
    /// Kept by the workers; the progress thread dozes through it (see `activity`).
    pub(crate) activity: Arc<Activity>,
    /// This rank's cores: the node's cores divided among the node's ranks.
    pub(crate) cores: usize,
    /// Where the progress thread runs (`crate::binding`).
    pub(crate) binding: Arc<Binding>,
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
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// Moves a communicator to the progress thread, which is its only user from then on.
struct SendComm(SimpleCommunicator);
// SAFETY: the communicator is used by exactly one thread (the progress thread) after the move;
// MPI was initialised with a threading level that allows MPI calls from a non-main thread.
unsafe impl Send for SendComm {}

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
        let comm = SendComm(comm);
        let binding = share.binding.clone();
        let thread = std::thread::Builder::new()
            .name("dps-progress".into())
            .spawn(move || {
                let comm = comm;
                Progress::new(comm.0, rx, deliver, share, stall_timeout).run()
            })
            .expect("dps: cannot spawn the progress thread");
        binding.pin(&thread);
        MpiTransport { tx, thread: Mutex::new(Some(thread)) }
    }
}

impl Transport for MpiTransport {
    fn send(&self, dest: usize, header: Vec<u8>, token: Option<WireToken>) {
        self.tx.send(Outgoing::Frame { dest, header, token }).expect("dps transport error: progress thread is gone");
    }

    fn finish(&self) {
        let _ = self.tx.send(Outgoing::Finish);
        if let Some(t) = self.thread.lock().unwrap().take() {
            t.join().expect("dps transport error: progress thread panicked");
        }
    }

    fn wake(&self) {
        let _ = self.tx.send(Outgoing::Wake);
    }
}

/// Memory an in-flight send reads from, freed when the send completes.
enum Keep {
    Packet(#[allow(dead_code)] Vec<u8>),
    Token(#[allow(dead_code)] Arc<WireToken>),
    /// A heartbeat: a static empty buffer.
    Nothing,
}

struct Progress {
    comm: SimpleCommunicator,
    rx: Receiver<Outgoing>,
    deliver: Deliver,
    /// Per destination: the packet being filled and the tokens whose bulks follow it.
    packets: Vec<(Vec<u8>, Vec<WireToken>)>,
    sends: Vec<(Request<'static, [u8], StaticScope>, Keep)>,
    /// Per source: frames received, waiting for their bulk messages (with the count received).
    incoming: Vec<VecDeque<(InFrame, usize)>>,
    share: CoreShare,
    watchdog: Option<Watchdog>,
}

impl Progress {
    fn new(
        comm: SimpleCommunicator,
        rx: Receiver<Outgoing>,
        deliver: Deliver,
        share: CoreShare,
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
            share,
            watchdog,
        }
    }

    fn run(mut self) {
        let mut finishing = false;
        let mut barrier: Option<Request<'static, ()>> = None;
        let mut idle: u32 = 0;
        let mut idle_since = Instant::now();
        let mut within_poll_time = true;
        let mut busy_wait = BUSY_WAIT;
        let mut rounds: u32 = 0;
        // The clock started with the watchdog: tell the next rank at once.
        if self.watchdog.is_some() {
            self.heartbeat();
        }
        loop {
            rounds = rounds.wrapping_add(1);
            if rounds.is_multiple_of(ROUNDS_PER_CHECK) {
                self.watch();
            }
            let mut busy = false;
            loop {
                match self.rx.try_recv() {
                    Ok(Outgoing::Frame { dest, header, token }) => {
                        busy = true;
                        self.queue_frame(dest, &header, token);
                    }
                    Ok(Outgoing::Wake) => busy = true,
                    Ok(Outgoing::Finish) | Err(TryRecvError::Disconnected) => {
                        finishing = true;
                        break;
                    }
                    Err(TryRecvError::Empty) => break,
                }
            }
            for dest in 0..self.packets.len() {
                self.flush(dest);
            }
            busy |= self.receive_all();
            busy |= self.complete_sends();
            if finishing && self.sends.is_empty() {
                // Every rank has completed its sends once the barrier completes.
                match barrier.take() {
                    None => {
                        barrier = Some(self.comm.immediate_barrier());
                        // From now on the previous rank may leave at any time.
                        if let Some(w) = &mut self.watchdog {
                            w.stop_watching();
                        }
                    }
                    Some(b) => match b.test() {
                        Ok(_) => {
                            self.receive_all();
                            self.complete_last_sends();
                            return;
                        }
                        Err(b) => barrier = Some(b),
                    },
                }
            }
            if busy {
                (idle, busy_wait) = (0, BUSY_WAIT);
                continue;
            }
            if idle == 0 {
                idle_since = Instant::now();
                within_poll_time = true;
            }
            idle = idle.saturating_add(1);
            let saturated = self.share.saturated();
            // The clock is read every 64 polls only: reading it costs about as much as a poll.
            if idle.is_multiple_of(64) {
                within_poll_time = idle_since.elapsed() < POLL_FOR;
            }
            let polling = if saturated { idle < BUSY_POLLS } else { within_poll_time };
            if polling || finishing {
                // A few polls between yields: a yield is a system call, slower than a poll.
                if idle.is_multiple_of(POLLS_PER_YIELD) {
                    std::thread::yield_now();
                }
                continue;
            }
            if !saturated {
                busy_wait = BUSY_WAIT;
            }
            let dozing = saturated && busy_wait > BUSY_WAIT && self.doze();
            let wait = if dozing {
                busy_wait
            } else if saturated {
                BUSY_WAIT
            } else {
                IDLE_WAIT
            };
            let woken = self.rx.recv_timeout(wait);
            if dozing {
                self.share.activity.wake_up();
            }
            self.watch();
            match woken {
                Ok(out) => {
                    (idle, busy_wait) = (0, BUSY_WAIT);
                    match out {
                        Outgoing::Frame { dest, header, token } => self.queue_frame(dest, &header, token),
                        Outgoing::Wake => {}
                        Outgoing::Finish => finishing = true,
                    }
                }
                Err(_) if saturated && self.sends.is_empty() => busy_wait = (busy_wait * 2).min(BUSY_WAIT_MAX),
                Err(_) => {}
            }
        }
    }

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

    /// Raises the `dozing` flag for a long wait; false (flag down) if a worker went idle
    /// meanwhile (the handshake is in `activity`).
    fn doze(&self) -> bool {
        self.share.activity.doze(self.share.cores)
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
