//! One DPS thread's body: its user state and the bookkeeping of the split instances it opened
//! and the merge instances it collects.
//!
//! Flow control lives here. An opened instance (split or stream output) owns a window of
//! `F` slots; a token takes a free slot when it is created and the slot comes back as a
//! `Credit` when the token is merged. A split's iterator is pulled only when a slot is free,
//! so it is suspended, not blocked, while the window is full: the thread keeps serving its
//! queue, which is what lets a split and its merge share a thread.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crossbeam_channel::Receiver;

use super::messages::{Frame, NO_SLOT};
use super::migration::{self, Moving};
use super::{CallResult, Ctx, Engine, Envelope, Header, InstanceId, ThreadAddr};
use crate::failure::in_op;
use crate::graph::GraphImpl;
use crate::node::{AnyState, AnyToken, Entry, OpImpl, SplitIter};
use crate::route::RouteCtx;

pub(crate) struct ThreadBody {
    pub(super) addr: ThreadAddr,
    name: Arc<str>,
    pub(super) state: Box<AnyState>,
    opens: HashMap<InstanceId, OpenRun>,
    merges: HashMap<InstanceId, MergeRun>,
    /// Whether the thread is here or has moved away (`migration`).
    pub(super) moving: Moving,
}

/// An instance this thread opened and is still producing tokens for.
struct OpenRun {
    graph: Arc<GraphImpl>,
    node: usize,
    /// Context outside the instance.
    ctx: Ctx,
    merge_thread: u32,
    source: Source,
    /// Free flow-control slots; `None` when the opener has no window.
    free: Option<Slots>,
    emitted: u64,
}

/// The free slots of a window, handed out lowest first, then most recently returned first.
/// Slots never used are not stored: a window of a billion costs no more than one of ten.
struct Slots {
    returned: Vec<u32>,
    /// Slots `fresh..window` have never been used.
    fresh: u32,
    window: u32,
}

impl Slots {
    fn new(window: usize) -> Self {
        // Graph validation keeps windows within `MAX_WINDOW`.
        Slots { returned: Vec::new(), fresh: 0, window: u32::try_from(window).unwrap_or(u32::MAX - 1) }
    }

    fn is_empty(&self) -> bool {
        self.returned.is_empty() && self.fresh == self.window
    }

    fn take(&mut self) -> Option<u32> {
        self.returned.pop().or_else(|| {
            (self.fresh < self.window).then(|| {
                self.fresh += 1;
                self.fresh - 1
            })
        })
    }

    fn give_back(&mut self, slot: u32) {
        self.returned.push(slot);
    }
}

enum Source {
    /// `peeked` holds the next token, pulled ahead to learn early that the split is over.
    Split {
        iter: SplitIter,
        peeked: Option<AnyToken>,
    },
    Stream {
        pending: VecDeque<AnyToken>,
        finished: bool,
    },
}

/// An instance this thread is merging (as a merge or a stream).
struct MergeRun {
    acc: AnyToken,
    received: u64,
    total: Option<u64>,
    /// Context outside the instance, where the merged output continues.
    ctx: Ctx,
    /// For a stream: the instance its outputs form.
    out: Option<InstanceId>,
}

impl ThreadBody {
    pub(crate) fn new(addr: ThreadAddr, name: String, state: Box<AnyState>) -> Self {
        ThreadBody {
            addr,
            name: name.into(),
            state,
            opens: HashMap::new(),
            merges: HashMap::new(),
            moving: Moving::default(),
        }
    }

    /// True when no split, stream or merge instance is under way on this thread: its state
    /// is then all there is to it, and it may move.
    pub(super) fn is_quiet(&self) -> bool {
        self.opens.is_empty() && self.merges.is_empty()
    }

    pub(super) fn handle(&mut self, engine: &Engine, env: Envelope) {
        // A thread that moved away forwards; a move request or an arriving state is handled there.
        if let Some(env) = migration::arrive(self, engine, env) {
            self.handle_here(engine, env);
        }
        migration::after_message(self, engine);
    }

    fn handle_here(&mut self, engine: &Engine, env: Envelope) {
        match env.header {
            Header::Token { graph, node, ctx, .. } => {
                let (start, callbacks) = (std::time::Instant::now(), super::callback_ns());
                let g = engine.registry.graph(graph);
                let node = node as usize;
                let n = &g.nodes[node];
                let token = env.payload.expect("dps: token message without token").into_token(n.decode);
                match &n.op {
                    OpImpl::Leaf(run) => {
                        let state = &mut *self.state;
                        let out = engine
                            .tracer
                            .span(&self.name, &n.name, || in_op(&n.name, &self.name, || run(state, token)));
                        engine.forward(&g, n.next.as_ref(), out, ctx);
                    }
                    OpImpl::Split(open) => {
                        let (state, index) = (&mut *self.state, self.addr.index as usize);
                        let (merge_at, iter) = engine
                            .tracer
                            .span(&self.name, &n.name, || in_op(&n.name, &self.name, || open(state, token, index)));
                        let source = Source::Split { iter, peeked: None };
                        self.open(engine, g.clone(), node, ctx, merge_at, source);
                    }
                    OpImpl::Merge(_) | OpImpl::Stream(_) => self.merge_token(engine, &g, node, token, ctx),
                    OpImpl::Remote(remote) => remote.call(token, Box::new(Resume { graph: g.clone(), node, ctx })),
                }
                let callbacks = super::callback_ns() - callbacks;
                n.record_cost((start.elapsed().as_nanos() as u64).saturating_sub(callbacks));
            }
            Header::Close { graph, node, ctx, instance, total, .. } => {
                let g = engine.registry.graph(graph);
                self.merge_run(&g, node as usize, instance, ctx).total = Some(total);
                self.try_finish(engine, &g, node as usize, instance);
            }
            Header::Credit { instance, slot, .. } => {
                // Credits for an instance that has produced all its tokens are dropped.
                if let Some(run) = self.opens.get_mut(&instance) {
                    if let Some(free) = &mut run.free {
                        free.give_back(slot);
                    }
                    self.pump(engine, instance);
                }
            }
            Header::Reply { .. }
            | Header::Failed { .. }
            | Header::Control(_)
            | Header::Located { .. }
            | Header::Move { .. }
            | Header::Install { .. } => unreachable!("dps: not an operation's message"),
        }
    }

    /// Opens a new instance produced by `source` and starts emitting its tokens.
    fn open(
        &mut self,
        engine: &Engine,
        g: Arc<GraphImpl>,
        node: usize,
        ctx: Ctx,
        merge_at: usize,
        source: Source,
    ) -> InstanceId {
        let n = &g.nodes[node];
        let closer = &g.nodes[n.closer.expect("dps: validated graphs pair every split")];
        let threads = closer.coll.ranks.len();
        assert!(
            merge_at < threads,
            "dps: graph \"{}\": \"{}\" chose merge thread {merge_at} but \"{}\" runs on collection \"{}\" with {threads} threads",
            g.name,
            n.name,
            closer.name,
            closer.coll.name
        );
        let instance = engine.calls.new_instance();
        let free = n.window.map(Slots::new);
        let run = OpenRun { graph: g, node, ctx, merge_thread: merge_at as u32, source, free, emitted: 0 };
        self.opens.insert(instance, run);
        self.pump(engine, instance);
        instance
    }

    /// Emits tokens of `instance` while slots are free; closes it once its source is done.
    fn pump(&mut self, engine: &Engine, instance: InstanceId) {
        let Some(run) = self.opens.get_mut(&instance) else { return };
        let g = run.graph.clone();
        let n = &g.nodes[run.node];
        loop {
            if run.free.as_ref().is_some_and(|f| f.is_empty()) {
                break;
            }
            let token = match &mut run.source {
                Source::Split { iter, peeked } => peeked.take().or_else(|| in_op(&n.name, &self.name, || iter.next())),
                Source::Stream { pending, .. } => pending.pop_front(),
            };
            let Some(token) = token else { break };
            let slot = run.free.as_mut().map_or(NO_SLOT, |f| f.take().expect("dps: a free slot was checked"));
            run.emitted += 1;
            let mut ctx = run.ctx.clone();
            ctx.frames.push(Frame { instance, opener: self.addr, slot, merge_thread: run.merge_thread });
            engine.forward(&g, n.next.as_ref(), token, ctx);
        }
        let done = match &mut run.source {
            Source::Split { iter, peeked } => {
                if peeked.is_none() {
                    *peeked = in_op(&n.name, &self.name, || iter.next());
                }
                peeked.is_none()
            }
            Source::Stream { pending, finished } => *finished && pending.is_empty(),
        };
        if done {
            let run = self.opens.remove(&instance).unwrap();
            let closer = n.closer.unwrap();
            let c = &g.nodes[closer];
            let to = ThreadAddr { coll: c.coll.id as u32, index: run.merge_thread };
            let header = Header::Close {
                to,
                graph: g.id as u32,
                node: closer as u32,
                ctx: run.ctx,
                instance,
                total: run.emitted,
            };
            engine.post(c.coll.rank_of(run.merge_thread as usize), header, None);
        }
    }

    fn merge_run(&mut self, g: &GraphImpl, node: usize, instance: InstanceId, ctx: Ctx) -> &mut MergeRun {
        let state = &mut *self.state;
        self.merges.entry(instance).or_insert_with(|| {
            let acc = match &g.nodes[node].op {
                OpImpl::Merge(m) => in_op(&g.nodes[node].name, &self.name, || m.start(state)),
                OpImpl::Stream(s) => in_op(&g.nodes[node].name, &self.name, || s.start(state)),
                _ => unreachable!("dps: only merges and streams close instances"),
            };
            MergeRun { acc, received: 0, total: None, ctx, out: None }
        })
    }

    fn merge_token(&mut self, engine: &Engine, g: &Arc<GraphImpl>, node: usize, token: AnyToken, mut ctx: Ctx) {
        let frame = ctx.frames.pop().expect("dps: validated graphs close only open instances");
        let instance = frame.instance;
        let n = &g.nodes[node];
        self.merge_run(g, node, instance, ctx);
        let run = self.merges.get_mut(&instance).unwrap();
        let state = &mut *self.state;
        let mut posted = Vec::new();
        engine.tracer.span(&self.name, &n.name, || {
            in_op(&n.name, &self.name, || match &n.op {
                OpImpl::Merge(m) => m.merge(state, &mut *run.acc, token),
                OpImpl::Stream(s) => s.input(state, &mut *run.acc, token, &mut posted),
                _ => unreachable!(),
            })
        });
        run.received += 1;
        if frame.slot != NO_SLOT {
            let credit = Header::Credit { to: frame.opener, instance, slot: frame.slot };
            engine.post(engine.registry.rank_of(frame.opener), credit, None);
        }
        if !posted.is_empty() {
            self.stream_post(engine, g, node, instance, posted, false);
        }
        self.try_finish(engine, g, node, instance);
    }

    /// Adds a stream's outputs to its output instance, opening that instance on first use.
    fn stream_post(
        &mut self,
        engine: &Engine,
        g: &Arc<GraphImpl>,
        node: usize,
        input: InstanceId,
        out: Vec<AnyToken>,
        last: bool,
    ) {
        let run = self.merges.get_mut(&input).unwrap();
        let out_id = match run.out {
            Some(id) => id,
            None => {
                let OpImpl::Stream(s) = &g.nodes[node].op else { unreachable!() };
                let merge_at = s.merge_thread(&*run.acc, self.addr.index as usize);
                let ctx = run.ctx.clone();
                let source = Source::Stream { pending: VecDeque::new(), finished: false };
                let id = self.open(engine, g.clone(), node, ctx, merge_at, source);
                self.merges.get_mut(&input).unwrap().out = Some(id);
                id
            }
        };
        if let Some(OpenRun { source: Source::Stream { pending, finished }, .. }) = self.opens.get_mut(&out_id) {
            pending.extend(out);
            *finished = last;
        }
        self.pump(engine, out_id);
    }

    /// Completes `instance` once every token its opener produced has been merged.
    fn try_finish(&mut self, engine: &Engine, g: &Arc<GraphImpl>, node: usize, instance: InstanceId) {
        let run = &self.merges[&instance];
        if run.total != Some(run.received) {
            return;
        }
        let n = &g.nodes[node];
        match &n.op {
            OpImpl::Merge(m) => {
                let run = self.merges.remove(&instance).unwrap();
                let state = &mut *self.state;
                let out =
                    engine.tracer.span(&self.name, &n.name, || in_op(&n.name, &self.name, || m.finish(state, run.acc)));
                engine.forward(g, n.next.as_ref(), out, run.ctx);
            }
            OpImpl::Stream(s) => {
                // Open the output instance before `finish` consumes the accumulator.
                self.stream_post(engine, g, node, instance, Vec::new(), false);
                let run = self.merges.remove(&instance).unwrap();
                let mut posted = Vec::new();
                let state = &mut *self.state;
                in_op(&n.name, &self.name, || s.finish(state, run.acc, &mut posted));
                let out_id = run.out.unwrap();
                if let Some(OpenRun { source: Source::Stream { pending, finished }, .. }) = self.opens.get_mut(&out_id)
                {
                    pending.extend(posted);
                    *finished = true;
                }
                self.pump(engine, out_id);
            }
            _ => unreachable!(),
        }
    }
}

/// What a thread that forwards a token may run itself rather than hand it to a worker.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Here {
    /// Nothing (a worker: it would run it inside its own operation).
    Nothing,
    /// A leaf known to be short, of an idle DPS thread of this rank (a service's gateway, a
    /// client's reader: see [`Engine::dispatch`]).
    ShortLeaf,
    /// A caller starting a call: a first node that is a remote leaf (a service) routed to this rank, whose request the caller writes to
    /// the socket itself (it may block while the service's socket is full: the caller
    /// would wait for the call anyway).
    Caller,
}

/// Where a remote leaf's answer continues: its graph, the leaf, and the token's context.
struct Resume {
    graph: Arc<GraphImpl>,
    node: usize,
    ctx: Ctx,
}

impl Engine {
    /// Starts a call of `g` on `input` from this rank: its output comes on the receiver.
    pub(crate) fn start_call(&self, g: &GraphImpl, input: AnyToken) -> Receiver<CallResult> {
        let (call, rx) = self.calls.new_call();
        let ctx = Ctx { call_rank: self.rank as u32, call, frames: Vec::new() };
        self.forward_from(g, Some(&g.entry), input, ctx, Here::Caller);
        rx
    }

    /// Starts a call of `g` on `input` from this rank; `done` gets its outcome, on the
    /// thread that delivers it (keep it short: that may be the progress thread). The calling
    /// thread is a service's gateway (a thread of its own, not a worker): if the graph starts
    /// with a leaf known to be short, of a DPS thread of this rank that is idle, it runs it
    /// at once, as the progress thread runs such leaves ([`Engine::dispatch`]), sparing the
    /// hand-off to a worker and its wake-up.
    pub(crate) fn start_call_then(&self, g: &GraphImpl, input: AnyToken, done: Box<dyn FnOnce(CallResult) + Send>) {
        let call = self.calls.new_call_then(done);
        let ctx = Ctx { call_rank: self.rank as u32, call, frames: Vec::new() };
        self.forward_from(g, Some(&g.entry), input, ctx, Here::ShortLeaf);
    }

    /// A remote leaf's answer (`resume` is what its `call` was given): the output continues
    /// after the leaf, as a leaf's would; a failure ends the call the token belongs to, on
    /// the rank that made it. Called by the connection's reader thread, which runs the next
    /// node itself if it is a short leaf of an idle DPS thread here (as `start_call_then`).
    pub(crate) fn resume(&self, resume: Box<dyn std::any::Any + Send>, outcome: Result<AnyToken, String>) {
        let Resume { graph, node, ctx } = *resume.downcast::<Resume>().expect("dps: a remote leaf's resume");
        match outcome {
            Ok(out) => self.forward_from(&graph, graph.nodes[node].next.as_ref(), out, ctx, Here::ShortLeaf),
            Err(message) => self.post(ctx.call_rank as usize, Header::Failed { call: ctx.call, message }, None),
        }
    }

    /// Sends `token`, produced with context `ctx`, to the successor `next` (or back to the
    /// caller if `next` is `None`). Runs on the producing thread, which evaluates the route.
    fn forward(&self, g: &GraphImpl, next: Option<&Entry<usize>>, token: AnyToken, ctx: Ctx) {
        self.forward_from(g, next, token, ctx, Here::Nothing)
    }

    /// [`Engine::forward`]; `here`: what the forwarding thread may run itself.
    fn forward_from(&self, g: &GraphImpl, next: Option<&Entry<usize>>, token: AnyToken, ctx: Ctx, here: Here) {
        match next {
            None => {
                let header = Header::Reply { graph: g.id as u32, call: ctx.call };
                self.post(ctx.call_rank as usize, header, Some((token, g.encode_out)));
            }
            Some(Entry::Branch(dispatch, entries)) => {
                let (which, token) = dispatch(token);
                self.forward_from(g, Some(&entries[which]), token, ctx, here)
            }
            Some(Entry::Node(node)) => {
                let n = &g.nodes[*node];
                let threads = n.coll.ranks.len();
                let index = match &n.route {
                    // Merges and streams run where their instance's opener said.
                    None => ctx.frames.last().expect("dps: validated").merge_thread as usize,
                    Some(route) => route(&*token, &RouteCtx { threads, slot: ctx.slot() }),
                };
                assert!(
                    index < threads,
                    "dps: graph \"{}\": the route of \"{}\" chose thread {index}, but collection \"{}\" has {threads} threads",
                    g.name,
                    n.name,
                    n.coll.name
                );
                let rank = n.coll.rank_of(index);
                if let (Here::Caller, OpImpl::Remote(remote), true) =
                    (here, &n.op, rank == self.rank && !self.simulated())
                {
                    // The caller writes the request itself: no hand-off to a worker.
                    let graph = self.registry.graph(g.id as u32);
                    return remote.call(token, Box::new(Resume { graph, node: *node, ctx }));
                }
                let to = ThreadAddr { coll: n.coll.id as u32, index: index as u32 };
                let first = n.first.as_ref().is_some_and(|urgent| urgent(&*token));
                let header = Header::Token { to, graph: g.id as u32, node: *node as u32, ctx, first };
                self.post_from(rank, header, Some((token, n.encode)), here == Here::ShortLeaf);
            }
        }
    }
}
