//! Parallel services between applications (the DPS paper, §4 and Fig. 10): one running
//! application exports a graph under a name ([`Runtime::export`](crate::Runtime::export)),
//! another, started separately, imports it ([`Runtime::import`](crate::Runtime::import)) and
//! calls it as a leaf of its own graphs ([`Service::leaf`]). The runtime README's "Services"
//! section describes the protocol, the registry and the faults.
//!
//! | module | its one job |
//! | --- | --- |
//! | `registry` | the directory of service entries: publish, read, withdraw |
//! | `net` | the sockets: abstract Unix on one node, TCP between nodes |
//! | `frame` | the messages on a socket, tokens with their bulks |
//! | `server` | an exported graph's gateway on rank 0 |
//! | `client` | a rank's connection to an imported service: the remote leaf |

pub(crate) mod client;
pub(crate) mod frame;
pub(crate) mod net;
pub(crate) mod registry;
pub(crate) mod server;

use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use crate::collection::Collection;
use crate::node::Node;
use crate::route::Route;
use crate::token::Token;

/// A parallel service another application exports, imported with
/// [`Runtime::import`](crate::Runtime::import): requests `I`, replies `O`.
pub struct Service<I, O> {
    conn: Arc<client::Connection>,
    _types: PhantomData<fn(I) -> O>,
}

impl<I, O> std::fmt::Debug for Service<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Service({:?}, graph {:?} {})", self.conn.name, self.conn.graph, self.conn.fingerprint)
    }
}

impl<I: Token, O: Token> Service<I, O> {
    pub(crate) fn new(conn: Arc<client::Connection>) -> Self {
        Service { conn, _types: PhantomData }
    }

    /// The name it was exported under.
    pub fn name(&self) -> &str {
        &self.conn.name
    }

    /// The name of the graph behind it.
    pub fn graph(&self) -> &str {
        &self.conn.graph
    }

    /// The fingerprint of the graph behind it ([`Graph::fingerprint`](crate::Graph::fingerprint)),
    /// to pin with [`Runtime::import_pinned`](crate::Runtime::import_pinned).
    pub fn fingerprint(&self) -> &str {
        &self.conn.fingerprint
    }

    /// A leaf node that calls the service: each token it receives is a request, its output
    /// the reply. It runs on the thread of `coll` that `route` picks, which sends the
    /// request and is free at once, so that a split before it can have its whole window of
    /// calls in flight (one thread is enough); the reply continues the token's path from the
    /// rank that sent the request. If the service stops answering, the call the token
    /// belongs to fails with an error naming the service.
    pub fn leaf<S: Send + 'static>(&self, name: &str, coll: &Collection<S>, route: impl Route<I>) -> Node<I, O> {
        Node::remote(name, coll, route, self.conn.clone())
    }
}

/// A graph this application exports ([`Runtime::export`](crate::Runtime::export)). Its
/// counters are rank 0's, which serves the clients (0 on the other ranks).
#[derive(Debug, Clone)]
pub struct Export {
    name: String,
    stats: Arc<server::Stats>,
}

impl Export {
    pub(crate) fn new(name: &str, stats: Arc<server::Stats>) -> Self {
        Export { name: name.to_string(), stats }
    }

    /// The name it is exported under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The clients connected now.
    pub fn connections(&self) -> usize {
        self.stats.connections.load(Ordering::SeqCst)
    }

    /// The calls started and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.stats.in_flight.load(Ordering::SeqCst)
    }

    /// The calls answered (or failed) so far.
    pub fn served(&self) -> u64 {
        self.stats.served.load(Ordering::Relaxed)
    }

    /// The replies sent so far with bulks lent to a client on this node (the runtime
    /// README's "Services": a client copies them from this process's memory).
    pub fn lent_replies(&self) -> u64 {
        self.stats.lent_replies.load(Ordering::Relaxed)
    }

    /// The bytes lent now: replies whose bulks a client has not yet copied.
    pub fn lent_bytes(&self) -> usize {
        self.stats.lent_bytes.load(Ordering::SeqCst)
    }
}

/// The services a runtime exports and imports, ended with it.
#[derive(Default)]
pub(crate) struct Services {
    pub(crate) exported: Mutex<Vec<server::Gateway>>,
    pub(crate) imported: Mutex<Vec<Arc<client::Connection>>>,
}

impl Services {
    /// Withdraws every export.
    pub(crate) fn end_exports(&self) {
        for g in std::mem::take(&mut *self.exported.lock().unwrap()) {
            g.stop();
        }
    }

    /// Closes every import.
    pub(crate) fn end_imports(&self) {
        for c in std::mem::take(&mut *self.imported.lock().unwrap()) {
            c.close();
        }
    }
}
