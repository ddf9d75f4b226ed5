//! A service's gateway, on rank 0 of the exporting application: it listens (abstract Unix
//! socket and TCP), publishes its addresses in the registry, and for each connection checks
//! the client's types, then starts one call of the exported graph per request and writes
//! each reply as it completes, in any order, tagged with the request's id.
//!
//! Per connection: a reader thread (requests in, polling its socket briefly before it
//! blocks), and a writer thread for the replies the socket did not take at once: a reply is
//! written without blocking by the thread that completes its call, when nothing is queued
//! before it ([`Replies`]). At most
//! [`MAX_IN_FLIGHT`] calls of one connection run at once; beyond that the reader stops
//! reading, so a client that floods is held back by its socket, not buffered. When a client
//! goes away, the calls it started still complete and their replies are dropped; then both
//! threads end and nothing of the connection is left. A malformed or truncated message
//! drops its connection with one logged line.

use std::collections::HashMap;
use std::io::BufReader;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::frame::{self, Msg, Outgoing};
use super::net::{self, Listener, Stream};
use super::registry::{self, Entry, Registry};
use crate::engine::{CallResult, Engine, Payload};
use crate::error::{Error, ErrorKind};
use crate::graph::GraphImpl;
use crate::node::AnyToken;
use crate::wire::WireToken;

/// How long a new connection may take to say hello.
const HELLO_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The largest reply the thread that completes its call writes itself: a larger one is
/// copied into the socket by the connection's writer thread, not by a worker (or the
/// progress thread, which delivers replies from other ranks), and its copy overlaps the
/// next call's work.
const DIRECT_MAX: usize = 64 << 10;

/// The most bytes one connection may have lent and not yet taken back: beyond, replies go
/// through the socket (a client that never says `Taken` holds no more of the service's memory).
const LENT_MAX: usize = 256 << 20;

/// `DPS_SERVICE_LEND_MIN`: the smallest bulk lent (bytes; default [`frame::LEND_MIN`]), or
/// `off`: every reply through the socket.
pub(crate) const LEND_ENV: &str = "DPS_SERVICE_LEND_MIN";

/// The smallest bulk this gateway lends, or `None` if it does not lend.
fn lend_min() -> Option<usize> {
    lend_setting().unwrap_or(Some(frame::LEND_MIN))
}

/// [`LEND_ENV`] as set: a byte count from 1, `off`, or the default when unset.
///
/// # Errors
/// A [`ErrorKind::Usage`](crate::ErrorKind::Usage) naming the variable and its value.
pub(crate) fn lend_setting() -> Result<Option<usize>, crate::Error> {
    match std::env::var(LEND_ENV) {
        Ok(v) if v == "off" => Ok(None),
        Ok(v) => match v.parse::<usize>() {
            Ok(bytes) if bytes >= 1 => Ok(Some(bytes)),
            _ => Err(crate::Error::new(
                crate::ErrorKind::Usage,
                format!("{LEND_ENV}=\"{v}\": the smallest bulk lent must be a number of bytes from 1, or off"),
            )),
        },
        Err(_) => Ok(Some(frame::LEND_MIN)),
    }
}

/// Under Yama's `ptrace_scope` 1 (Ubuntu's default) only a process's ancestors may read its
/// memory, so clients could not take lent bulks and every reply would go through the socket.
/// Naming any process a permitted tracer (`PR_SET_PTRACER_ANY`) gives this process back the
/// rule it has without Yama: processes of the same user may read it. Another user's still
/// cannot (the kernel's credential check comes first), nor anyone under scope 2 or 3. The
/// connect-time probe tells each client whether reading works. Without Yama the call fails
/// with `EINVAL`, which changes nothing.
fn let_same_user_clients_read_lent_bulks() {
    // SAFETY: prctl with integer arguments only; it changes no memory of this process.
    unsafe { libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0) };
}

/// The most calls of one connection in flight at once.
pub(super) const MAX_IN_FLIGHT: usize = 4096;

/// What a gateway serves: the graph and how to take its requests.
pub(crate) struct Served {
    pub(crate) name: String,
    pub(crate) engine: Arc<Engine>,
    pub(crate) graph: Arc<GraphImpl>,
    pub(crate) decode_in: fn(WireToken) -> Result<AnyToken, String>,
    pub(crate) request: &'static str,
    pub(crate) reply: &'static str,
    pub(crate) fingerprint: String,
}

/// A gateway's counters (see `Export`).
#[derive(Default, Debug)]
pub(crate) struct Stats {
    pub(super) connections: AtomicUsize,
    pub(super) in_flight: AtomicUsize,
    pub(super) served: AtomicU64,
    /// Replies sent with lent bulks, and the bytes lent now (not yet taken back).
    pub(super) lent_replies: AtomicU64,
    pub(super) lent_bytes: AtomicUsize,
}

/// A running gateway; [`Gateway::stop`] withdraws it.
pub(crate) struct Gateway {
    name: String,
    registry: Registry,
    nonce: u64,
    stopping: Arc<AtomicBool>,
    unix_name: String,
    tcp_port: Option<u16>,
    accepting: Vec<JoinHandle<()>>,
    /// Every open connection, to end them all at withdrawal.
    open: Arc<Mutex<HashMap<u64, Stream>>>,
    pub(crate) stats: Arc<Stats>,
}

impl Gateway {
    /// Listens, publishes the service in `registry`, and starts accepting clients.
    pub(crate) fn start(served: Served, registry: Registry, host: &str) -> Result<Gateway, Error> {
        let pid = std::process::id();
        let nonce =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
                ^ (u64::from(pid) << 32);
        // An abstract socket's name has at most 107 bytes: the unique part first.
        let mut unix_name = format!("dps-service.{pid}.{nonce:x}.{}", served.name);
        unix_name.truncate(100);
        let listen_error =
            |e: std::io::Error| Error::new(ErrorKind::Io, format!("service \"{}\": cannot listen: {e}", served.name));
        let unix = Listener::unix(&unix_name).map_err(listen_error)?;
        let tcp = Listener::tcp().map_err(listen_error)?;
        if lend_min().is_some() {
            let_same_user_clients_read_lent_bulks();
        }
        let tcp_port = tcp.port();
        let entry = Entry {
            name: served.name.clone(),
            protocol: registry::PROTOCOL,
            pid,
            host: host.to_string(),
            nonce,
            graph: served.graph.name.clone(),
            fingerprint: served.fingerprint.clone(),
            request: served.request.to_string(),
            reply: served.reply.to_string(),
            unix: Some(unix_name.clone()),
            tcp: tcp_port.map(net::tcp_addresses).unwrap_or_default(),
        };
        registry.publish(&entry, |old| net::connect(old.unix.as_deref(), &old.tcp).is_ok())?;
        let stopping = Arc::new(AtomicBool::new(false));
        let open = Arc::new(Mutex::new(HashMap::new()));
        let stats = Arc::new(Stats::default());
        let served = Arc::new(served);
        let accepting = [unix, tcp]
            .into_iter()
            .map(|listener| {
                let (served, stopping, open, stats) = (served.clone(), stopping.clone(), open.clone(), stats.clone());
                std::thread::Builder::new()
                    .name(format!("dps-service-accept-{}", served.name))
                    .spawn(move || accept_loop(&listener, &served, &stopping, &open, &stats))
                    .expect("dps: cannot spawn a service thread")
            })
            .collect();
        Ok(Gateway { name: entry.name, registry, nonce, stopping, unix_name, tcp_port, accepting, open, stats })
    }

    /// Withdraws the service: removes its entry, stops accepting, ends every connection
    /// (their clients' calls in flight fail with "not running").
    pub(super) fn stop(self) {
        self.registry.withdraw(&self.name, self.nonce);
        self.stopping.store(true, Ordering::SeqCst);
        // Wake each accept with a connection of our own (over the Unix socket also where
        // DPS_SERVICE_NET=tcp sends clients to TCP: its accept would wait for ever).
        let _ = net::connect_unix(&self.unix_name);
        if let Some(port) = self.tcp_port {
            let _ = std::net::TcpStream::connect(("127.0.0.1", port));
        }
        for t in self.accepting {
            let _ = t.join();
        }
        for (_, s) in self.open.lock().unwrap().drain() {
            s.shutdown();
        }
    }
}

fn accept_loop(
    listener: &Listener,
    served: &Arc<Served>,
    stopping: &AtomicBool,
    open: &Arc<Mutex<HashMap<u64, Stream>>>,
    stats: &Arc<Stats>,
) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let accepted = listener.accept();
        if stopping.load(Ordering::SeqCst) {
            return;
        }
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                eprintln!("dps: service \"{}\": accept: {e}", served.name);
                std::thread::sleep(std::time::Duration::from_millis(10));
                continue;
            }
        };
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        if let Ok(c) = stream.try_clone() {
            open.lock().unwrap().insert(id, c);
        }
        let (mine, open, stats) = (served.clone(), open.clone(), stats.clone());
        stats.connections.fetch_add(1, Ordering::SeqCst);
        let spawned = std::thread::Builder::new().name(format!("dps-service-{}", served.name)).spawn(move || {
            serve(stream, &peer, &mine, &stats);
            open.lock().unwrap().remove(&id);
            stats.connections.fetch_sub(1, Ordering::SeqCst);
        });
        if let Err(e) = spawned {
            eprintln!("dps: service \"{}\": cannot serve {id}: {e}", served.name);
        }
    }
}

/// Serves one connection until it ends; returns once its last call has completed.
fn serve(stream: Stream, peer: &str, served: &Arc<Served>, stats: &Arc<Stats>) {
    let name = &served.name;
    let Ok(mut writer) = stream.try_clone() else { return };
    // A peer that connects and says nothing holds a thread only this long.
    let _ = stream.set_read_timeout(Some(HELLO_TIMEOUT));
    let mut reader = BufReader::new(stream);
    let offer = if matches!(writer, Stream::Unix(_)) { lend_min() } else { None };
    let client = match handshake(&mut reader, &mut writer, served, offer.is_some()) {
        Ok(Some(client)) => client,
        Ok(None) => return,
        Err(e) => return eprintln!("dps: service \"{name}\": dropped {peer}: {e}"),
    };
    if reader.get_ref().set_read_timeout(None).is_err() {
        return;
    }
    let drop_line =
        |why: &dyn std::fmt::Display| eprintln!("dps: service \"{name}\": dropped {peer} ({client}): {why}");
    let (queue, outbox) = crossbeam_channel::unbounded::<Outgoing>();
    let (permit, permits) = crossbeam_channel::bounded::<()>(MAX_IN_FLIGHT);
    let Ok(direct) = writer.try_clone() else { return };
    let out = Arc::new(Mutex::new(Out::default()));
    let replies = Arc::new(Replies {
        stream: direct,
        out: out.clone(),
        queue,
        lend: Mutex::new(Lending::default()),
        stats: stats.clone(),
    });
    let writing = std::thread::Builder::new().name(format!("dps-service-out-{name}")).spawn(move || {
        // Ends once the reader and every call's `done` have dropped their `Replies`.
        for mut reply in outbox {
            if !out.lock().unwrap().broken && reply.write_all(&mut writer).is_err() {
                out.lock().unwrap().broken = true;
            }
            out.lock().unwrap().queued -= 1;
        }
    });
    let Ok(writing) = writing else { return drop_line(&"cannot start its writer thread") };
    loop {
        let (id, token) = match frame::read(&mut reader, None) {
            Ok(Some((Msg::Request { id }, Some(token)))) => (id, token),
            Ok(Some((Msg::Taken { id }, None))) => {
                if !replies.taken(id) {
                    drop_line(&format!("malformed message: call {id} was taken, and nothing of it is lent"));
                    break;
                }
                continue;
            }
            Ok(Some((Msg::Borrow, None))) if offer.is_some() => {
                replies.lend.lock().unwrap().min = offer;
                continue;
            }
            Ok(None) => break,
            Ok(Some((other, _))) => {
                drop_line(&format!("unexpected message {other:?}"));
                break;
            }
            Err(e) => {
                // A reset by a client that died is not worth a line; anything else is.
                if e.kind() != std::io::ErrorKind::ConnectionReset {
                    drop_line(&e);
                }
                break;
            }
        };
        let input = match (served.decode_in)(token) {
            Ok(t) => t,
            Err(e) => {
                drop_line(&format!("request {id}: {e}"));
                break;
            }
        };
        if permit.send(()).is_err() {
            break;
        }
        stats.in_flight.fetch_add(1, Ordering::SeqCst);
        let (replies, permits, stats, mine) = (replies.clone(), permits.clone(), stats.clone(), served.clone());
        let done = Box::new(move |result| {
            let _ = permits.try_recv();
            stats.in_flight.fetch_sub(1, Ordering::SeqCst);
            stats.served.fetch_add(1, Ordering::Relaxed);
            let lend = replies.lend_min();
            replies.send(reply(id, result, &mine, lend));
        });
        served.engine.start_call_then(&served.graph, input, done);
    }
    // The client is gone (or dropped): what it borrowed is freed, later replies are dropped.
    replies.out.lock().unwrap().broken = true;
    replies.end_lending();
    drop(replies);
    let _ = writing.join();
}

/// The replies of one connection on their way out. The thread that completes a call (a
/// worker, usually) writes its reply at once, without blocking, when no earlier reply is
/// waiting, the reply is small ([`DIRECT_MAX`]) and the socket takes it all; what would block goes to the connection's writer
/// thread, in order, so that a client that reads slowly never holds up a worker.
struct Replies {
    stream: Stream,
    out: Arc<Mutex<Out>>,
    queue: crossbeam_channel::Sender<Outgoing>,
    lend: Mutex<Lending>,
    stats: Arc<Stats>,
}

/// The replies whose bulks a client has borrowed and not yet taken.
#[derive(Default)]
struct Lending {
    /// The smallest bulk lent, once the client has said `Borrow`; `None` after the end.
    min: Option<usize>,
    lent: HashMap<u64, (usize, WireToken)>,
    bytes: usize,
}

/// What the writer thread has to do.
#[derive(Default)]
struct Out {
    /// Replies queued for the writer thread and not yet written: while there are any, later
    /// replies queue behind them.
    queued: usize,
    /// A write failed (the client is gone): later replies are dropped.
    broken: bool,
}

impl Replies {
    /// The smallest bulk to lend now, if any (not beyond [`LENT_MAX`] bytes lent).
    fn lend_min(&self) -> Option<usize> {
        let l = self.lend.lock().unwrap();
        l.min.filter(|_| l.bytes < LENT_MAX)
    }

    /// The client took call `id`'s lent bulks; false if none were lent.
    fn taken(&self, id: u64) -> bool {
        let mut l = self.lend.lock().unwrap();
        let Some((bytes, _)) = l.lent.remove(&id) else { return false };
        l.bytes -= bytes;
        self.stats.lent_bytes.fetch_sub(bytes, Ordering::SeqCst);
        true
    }

    /// The connection ended: drops every lent reply, and lends no more.
    fn end_lending(&self) {
        let mut l = self.lend.lock().unwrap();
        l.min = None;
        l.lent.clear();
        self.stats.lent_bytes.fetch_sub(std::mem::take(&mut l.bytes), Ordering::SeqCst);
    }

    fn send(&self, (mut reply, lent): (Outgoing, Option<(u64, WireToken)>)) {
        let mut out = self.out.lock().unwrap();
        if out.broken {
            return;
        }
        if let Some((id, token)) = lent {
            // Kept before the client can read the reply (and say `Taken`).
            let bytes = token.bulks_out.iter().map(|b| b.len).sum::<usize>()
                + token.bulks_in.iter().map(|b| b.as_bytes().len()).sum::<usize>();
            let mut l = self.lend.lock().unwrap();
            if l.min.is_none() {
                return;
            }
            l.bytes += bytes;
            l.lent.insert(id, (bytes, token));
            self.stats.lent_bytes.fetch_add(bytes, Ordering::SeqCst);
            self.stats.lent_replies.fetch_add(1, Ordering::Relaxed);
        }
        if out.queued == 0 && reply.bytes() <= DIRECT_MAX {
            match self.stream.send_nonblocking(&reply.unsent()) {
                Ok(n) => reply.advance(n),
                Err(_) => {
                    out.broken = true;
                    return;
                }
            }
            if reply.is_done() {
                return;
            }
        }
        out.queued += 1;
        let _ = self.queue.send(reply);
    }
}

/// Reads the client's `Hello` and answers it; `Ok(Some(client))` if the types agree,
/// `Ok(None)` if the client was refused (or only knocked: a liveness check).
fn handshake(
    reader: &mut BufReader<Stream>,
    writer: &mut Stream,
    served: &Served,
    offer: bool,
) -> std::io::Result<Option<String>> {
    let Some((hello, _)) = frame::read(reader, None)? else { return Ok(None) };
    let Msg::Hello { protocol, service, request, reply, fingerprint, client } = hello else {
        return Err(std::io::Error::other(format!("expected a hello, got {hello:?}")));
    };
    let ours = format!("{} -> {}", served.request, served.reply);
    let refusal = if protocol != registry::PROTOCOL {
        Some(format!(
            "service \"{service}\": the client speaks protocol {protocol}, the service {}",
            registry::PROTOCOL
        ))
    } else if service != served.name {
        Some(format!("this gateway serves \"{}\", not \"{service}\"", served.name))
    } else if (registry::short_type(&request), registry::short_type(&reply))
        != (registry::short_type(served.request), registry::short_type(served.reply))
    {
        Some(format!("service \"{service}\": types differ: the client imports {request} -> {reply}, the service (graph \"{}\") takes {ours}", served.graph.name))
    } else {
        fingerprint.filter(|f| *f != served.fingerprint).map(|f| {
            format!(
                "service \"{service}\": graph fingerprints differ: the client pinned {f}, the service's graph \"{}\" is {}",
                served.graph.name, served.fingerprint
            )
        })
    };
    let answer = match &refusal {
        Some(reason) => Msg::Refused { reason: reason.clone() },
        None => Msg::Welcome {
            graph: served.graph.name.clone(),
            fingerprint: served.fingerprint.clone(),
            lend: offer.then(frame::probe),
        },
    };
    frame::write(writer, &answer, None)?;
    Ok(refusal.is_none().then_some(client))
}

/// The message answering call `id`, with its bulks of at least `lend` bytes lent: then
/// also the token to keep until the client has taken them.
fn reply(id: u64, result: CallResult, served: &Served, lend: Option<usize>) -> (Outgoing, Option<(u64, WireToken)>) {
    let wire = match result {
        // From another rank: written as it came, never decoded here.
        Ok(Payload::Wire(wire)) => wire,
        Ok(Payload::Local(token)) => (served.graph.encode_out)(token),
        Err(message) => return (Outgoing::new(&Msg::Failed { id, message }, None), None),
    };
    match lend {
        Some(min) => {
            let (out, kept) = Outgoing::lending(id, wire, min);
            (out, kept.map(|k| (id, k)))
        }
        None => (Outgoing::new(&Msg::Reply { id }, Some(wire)), None),
    }
}
