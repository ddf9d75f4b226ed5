//! Graphs: a path of nodes, checked and frozen so that every rank can run it.
//!
//! Building a graph assigns each node an index, resolves the links, checks that splits and
//! merges pair up on every path (a merge closes the innermost open split; a stream closes
//! one and opens another; every exit is outside any split), and computes a structural
//! description that all ranks compare before the graph may run.

use std::collections::HashMap;
use std::fmt::Write;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::node::{AnyToken, Entry, Kind, NodeImpl, Path, MAX_WINDOW};
use crate::wire::{self, WireToken};
use crate::{Error, Token};

pub(crate) struct GraphImpl {
    pub(crate) id: usize,
    pub(crate) name: String,
    pub(crate) nodes: Vec<NodeImpl>,
    pub(crate) entry: Entry<usize>,
    pub(crate) encode_out: fn(AnyToken) -> WireToken,
    pub(crate) decode_out: fn(WireToken) -> AnyToken,
    pub(crate) description: String,
}

/// A built graph from `I` to `O`, ready to be run with [`Runtime::call`](crate::Runtime::call).
pub struct Graph<I, O> {
    pub(crate) imp: Arc<GraphImpl>,
    _types: PhantomData<fn(I) -> O>,
}

impl<I, O> Clone for Graph<I, O> {
    fn clone(&self) -> Self {
        Graph { imp: self.imp.clone(), _types: PhantomData }
    }
}

impl<I, O> std::fmt::Debug for Graph<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Graph({:?}, {} nodes)", self.imp.name, self.imp.nodes.len())
    }
}

impl<I, O> Graph<I, O> {
    pub(crate) fn new(imp: Arc<GraphImpl>) -> Self {
        Graph { imp, _types: PhantomData }
    }

    /// One line per node: index, kind, name, collection and mapping, types, successor.
    pub fn description(&self) -> &str {
        &self.imp.description
    }

    /// A fingerprint of the graph's structure (16 hex digits, a 64-bit FNV-1a hash of its
    /// [`description`](Graph::description)): the same on every build of the same graph,
    /// so that a client of a parallel service can pin the graph it was written against.
    ///
    /// ```
    /// use dps::{route, Node, Runtime};
    /// let rt = Runtime::single();
    /// let c = rt.collection("c", "0", |_| ()).unwrap();
    /// let g = rt.graph("double", Node::leaf("x2", &c, route::fixed(0), |_: &mut (), x: u64| 2 * x)).unwrap();
    /// assert_eq!(g.fingerprint().len(), 16);
    /// rt.shutdown().unwrap();
    /// ```
    pub fn fingerprint(&self) -> String {
        let hash = self
            .imp
            .description
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3));
        format!("{hash:016x}")
    }
}

/// Freezes `path` into a graph: takes the nodes, links them by index and validates.
pub(crate) fn build<I: Token, O: Token>(id: usize, name: &str, path: Path<I, O>) -> Result<GraphImpl, Error> {
    let mut index: HashMap<u64, usize> = HashMap::new();
    let mut nodes: Vec<NodeImpl> = Vec::new();
    for cell in &path.nodes {
        if index.contains_key(&cell.id) {
            continue;
        }
        let imp = cell.imp.lock().unwrap().take().ok_or_else(|| {
            Error::graph(format!(
                "graph \"{name}\": a node is already part of another graph; create new nodes for each graph"
            ))
        })?;
        index.insert(cell.id, nodes.len());
        nodes.push(imp);
    }
    let mut to_index = |id: u64| index[&id];
    for (from, to) in &path.links {
        let from = to_index(*from);
        let to = to.map(&mut to_index);
        if nodes[from].next.is_some() {
            return Err(Error::graph(format!(
                "graph \"{name}\": node \"{}\" has two successors; use dps::branch to choose one by token type",
                nodes[from].name
            )));
        }
        nodes[from].next = Some(to);
    }
    let entry = path.entry.map(&mut to_index);
    check_windows(name, &nodes)?;
    check_nesting(name, &mut nodes, &entry)?;
    let description = describe(name, &nodes, &entry);
    Ok(GraphImpl {
        id,
        name: name.to_string(),
        nodes,
        entry,
        encode_out: wire::encode::<O>,
        decode_out: wire::decode::<O>,
        description,
    })
}

/// Windows are set by the user on any node, so they are checked here, not when set.
fn check_windows(name: &str, nodes: &[NodeImpl]) -> Result<(), Error> {
    for n in nodes {
        let Some(w) = n.window else { continue };
        let why = if !matches!(n.kind, Kind::Split | Kind::Stream) {
            "only splits and streams take a window"
        } else if w == 0 {
            "a window of 0 tokens would never let a token through; give at least 1"
        } else if w > MAX_WINDOW {
            "it is above dps::MAX_WINDOW; use .unbounded() for no flow control"
        } else {
            continue;
        };
        let kind = format!("{:?}", n.kind).to_lowercase();
        return Err(Error::graph(format!("graph \"{name}\": {kind} \"{}\" has window {w}: {why}", n.name)));
    }
    Ok(())
}

/// Walks every path with the stack of open splits; pairs each split with its closer.
fn check_nesting(name: &str, nodes: &mut [NodeImpl], entry: &Entry<usize>) -> Result<(), Error> {
    let mut seen: Vec<Option<Vec<usize>>> = vec![None; nodes.len()];
    let mut work: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut starts = Vec::new();
    entry.nodes(&mut starts);
    work.extend(starts.into_iter().map(|n| (n, Vec::new())));
    let err = |msg: String| Err(Error::graph(format!("graph \"{name}\": {msg}")));
    while let Some((n, mut open)) = work.pop() {
        if let Some(before) = &seen[n] {
            if *before != open {
                return err(format!(
                    "node \"{}\" is reached inside different splits on different paths",
                    nodes[n].name
                ));
            }
            continue;
        }
        seen[n] = Some(open.clone());
        let kind = nodes[n].kind;
        if matches!(kind, Kind::Merge | Kind::Stream) {
            let Some(opener) = open.pop() else {
                return err(format!("{:?} \"{}\" has no split before it to close", kind, nodes[n].name).to_lowercase());
            };
            match nodes[opener].closer {
                Some(c) if c != n => {
                    return err(format!(
                        "split \"{}\" is closed by two different merges (\"{}\" and \"{}\")",
                        nodes[opener].name, nodes[c].name, nodes[n].name
                    ))
                }
                _ => nodes[opener].closer = Some(n),
            }
        }
        if matches!(kind, Kind::Split | Kind::Stream) {
            open.push(n);
        }
        match &nodes[n].next {
            None if !open.is_empty() => {
                return err(format!(
                    "the path ends at \"{}\" inside split \"{}\", which no merge closes",
                    nodes[n].name,
                    nodes[*open.last().unwrap()].name
                ))
            }
            None => {}
            Some(next) => {
                let mut succ = Vec::new();
                next.nodes(&mut succ);
                work.extend(succ.into_iter().map(|s| (s, open.clone())));
            }
        }
    }
    Ok(())
}

fn describe(name: &str, nodes: &[NodeImpl], entry: &Entry<usize>) -> String {
    fn link(e: &Entry<usize>) -> String {
        match e {
            Entry::Node(n) => n.to_string(),
            Entry::Branch(_, es) => format!("[{}]", es.iter().map(link).collect::<Vec<_>>().join("|")),
        }
    }
    let mut s = format!("graph {name} entry {}\n", link(entry));
    for (i, n) in nodes.iter().enumerate() {
        let _ = writeln!(
            s,
            "{i}: {:?} {} on {}(\"{}\", {} threads) window {:?} {} -> {} next {}",
            n.kind,
            n.name,
            n.coll.name,
            n.coll.mapping,
            n.coll.ranks.len(),
            n.window,
            n.in_type,
            n.out_type,
            n.next.as_ref().map(link).unwrap_or_else(|| "exit".into())
        );
    }
    s
}

/// Returns the first line where two descriptions differ, for error messages.
pub(crate) fn first_difference(a: &str, b: &str) -> String {
    for (x, y) in a.lines().zip(b.lines()) {
        if x != y {
            return format!("\"{x}\" versus \"{y}\"");
        }
    }
    format!("{} lines versus {}", a.lines().count(), b.lines().count())
}
