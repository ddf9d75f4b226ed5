//! Graphs to schedule: random layered and series-parallel malleable graphs from a seed (a
//! SplitMix64 stream, so a seed names the same graph everywhere), and the block LU
//! factorisation's graph.

use super::graph::{Edge, Graph, Task, Work};
use super::tau::Speedup;
use crate::platform::Platform;

/// SplitMix64: a small, fixed generator (the graphs of a seed must not change with a crate).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A stream from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }
}

/// A random monotonic malleable task: work in [1, 10) s, Amdahl (serial fraction < 0.5) or
/// power-law (exponent in [0.3, 1)) speed-up, useful up to 1…`p` processors.
pub fn random_task(rng: &mut Rng, name: String, p: usize) -> Task {
    let work = 1.0 + 9.0 * rng.unit();
    let speedup =
        if rng.unit() < 0.5 { Speedup::Amdahl(0.5 * rng.unit()) } else { Speedup::Power(0.3 + 0.7 * rng.unit()) };
    let max_procs = rng.range(1, p.max(1));
    Task { name, work: Work::Table(speedup.table(work, max_procs)) }
}

/// A random layered graph: `layers` layers of 1…`width` tasks, each task of a layer after the
/// first reading from one to three tasks of the layer before (and, with probability 1/4,
/// one of an earlier layer), edges of up to 8 MB.
pub fn random_layered(seed: u64, layers: usize, width: usize, p: usize) -> Graph {
    let mut rng = Rng::new(seed);
    let mut graph = Graph { name: format!("layered-{seed}"), ..Graph::default() };
    let mut previous: Vec<Vec<usize>> = Vec::new();
    for l in 0..layers {
        let count = rng.range(1, width);
        let mut this = Vec::new();
        for i in 0..count {
            let v = graph.tasks.len();
            graph.tasks.push(random_task(&mut rng, format!("t{l}.{i}"), p));
            if let Some(before) = previous.last() {
                let mut from: Vec<usize> =
                    (0..rng.range(1, 3)).map(|_| before[rng.range(0, before.len() - 1)]).collect();
                if previous.len() > 1 && rng.unit() < 0.25 {
                    let earlier = &previous[rng.range(0, previous.len() - 2)];
                    from.push(earlier[rng.range(0, earlier.len() - 1)]);
                }
                from.sort_unstable();
                from.dedup();
                for u in from {
                    graph.edges.push(Edge { from: u, to: v, bytes: (8e6 * rng.unit()).round() });
                }
            }
            this.push(v);
        }
        previous.push(this);
    }
    graph
}

/// A random series-parallel graph of about `size` tasks: a task, or the series or parallel
/// composition of two random halves.
pub fn random_series_parallel(seed: u64, size: usize, p: usize) -> Graph {
    fn build(rng: &mut Rng, size: usize, p: usize, g: &mut Graph) -> (Vec<usize>, Vec<usize>) {
        if size <= 1 {
            let v = g.tasks.len();
            g.tasks.push(random_task(rng, format!("t{v}"), p));
            return (vec![v], vec![v]);
        }
        let left = rng.range(1, size - 1);
        let (s1, t1) = build(rng, left, p, g);
        let (s2, t2) = build(rng, size - left, p, g);
        if rng.unit() < 0.5 {
            for &u in &t1 {
                for &v in &s2 {
                    g.edges.push(Edge { from: u, to: v, bytes: (8e6 * rng.unit()).round() });
                }
            }
            (s1, t2)
        } else {
            ([s1, s2].concat(), [t1, t2].concat())
        }
    }
    let mut rng = Rng::new(seed);
    let mut graph = Graph { name: format!("series-parallel-{seed}"), ..Graph::default() };
    build(&mut rng, size, p, &mut graph);
    graph
}

/// The block kernels' times for [`lu`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LuCosts {
    /// One r×r×r multiplication (the update's unit), seconds.
    pub gemm_s: f64,
    /// One r×r triangular solve, seconds.
    pub trsm_s: f64,
    /// The panel factorisation's rate, flop/s.
    pub getrf_flops: f64,
}

impl LuCosts {
    /// The kernels' rate without a platform file, flop/s.
    pub const DEFAULT_FLOPS: f64 = 20e9;

    /// The kernel times at block size r: the platform file's `gemm`, `trsm` and `getrf`
    /// tables when it has them, else [`LuCosts::DEFAULT_FLOPS`].
    pub fn at_block(platform: Option<&Platform>, r: usize) -> LuCosts {
        let r64 = r as u64;
        let rf = r as f64;
        let (gemm_flops, trsm_flops) = (2.0 * rf * rf * rf, rf * rf * rf);
        let seconds = |name: &str, dims: &[u64], work: f64| {
            platform
                .and_then(|p| p.kernel(name).ok())
                .and_then(|k| k.seconds(dims, work))
                .unwrap_or(work / LuCosts::DEFAULT_FLOPS)
        };
        let panel_flops = 4.0 * rf * rf * rf - rf * rf * rf / 3.0;
        LuCosts {
            gemm_s: seconds("gemm", &[r64, r64, r64], gemm_flops),
            trsm_s: seconds("trsm", &[r64, r64], trsm_flops),
            getrf_flops: panel_flops / seconds("getrf", &[4 * r64, r64], panel_flops),
        }
    }
}

/// The block LU factorisation of an n×n matrix in r×r blocks (m = n/r), right-looking, by
/// column block: `F{k}` factorises panel k (atomic: one thread, as the DPS LU does), and
/// `U{k}.{j}` (j > k) updates column block j with it (a triangular solve, then m − k − 1
/// multiplications shared among its processors: τ(q) = trsm + ⌈(m−k−1)/q⌉·gemm). Edges carry
/// the panel and the column block, 8-byte elements. `F{k+1}` waits for `U{k}.{k+1}` only, so
/// the rest of an iteration's updates may overlap the next panel.
pub fn lu(n: usize, r: usize, costs: LuCosts) -> Graph {
    assert!(r >= 1 && n.is_multiple_of(r) && n >= r);
    let m = n / r;
    let block = (r * r * 8) as f64;
    let mut g = Graph { name: format!("lu-{n}-{r}"), ..Graph::default() };
    // The task that last wrote each column block.
    let mut column = vec![usize::MAX; m];
    for k in 0..m {
        let (rows, cols) = (((m - k) * r) as f64, r as f64);
        let flops = rows * cols * cols - cols * cols * cols / 3.0;
        let panel = g.tasks.len();
        g.tasks.push(Task { name: format!("F{k}"), work: Work::Atomic(flops / costs.getrf_flops) });
        if k > 0 {
            g.edges.push(Edge { from: column[k], to: panel, bytes: (m - k) as f64 * block });
        }
        let products = m - k - 1;
        for (j, last) in column.iter_mut().enumerate().skip(k + 1) {
            let tau = (1..=products).map(|q| costs.trsm_s + products.div_ceil(q) as f64 * costs.gemm_s).collect();
            let v = g.tasks.len();
            g.tasks.push(Task { name: format!("U{k}.{j}"), work: Work::Table(tau) });
            g.edges.push(Edge { from: panel, to: v, bytes: (m - k) as f64 * block });
            if k > 0 {
                g.edges.push(Edge { from: *last, to: v, bytes: (m - k) as f64 * block });
            }
            *last = v;
        }
    }
    g
}
