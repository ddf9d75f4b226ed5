//! The per-rank runtime, the crate's front door: starts MPI, the worker pool and the progress
//! thread; creates collections and graphs; runs calls; shuts everything down on every rank.
//! What the ranks must agree on goes through the protocols of `collectives`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use mpi::topology::Communicator;

use crate::binding::{Bind, Binding};
use crate::collection::{CollInfo, Collection};
use crate::collectives;
use crate::engine::{self, Engine, Outlet, StateCodec};
use crate::error::ErrorKind;
use crate::failure;
use crate::graph::{self, Graph};
use crate::mode::{Mode, Pending, Stopwatch};
use crate::node::Path;
use crate::service::client::{Connection, Expect};
use crate::service::registry::Registry;
use crate::service::server::{Gateway, Served};
use crate::service::{self, Export, Service, Services};
use crate::sim::{SimOptions, SimReport, Simulator};
use crate::trace::TraceFile;
use crate::transport::mpi::{CoreShare, MpiTransport};
use crate::transport::watchdog;
use crate::transport::Transport;
use crate::{mapping, Error, Token};

/// Default bound on the worker threads of a rank.
const DEFAULT_MAX_WORKERS: usize = 64;
/// How long a runtime dropped without `shutdown()` waits for the other ranks to do the same.
const DROP_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// The DPS runtime of one rank. Every rank creates the same collections and graphs in the
/// same order (SPMD); any rank may then run graphs with [`call`](Runtime::call) or
/// [`start`](Runtime::start); every rank ends with [`shutdown`](Runtime::shutdown).
///
/// ```
/// use dps::{route, Node, Runtime};
/// let rt = Runtime::single();
/// let main = rt.collection("main", "0", |_| ()).unwrap();
/// let work = rt.collection("work", "all*2", |i| i).unwrap();
/// let split = Node::split("split", &main, route::fixed(0), |_: &mut (), n: u64| 0..n);
/// let square = Node::leaf("square", &work, route::round_robin(), |_: &mut usize, x: u64| x * x);
/// let sum = Node::merge("sum", &main, dps::MergeFn::new(|_: &mut ()| 0u64, |_, acc: &mut u64, x: u64| *acc += x, |_, acc| acc));
/// let graph = rt.graph("sum of squares", split >> square >> sum).unwrap();
/// assert_eq!(rt.call(&graph, 4).unwrap(), 0 + 1 + 4 + 9);
/// rt.shutdown().unwrap();
/// ```
pub struct Runtime {
    engine: Arc<Engine>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    /// Where the workers and the progress thread run (`--bind`, `DPS_BIND`).
    binding: Arc<Binding>,
    /// One rank, MPI or simulated.
    mode: Mode,
    /// Where rank 0 writes the trace, if tracing.
    trace: Option<TraceFile>,
    /// The parallel services this application exports and imports.
    services: Services,
    finished: bool,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Runtime(rank {} of {})", self.engine.rank(), self.engine.ranks())
    }
}

/// The most `DPS_WORKERS` may ask for: beyond it a rank's threads only take memory.
const MAX_WORKERS: usize = 1024;

/// The most worker threads a rank starts: `DPS_WORKERS`, else `DEFAULT_MAX_WORKERS`.
///
/// A rank has one worker per DPS thread it hosts, up to this bound: a long operation on one
/// thread must not hold up the operations of another (a merge behind a slow computation would
/// delay every credit and so defeat load balancing). The OS shares the cores among them.
///
/// # Errors
/// If `DPS_WORKERS` is set to anything but a number from 1 to [`MAX_WORKERS`].
fn workers_from_env() -> Result<usize, Error> {
    let Ok(text) = std::env::var("DPS_WORKERS") else { return Ok(DEFAULT_MAX_WORKERS) };
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_WORKERS).contains(&n) => Ok(n),
        _ => Err(Error::new(
            ErrorKind::Usage,
            format!("DPS_WORKERS=\"{text}\": the most worker threads a rank starts must be a number from 1 to {MAX_WORKERS}"),
        )),
    }
}

/// [`workers_from_env`], whose value `init` has checked (a runtime made by `single` or
/// `simulate` takes the default for a bad value: it has no error to return).
fn max_workers() -> usize {
    workers_from_env().unwrap_or(DEFAULT_MAX_WORKERS)
}

impl Runtime {
    /// Initialises MPI (under `mpirun`, `srun`, or as a single process) and starts the
    /// runtime on this rank.
    ///
    /// On more than one rank, a rank that stops answering for `DPS_STALL_TIMEOUT` seconds
    /// (default 60; 0 disables) ends the job with a message naming it. `DPS_BIND=cores` pins
    /// each rank's threads to its share of the node's cores (see [`Runtime::binding`]).
    /// `DPS_SHARED_MEMORY=off` sends [`Shared`](crate::Shared) bulks as bytes between ranks
    /// of one node too.
    ///
    /// # Errors
    /// If `DPS_STALL_TIMEOUT` is not a number of seconds, `DPS_BIND` is neither `cores` nor
    /// `none`, `DPS_WORKERS` is not a number from 1 to 1024, `DPS_SHARED_MEMORY` is neither
    /// `on` nor `off`, or MPI cannot be initialised with a threading level that allows a progress
    /// thread.
    pub fn init() -> Result<Runtime, Error> {
        Runtime::init_watching(watchdog::stall_timeout_from_env()?, Bind::from_env()?)
    }

    /// As [`Runtime::init`], with the stall timeout (`None`: no watchdog) and binding given.
    pub(crate) fn init_watching(stall_timeout: Option<Duration>, bind: Bind) -> Result<Runtime, Error> {
        workers_from_env()?;
        crate::shared::setting()?;
        let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Multiple)
            .ok_or_else(|| Error::new(ErrorKind::Mpi, "dps: MPI was already initialised in this process"))?;
        Runtime::start_on(universe, stall_timeout, bind)
    }

    /// Starts the runtime on an MPI universe the application initialised itself (for example
    /// to run raw MPI code first). It must grant `Threading::Multiple` or `Serialized`.
    ///
    /// # Errors
    /// If the threading level is too low, `DPS_STALL_TIMEOUT` is not a number of seconds,
    /// `DPS_BIND` is neither `cores` nor `none`, `DPS_WORKERS` is not a number from 1 to
    /// 1024, or `DPS_SHARED_MEMORY` is neither `on` nor `off`.
    pub fn from_universe(universe: mpi::environment::Universe) -> Result<Runtime, Error> {
        workers_from_env()?;
        crate::shared::setting()?;
        Runtime::start_on(universe, watchdog::stall_timeout_from_env()?, Bind::from_env()?)
    }

    fn start_on(
        universe: mpi::environment::Universe,
        stall_timeout: Option<Duration>,
        bind: Bind,
    ) -> Result<Runtime, Error> {
        let level = mpi::environment::threading_support();
        if level < mpi::Threading::Serialized {
            return Err(Error::new(
                ErrorKind::Mpi,
                format!("dps: MPI grants threading level {level:?}; the progress thread needs Serialized or Multiple"),
            ));
        }
        let world = universe.world();
        let (rank, ranks) = (world.rank() as usize, world.size() as usize);
        let hosts = collectives::gather_host_names(&world);
        crate::shm::remove_names_of_the_dead();
        let memory_domains = collectives::gather_strings(&world, &crate::shm::memory_domain());
        let node = world.split_shared(0);
        let ranks_on_node = node.size() as usize;
        let binding = Arc::new(Binding::new(bind, node.rank() as usize, ranks_on_node)?);
        failure::install_hook(rank, ranks > 1);
        let mut rt = Runtime::start_engine(rank, ranks, hosts);
        rt.engine.share_memory_by(&memory_domains);
        rt.binding = binding;
        // A one-rank job has nobody to talk to.
        let transport = (ranks > 1).then(|| {
            let comm = world.duplicate();
            let weak = Arc::downgrade(&rt.engine);
            let deliver = Arc::new(move |header: &[u8], token| {
                if let Some(engine) = weak.upgrade() {
                    engine.receive(header, token)
                }
            });
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let share = CoreShare {
                activity: rt.engine.activity().clone(),
                cores: (cores / ranks_on_node).max(1),
                binding: rt.binding.clone(),
                throttled: crate::cpu_quota::limit().is_some_and(|q| q < ranks_on_node as f64),
            };
            let transport: Arc<dyn Transport> = Arc::new(MpiTransport::start(comm, deliver, share, stall_timeout));
            rt.engine.connect(Outlet::Transport(Arc::downgrade(&transport)));
            transport
        });
        rt.mode = Mode::Mpi { universe, transport };
        Ok(rt)
    }

    /// A one-rank runtime without MPI, for tests, examples and serial runs.
    pub fn single() -> Runtime {
        failure::install_hook(0, false);
        Runtime::start_engine(0, 1, vec![this_host()])
    }

    /// A runtime that simulates `ranks` ranks in this process, without MPI (see the
    /// runtime's README, "Simulator"): the program runs as rank 0 of `ranks`; collections are
    /// spread over the virtual ranks as their mappings say, and every operation runs on the
    /// calling thread, one at a time, in the order of simulated time. Time the program's
    /// work with [`Runtime::stopwatch`]; [`Runtime::simulation`] says what each rank did.
    ///
    /// ```
    /// use dps::{route, Node, Runtime, SimMode, SimOptions};
    /// let rt = Runtime::simulate(4, SimOptions::ideal(SimMode::De)).unwrap();
    /// let main = rt.collection("main", "0", |_| ()).unwrap();
    /// let work = rt.collection("work", "all", |i| i).unwrap();
    /// let split = Node::split("split", &main, route::fixed(0), |_: &mut (), n: u64| 0..n);
    /// let square = Node::leaf("square", &work, route::round_robin(), |_: &mut usize, x: u64| x * x);
    /// let sum = Node::merge("sum", &main, dps::MergeFn::new(|_: &mut ()| 0u64, |_, acc: &mut u64, x: u64| *acc += x, |_, acc| acc));
    /// let graph = rt.graph("sum of squares", split >> square >> sum).unwrap();
    /// assert_eq!(rt.call(&graph, 4).unwrap(), 0 + 1 + 4 + 9);
    /// assert_eq!(rt.simulation().unwrap().ranks, 4);
    /// rt.shutdown().unwrap();
    /// ```
    ///
    /// # Errors
    /// If `ranks` is 0.
    pub fn simulate(ranks: usize, opts: SimOptions) -> Result<Runtime, Error> {
        if ranks == 0 {
            return Err(Error::new(ErrorKind::Usage, "dps simulator: at least one rank to simulate"));
        }
        failure::install_hook(0, false);
        let sim = Simulator::new(ranks, &this_host(), opts);
        let mut rt = Runtime::from_engine(sim.engines()[0].clone());
        rt.mode = Mode::Simulated(sim);
        Ok(rt)
    }

    /// Under simulation, what the simulation measured so far; `None` on a real run.
    pub fn simulation(&self) -> Option<SimReport> {
        match &self.mode {
            Mode::Simulated(sim) => Some(sim.report()),
            Mode::Single | Mode::Mpi { .. } => None,
        }
    }

    /// A stopwatch started now: it reads the simulated clock under simulation, the wall
    /// clock otherwise. Programs time their work with it so that a simulated run reports
    /// its prediction where a real run reports its measurement.
    pub fn stopwatch(&self) -> Stopwatch {
        self.mode.stopwatch()
    }

    fn start_engine(rank: usize, ranks: usize, hosts: Vec<String>) -> Runtime {
        Runtime::from_engine(Arc::new(Engine::new(rank, ranks, hosts)))
    }

    fn from_engine(engine: Arc<Engine>) -> Runtime {
        Runtime {
            engine,
            workers: Mutex::default(),
            binding: Arc::new(Binding::none()),
            mode: Mode::Single,
            trace: None,
            services: Services::default(),
            finished: false,
        }
    }

    /// Starts workers until there is one per local DPS thread (up to `max_workers()`).
    fn add_workers(&self) {
        self.add_workers_at_least(0);
    }

    /// As `add_workers`, with at least `threads` workers (up to `max_workers()`): a rank may
    /// come to host every thread of a movable collection.
    fn add_workers_at_least(&self, threads: usize) {
        // A simulation runs every operation on the thread that waits for a call.
        if let Mode::Simulated(_) = self.mode {
            return;
        }
        let wanted = self.engine.registry().local_threads().max(threads).min(max_workers());
        let mut workers = self.workers.lock().unwrap();
        while workers.len() < wanted {
            let engine = self.engine.clone();
            let worker = std::thread::Builder::new()
                .name(format!("dps-worker-{}", workers.len()))
                .spawn(move || engine::worker_loop(engine))
                .expect("dps: cannot spawn a worker thread");
            self.binding.pin(&worker);
            workers.push(worker);
        }
    }

    /// This rank's number.
    pub fn rank(&self) -> usize {
        self.engine.rank()
    }

    /// Number of ranks in the job.
    pub fn ranks(&self) -> usize {
        self.engine.ranks()
    }

    /// The host name of each rank, as `--map` reads them (under simulation every virtual
    /// rank has this host's name).
    pub fn hosts(&self) -> &[String] {
        self.engine.hosts()
    }

    /// Where this rank's workers and progress thread run: `"none"` (the OS places them), or
    /// with `--bind cores` / `DPS_BIND=cores` the rank's share of the node's cores, such as
    /// `"cores 0-0 (PUs 0; rank 0 of 2 on this node)"`. Programs put it in their records.
    ///
    /// ```
    /// assert_eq!(dps::Runtime::single().binding(), "none");
    /// ```
    pub fn binding(&self) -> &str {
        self.binding.describe()
    }

    /// True on rank 0.
    pub fn is_root(&self) -> bool {
        self.engine.rank() == 0
    }

    /// Records operation spans and messages; rank 0 writes them all to `path` (Chrome trace
    /// JSON, opens in Perfetto) at shutdown. Collective: call it on every rank, before the
    /// work to trace. Rank 0 checks at once that it can write there (it creates the
    /// temporary file that becomes the trace), so a bad path fails before any work.
    ///
    /// # Errors
    /// On every rank, if rank 0 cannot create a file in `path`'s directory, or `path` is a
    /// directory.
    pub fn trace_to(&mut self, path: impl Into<PathBuf>) -> Result<(), Error> {
        self.trace_as(&path.into(), "trace file")
    }

    /// [`Runtime::trace_to`], with errors starting with `label` (the option that gave the
    /// path) and the path.
    pub(crate) fn trace_as(&mut self, path: &std::path::Path, label: &str) -> Result<(), Error> {
        if let Mode::Simulated(sim) = &self.mode {
            let file = TraceFile::prepare(path)
                .map_err(|e| Error::new(ErrorKind::Io, format!("{label} {}: {e}", path.display())))?;
            for engine in sim.engines() {
                engine.tracer().enable(engine.rank());
            }
            self.trace = Some(file);
            return Ok(());
        }
        let file = if self.is_root() { Some(TraceFile::prepare(path)) } else { None };
        let error = match &file {
            Some(Err(e)) => Some(format!("{label} {}: {e}", path.display())),
            _ => None,
        };
        let error = collectives::agree_on_trace_file(&self.engine, error);
        if let Some(e) = error {
            return Err(Error::new(ErrorKind::Io, e));
        }
        self.engine.tracer().enable(self.engine.rank());
        self.trace = file.and_then(Result::ok);
        Ok(())
    }

    /// Creates a thread collection named `name`, mapped onto ranks by `mapping` (see the
    /// module `mapping`: `"0*2 1"`, `"all"`, `"nodeA*2 nodeB"`). `init(i)` creates the state
    /// of thread `i`, on the rank that hosts it.
    ///
    /// # Errors
    /// If the mapping string is malformed or names a rank or host that does not exist.
    pub fn collection<S: Send + 'static>(
        &self,
        name: &str,
        mapping: &str,
        init: impl Fn(usize) -> S,
    ) -> Result<Collection<S>, Error> {
        let ranks = mapping::parse(mapping, self.engine.hosts())
            .map_err(|e| Error::mapping(format!("collection \"{name}\": {e}")))?;
        let id = self.engine.registry().collections();
        let info = Arc::new(CollInfo::new(id, name.to_string(), mapping.to_string(), ranks));
        for engine in self.engines() {
            // Each virtual rank of a simulation has its own view of where the threads live,
            // as a real rank has: a shared one would send messages to a thread's new rank
            // before its state got there (rank 0's is the program's).
            let view = match engine.rank() == self.engine.rank() {
                true => info.clone(),
                false => Arc::new(CollInfo::new(id, info.name.clone(), info.mapping.clone(), info.ranks.clone())),
            };
            engine.registry().add_collection(engine.rank(), view, |i| Box::new(init(i)));
        }
        self.add_workers();
        Ok(Collection::new(info))
    }

    /// As [`Runtime::collection`], for a collection whose threads can move to other ranks
    /// while the program runs ([`Runtime::migrate`], [`Runtime::remap`]): the state is
    /// serializable (put large arrays in [`Bulk`](crate::Bulk)s, which move as raw bytes).
    /// Every rank starts enough workers to host all of its threads.
    ///
    /// ```
    /// let rt = dps::Runtime::single();
    /// let cells = rt.movable_collection("cells", "0*2", |i| vec![i as u64; 3]).unwrap();
    /// rt.remap(&cells, "0 0").unwrap();
    /// assert!(rt.migrate(&cells, 1, 1).is_err(), "a one-rank job has no rank 1");
    /// rt.shutdown().unwrap();
    /// ```
    ///
    /// # Errors
    /// If the mapping string is malformed or names a rank or host that does not exist.
    pub fn movable_collection<S: Token>(
        &self,
        name: &str,
        mapping: &str,
        init: impl Fn(usize) -> S,
    ) -> Result<Collection<S>, Error> {
        let coll = self.collection(name, mapping, init)?;
        let codec = StateCodec { encode: crate::wire::encode::<S>, decode: crate::wire::decode::<S> };
        for engine in self.engines() {
            engine.codecs().register(coll.info.id as u32, codec);
        }
        self.add_workers_at_least(coll.len());
        Ok(coll)
    }

    /// Moves thread `index` of `coll` (its state, and the tokens queued for it) to rank
    /// `to`, and returns once it has arrived. Any rank may call it, while graphs run or
    /// between calls; routes keep naming the thread by its index and tokens reach it
    /// wherever it lives (tokens already on their way are forwarded). A thread moves
    /// between two of its operations, once it has no split, stream or merge instance under
    /// way. Tokens that overtake each other across a move may arrive in another order.
    ///
    /// # Errors
    /// Before anything moves: if `to` is not a rank of the job ([`ErrorKind::Mapping`]),
    /// `index` is out of range or the collection was not created with
    /// [`Runtime::movable_collection`] ([`ErrorKind::Usage`]). If the move does not
    /// complete within two minutes ([`ErrorKind::Failed`]).
    pub fn migrate<S>(&self, coll: &Collection<S>, index: usize, to: usize) -> Result<(), Error> {
        self.migrate_each(coll, &[(index, to)])
    }

    /// As [`Runtime::migrate`] for each `(index, rank)` of `moves`, all at once: returns
    /// once every thread has arrived.
    ///
    /// # Errors
    /// As [`Runtime::migrate`], for any of the moves; nothing moves if one is refused.
    pub fn migrate_each<S>(&self, coll: &Collection<S>, moves: &[(usize, usize)]) -> Result<(), Error> {
        let Mode::Simulated(sim) = &self.mode else { return self.engine.move_threads(&coll.info, moves) };
        // Simulated: the moves are messages like any other, delivered in simulated time
        // while this thread drives the simulation until every thread has arrived.
        let mut waiting = self.engine.request_moves(&coll.info, moves)?;
        let arrived = sim.run(|| {
            self.engine.take_moved(&mut waiting);
            waiting.is_empty()
        });
        match arrived {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::new(
                ErrorKind::Failed,
                format!(
                    "dps simulator: collection \"{}\": {} thread move(s) never completed (a thread moves only \
                     between instances: does it always have a split or merge under way?)",
                    coll.name(),
                    waiting.len()
                ),
            )),
            Err(e) => Err(Error::new(ErrorKind::Failed, format!("dps simulator: {e}"))),
        }
    }

    /// Moves the threads of `coll` so that it is mapped as `mapping` says (a mapping string
    /// as for [`Runtime::collection`], with as many threads), and returns once all have
    /// arrived. Typically called between two calls of a graph.
    ///
    /// # Errors
    /// Before anything moves: if the mapping is malformed, names a rank that does not exist
    /// or has another number of threads ([`ErrorKind::Mapping`]), or the collection cannot
    /// move ([`ErrorKind::Usage`]); as [`Runtime::migrate`] otherwise.
    pub fn remap<S>(&self, coll: &Collection<S>, mapping: &str) -> Result<(), Error> {
        let name = coll.name();
        let ranks = mapping::parse(mapping, self.engine.hosts())
            .map_err(|e| Error::mapping(format!("remap of collection \"{name}\": {e}")))?;
        if ranks.len() != coll.len() {
            return Err(Error::mapping(format!(
                "remap of collection \"{name}\": mapping \"{mapping}\" has {} threads, the collection {}",
                ranks.len(),
                coll.len()
            )));
        }
        let moves: Vec<(usize, usize)> = ranks.into_iter().enumerate().collect();
        self.migrate_each(coll, &moves)
    }

    /// The number of threads a collection mapped by `mapping` would have.
    ///
    /// # Errors
    /// If the mapping string is malformed or names a rank or host that does not exist.
    pub fn threads_in(&self, mapping: &str) -> Result<usize, Error> {
        Ok(mapping::parse(mapping, self.engine.hosts())?.len())
    }

    /// As [`Runtime::threads_in`] for a simulation on `ranks` virtual ranks (all on this
    /// host), before the runtime exists: an application checks its sizes against a
    /// `--map` before the simulator allocates its P² tables.
    ///
    /// # Errors
    /// As [`Runtime::threads_in`].
    pub fn simulated_threads_in(mapping: &str, ranks: usize) -> Result<usize, Error> {
        Ok(mapping::parse(mapping, &vec![this_host(); ranks])?.len())
    }

    /// Builds and validates a graph from a path of nodes. Collective: every rank must build
    /// the same graphs in the same order; ranks whose graphs differ get an error naming the
    /// first difference, instead of hanging later.
    ///
    /// # Errors
    /// If the graph does not validate (a merge without a split, a split never merged, a
    /// node with two successors) or the ranks disagree.
    pub fn graph<I: Token, O: Token>(&self, name: &str, path: impl Into<Path<I, O>>) -> Result<Graph<I, O>, Error> {
        let id = self.engine.registry().graph_count();
        let imp = Arc::new(graph::build(id, name, path.into())?);
        // Registered before agreeing: once rank 0 has agreed, tokens may arrive at once.
        for engine in self.engines() {
            engine.registry().add_graph(imp.clone());
        }
        // The virtual ranks of a simulation share the one graph built here.
        if let Mode::Single | Mode::Mpi { .. } = self.mode {
            collectives::agree_on_graph(&self.engine, id as u32, &imp.description)?;
        }
        Ok(Graph::new(imp))
    }

    /// Runs `graph` on `input` and waits for its output.
    ///
    /// # Errors
    /// If an operation failed (one-rank jobs; on more ranks a failure aborts the job).
    pub fn call<I: Token, O: Token>(&self, graph: &Graph<I, O>, input: I) -> Result<O, Error> {
        self.start(graph, input).wait()
    }

    /// Starts `graph` on `input` without waiting; several calls may run at once.
    pub fn start<I: Token, O: Token>(&self, graph: &Graph<I, O>, input: I) -> Pending<O> {
        let rx = self.engine.start_call(&graph.imp, Box::new(input));
        self.mode.pending(rx, graph.imp.decode_out, self.engine.readers())
    }

    /// Exports `graph` as the parallel service `name`: other applications, started
    /// separately on this node or another, may then [`import`](Runtime::import) it and call
    /// it as a leaf of their graphs. Collective: every rank calls it, after building the
    /// graph; rank 0 serves the clients (each request is a call of `graph` started there) and
    /// publishes the service in the registry directory (`DPS_SERVICES`, default
    /// `$TMPDIR/dps-services-UID`; a directory all nodes share for clients on other nodes).
    /// The service is withdrawn when the runtime ends (`shutdown`, or dropped); a killed
    /// application leaves an entry that clients find stale ("not running").
    ///
    /// ```
    /// use dps::{route, Node, Runtime};
    /// let registry = tempfile::tempdir().unwrap();
    /// std::env::set_var("DPS_SERVICES", registry.path());
    /// let server = Runtime::single();
    /// let c = server.collection("c", "0", |_| ()).unwrap();
    /// let g = server.graph("double", Node::leaf("x2", &c, route::fixed(0), |_: &mut (), x: u64| 2 * x)).unwrap();
    /// let export = server.export("doubler", &g).unwrap();
    /// assert!(server.export("doubler", &g).is_err(), "a live name is refused");
    ///
    /// // Another application would do this, in its own process.
    /// let client = Runtime::single();
    /// let here = client.collection("here", "0", |_| ()).unwrap();
    /// let doubler = client.import::<u64, u64>("doubler").unwrap();
    /// let add = Node::leaf("add", &here, route::fixed(0), |_: &mut (), x: u64| x + 1);
    /// let call = client.graph("call", doubler.leaf("doubler", &here, route::fixed(0)) >> add).unwrap();
    /// assert_eq!(client.call(&call, 20).unwrap(), 41);
    /// assert_eq!(export.served(), 1);
    /// client.shutdown().unwrap();
    /// server.shutdown().unwrap();
    /// ```
    ///
    /// # Errors
    /// On every rank: if the name is malformed or another running application exports it
    /// ([`ErrorKind::Service`]), the registry directory is missing or not writable
    /// ([`ErrorKind::Io`]), this is a simulation or `DPS_SERVICE_LEND_MIN` is malformed
    /// ([`ErrorKind::Usage`]).
    pub fn export<I: Token, O: Token>(&self, name: &str, graph: &Graph<I, O>) -> Result<Export, Error> {
        service::registry::check_name(name)?;
        self.refuse_simulated("export")?;
        service::server::lend_setting()?;
        let stats = Arc::default();
        let mut error = None;
        if self.is_root() {
            let served = Served {
                name: name.to_string(),
                engine: self.engine.clone(),
                graph: graph.imp.clone(),
                decode_in: service::frame::decode_boxed::<I>,
                request: std::any::type_name::<I>(),
                reply: std::any::type_name::<O>(),
                fingerprint: graph.fingerprint(),
            };
            let host = &self.engine.hosts()[self.rank()];
            match Registry::from_env().and_then(|r| Gateway::start(served, r, host)) {
                Ok(gateway) => {
                    let export = Export::new(name, gateway.stats.clone());
                    self.services.exported.lock().unwrap().push(gateway);
                    if self.ranks() == 1 {
                        return Ok(export);
                    }
                    collectives::agree_on_export(&self.engine, None);
                    return Ok(export);
                }
                Err(e) => error = Some(e),
            }
        }
        let verdict = match &error {
            Some(e) if self.ranks() == 1 => return Err(e.clone()),
            Some(e) => Some(e.to_string()),
            None => None,
        };
        match (collectives::agree_on_export(&self.engine, verdict), error) {
            (_, Some(e)) => Err(e),
            (Some(message), None) => Err(Error::new(ErrorKind::Service, message)),
            (None, None) => Ok(Export::new(name, stats)),
        }
    }

    /// Imports the parallel service `name` that another application exports, with requests
    /// of type `I` and replies of type `O`: checks the registry entry and connects (this
    /// rank's own connection; call it on every rank, as graphs are built). Use
    /// [`Service::leaf`] to call it from a graph.
    ///
    /// # Errors
    /// [`ErrorKind::Service`] if nobody exports `name`, its application is not running (a
    /// stale entry: it was killed), or the types differ (the message names both sides);
    /// [`ErrorKind::Io`] if the registry directory is missing or unreadable;
    /// [`ErrorKind::Usage`] on a simulation, or if `DPS_SERVICE_NET` is neither `tcp` nor
    /// `unix`.
    pub fn import<I: Token, O: Token>(&self, name: &str) -> Result<Service<I, O>, Error> {
        self.import_with(name, None)
    }

    /// As [`Runtime::import`], and the service's graph must have `fingerprint`
    /// ([`Graph::fingerprint`], [`Service::fingerprint`]): the client was written against
    /// that graph.
    ///
    /// # Errors
    /// As [`Runtime::import`], and if the fingerprints differ (the message names both).
    pub fn import_pinned<I: Token, O: Token>(&self, name: &str, fingerprint: &str) -> Result<Service<I, O>, Error> {
        self.import_with(name, Some(fingerprint.to_string()))
    }

    fn import_with<I: Token, O: Token>(&self, name: &str, fingerprint: Option<String>) -> Result<Service<I, O>, Error> {
        service::registry::check_name(name)?;
        self.refuse_simulated("import")?;
        service::net::check_net_setting()?;
        let entry = Registry::from_env()?.read(name)?;
        let expect = Expect {
            request: std::any::type_name::<I>(),
            reply: std::any::type_name::<O>(),
            fingerprint,
            encode: crate::wire::encode::<I>,
            decode: service::frame::decode_boxed::<O>,
        };
        let conn = Connection::open(&entry, expect, &self.engine)?;
        self.services.imported.lock().unwrap().push(conn.clone());
        Ok(Service::new(conn))
    }

    fn refuse_simulated(&self, what: &str) -> Result<(), Error> {
        match self.mode {
            Mode::Simulated(_) => Err(Error::new(
                ErrorKind::Usage,
                format!("dps simulator: a simulated run cannot {what} parallel services"),
            )),
            Mode::Single | Mode::Mpi { .. } => Ok(()),
        }
    }

    /// Ends the runtime on this rank. Collective: each rank calls it once its own calls are
    /// done; the ranks keep serving each other's tokens until every rank has called it.
    ///
    /// # Errors
    /// If the trace file cannot be written.
    pub fn shutdown(mut self) -> Result<(), Error> {
        self.finish(None)
    }

    /// The collective shutdown; with a `timeout`, gives up if the other ranks do not join.
    fn finish(&mut self, timeout: Option<Duration>) -> Result<(), Error> {
        if self.finished {
            return Ok(());
        }
        if let Mode::Simulated(sim) = &self.mode {
            // What is still in flight (credits, closes) completes; a failure was reported
            // by the call it ended.
            let _ = sim.run(|| false);
            self.finished = true;
            let all: Vec<String> = sim.engines().iter().map(|e| e.tracer().take()).collect();
            return match self.trace.take() {
                Some(file) if self.engine.tracer().is_enabled() => {
                    file.write(&all).map_err(|e| Error::new(ErrorKind::Io, format!("dps: trace: {e}")))
                }
                _ => Ok(()),
            };
        }
        // Exports end first: a client's call must fail at once, not wait for a rank that
        // has stopped serving. Imports end once every rank is done with them.
        self.services.end_exports();
        collectives::shut_down_together(&self.engine, timeout)?;
        self.services.end_imports();
        self.finished = true;
        crate::shm::remove_lent_names();
        let trace_result = self.collect_trace();
        self.stop_workers();
        // Nothing of the run is left to drive: what remains of the runtime only waits to be
        // dropped.
        std::mem::replace(&mut self.mode, Mode::Single).end();
        trace_result
    }

    /// Every engine of this process: the virtual ranks of a simulation, or this rank's.
    fn engines(&self) -> &[Arc<Engine>] {
        match &self.mode {
            Mode::Simulated(sim) => sim.engines(),
            Mode::Single | Mode::Mpi { .. } => std::slice::from_ref(&self.engine),
        }
    }

    fn collect_trace(&mut self) -> Result<(), Error> {
        if !self.engine.tracer().is_enabled() {
            return Ok(());
        }
        let Some(all) = collectives::gather_traces(&self.engine, self.engine.tracer().take()) else { return Ok(()) };
        match self.trace.take() {
            Some(file) => file.write(&all).map_err(|e| Error::new(ErrorKind::Io, format!("dps: trace: {e}"))),
            None => Ok(()),
        }
    }

    fn stop_workers(&mut self) {
        let workers = std::mem::take(&mut *self.workers.lock().unwrap());
        for _ in &workers {
            self.engine.stop_one_worker();
        }
        for w in workers {
            let _ = w.join();
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // Dropped without shutdown(), typically because main returned an error. If every rank
        // does the same (bad input seen by all), they shut down together and each prints its
        // error; if not, the others would hang, so the job is ended.
        match self.finish(Some(DROP_SHUTDOWN_TIMEOUT)) {
            Ok(()) => {}
            // The shutdown itself went well: report, there is nobody to wait for.
            Err(e) if e.kind() == ErrorKind::Io => eprintln!("{e}"),
            Err(_) => {
                let rank = self.engine.rank();
                let code = match failure::take_last_words() {
                    Some((words, code)) => {
                        eprintln!("dps: rank {rank}: {words}");
                        code
                    }
                    None => 1,
                };
                eprintln!("dps: rank {rank}: the runtime was dropped without shutdown(); ending the job");
                crate::transport::mpi::abort_job(code);
            }
        }
        self.finished = true;
        self.stop_workers();
    }
}

/// This host's name (the kernel's), or `localhost`.
fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map_or_else(|_| "localhost".into(), |h| h.trim().to_string())
}
