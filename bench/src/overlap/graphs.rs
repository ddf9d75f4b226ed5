//! The overlap graphs: pipelined (send and compute each block), phased A (send and store),
//! phased B (compute on the stored blocks) and a leaf that frees the stored blocks.

use std::time::Instant;

use anyhow::{ensure, Result};
use dps::{route, Bulk, Graph, MergeFn, Node, Path, Runtime};

/// The blocks stored on rank 1 by phased graph A.
type Store = Vec<Vec<f64>>;
/// A block and its index.
type Block = (u32, Bulk<f64>);

/// One run of a schedule: its time(s) and the sum of the per-block results.
#[derive(Debug, Clone, Copy)]
pub(super) struct Run {
    /// Pipelined: the whole time; phased: graph A's time.
    pub(super) comm_s: f64,
    /// Phased: graph B's time; pipelined: 0.
    pub(super) comp_s: f64,
    /// Sum of the per-block results.
    pub(super) checksum: f64,
}

/// The overlap graphs; every rank builds them, only rank 0 calls them.
pub(super) struct Graphs {
    pipelined: Graph<(u32, u32), f64>,
    send: Graph<(u32, u32), u64>,
    compute: Graph<u32, f64>,
    clear: Graph<(), ()>,
}

/// Block `index` of side `side`: deterministic values in [0, 1).
fn make_block(index: u32, side: u32) -> Bulk<f64> {
    let len = side as usize * side as usize;
    Bulk((0..len).map(|i| ((index as usize * 31 + i) % 1000) as f64 / 1000.0).collect())
}

/// The fixed amount of work done on a block: `work` element updates `y = 0.999 y + 0.001`,
/// spread over whole passes over a copy of the block; returns the sum of the result.
pub(super) fn compute(block: &[f64], work: usize) -> f64 {
    let mut y = block.to_vec();
    let passes = work.div_ceil(block.len().max(1)).max(1);
    for _ in 0..passes {
        for v in y.iter_mut() {
            *v = *v * 0.999 + 0.001;
        }
    }
    y.iter().sum()
}

/// A split on rank 0 emitting `n` blocks of `side x side` doubles, for input `(n, side)`.
fn emit<S: Send + 'static>(name: &str, main: &dps::Collection<S>, window: usize) -> Node<(u32, u32), Block> {
    Node::split(name, main, route::fixed(0), |_: &mut S, (n, side): (u32, u32)| {
        (0..n).map(move |i| (i, make_block(i, side)))
    })
    .window(window)
}

fn sum<S: Send + 'static>(name: &str, main: &dps::Collection<S>) -> Node<f64, f64> {
    Node::merge(name, main, MergeFn::new(|_: &mut S| 0.0f64, |_, acc: &mut f64, x: f64| *acc += x, |_, acc| acc))
}

impl Graphs {
    /// Builds the graphs (collective). `work` is the number of element updates per block.
    pub(super) fn build(rt: &Runtime, work: usize, window: usize) -> Result<Self> {
        let main = rt.collection("main", "0", |_| ())?;
        let remote = rt.collection("remote", "1", |_| Store::new())?;

        let compute_arriving =
            Node::leaf("compute", &remote, route::fixed(0), move |_: &mut Store, (_, b): Block| compute(&b, work));
        let pipelined = rt.graph("pipelined", emit("emit", &main, window) >> compute_arriving >> sum("sum", &main))?;

        let store = Node::leaf("store", &remote, route::fixed(0), |s: &mut Store, (i, b): Block| {
            let i = i as usize;
            if s.len() <= i {
                s.resize(i + 1, Vec::new());
            }
            s[i] = b.into_inner();
            1u8
        });
        let count =
            Node::merge("count", &main, MergeFn::new(|_: &mut ()| 0u64, |_, n: &mut u64, _: u8| *n += 1, |_, n| n));
        let send = rt.graph("phased A: send", emit("emit blocks", &main, window) >> store >> count)?;

        let indices = Node::split("indices", &main, route::fixed(0), |_: &mut (), n: u32| 0..n).window(window);
        let compute_stored = Node::leaf("compute stored", &remote, route::fixed(0), move |s: &mut Store, i: u32| {
            compute(&s[i as usize], work)
        });
        let compute = rt.graph("phased B: compute", indices >> compute_stored >> sum("sum stored", &main))?;

        let clear: Path<(), ()> =
            Node::leaf("clear", &remote, route::fixed(0), |s: &mut Store, (): ()| *s = Store::new()).into();
        let clear = rt.graph("clear", clear)?;
        Ok(Graphs { pipelined, send, compute, clear })
    }

    /// The pipelined schedule on `n` blocks of side `side`.
    pub(super) fn pipelined(&self, rt: &Runtime, side: usize, n: usize) -> Result<Run> {
        let start = Instant::now();
        let checksum = rt.call(&self.pipelined, (n as u32, side as u32))?;
        Ok(Run { comm_s: start.elapsed().as_secs_f64(), comp_s: 0.0, checksum })
    }

    /// The phased schedule on `n` blocks of side `side`: graph A, then graph B; the stored
    /// blocks are freed afterwards (untimed).
    pub(super) fn phased(&self, rt: &Runtime, side: usize, n: usize) -> Result<Run> {
        let start = Instant::now();
        let stored = rt.call(&self.send, (n as u32, side as u32))?;
        let comm_s = start.elapsed().as_secs_f64();
        ensure!(stored == n as u64, "graph A stored {stored} blocks instead of {n}");
        let start = Instant::now();
        let checksum = rt.call(&self.compute, n as u32)?;
        let comp_s = start.elapsed().as_secs_f64();
        rt.call(&self.clear, ())?;
        Ok(Run { comm_s, comp_s, checksum })
    }
}
