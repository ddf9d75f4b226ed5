//! Kernel cost tables, measured on one core: the BLAS/LAPACK calls of the dense apps through
//! `dps_dense::blas` (gemm and trsm on r×r blocks, getrf on r×r blocks and on 4r×r panels,
//! dlaswp row interchanges), memory copies, one band of Life (`dps_life::kernel::advance`)
//! per depth, and apps/filter's 5×5 median (`dps_filter::kernel::median::median5`) on square blocks.
//!
//! Each call's inputs are restored (outside the timed region) before it runs, so a table
//! never times denormals or infinities that repeated in-place calls would breed.

use std::time::{Duration, Instant};

use dps_dense::blas;
use dps_harness::median;
use dps_life::kernel::{advance, Geometry, Scratch, Sweep};
use dps_model::platform::{Kernel, KernelPoint};

/// How long each point is measured.
#[derive(Clone, Copy, Debug)]
pub(super) struct Effort {
    /// About this long per point...
    pub(super) time: Duration,
    /// ...with at least this many calls.
    pub(super) min_calls: usize,
    /// Whether to time the thread's CPU (under a CPU quota) rather than the wall clock.
    pub(super) cpu_clock: bool,
}

/// Times `call` on `data` (after `reset`, untimed) until `effort` is spent; the median
/// seconds: of the thread's CPU time where a CPU quota gives this process a share of a core
/// (a node of an emulated cluster, whose throttling would stretch only the calls longer than
/// its quota's slice: the simulator divides the CPU time by the share instead), else of the
/// wall clock.
fn time<D: ?Sized>(effort: Effort, data: &mut D, reset: impl Fn(&mut D), call: impl Fn(&mut D)) -> f64 {
    reset(data);
    call(data); // warm-up: caches, page faults, BLAS's first-call setup
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < effort.min_calls || start.elapsed() < effort.time {
        reset(data);
        let (t, cpu) = (Instant::now(), dps::cpu_time::thread());
        call(data);
        let took = if effort.cpu_clock { dps::cpu_time::thread() - cpu } else { t.elapsed() };
        times.push(took.as_secs_f64());
    }
    median(&times)
}

fn table(name: &str, dims: &str, work_unit: &str, points: Vec<KernelPoint>) -> Kernel {
    Kernel { name: name.into(), dims: dims.into(), work_unit: work_unit.into(), points }
}

/// gemm C ← C − A·B on r×r blocks (LU's update, matmul's block product), and for r up to
/// 512 two longer shapes the apps call: m = 4r (LU's trailing rows under a panel) and
/// k = 4r (matmul's strips, a whole row of A by a whole column of B). The simulator costs a
/// call at the rate of the nearest shape, and the rate depends on the shape.
pub(super) fn gemm(blocks: &[usize], effort: Effort) -> Kernel {
    let shapes = blocks.iter().flat_map(|&r| {
        let long = if r <= 512 { vec![(4 * r, r, r), (r, r, 4 * r)] } else { Vec::new() };
        std::iter::once((r, r, r)).chain(long)
    });
    let points = shapes
        .map(|(m, n, k)| {
            let (a, b) = (dps_dense::gen::cols_major(1, 0..m, 0..k), dps_dense::gen::cols_major(2, 0..k, 0..n));
            let mut c = vec![0.0; m * n];
            let seconds =
                time(effort, &mut c[..], |c| c.fill(0.0), |c| blas::gemm_col(m, n, k, -1.0, &a, m, &b, k, 1.0, c, m));
            KernelPoint { dims: vec![m as u64, n as u64, k as u64], seconds, work: 2.0 * (m * n * k) as f64 }
        })
        .collect();
    table("gemm", "m,n,k", "flop", points)
}

/// trsm B ← L⁻¹·B, L unit lower r×r, B r×r (LU's row of U).
pub(super) fn trsm(blocks: &[usize], effort: Effort) -> Kernel {
    let points = blocks
        .iter()
        .map(|&r| {
            let l = dps_dense::gen::cols_major(3, 0..r, 0..r);
            let pristine = dps_dense::gen::cols_major(4, 0..r, 0..r);
            let mut b = pristine.clone();
            let seconds = time(
                effort,
                &mut b[..],
                |b| b.copy_from_slice(&pristine),
                |b| blas::trsm_unit_lower(r, r, &l, r, b, r),
            );
            KernelPoint { dims: vec![r as u64; 2], seconds, work: (r as f64).powi(3) }
        })
        .collect();
    table("trsm", "m,n", "flop", points)
}

/// getrf with partial pivoting of m×r panels, m = r and m = 4r (LU's panel factorisation).
pub(super) fn getrf(blocks: &[usize], effort: Effort) -> Kernel {
    let points = blocks
        .iter()
        .flat_map(|&r| [(r, r), (4 * r, r)])
        .map(|(m, n)| {
            let pristine = dps_dense::gen::cols_major(5, 0..m, 0..n);
            let mut a = pristine.clone();
            let seconds = time(effort, &mut a[..], |a| a.copy_from_slice(&pristine), |a| drop(blas::getrf(m, n, a, m)));
            let (mf, nf) = (m as f64, n as f64);
            KernelPoint { dims: vec![m as u64, n as u64], seconds, work: mf * nf * nf - nf.powi(3) / 3.0 }
        })
        .collect();
    table("getrf", "m,n", "flop", points)
}

/// Copies of `bytes` between two warm buffers (the dense apps' strip cuts, block packing and
/// assembly, charged under PDEXEC as copies of their size).
pub(super) fn copy(sizes: &[usize], effort: Effort) -> Kernel {
    let points = sizes
        .iter()
        .map(|&bytes| {
            let src = vec![1.5f64; bytes / 8];
            let mut dst = vec![0.0f64; bytes / 8];
            let seconds = time(effort, &mut dst[..], |_| {}, |d| d.copy_from_slice(std::hint::black_box(&src)));
            KernelPoint { dims: vec![bytes as u64], seconds, work: bytes as f64 }
        })
        .collect();
    table("copy", "bytes", "byte", points)
}

/// LAPACK dlaswp applying r interchanges (random pivots within 4r rows) to r columns of a
/// column block of 4r rows (LU's row swaps), per r; work: element pairs swapped (r·r).
pub(super) fn laswp(blocks: &[usize], effort: Effort) -> Kernel {
    let points = blocks
        .iter()
        .map(|&r| {
            let m = 4 * r;
            let mut a = dps_dense::gen::cols_major(6, 0..m, 0..r);
            // Partial pivoting of a random matrix swaps nearly every row, with a row anywhere below.
            let ipiv: Vec<i32> = (0..r).map(|i| (i + 1 + (i * 7919) % (m - i)) as i32).collect();
            let seconds = time(effort, &mut a[..], |_| {}, |a| blas::swap_rows(a, m, r, 0, &ipiv));
            KernelPoint { dims: vec![r as u64, r as u64], seconds, work: (r * r) as f64 }
        })
        .collect();
    table("laswp", "swaps,cols", "element swap", points)
}

/// One Life band of `width` × `rows` cells, `depth` generations per pass, for each depth.
pub(super) fn life(width: usize, rows: usize, depths: &[usize], effort: Effort) -> Kernel {
    let g = Geometry::new(width, false);
    let points = depths
        .iter()
        .map(|&depth| {
            let total = rows + 2 * depth;
            // A random soup (a fixed xorshift stream), every bit past the width clear.
            let mut state = 0x9E37_79B9_7F4A_7C15u64;
            let mut src: Vec<u64> = (0..total * g.words)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state
                })
                .collect();
            for row in src.chunks_mut(g.words) {
                *row.last_mut().expect("a row has a word") &= g.last_mask();
            }
            let (dst, scratch) = (vec![0u64; src.len()], Scratch::default());
            let sweep = Sweep { rows: depth..depth + rows, depth, live: 0..total };
            let seconds = time(
                effort,
                &mut (dst, scratch),
                |_| {},
                |(dst, scratch)| advance(&g, &src, dst, &sweep, scratch, &mut |_| {}),
            );
            KernelPoint {
                dims: vec![width as u64, rows as u64, depth as u64],
                seconds,
                work: (width * rows * depth) as f64,
            }
        })
        .collect();
    table("life", "width,rows,depth", "cell update", points)
}

/// The 5×5 median of `side` × `side` blocks of random 8-bit pixels (with their border of
/// `RADIUS` pixels), for each side: dps-filter's kernel, work counted in pixels.
pub(super) fn median_filter(sides: &[usize], effort: Effort) -> Kernel {
    use dps_filter::kernel::median::{median5, RADIUS};
    let points = sides
        .iter()
        .map(|&side| {
            let stride = side + 2 * RADIUS;
            let mut state = 0x2545_F491_4F6C_DD1Du64;
            let src: Vec<u8> = (0..stride * stride)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 56) as u8
                })
                .collect();
            let mut dst = vec![0u8; side * side];
            let seconds = time(effort, &mut dst[..], |_| {}, |dst| median5(&src, stride, side, side, dst, side));
            KernelPoint { dims: vec![side as u64; 2], seconds, work: (side * side) as f64 }
        })
        .collect();
    table("median", "width,rows", "pixel", points)
}
