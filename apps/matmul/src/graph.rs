//! The DPS wiring of the three variants.
//!
//! * `pipelined` (the DPS paper's Table 1 experiment): the master splits C into blocks of
//!   `rows` × `cols` (s×s square blocks in the paper; by default the cost model's tiling,
//!   usually one strip of whole rows per worker); job (i, j) carries row strip i of A and
//!   column strip j of B to a worker, which returns C_ij = A_i·B_j. Strips flow as soon as
//!   they are cut, so transfers overlap products. A is kept as its row strips and B whole, so
//!   a row strip costs no copy, nor does B when blocks span whole rows. With more than one
//!   depth chunk (the default tiling's, on more than one rank), a job travels as that many
//!   pieces, piece k carrying A_i's column panel k and B_j's row panel k (both kept so by
//!   the master: no copy); the worker adds each piece's product into C_ij as it arrives and
//!   returns the block with the last one, so a remote worker starts after its first piece
//!   rather than after all of its strips.
//! * `phased`: the same jobs, same workers, but in three graphs run one after the other: ship
//!   every job's strips (stored on the worker), compute every product (kept on the worker),
//!   gather the blocks. No overlap: the baseline Table 1 compares against.
//! * `farm` (thesis §6.2): job (i, j, k) carries blocks A_ik and B_kj; the master adds each
//!   partial product into C_ij. Load-balanced routing with a flow-control window.

use std::collections::HashMap;

use dps::{route, Bulk, Collection, Graph, MaybeBulk, MergeFn, Node, Runtime, Shared};
use dps_dense::grain::Tiling;
use serde::{Deserialize, Serialize};

use crate::kernel::{self, span, Kernel};

/// The master's state (rank 0): the operands and the product, row-major n×n matrices. C is
/// kept as its row strips (concatenated they are the row-major matrix); A as its row strips,
/// each cut into column panels, one per depth chunk; B as its row panels, one per depth
/// chunk. With one depth chunk (`Tiling::depth_chunks`), A's strips and B are whole.
pub struct Master {
    n: usize,
    tiling: Tiling,
    a_rows: Vec<Vec<Strip>>,
    b: Vec<Strip>,
    /// B on the heap as well, for the jobs of the master's rank, when B is in node memory
    /// for the others.
    b_here: Option<Vec<Strip>>,
    remote: Vec<bool>,
    c_rows: Vec<MaybeBulk<f64>>,
}

impl std::fmt::Debug for Master {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Master(n {}, blocks {}x{})", self.n, self.tiling.rows, self.tiling.cols)
    }
}

/// An operand strip: in node memory if other ranks read it (a worker on another rank of
/// this node then maps it instead of receiving a copy), else on the heap, where large
/// allocations get huge pages (`dps_dense::huge`), which the master's own products read a
/// few per cent faster.
fn strip(len: usize, remote: bool, make: impl FnOnce() -> Vec<f64>) -> Strip {
    if remote {
        Shared::from_fn(len, |x| x.copy_from_slice(&make()))
    } else {
        Strip::from(MaybeBulk::from_fn(len, make))
    }
}

impl Master {
    /// Generates A and B from `seed`, for blocks of C cut by `tiling` (in a NOALLOC
    /// simulation: only their sizes). `remote(index)`: job `index` goes to another rank.
    pub fn new(n: usize, tiling: &Tiling, seed: u64, remote: impl Fn(usize) -> bool) -> Self {
        let (sa, sb) = kernel::seeds(seed);
        let strips = 0..tiling.row_strips(n);
        let depth = 0..tiling.depth_pieces(n);
        let pc = kernel::blocks(n, tiling.cols);
        let remote: Vec<bool> = (0..strips.len() * pc).map(remote).collect();
        let a_rows = strips
            .clone()
            .map(|i| {
                let rows = tiling.row_span(n, i);
                let shared = remote[i * pc..(i + 1) * pc].iter().any(|&r| r);
                let panel = |k| {
                    let cols = tiling.depth_span(n, k);
                    strip(rows.len() * cols.len(), shared, || kernel::block(sa, rows.clone(), cols))
                };
                depth.clone().map(panel).collect()
            })
            .collect();
        // C is written with ones, not zeroes: calloc'd pages would be faulted in during the
        // first timed run.
        let c_rows = strips
            .map(|i| {
                let len = tiling.row_span(n, i).len() * n;
                MaybeBulk::from_fn(len, || vec![1.0; len])
            })
            .collect();
        let b_panels = |shared| -> Vec<Strip> {
            depth
                .clone()
                .map(|k| {
                    let rows = tiling.depth_span(n, k);
                    strip(rows.len() * n, shared, || kernel::rows(n, sb, rows))
                })
                .collect()
        };
        let (here, away) = (remote.iter().any(|&r| !r), remote.iter().any(|&r| r));
        let b = b_panels(away);
        let b_here = (here && b.iter().any(Shared::in_node_memory)).then(|| b_panels(false));
        Master { n, tiling: tiling.clone(), a_rows, b, b_here, remote, c_rows }
    }

    /// C, row-major (a copy).
    pub fn product(&self) -> Vec<f64> {
        self.c_rows.iter().flat_map(|strip| strip.iter().copied()).collect()
    }
}

/// A worker's state: the blocks of C it is adding pieces into, and the jobs and results kept
/// between the phases of `phased`.
#[derive(Debug, Default)]
pub struct Worker {
    kernel: Kernel,
    partial: HashMap<usize, Partial>,
    jobs: HashMap<usize, Vec<Job>>,
    results: HashMap<usize, Block>,
}

/// A block of C whose job has pieces still to come.
#[derive(Debug)]
struct Partial {
    c: MaybeBulk<f64>,
    added: u32,
}

/// Piece `k` of job `index` = (i, j), of `pieces`: depth chunk k of row strip i of A (its
/// column panel, h × `depth`) and of column strip j of B (its row panel, `depth` × w). The
/// panels are shared: the jobs of one row (or column) on the same rank refer to one copy, and
/// a panel crosses to another rank straight from that copy.
#[derive(Debug, Serialize, Deserialize)]
pub struct Job {
    index: usize,
    i: u32,
    j: u32,
    k: u32,
    pieces: u32,
    depth: u32,
    a: Strip,
    b: Strip,
}

impl Job {
    /// The product's dimensions: rows, depth and columns.
    fn dims(&self) -> (usize, usize, usize) {
        let depth = self.depth as usize;
        (self.a.len() / depth, depth, self.b.len() / depth)
    }
}

/// A block of C (or a partial product, in `farm`).
#[derive(Debug, Serialize, Deserialize)]
pub struct Block {
    i: u32,
    j: u32,
    c: MaybeBulk<f64>,
}

/// Farm job: blocks A_ik (h×kw) and B_kj (kw×w).
#[derive(Debug, Serialize, Deserialize)]
pub struct Pair {
    i: u32,
    j: u32,
    h: u32,
    kw: u32,
    w: u32,
    a: MaybeBulk<f64>,
    b: MaybeBulk<f64>,
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
    let (pr, pc) = (m.tiling.row_strips(m.n), kernel::blocks(m.n, m.tiling.cols));
    (0..pr * pc).map(move |index| (index, index / pc, index % pc))
}

/// A strip shared by the jobs that need it, in node memory: a worker on another rank of the
/// master's node maps it rather than receiving a copy.
type Strip = Shared<f64>;

/// Yields the jobs' pieces: the first piece of every job, then the second of every job, and
/// so on, so that each worker gets its first piece before any worker gets its second (the
/// split's window lets only so many pieces travel at once). A's panels are the master's own;
/// B's column strips are cut once (panel by panel), when a job first needs one, so that the
/// first jobs leave before the whole matrix is cut (with blocks of whole rows, B's panels are
/// the column strip: nothing is cut).
fn cut_jobs(m: &mut Master) -> impl Iterator<Item = Job> + Send + 'static {
    let (a_rows, b, n, bw) = (m.a_rows.clone(), m.b.clone(), m.n, m.tiling.cols);
    let (b_here, remote) = (m.b_here.clone(), m.remote.clone());
    let (pc, pieces) = (kernel::blocks(n, bw), b.len());
    let mut cols: Vec<Option<Vec<Strip>>> = vec![None; pc];
    let jobs: Vec<_> = job_ids(m).collect();
    (0..pieces).flat_map(move |k| jobs.clone().into_iter().map(move |job| (k, job))).map(move |(k, (index, i, j))| {
        let b = if pc == 1 {
            match &b_here {
                Some(b_here) if !remote[index] => b_here[k].clone(),
                _ => b[k].clone(),
            }
        } else {
            let cut = |panel: &Strip| Strip::from(kernel::sub_block(panel, n, 0..panel.len() / n, span(n, bw, j)));
            cols[j].get_or_insert_with(|| b.iter().map(cut).collect())[k].clone()
        };
        let depth = (b.len() / span(n, bw, j).len()) as u32;
        Job { index, i: i as u32, j: j as u32, k: k as u32, pieces: pieces as u32, depth, a: a_rows[i][k].clone(), b }
    })
}

/// Adds a piece's product into its job's block of C; the block once the job's last piece is
/// in (a job of one piece: its product).
fn multiply(job: &Job, worker: &mut Worker) -> Option<Block> {
    let (h, _, w) = job.dims();
    let partial =
        worker.partial.entry(job.index).or_insert_with(|| Partial { c: MaybeBulk::recycled(h * w), added: 0 });
    kernel::multiply_into(&mut partial.c, &job.a, &job.b, job.dims(), worker.kernel, partial.added > 0);
    partial.added += 1;
    if partial.added < job.pieces {
        return None;
    }
    let c = worker.partial.remove(&job.index).expect("added above").c;
    Some(Block { i: job.i, j: job.j, c })
}

impl Master {
    /// Writes (or, with `add`, adds) block (i, j) into C. A block of whole rows becomes C's
    /// strip as it is: no copy.
    fn place(&mut self, blk: Block, add: bool) {
        let (n, i) = (self.n, blk.i as usize);
        let (h, cols) = (self.tiling.row_span(n, i).len(), span(n, self.tiling.cols, blk.j as usize));
        let strip = &mut self.c_rows[i];
        if !add && cols.len() == n && blk.c.len() == strip.len() {
            *strip = blk.c;
        } else if strip.is_absent() || blk.c.is_absent() {
            // NOALLOC: no C to write into; the copy is charged all the same.
            kernel::skip_copy(if add { 2 * blk.c.len() } else { blk.c.len() });
        } else {
            kernel::put_block(strip, n, 0..h, cols, &blk.c, !add);
        }
    }
}

/// Places the blocks of C; the pieces that only added into a worker's block bring nothing.
fn assemble(main: &Collection<Master>) -> Node<Option<Block>, u64> {
    let place = |m: &mut Master, count: &mut u64, blk: Option<Block>| {
        if let Some(blk) = blk {
            m.place(blk, false);
            *count += 1;
        }
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
        let leaf = Node::leaf("multiply", workers, route_job, |w: &mut Worker, job: Job| multiply(&job, w));
        let pipelined = rt.graph("pipelined", split >> leaf >> assemble(main))?;

        let split =
            Node::split("cut_strips", main, route::fixed(0), |m: &mut Master, _: ()| cut_jobs(m)).window(window);
        let store = Node::leaf("store_job", workers, route_job, |w: &mut Worker, job: Job| {
            w.jobs.entry(job.index).or_default().push(job);
            1u64
        });
        let distribute = rt.graph("phase1_distribute", split >> store >> count("stored", main))?;

        let split = Node::split("job_ids", main, route::fixed(0), |m: &mut Master, _: ()| {
            job_ids(m).map(|(index, _, _)| index)
        });
        let compute = Node::leaf("multiply_stored", workers, route_id, |w: &mut Worker, index: usize| {
            let pieces = w.jobs.remove(&index).expect("phase 1 stored this job here");
            let block = pieces.iter().filter_map(|job| multiply(job, w)).next_back();
            w.results.insert(index, block.expect("phase 1 stored every piece of the job"));
            1u64
        });
        let compute = rt.graph("phase2_compute", split >> compute >> count("computed", main))?;

        let split = Node::split("job_ids", main, route::fixed(0), |m: &mut Master, _: ()| {
            job_ids(m).map(|(index, _, _)| index)
        });
        let take = Node::leaf("take_block", workers, route_id, |w: &mut Worker, index: usize| {
            Some(w.results.remove(&index).expect("phase 2 computed this block here"))
        });
        let gather = rt.graph("phase3_gather", split >> take >> assemble(main))?;

        let split = Node::split("cut_pairs", main, route::fixed(0), |m: &mut Master, _: ()| {
            for strip in &mut m.c_rows {
                if !kernel::skip_copy(strip.len()) {
                    strip.fill(0.0);
                }
            }
            // The farm's blocks are square and its jobs whole (one depth chunk, `cli`): A's
            // strips and B are whole.
            let whole =
                |panels: &[Strip]| panels.first().filter(|_| panels.len() == 1).expect("one depth chunk").clone();
            let a_rows: Vec<Strip> = m.a_rows.iter().map(|a| whole(a)).collect();
            let (b, n, tiling, bw) = (whole(&m.b), m.n, m.tiling.clone(), m.tiling.cols);
            // The inner dimension is cut like the columns.
            let (pr, pc) = (tiling.row_strips(n), kernel::blocks(n, bw));
            (0..pr * pc * pc).map(move |x| {
                let (i, j, k) = (x / (pc * pc), (x / pc) % pc, x % pc);
                let (h, mid, cols) = (tiling.row_span(n, i).len(), span(n, bw, k), span(n, bw, j));
                let (kw, w) = (mid.len() as u32, cols.len() as u32);
                Pair {
                    i: i as u32,
                    j: j as u32,
                    h: h as u32,
                    kw,
                    w,
                    a: kernel::sub_block(&a_rows[i], n, 0..h, mid.clone()),
                    b: kernel::sub_block(&b, n, mid, cols),
                }
            })
        })
        .window(window);
        let partial = Node::leaf("multiply_pair", workers, route::load_balanced(), |w: &mut Worker, p: Pair| Block {
            i: p.i,
            j: p.j,
            c: kernel::product(&p.a, &p.b, p.h as usize, p.kw as usize, p.w as usize, w.kernel),
        });
        let add = Node::merge(
            "accumulate",
            main,
            MergeFn::new(
                |_: &mut Master| 0u64,
                |m: &mut Master, count: &mut u64, blk: Block| {
                    m.place(blk, true);
                    *count += 1;
                },
                |_, count| count,
            ),
        );
        let farm = rt.graph("farm", split >> partial >> add)?;

        let fetch = Node::leaf("fetch_c", main, route::fixed(0), |m: &mut Master, _: ()| Bulk(m.product()));
        let fetch = rt.graph("fetch", fetch)?;
        Ok(Graphs { pipelined, distribute, compute, gather, farm, fetch })
    }
}

/// The worker state of a thread, multiplying with `kernel`.
pub fn worker(kernel: Kernel) -> Worker {
    Worker { kernel, ..Worker::default() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every job of a tiling, multiplied and placed as the pipelined graph does, rebuilds the
    /// serial product: strips of whole rows (B shared, blocks moved into C), square and
    /// ragged blocks (B cut, blocks copied into C), a taller first strip, and jobs in depth
    /// pieces (B's panels shared; the pieces of all jobs in any order, the block returned with
    /// the last one in).
    #[test]
    fn jobs_of_any_tiling_rebuild_the_product() {
        let (n, seed) = (37, 5);
        let (sa, sb) = kernel::seeds(seed);
        let (a, b) = (kernel::matrix(n, sa), kernel::matrix(n, sb));
        let tilings = [(37, 37), (19, 37), (8, 37), (8, 8), (10, 16), (37, 5)].map(|(bh, bw)| Tiling::even(bh, bw, ""));
        let taller_first = Tiling { rows: 12, first_rows: 25, cols: 37, depth_chunks: 1, reason: String::new() };
        let in_pieces = |t: &Tiling, depth_chunks| Tiling { depth_chunks, ..t.clone() };
        let all: Vec<Tiling> = tilings.into_iter().chain([taller_first]).collect();
        let pieced = all.iter().flat_map(|t| [in_pieces(t, 3), in_pieces(t, 37), in_pieces(t, 99)]);
        for tiling in all.clone().into_iter().chain(pieced) {
            let (bh, bw, pieces) = (tiling.rows, tiling.cols, tiling.depth_chunks.min(n));
            let mut m = Master::new(n, &tiling, seed, |index| index % 2 == 1);
            let mut jobs: Vec<Job> = cut_jobs(&mut m).collect();
            assert_eq!(jobs.len(), tiling.row_strips(n) * n.div_ceil(bw) * pieces, "{tiling:?}");
            if bw == n {
                assert!(jobs.iter().all(|job| job.b.as_ptr() == m.b[job.k as usize].as_ptr()), "B is shared, not cut");
            }
            // The pieces of all jobs interleaved, each job's last piece first.
            jobs.reverse();
            let mut w = worker(Kernel::Blas);
            let blocks: Vec<Block> = jobs.iter().filter_map(|job| multiply(job, &mut w)).collect();
            assert_eq!(blocks.len(), tiling.row_strips(n) * n.div_ceil(bw), "{tiling:?}");
            assert!(w.partial.is_empty(), "every block returned");
            for block in blocks {
                m.place(block, false);
            }
            let (err, ok) = kernel::error_against_serial(&m.product(), &a, &b, n);
            assert!(ok && err < 1e-14, "{bh}x{bw} in {pieces} pieces: error {err}");
        }
    }
}
