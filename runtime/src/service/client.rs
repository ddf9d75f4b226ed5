//! A client's connection to a service, one per rank that imports it: the remote leaf that
//! writes each request as its token arrives (tagged with an id, nothing waits for the
//! reply), and a reader thread that hands each reply to the engine, which continues the
//! token's path after the leaf (the reader polls its socket briefly before it blocks, so a
//! prompt reply costs no wake-up). Many calls are in flight; the client's own split windows
//! bound how many. If the connection breaks, every call in flight and every later one fails
//! with an error naming the service.

use std::any::Any;
use std::collections::HashMap;
use std::io::BufReader;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use super::frame::{self, Msg};
use super::net::{self, Stream};
use super::registry::{self, Entry};
use crate::engine::Engine;
use crate::error::{Error, ErrorKind};
use crate::node::{AnyToken, Encoder, RemoteLeaf};
use crate::wire::WireToken;

/// How long a client waits for the service to answer its hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

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
    /// The remote leaf's calls in flight, by id; the failure once the connection broke.
    pending: Mutex<Pending>,
    next_id: AtomicU64,
    engine: Weak<Engine>,
    encode: Encoder,
    decode: fn(WireToken) -> Result<AnyToken, String>,
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
        let conn = Arc::new(Connection {
            name: name.clone(),
            graph,
            fingerprint,
            writer: Mutex::new(writer),
            pending: Mutex::default(),
            next_id: AtomicU64::new(0),
            engine: Arc::downgrade(engine),
            encode: expect.encode,
            decode: expect.decode,
        });
        let reading = conn.clone();
        std::thread::Builder::new()
            .name(format!("dps-import-{name}"))
            .spawn(move || reading.read_replies(reader, lender))
            .map_err(|e| Error::new(ErrorKind::Io, format!("service \"{name}\": cannot start a thread: {e}")))?;
        Ok(conn)
    }

    /// Ends the connection (at shutdown): the reader thread ends, calls in flight fail.
    pub(super) fn close(&self) {
        self.writer.lock().unwrap().shutdown();
    }

    fn read_replies(&self, mut reader: BufReader<Stream>, lender: Option<frame::Lender>) {
        let why = loop {
            let (id, outcome) = match frame::read(&mut reader, lender.as_ref()) {
                Ok(Some((Msg::Reply { id }, Some(token)))) => {
                    (id, (self.decode)(token).map_err(|e| format!("service \"{}\" replied {e}", self.name)))
                }
                Ok(Some((Msg::Lent { id }, Some(token)))) => {
                    // Copied: the service may drop them.
                    if let Err(e) = frame::write(&mut *self.writer.lock().unwrap(), &Msg::Taken { id }, None) {
                        break e.to_string();
                    }
                    (id, (self.decode)(token).map_err(|e| format!("service \"{}\" replied {e}", self.name)))
                }
                Ok(Some((Msg::Failed { id, message }, _))) => {
                    (id, Err(format!("service \"{}\": {message}", self.name)))
                }
                Ok(Some((other, _))) => break format!("it sent an unexpected {other:?}"),
                Ok(None) => break "it closed the connection".to_string(),
                Err(e) => break e.to_string(),
            };
            let resume = self.pending.lock().unwrap().calls.remove(&id);
            match (resume, self.engine.upgrade()) {
                (Some(resume), Some(engine)) => engine.resume(resume, outcome),
                (None, _) => break format!("it answered call {id}, which is not in flight"),
                (_, None) => return,
            }
        };
        self.break_all(format!("service \"{}\" is not running: the connection was lost ({why})", self.name));
    }

    /// Fails every call in flight, and every later one, with `message`.
    fn break_all(&self, message: String) {
        self.writer.lock().unwrap().shutdown();
        let calls: Vec<_> = {
            let mut p = self.pending.lock().unwrap();
            p.broken.get_or_insert(message.clone());
            p.calls.drain().map(|(_, r)| r).collect()
        };
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
        }
        let wire = (self.encode)(token);
        let written = frame::write(&mut *self.writer.lock().unwrap(), &Msg::Request { id }, Some(wire));
        if let Err(e) = written {
            self.break_all(format!("service \"{}\" is not running: a request could not be sent ({e})", self.name));
        }
    }
}
