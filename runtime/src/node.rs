//! Typed operation nodes and paths: the pieces a graph is built from.
//!
//! A [`Node<I, O>`] is one operation (leaf, split, merge or stream) on a thread collection,
//! taking tokens of type `I` and producing tokens of type `O`. `a >> b` connects nodes into a
//! [`Path`]; it only compiles when `a`'s output type is `b`'s input type. [`branch`] sends a
//! token down one of two paths according to its [`Either`] variant.

use std::any::Any;
use std::marker::PhantomData;
use std::ops::Shr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::collection::{CollInfo, Collection};
use crate::ops::{Merge, Posted, Stream};
use crate::route::{Route, RouteCtx};
use crate::wire::{self, WireToken};
use crate::Token;

pub(crate) type AnyToken = Box<dyn Any + Send>;
pub(crate) type AnyState = dyn Any + Send;
pub(crate) type SplitIter = Box<dyn Iterator<Item = AnyToken> + Send>;
type Dispatch = dyn Fn(AnyToken) -> (usize, AnyToken) + Send + Sync;
type LeafFn = dyn Fn(&mut AnyState, AnyToken) -> AnyToken + Send + Sync;
/// Opens a split instance: returns the merge thread index and the lazy token source.
type OpenFn = dyn Fn(&mut AnyState, AnyToken, usize) -> (usize, SplitIter) + Send + Sync;
/// Encodes a token for another rank.
pub(crate) type Encoder = fn(AnyToken) -> WireToken;
type ErasedRoute = dyn Fn(&AnyState, &RouteCtx) -> usize + Send + Sync;
type ErasedFirst = dyn Fn(&AnyState) -> bool + Send + Sync;

/// The type-erased operation the engine runs.
pub(crate) enum OpImpl {
    Leaf(Box<LeafFn>),
    Split(Box<OpenFn>),
    Merge(Box<dyn ErasedMerge>),
    Stream(Box<dyn ErasedStream>),
    /// A leaf that runs elsewhere (a parallel service): it answers later, so that many of
    /// its tokens are in flight at once.
    Remote(Arc<dyn RemoteLeaf>),
}

/// A leaf whose operation runs outside this application. `call` takes the token and returns
/// at once; the answer comes later, with `resume` handed back to the engine
/// (`Engine::resume`), from whichever thread received it.
pub(crate) trait RemoteLeaf: Send + Sync {
    fn call(&self, token: AnyToken, resume: Box<dyn Any + Send>);
}

pub(crate) trait ErasedMerge: Send + Sync {
    fn start(&self, s: &mut AnyState) -> AnyToken;
    fn merge(&self, s: &mut AnyState, acc: &mut AnyState, input: AnyToken);
    fn finish(&self, s: &mut AnyState, acc: AnyToken) -> AnyToken;
}

pub(crate) trait ErasedStream: Send + Sync {
    fn start(&self, s: &mut AnyState) -> AnyToken;
    fn input(&self, s: &mut AnyState, acc: &mut AnyState, input: AnyToken, out: &mut Vec<AnyToken>);
    fn finish(&self, s: &mut AnyState, acc: AnyToken, out: &mut Vec<AnyToken>);
    fn merge_thread(&self, acc: &AnyState, this_thread: usize) -> usize;
}

/// Which of the four DPS operation kinds a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Leaf,
    Split,
    Merge,
    Stream,
}

/// Where a token goes next: one node, or one of several by its `Either` variant.
#[derive(Clone)]
pub(crate) enum Entry<N> {
    Node(N),
    Branch(Arc<Dispatch>, Vec<Entry<N>>),
}

impl<N: Copy> Entry<N> {
    pub(crate) fn map<M>(&self, f: &mut impl FnMut(N) -> M) -> Entry<M> {
        match self {
            Entry::Node(n) => Entry::Node(f(*n)),
            Entry::Branch(d, es) => Entry::Branch(d.clone(), es.iter().map(|e| e.map(f)).collect()),
        }
    }
    pub(crate) fn nodes(&self, out: &mut Vec<N>) {
        match self {
            Entry::Node(n) => out.push(*n),
            Entry::Branch(_, es) => es.iter().for_each(|e| e.nodes(out)),
        }
    }
}

pub(crate) struct NodeImpl {
    pub(crate) name: Arc<str>,
    pub(crate) kind: Kind,
    pub(crate) coll: Arc<CollInfo>,
    pub(crate) op: OpImpl,
    pub(crate) route: Option<Box<ErasedRoute>>,
    /// Which tokens go ahead of the others queued on their thread ([`Node::first_if`]).
    pub(crate) first: Option<Box<ErasedFirst>>,
    pub(crate) encode: Encoder,
    pub(crate) decode: fn(WireToken) -> AnyToken,
    pub(crate) window: Option<usize>,
    pub(crate) in_type: &'static str,
    pub(crate) out_type: &'static str,
    /// Successor (set when the graph is built); `None` for an exit.
    pub(crate) next: Option<Entry<usize>>,
    /// For splits and streams: the node that closes their instances.
    pub(crate) closer: Option<usize>,
    /// Running average of the time to handle one token, in ns (`u64::MAX`: not measured yet).
    cost_ns: AtomicU64,
}

impl NodeImpl {
    /// Records the time one token took.
    pub(crate) fn record_cost(&self, ns: u64) {
        let old = self.cost_ns.load(Ordering::Relaxed);
        let new = if old == u64::MAX { ns } else { (old * 7 + ns) / 8 };
        self.cost_ns.store(new, Ordering::Relaxed);
    }

    /// True if tokens of this node are known to take at most `ns` to handle.
    pub(crate) fn is_cheaper_than(&self, ns: u64) -> bool {
        self.cost_ns.load(Ordering::Relaxed) <= ns
    }
}

pub(crate) struct NodeCell {
    pub(crate) id: u64,
    pub(crate) imp: Mutex<Option<NodeImpl>>,
}

static NEXT_NODE_ID: AtomicU64 = AtomicU64::new(0);

/// Default flow-control window of splits and streams: at most this many tokens of one
/// instance are in flight (created and not yet merged).
pub const DEFAULT_WINDOW: usize = 1024;

/// The largest flow-control window (slots are numbered with 32 bits, one value reserved).
/// Use [`Node::unbounded`] for no flow control at all.
pub const MAX_WINDOW: usize = u32::MAX as usize - 1;

/// One operation of a graph, taking `I` tokens and producing `O` tokens.
pub struct Node<I, O> {
    cell: Arc<NodeCell>,
    _types: PhantomData<fn(I) -> O>,
}

impl<I, O> Clone for Node<I, O> {
    fn clone(&self) -> Self {
        Node { cell: self.cell.clone(), _types: PhantomData }
    }
}

impl<I, O> std::fmt::Debug for Node<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let imp = self.cell.imp.lock().unwrap();
        match &*imp {
            Some(n) => write!(f, "Node({:?} {:?} on {})", n.kind, n.name, n.coll.name),
            None => write!(f, "Node(#{}, in a graph)", self.cell.id),
        }
    }
}

fn erase_route<S: 'static, T: 'static>(route: impl Route<T>) -> Box<ErasedRoute> {
    let _ = PhantomData::<S>;
    Box::new(move |t: &AnyState, cx: &RouteCtx| route.route(t.downcast_ref::<T>().expect("dps: route token type"), cx))
}

fn state<S: 'static>(s: &mut AnyState) -> &mut S {
    s.downcast_mut::<S>().expect("dps: thread state type does not match the collection")
}

impl<I: Token, O: Token> Node<I, O> {
    fn make<S>(name: &str, kind: Kind, coll: &Collection<S>, op: OpImpl, route: Option<Box<ErasedRoute>>) -> Self {
        let window = matches!(kind, Kind::Split | Kind::Stream).then_some(DEFAULT_WINDOW);
        let imp = NodeImpl {
            name: name.into(),
            kind,
            coll: coll.info.clone(),
            op,
            route,
            first: None,
            encode: wire::encode::<I>,
            decode: wire::decode::<I>,
            window,
            in_type: std::any::type_name::<I>(),
            out_type: std::any::type_name::<O>(),
            next: None,
            closer: None,
            cost_ns: AtomicU64::new(u64::MAX),
        };
        let id = NEXT_NODE_ID.fetch_add(1, Ordering::Relaxed);
        Node { cell: Arc::new(NodeCell { id, imp: Mutex::new(Some(imp)) }), _types: PhantomData }
    }

    /// A leaf: one token in, one token out, run on the thread `route` picks.
    pub fn leaf<S: Send + 'static>(
        name: &str,
        coll: &Collection<S>,
        route: impl Route<I>,
        op: impl Fn(&mut S, I) -> O + Send + Sync + 'static,
    ) -> Self {
        let run = move |s: &mut AnyState, t: AnyToken| -> AnyToken {
            let t = *t.downcast::<I>().expect("dps: leaf input type");
            Box::new(op(state::<S>(s), t))
        };
        Self::make(name, Kind::Leaf, coll, OpImpl::Leaf(Box::new(run)), Some(erase_route::<S, I>(route)))
    }

    /// A leaf whose operation is `remote`'s (a parallel service), routed by `route`.
    pub(crate) fn remote<S: Send + 'static>(
        name: &str,
        coll: &Collection<S>,
        route: impl Route<I>,
        remote: Arc<dyn RemoteLeaf>,
    ) -> Self {
        Self::make(name, Kind::Leaf, coll, OpImpl::Remote(remote), Some(erase_route::<S, I>(route)))
    }

    /// A split: one token in, the items of the returned iterator out. The iterator is pulled
    /// lazily, as flow-control credits allow, so a split of millions of tokens runs in
    /// memory bounded by its window. By default the instance is merged on the thread with
    /// the split's own index (see [`Node::merge_on`]).
    pub fn split<S: Send + 'static, It>(
        name: &str,
        coll: &Collection<S>,
        route: impl Route<I>,
        op: impl Fn(&mut S, I) -> It + Send + Sync + 'static,
    ) -> Self
    where
        It: IntoIterator<Item = O>,
        It::IntoIter: Send + 'static,
    {
        let open = move |s: &mut AnyState, t: AnyToken, this: usize| -> (usize, SplitIter) {
            let t = *t.downcast::<I>().expect("dps: split input type");
            let it = op(state::<S>(s), t).into_iter().map(|o| Box::new(o) as AnyToken);
            (this, Box::new(it))
        };
        Self::make(name, Kind::Split, coll, OpImpl::Split(Box::new(open)), Some(erase_route::<S, I>(route)))
    }

    /// A merge: collects every token of the enclosing split's instance into one.
    /// It runs on the thread its split chose (see [`Node::merge_on`]), so it takes no route.
    pub fn merge<S: Send + 'static, M: Merge<S, In = I, Out = O>>(name: &str, coll: &Collection<S>, op: M) -> Self {
        struct Erased<S, M>(M, PhantomData<fn(S)>);
        impl<S: Send + 'static, M: Merge<S>> ErasedMerge for Erased<S, M> {
            fn start(&self, s: &mut AnyState) -> AnyToken {
                Box::new(self.0.start(state::<S>(s)))
            }
            fn merge(&self, s: &mut AnyState, acc: &mut AnyState, input: AnyToken) {
                let input = *input.downcast::<M::In>().expect("dps: merge input type");
                self.0.merge(state::<S>(s), state::<M::Acc>(acc), input)
            }
            fn finish(&self, s: &mut AnyState, acc: AnyToken) -> AnyToken {
                let acc = *acc.downcast::<M::Acc>().expect("dps: merge accumulator type");
                Box::new(self.0.finish(state::<S>(s), acc))
            }
        }
        Self::make(name, Kind::Merge, coll, OpImpl::Merge(Box::new(Erased(op, PhantomData))), None)
    }

    /// A stream: closes the enclosing instance like a merge, and posts outputs (a new
    /// instance) while its inputs still arrive.
    pub fn stream<S: Send + 'static, M: Stream<S, In = I, Out = O>>(name: &str, coll: &Collection<S>, op: M) -> Self {
        struct Erased<S, M>(M, PhantomData<fn(S)>);
        impl<S: Send + 'static, M: Stream<S>> ErasedStream for Erased<S, M> {
            fn start(&self, s: &mut AnyState) -> AnyToken {
                Box::new(self.0.start(state::<S>(s)))
            }
            fn input(&self, s: &mut AnyState, acc: &mut AnyState, input: AnyToken, out: &mut Vec<AnyToken>) {
                let input = *input.downcast::<M::In>().expect("dps: stream input type");
                let mut posted = Posted { items: Vec::new() };
                self.0.input(state::<S>(s), state::<M::Acc>(acc), input, &mut posted);
                out.extend(posted.items.into_iter().map(|t| Box::new(t) as AnyToken));
            }
            fn finish(&self, s: &mut AnyState, acc: AnyToken, out: &mut Vec<AnyToken>) {
                let acc = *acc.downcast::<M::Acc>().expect("dps: stream accumulator type");
                let mut posted = Posted { items: Vec::new() };
                self.0.finish(state::<S>(s), acc, &mut posted);
                out.extend(posted.items.into_iter().map(|t| Box::new(t) as AnyToken));
            }
            fn merge_thread(&self, acc: &AnyState, this: usize) -> usize {
                self.0.merge_thread(acc.downcast_ref::<M::Acc>().expect("dps: stream accumulator type"), this)
            }
        }
        Self::make(name, Kind::Stream, coll, OpImpl::Stream(Box::new(Erased(op, PhantomData))), None)
    }

    fn edit(&self, f: impl FnOnce(&mut NodeImpl)) {
        let mut imp = self.cell.imp.lock().unwrap();
        f(imp.as_mut().expect("dps: a node cannot be changed once it is part of a graph"))
    }

    /// Flow control: at most `window` tokens of one instance of this split (or stream) are
    /// in flight, i.e. created and not yet merged. Default [`DEFAULT_WINDOW`]. Checked when
    /// the graph is built: [`Runtime::graph`](crate::Runtime::graph) rejects a window of 0,
    /// one above [`MAX_WINDOW`], or a window on a leaf or merge, naming the node.
    pub fn window(self, window: usize) -> Self {
        self.edit(|n| n.window = Some(window));
        self
    }

    /// Tokens for which `urgent` holds are queued on their thread ahead of the tokens of
    /// other operations waiting there, but behind the earlier urgent ones, the tokens of
    /// this operation (an operation's tokens keep their order) and the runtime's own
    /// messages: for a pipeline's critical path, e.g. the LU block that becomes the next
    /// panel, whose thread may still have the previous step's other blocks to update. A
    /// token already being handled is not interrupted.
    pub fn first_if(self, urgent: impl Fn(&I) -> bool + Send + Sync + 'static) -> Self {
        self.edit(|n| {
            n.first =
                Some(Box::new(move |t: &AnyState| urgent(t.downcast_ref::<I>().expect("dps: first_if token type"))));
        });
        self
    }

    /// No flow control: the split produces all its tokens at once.
    pub fn unbounded(self) -> Self {
        self.edit(|n| n.window = None);
        self
    }

    /// For a split: choose the thread (an index in the closing merge's collection) that
    /// merges each instance, from the split's input and the split thread's own index.
    pub fn merge_on(self, choose: impl Fn(&I, usize) -> usize + Send + Sync + 'static) -> Self {
        let choose = Arc::new(choose);
        self.edit(|n| {
            let OpImpl::Split(open) = std::mem::replace(&mut n.op, OpImpl::Leaf(Box::new(|_, t| t))) else {
                panic!("dps: merge_on applies to splits only ({})", n.name)
            };
            n.op = OpImpl::Split(Box::new(move |s: &mut AnyState, t: AnyToken, this: usize| {
                let merge_at = choose(t.downcast_ref::<I>().expect("dps: split input type"), this);
                let (_, it) = open(s, t, this);
                (merge_at, it)
            }));
        });
        self
    }
}

/// A chain of connected nodes from input type `I` to output type `O`.
pub struct Path<I, O> {
    pub(crate) nodes: Vec<Arc<NodeCell>>,
    pub(crate) links: Vec<(u64, Entry<u64>)>,
    pub(crate) entry: Entry<u64>,
    exits: Vec<u64>,
    _types: PhantomData<fn(I) -> O>,
}

impl<I, O> std::fmt::Debug for Path<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Path({} nodes)", self.nodes.len())
    }
}

impl<I, O> From<Node<I, O>> for Path<I, O> {
    fn from(n: Node<I, O>) -> Self {
        let id = n.cell.id;
        Path { nodes: vec![n.cell], links: Vec::new(), entry: Entry::Node(id), exits: vec![id], _types: PhantomData }
    }
}

impl<I, O> Path<I, O> {
    /// Appends `next` after every exit of this path (what `>>` does).
    pub fn then<P>(mut self, next: impl Into<Path<O, P>>) -> Path<I, P> {
        let next = next.into();
        for e in &self.exits {
            self.links.push((*e, next.entry.clone()));
        }
        self.nodes.extend(next.nodes);
        self.links.extend(next.links);
        Path { nodes: self.nodes, links: self.links, entry: self.entry, exits: next.exits, _types: PhantomData }
    }
}

macro_rules! impl_shr {
    ($lhs:ident, $rhs:ident) => {
        impl<I, O, P> Shr<$rhs<O, P>> for $lhs<I, O> {
            type Output = Path<I, P>;
            fn shr(self, rhs: $rhs<O, P>) -> Path<I, P> {
                Path::from(self).then(rhs)
            }
        }
    };
}
impl_shr!(Path, Path);
impl_shr!(Path, Node);
impl_shr!(Node, Path);
impl_shr!(Node, Node);

impl<I, O> From<&Node<I, O>> for Path<I, O> {
    fn from(n: &Node<I, O>) -> Self {
        Path::from(n.clone())
    }
}

/// A token that takes one of two paths: see [`branch`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Either<A, B> {
    /// Goes down the first path.
    Left(A),
    /// Goes down the second path.
    Right(B),
}

/// Type branching: an `Either<A, B>` token continues on `left` if it is `Left(a)` and on
/// `right` if it is `Right(b)`. Both paths end with the same type, so they can meet again,
/// typically at a merge.
pub fn branch<A: Token, B: Token, X>(
    left: impl Into<Path<A, X>>,
    right: impl Into<Path<B, X>>,
) -> Path<Either<A, B>, X> {
    let (l, r) = (left.into(), right.into());
    let dispatch = |t: AnyToken| -> (usize, AnyToken) {
        match *t.downcast::<Either<A, B>>().expect("dps: branch token type") {
            Either::Left(a) => (0, Box::new(a)),
            Either::Right(b) => (1, Box::new(b)),
        }
    };
    let mut nodes = l.nodes;
    nodes.extend(r.nodes);
    let mut links = l.links;
    links.extend(r.links);
    let mut exits = l.exits;
    exits.extend(r.exits);
    Path { nodes, links, entry: Entry::Branch(Arc::new(dispatch), vec![l.entry, r.entry]), exits, _types: PhantomData }
}
