//! The DPS wiring of the three variants.
//!
//! * `pipelined` (the DPS paper's Table 1 experiment): the master splits C into s×s blocks;
//!   job (i, j) carries row strip i of A and column strip j of B to a worker, which returns
//!   C_ij = A_i·B_j. Strips flow as soon as they are cut, so transfers overlap products.
//!   Traffic (2s+1)·n² elements.
//! * `phased`: the same jobs, same workers, but in three graphs run one after the other: ship
//!   every job's strips (stored on the worker), compute every product (kept on the worker),
//!   gather the blocks. No overlap: the baseline Table 1 compares against.
//! * `farm` (thesis §6.2): job (i, j, k) carries blocks A_ik and B_kj; the master adds each
//!   partial product into C_ij. Load-balanced routing with a flow-control window.

use std::collections::HashMap;
use std::sync::Arc;

use dps::{route, Bulk, Collection, Graph, MergeFn, Node, Runtime};
use serde::{Deserialize, Serialize};

use crate::kernel::{self, span};

/// The master's state (rank 0): the operands and the product.
pub struct Master {
    n: usize,
    bs: usize,
    a: Arc<Vec<f64>>,
    b: Arc<Vec<f64>>,
    c: Vec<f64>,
}

impl std::fmt::Debug for Master {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Master(n {}, block {})", self.n, self.bs)
    }
}

impl Master {
    /// Generates A and B from `seed`.
    pub fn new(n: usize, bs: usize, seed: u64) -> Self {
        let (sa, sb) = kernel::seeds(seed);
        // C is written with ones, not zeroes: calloc'd pages would be faulted in during the
        // first timed run.
        Master { n, bs, a: Arc::new(kernel::matrix(n, sa)), b: Arc::new(kernel::matrix(n, sb)), c: vec![1.0; n * n] }
    }
}

/// A worker's state: jobs and results kept between the phases of `phased`.
#[derive(Debug, Default)]
pub struct Worker {
    n: usize,
    jobs: HashMap<usize, Job>,
    results: HashMap<usize, Block>,
}

/// Job `index` = (i, j): row strip i of A and column strip j of B. The strips are shared:
/// the jobs of one row (or column) on the same rank refer to one copy, and a strip crosses
/// to another rank straight from that copy.
#[derive(Debug, Serialize, Deserialize)]
pub struct Job {
    index: usize,
    i: u32,
    j: u32,
    a: Arc<Bulk<f64>>,
    b: Arc<Bulk<f64>>,
}

/// A block of C (or a partial product, in `farm`).
#[derive(Debug, Serialize, Deserialize)]
pub struct Block {
    i: u32,
    j: u32,
    c: Bulk<f64>,
}

/// Farm job: blocks A_ik (h×kw) and B_kj (kw×w).
#[derive(Debug, Serialize, Deserialize)]
pub struct Pair {
    i: u32,
    j: u32,
    h: u32,
    kw: u32,
    w: u32,
    a: Bulk<f64>,
    b: Bulk<f64>,
}

/// The graphs of all variants (every rank builds them all, in the same order).
#[derive(Debug)]
pub struct Graphs {
    /// The pipelined product.
    pub pipelined: Graph<(), u64>,
    /// Phase 1 of `phased`: ship the strips.
    pub distribute: Graph<(), u64>,
    /// Phase 2: compute.
    pub compute: Graph<(), u64>,
    /// Phase 3: gather C.
    pub gather: Graph<(), u64>,
    /// The thesis's master/worker farm.
    pub farm: Graph<(), u64>,
    /// Copies C out of the master (for `--verify`).
    pub fetch: Graph<(), Bulk<f64>>,
}

fn job_ids(m: &mut Master) -> impl Iterator<Item = (usize, usize, usize)> + Send + 'static {
    let p = kernel::blocks(m.n, m.bs);
    (0..p * p).map(move |index| (index, index / p, index % p))
}

/// A strip shared by the jobs that need it.
type Strip = Arc<Bulk<f64>>;

/// Yields the jobs, cutting each row strip of A and column strip of B once, when a job first
/// needs it, so that the first jobs leave before the whole matrix is cut.
fn cut_jobs(m: &mut Master) -> impl Iterator<Item = Job> + Send + 'static {
    let (a, b, n, bs) = (m.a.clone(), m.b.clone(), m.n, m.bs);
    let p = kernel::blocks(n, bs);
    let (mut rows, mut cols): (Vec<Option<Strip>>, Vec<Option<Strip>>) = (vec![None; p], vec![None; p]);
    job_ids(m).map(move |(index, i, j)| {
        let a = rows[i].get_or_insert_with(|| Arc::new(kernel::row_strip(&a, n, bs, i))).clone();
        let b = cols[j].get_or_insert_with(|| Arc::new(kernel::col_strip(&b, n, bs, j))).clone();
        Job { index, i: i as u32, j: j as u32, a, b }
    })
}

fn multiply(job: &Job, n: usize) -> Block {
    let (h, w) = (job.a.len() / n, job.b.len() / n);
    Block { i: job.i, j: job.j, c: kernel::product(&job.a, &job.b, h, n, w) }
}

fn assemble(main: &Collection<Master>) -> Node<Block, u64> {
    let place = |m: &mut Master, count: &mut u64, blk: Block| {
        let (n, bs) = (m.n, m.bs);
        kernel::put_block(&mut m.c, n, span(n, bs, blk.i as usize), span(n, bs, blk.j as usize), &blk.c, true);
        *count += 1;
    };
    Node::merge("assemble", main, MergeFn::new(|_: &mut Master| 0u64, place, |_, count| count))
}

fn count<S: Send + 'static>(name: &str, coll: &Collection<S>) -> Node<u64, u64> {
    Node::merge(name, coll, MergeFn::new(|_: &mut S| 0u64, |_, n: &mut u64, x: u64| *n += x, |_, n| n))
}

impl Graphs {
    /// Builds every graph (collective). `window` bounds the jobs in flight per split.
    pub fn build(
        rt: &Runtime,
        main: &Collection<Master>,
        workers: &Collection<Worker>,
        window: usize,
    ) -> anyhow::Result<Self> {
        // Job `index` goes to the same worker in every phase.
        let route_job = |t: &Job, cx: &dps::RouteCtx| t.index % cx.threads;
        let route_id = |index: &usize, cx: &dps::RouteCtx| index % cx.threads;

        let split =
            Node::split("cut_strips", main, route::fixed(0), |m: &mut Master, _: ()| cut_jobs(m)).window(window);
        let leaf = Node::leaf("multiply", workers, route_job, |w: &mut Worker, job: Job| multiply(&job, w.n));
        let pipelined = rt.graph("pipelined", split >> leaf >> assemble(main))?;

        let split =
            Node::split("cut_strips", main, route::fixed(0), |m: &mut Master, _: ()| cut_jobs(m)).window(window);
        let store = Node::leaf("store_job", workers, route_job, |w: &mut Worker, job: Job| {
            w.jobs.insert(job.index, job);
            1u64
        });
        let distribute = rt.graph("phase1_distribute", split >> store >> count("stored", main))?;

        let split = Node::split("job_ids", main, route::fixed(0), |m: &mut Master, _: ()| {
            job_ids(m).map(|(index, _, _)| index)
        });
        let compute = Node::leaf("multiply_stored", workers, route_id, |w: &mut Worker, index: usize| {
            let job = w.jobs.remove(&index).expect("phase 1 stored this job here");
            let block = multiply(&job, w.n);
            w.results.insert(index, block);
            1u64
        });
        let compute = rt.graph("phase2_compute", split >> compute >> count("computed", main))?;

        let split = Node::split("job_ids", main, route::fixed(0), |m: &mut Master, _: ()| {
            job_ids(m).map(|(index, _, _)| index)
        });
        let take = Node::leaf("take_block", workers, route_id, |w: &mut Worker, index: usize| {
            w.results.remove(&index).expect("phase 2 computed this block here")
        });
        let gather = rt.graph("phase3_gather", split >> take >> assemble(main))?;

        let split = Node::split("cut_pairs", main, route::fixed(0), |m: &mut Master, _: ()| {
            m.c.fill(0.0);
            let (a, b, n, bs) = (m.a.clone(), m.b.clone(), m.n, m.bs);
            let p = kernel::blocks(n, bs);
            (0..p * p * p).map(move |x| {
                let (i, j, k) = (x / (p * p), (x / p) % p, x % p);
                let (rows, mid, cols) = (span(n, bs, i), span(n, bs, k), span(n, bs, j));
                let (h, kw, w) = (rows.len() as u32, mid.len() as u32, cols.len() as u32);
                Pair {
                    i: i as u32,
                    j: j as u32,
                    h,
                    kw,
                    w,
                    a: kernel::sub_block(&a, n, rows, mid.clone()),
                    b: kernel::sub_block(&b, n, mid, cols),
                }
            })
        })
        .window(window);
        let partial = Node::leaf("multiply_pair", workers, route::load_balanced(), |_: &mut Worker, p: Pair| Block {
            i: p.i,
            j: p.j,
            c: kernel::product(&p.a, &p.b, p.h as usize, p.kw as usize, p.w as usize),
        });
        let add = Node::merge(
            "accumulate",
            main,
            MergeFn::new(
                |_: &mut Master| 0u64,
                |m: &mut Master, count: &mut u64, blk: Block| {
                    let (n, bs) = (m.n, m.bs);
                    kernel::put_block(
                        &mut m.c,
                        n,
                        span(n, bs, blk.i as usize),
                        span(n, bs, blk.j as usize),
                        &blk.c,
                        false,
                    );
                    *count += 1;
                },
                |_, count| count,
            ),
        );
        let farm = rt.graph("farm", split >> partial >> add)?;

        let fetch = Node::leaf("fetch_c", main, route::fixed(0), |m: &mut Master, _: ()| Bulk(m.c.clone()));
        let fetch = rt.graph("fetch", fetch)?;
        Ok(Graphs { pipelined, distribute, compute, gather, farm, fetch })
    }
}

/// The worker state of thread `index` for matrices of order n.
pub fn worker(n: usize) -> Worker {
    Worker { n, ..Worker::default() }
}
