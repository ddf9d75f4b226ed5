//! A client's connection to a service, one per rank that imports it: the remote leaf that
//! writes each request as its token arrives (tagged with an id, nothing waits for the
//! reply), and the reading of replies, each handed to the engine, which continues the
//! token's path after the leaf. Whoever holds the reading side reads: a caller of this rank
//! waiting for a call (`transport::recv_helping`, through [`Helper`]), which thus gets a
//! prompt reply without any thread hand-off, or else the connection's reader thread, which
//! keeps off the socket while callers read it and for [`REST`] after. Many calls are in
//! flight; the client's own split windows bound how many. If the connection breaks, every
//! call in flight and every later one fails with an error naming the service.

use std::any::Any;
use std::collections::HashMap;
use std::io::BufReader;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, TryLockError, Weak};
use std::time::{Duration, Instant};

use super::frame::{self, Msg};
use super::net::{self, Stream};
use super::registry::{self, Entry};
use crate::engine::Engine;
use crate::error::{Error, ErrorKind};
use crate::node::{AnyToken, Encoder, RemoteLeaf};
use crate::transport::Helper;
use crate::wire::WireToken;

/// How long a client waits for the service to answer its hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the reader thread keeps off the socket after a caller stopped reading it with
/// its reply in hand and no call in flight: the caller's next call, if it comes within this,
/// finds the socket its own (a reader thread that wakes for each reply and finds it taken
/// costs a wake-up and a core's time slice).
const REST: Duration = Duration::from_micros(500);

/// The most messages a waiting caller handles per round before it looks at its own output.
const HELP_BATCH: usize = 16;

/// What a client expects of a service.
pub(crate) struct Expect {
    pub(crate) request: &'static str,
    pub(crate) reply: &'static str,
    pub(crate) fingerprint: Option<String>,
    pub(crate) encode: Encoder,
    pub(crate) decode: fn(WireToken) -> Result<AnyToken, String>,
}

/// One rank's connection to a service.
pub(crate) struct Connection {
    pub(super) name: String,
    /// The exported graph's name and fingerprint, as the service said.
    pub(super) graph: String,
    pub(super) fingerprint: String,
    writer: Mutex<Stream>,
    /// The reading side: whoever holds it reads (the reader thread, or a waiting caller).
    reading: Mutex<ReadSide>,
    /// The socket, to wait for it without holding `reading`.
    poller: Stream,
    /// The remote leaf's calls in flight, by id; the failure once the connection broke.
    pending: Mutex<Pending>,
    /// How many calls are in flight (`pending.calls.len()`, read without the lock).
    in_flight: AtomicUsize,
    /// Callers reading the socket now ([`Helper::begin_help`]).
    helping: AtomicUsize,
    /// Until when (ns since `born`) the reader thread rests after the last caller stopped,
    /// and that caller's thread ([`thread_tag`]).
    rest_until: AtomicU64,
    rest_owner: AtomicU64,
    born: Instant,
    /// The connection has ended (broken or closed): the reader thread ends.
    ended: AtomicBool,
    reader: OnceLock<std::thread::Thread>,
    next_id: AtomicU64,
    engine: Weak<Engine>,
    encode: Encoder,
    decode: fn(WireToken) -> Result<AnyToken, String>,
}

/// A connection's reading side.
struct ReadSide {
    reader: BufReader<Stream>,
    /// How lent bulks are copied, if the client borrows them.
    lender: Option<frame::Lender>,
}

/// Why reading ended: the connection broke (why), or the engine is gone (the runtime ended).
enum Stop {
    Broken(String),
    EngineGone,
}

#[derive(Default)]
struct Pending {
    calls: HashMap<u64, Box<dyn Any + Send>>,
    broken: Option<String>,
}

impl Connection {
    /// Connects to the service `entry` describes, after checking the types `expect`s.
    pub(crate) fn open(entry: &Entry, expect: Expect, engine: &Arc<Engine>) -> Result<Arc<Connection>, Error> {
        let name = &entry.name;
        let mismatch = |what: String| Error::new(ErrorKind::Service, format!("service \"{name}\": {what}"));
        if entry.protocol != registry::PROTOCOL {
            return Err(mismatch(format!(
                "the service speaks protocol {}, this client {} (built with another dps)",
                entry.protocol,
                registry::PROTOCOL
            )));
        }
        let short = registry::short_type;
        if (short(&entry.request), short(&entry.reply)) != (short(expect.request), short(expect.reply)) {
            return Err(mismatch(format!(
                "types differ: the client imports {} -> {}, the service (graph \"{}\", pid {} on {}) takes {} -> {}",
                expect.request, expect.reply, entry.graph, entry.pid, entry.host, entry.request, entry.reply
            )));
        }
        if let Some(f) = expect.fingerprint.as_ref().filter(|f| **f != entry.fingerprint) {
            return Err(mismatch(format!(
                "graph fingerprints differ: the client pinned {f}, the service's graph \"{}\" is {}",
                entry.graph, entry.fingerprint
            )));
        }
        let stale = |why: String| {
            registry::not_running(
                name,
                &format!("its registry entry (pid {} on {}) is stale: {why}", entry.pid, entry.host),
            )
        };
        let stream =
            net::connect(entry.unix.as_deref(), &entry.tcp).map_err(|e| stale(format!("nobody answers ({e})")))?;
        let lost = |e: std::io::Error| stale(format!("no answer to the hello: {e}"));
        let mut writer = stream.try_clone().map_err(lost)?;
        stream.set_read_timeout(Some(HELLO_TIMEOUT)).map_err(lost)?;
        let mut reader = BufReader::new(stream);
        let hello = Msg::Hello {
            protocol: registry::PROTOCOL,
            service: name.clone(),
            request: expect.request.to_string(),
            reply: expect.reply.to_string(),
            fingerprint: expect.fingerprint.clone(),
            client: format!("pid {} rank {}", std::process::id(), engine.rank()),
        };
        frame::write(&mut writer, &hello, None).map_err(lost)?;
        let (graph, fingerprint, offer) = match frame::read(&mut reader, None).map_err(lost)? {
            Some((Msg::Welcome { graph, fingerprint, lend }, _)) => (graph, fingerprint, lend),
            Some((Msg::Refused { reason }, _)) => return Err(Error::new(ErrorKind::Service, reason)),
            Some((other, _)) => return Err(stale(format!("it answered {other:?}"))),
            None => return Err(stale("it closed the connection".into())),
        };
        reader.get_ref().set_read_timeout(None).map_err(lost)?;
        // Borrow the large bulks of replies if the service's memory can be read from here.
        let lender = offer.as_ref().and_then(frame::Lender::try_probe);
        if lender.is_some() {
            frame::write(&mut writer, &Msg::Borrow, None).map_err(lost)?;
        }
        let poller = writer.try_clone().map_err(lost)?;
        let conn = Arc::new(Connection {
            name: name.clone(),
            graph,
            fingerprint,
            writer: Mutex::new(writer),
            reading: Mutex::new(ReadSide { reader, lender }),
            poller,
            pending: Mutex::default(),
            in_flight: AtomicUsize::new(0),
            helping: AtomicUsize::new(0),
            rest_until: AtomicU64::new(0),
            rest_owner: AtomicU64::new(0),
            born: Instant::now(),
            ended: AtomicBool::new(false),
            reader: OnceLock::new(),
            next_id: AtomicU64::new(0),
            engine: Arc::downgrade(engine),
            encode: expect.encode,
            decode: expect.decode,
        });
        let reading = conn.clone();
        let thread = std::thread::Builder::new()
            .name(format!("dps-import-{name}"))
            .spawn(move || reading.read_replies())
            .map_err(|e| Error::new(ErrorKind::Io, format!("service \"{name}\": cannot start a thread: {e}")))?;
        let _ = conn.reader.set(thread.thread().clone());
        let weak: Weak<Connection> = Arc::downgrade(&conn);
        engine.add_reader(weak);
        Ok(conn)
    }

    /// Ends the connection (at shutdown): the reader thread ends, calls in flight fail.
    pub(super) fn close(&self) {
        self.writer.lock().unwrap().shutdown();
    }

    /// The reader thread: reads what arrives while no caller does (see [`REST`]).
    fn read_replies(&self) {
        let why = loop {
            if self.ended.load(Ordering::SeqCst) {
                return;
            }
            if self.callers_read() {
                std::thread::park_timeout(REST);
                continue;
            }
            self.poller.wait_readable();
            if self.callers_read() {
                continue;
            }
            let Some(mut side) = self.try_reading() else { continue };
            match self.drain(&mut side, usize::MAX) {
                Ok(_) => {}
                Err(Stop::Broken(why)) => break why,
                Err(Stop::EngineGone) => return,
            }
        };
        self.lost(&why);
    }

    /// Fails every call, in flight and later, as the connection is lost for `why`.
    fn lost(&self, why: &str) {
        self.break_all(format!("service \"{}\" is not running: the connection was lost ({why})", self.name));
    }

    /// Whether the reader thread keeps off the socket: a caller reads it, or one stopped
    /// with no call in flight less than [`REST`] ago.
    fn callers_read(&self) -> bool {
        self.helping.load(Ordering::SeqCst) > 0 || (self.in_flight.load(Ordering::SeqCst) == 0 && self.resting())
    }

    /// Whether the rest after a caller's reading lasts.
    fn resting(&self) -> bool {
        (self.born.elapsed().as_nanos() as u64) < self.rest_until.load(Ordering::SeqCst)
    }

    /// The reading side, unless another thread holds it.
    fn try_reading(&self) -> Option<MutexGuard<'_, ReadSide>> {
        match self.reading.try_lock() {
            Ok(side) => Some(side),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Reads and handles the messages that have arrived, at most `max`: it never waits for
    /// a message to begin (only for the rest of one begun). How many it handled.
    fn drain(&self, side: &mut ReadSide, max: usize) -> Result<usize, Stop> {
        let mut handled = 0;
        while handled < max && (!side.reader.buffer().is_empty() || side.reader.get_ref().readable_now()) {
            self.read_one(side)?;
            handled += 1;
        }
        Ok(handled)
    }

    /// Reads one message and hands its call's outcome to the engine.
    fn read_one(&self, side: &mut ReadSide) -> Result<(), Stop> {
        let (id, outcome) = match frame::read(&mut side.reader, side.lender.as_ref()) {
            Ok(Some((Msg::Reply { id }, Some(token)))) => {
                (id, (self.decode)(token).map_err(|e| format!("service \"{}\" replied {e}", self.name)))
            }
            Ok(Some((Msg::Lent { id }, Some(token)))) => {
                // Copied: the service may drop them.
                if let Err(e) = frame::write(&mut *self.writer.lock().unwrap(), &Msg::Taken { id }, None) {
                    return Err(Stop::Broken(e.to_string()));
                }
                (id, (self.decode)(token).map_err(|e| format!("service \"{}\" replied {e}", self.name)))
            }
            Ok(Some((Msg::Failed { id, message }, _))) => (id, Err(format!("service \"{}\": {message}", self.name))),
            Ok(Some((other, _))) => return Err(Stop::Broken(format!("it sent an unexpected {other:?}"))),
            Ok(None) => return Err(Stop::Broken("it closed the connection".to_string())),
            Err(e) => return Err(Stop::Broken(e.to_string())),
        };
        let resume = {
            let mut p = self.pending.lock().unwrap();
            let resume = p.calls.remove(&id);
            if resume.is_some() {
                self.in_flight.fetch_sub(1, Ordering::SeqCst);
            }
            resume
        };
        match (resume, self.engine.upgrade()) {
            (Some(resume), Some(engine)) => {
                engine.resume(resume, outcome);
                Ok(())
            }
            (None, _) => Err(Stop::Broken(format!("it answered call {id}, which is not in flight"))),
            (_, None) => Err(Stop::EngineGone),
        }
    }

    /// Fails every call in flight, and every later one, with `message`.
    fn break_all(&self, message: String) {
        self.ended.store(true, Ordering::SeqCst);
        self.writer.lock().unwrap().shutdown();
        let calls: Vec<_> = {
            let mut p = self.pending.lock().unwrap();
            p.broken.get_or_insert(message.clone());
            self.in_flight.store(0, Ordering::SeqCst);
            p.calls.drain().map(|(_, r)| r).collect()
        };
        if let Some(t) = self.reader.get() {
            t.unpark();
        }
        let Some(engine) = self.engine.upgrade() else { return };
        for resume in calls {
            engine.resume(resume, Err(message.clone()));
        }
    }
}

impl RemoteLeaf for Connection {
    fn call(&self, token: AnyToken, resume: Box<dyn Any + Send>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        {
            let mut p = self.pending.lock().unwrap();
            if let Some(message) = p.broken.clone() {
                drop(p);
                if let Some(engine) = self.engine.upgrade() {
                    engine.resume(resume, Err(message));
                }
                return;
            }
            p.calls.insert(id, resume);
            self.in_flight.fetch_add(1, Ordering::SeqCst);
        }
        if self.helping.load(Ordering::SeqCst) == 0
            && self.resting()
            && self.rest_owner.load(Ordering::SeqCst) != thread_tag()
        {
            // Not the caller the reader thread rests for (a worker, say): its reply must not
            // wait for the rest to end.
            self.rest_until.store(0, Ordering::SeqCst);
            if let Some(t) = self.reader.get() {
                t.unpark();
            }
        }
        let wire = (self.encode)(token);
        let written = frame::write(&mut *self.writer.lock().unwrap(), &Msg::Request { id }, Some(wire));
        if let Err(e) = written {
            self.break_all(format!("service \"{}\" is not running: a request could not be sent ({e})", self.name));
        }
    }
}

impl Helper for Connection {
    fn begin_help(&self) {
        self.helping.fetch_add(1, Ordering::SeqCst);
    }

    /// Reads the replies that have arrived, if calls are in flight and no other thread is
    /// reading; a broken connection fails its calls here as on the reader thread.
    fn help(&self) -> bool {
        if self.in_flight.load(Ordering::SeqCst) == 0 || self.ended.load(Ordering::SeqCst) {
            return false;
        }
        let Some(mut side) = self.try_reading() else { return false };
        match self.drain(&mut side, HELP_BATCH) {
            Ok(handled) => handled > 0,
            Err(stop) => {
                drop(side);
                if let Stop::Broken(why) = stop {
                    self.lost(&why);
                }
                true
            }
        }
    }

    fn awaited(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) > 0
    }

    fn end_help(&self, gave_up: bool) {
        if gave_up || self.in_flight.load(Ordering::SeqCst) > 0 {
            // Calls wait for replies that nobody else would read: the reader thread, now.
            self.rest_until.store(0, Ordering::SeqCst);
            self.helping.fetch_sub(1, Ordering::SeqCst);
            if let Some(t) = self.reader.get() {
                t.unpark();
            }
        } else {
            let until = self.born.elapsed() + REST;
            self.rest_owner.store(thread_tag(), Ordering::SeqCst);
            self.rest_until.store(until.as_nanos() as u64, Ordering::SeqCst);
            self.helping.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// A number naming the calling thread (from 1), cheaper to compare than a `ThreadId`.
fn thread_tag() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static TAG: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    TAG.with(|t| *t)
}
