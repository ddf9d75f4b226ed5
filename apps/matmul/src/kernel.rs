//! Plain functions on plain data: the strips and blocks the graphs ship, the products the
//! workers compute, and the serial reference. Matrices are n×n, row-major; block `i` of a
//! dimension covers indices `i·bs .. min((i+1)·bs, n)` (the last block may be smaller).

use dps::MaybeBulk;
use dps_dense::{blas, gen, norms};

/// Seeds of A and B for a run seeded `seed`.
pub fn seeds(seed: u64) -> (u64, u64) {
    (seed, seed.wrapping_add(0x5EED))
}

/// The index range of block `i` of size `bs` in a dimension of length n.
pub fn span(n: usize, bs: usize, i: usize) -> std::ops::Range<usize> {
    i * bs..((i + 1) * bs).min(n)
}

/// Number of blocks of size `bs` in a dimension of length n.
pub fn blocks(n: usize, bs: usize) -> usize {
    n.div_ceil(bs)
}

/// The random n×n matrix `seed`, row-major.
pub fn matrix(n: usize, seed: u64) -> Vec<f64> {
    gen::rows_major(seed, 0..n, 0..n)
}

/// Rows `rows` of the random n×n matrix `seed` (all n columns), row-major: the same values
/// as those rows of [`matrix`].
pub fn rows(n: usize, seed: u64, rows: std::ops::Range<usize>) -> Vec<f64> {
    gen::rows_major(seed, rows, 0..n)
}

/// Rows `rows` × columns `cols` of the random n×n matrix `seed`, row-major: the same values
/// as that block of [`matrix`].
pub fn block(seed: u64, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>) -> Vec<f64> {
    gen::rows_major(seed, rows, cols)
}

/// Rows of block `i` of A (h×n, row-major): a contiguous copy.
pub fn row_strip(a: &[f64], n: usize, bs: usize, i: usize) -> MaybeBulk<f64> {
    let rows = span(n, bs, i);
    let mut strip = MaybeBulk::recycled(rows.len() * n);
    if !skip_copy(strip.len()) {
        strip.copy_from_slice(&a[rows.start * n..rows.end * n]);
    }
    strip
}

/// Columns of block `j` of B (n×w, row-major).
pub fn col_strip(b: &MaybeBulk<f64>, n: usize, bs: usize, j: usize) -> MaybeBulk<f64> {
    sub_block(b, n, 0..n, span(n, bs, j))
}

/// In a PDEXEC or NOALLOC simulation, charges the calibrated cost of copying `elems`
/// doubles (the platform's `copy` table) and returns true: the caller skips the copy.
pub fn skip_copy(elems: usize) -> bool {
    let bytes = 8 * elems as u64;
    dps::skip_kernel("copy", &[bytes], bytes as f64)
}

/// Rows `rows` × columns `cols` of the n×n row-major matrix `m`, packed row-major into a
/// recycled buffer (tokens are cut by the thousand: fresh pages each time would cost more
/// than the copy). Under PDEXEC the copy is charged, not made (NOALLOC: nothing allocated).
pub fn sub_block(
    m: &impl std::ops::Deref<Target = [f64]>,
    n: usize,
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
) -> MaybeBulk<f64> {
    let w = cols.len();
    let mut out = MaybeBulk::recycled(rows.len() * w);
    if !skip_copy(out.len()) {
        for (dst, r) in out.chunks_mut(w.max(1)).zip(rows) {
            dst.copy_from_slice(&m[r * n + cols.start..r * n + cols.end]);
        }
    }
    out
}

/// How a block product is computed (`--kernel`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Kernel {
    /// OpenBLAS dgemm.
    #[default]
    Blas,
    /// The textbook triple loop, each entry of C the dot product of a row of A and a column
    /// of B: tens of times slower than dgemm, so that a node of an emulated cluster computes
    /// at the pace the thesis's machines had against their network (docs/cluster-tables.md).
    Loops,
}

impl Kernel {
    /// The kernel's name in records.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Blas => "blas",
            Kernel::Loops => "loops",
        }
    }
}

/// The product of an h×k and a k×w row-major matrix (one OpenBLAS dgemm, or the loops).
/// Under a PDEXEC simulation the dgemm is skipped and its calibrated cost charged (the
/// block is then left as the buffer came: no result to verify, which the runner refuses);
/// under NOALLOC the operands and the block are absent. (`Kernel::Loops` is refused there.)
pub fn product(a: &MaybeBulk<f64>, b: &MaybeBulk<f64>, h: usize, k: usize, w: usize, kernel: Kernel) -> MaybeBulk<f64> {
    let mut c = MaybeBulk::recycled(h * w);
    multiply_into(&mut c, a, b, (h, k, w), kernel, false);
    c
}

/// C = A·B, or with `add` C += A·B, for an h×k A, a k×w B and an h×w C, row-major (one
/// dgemm, or the loops; simulated as [`product`] is).
pub fn multiply_into(
    c: &mut MaybeBulk<f64>,
    a: &impl std::ops::Deref<Target = [f64]>,
    b: &impl std::ops::Deref<Target = [f64]>,
    (h, k, w): (usize, usize, usize),
    kernel: Kernel,
    add: bool,
) {
    match kernel {
        Kernel::Loops => {
            if !add {
                c.fill(0.0);
            }
            loops(h, w, k, (&**a, k), (&**b, w), (c, w));
        }
        Kernel::Blas => {
            if !dps::skip_kernel("gemm", &[h as u64, w as u64, k as u64], 2.0 * h as f64 * w as f64 * k as f64) {
                blas::gemm_row(h, w, k, a, b, if add { 1.0 } else { 0.0 }, c);
            }
        }
    }
}

/// C += A·B for an h×k A and a k×w B, row-major, each given with its row stride: the
/// textbook triple loop.
fn loops(
    h: usize,
    w: usize,
    k: usize,
    (a, lda): (&[f64], usize),
    (b, ldb): (&[f64], usize),
    (c, ldc): (&mut [f64], usize),
) {
    for i in 0..h {
        for j in 0..w {
            let dot: f64 = (0..k).map(|p| a[i * lda + p] * b[p * ldb + j]).sum();
            c[i * ldc + j] += dot;
        }
    }
}

/// Adds (or, with `overwrite`, copies) the h×w block `blk` into C at rows `rows`, columns
/// `cols`. Under PDEXEC this is charged as a copy of the block (twice for an addition,
/// which reads two operands), not made.
pub fn put_block(
    c: &mut MaybeBulk<f64>,
    n: usize,
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
    blk: &MaybeBulk<f64>,
    overwrite: bool,
) {
    if skip_copy(if overwrite { blk.len() } else { 2 * blk.len() }) {
        return;
    }
    let w = cols.len();
    for (r, row) in rows.zip(blk.chunks(w)) {
        let dst = &mut c[r * n + cols.start..r * n + cols.end];
        if overwrite {
            dst.copy_from_slice(row);
        } else {
            dst.iter_mut().zip(row).for_each(|(d, s)| *d += s);
        }
    }
}

/// The serial reference: C = A·B with one dgemm.
pub fn serial(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let mut c = vec![0.0; n * n];
    blas::gemm_row(n, n, n, a, b, 0.0, &mut c);
    c
}

/// C = A·B on one core with the loops, block by block (blocks of `bs`: the blocks the
/// parallel runs multiply, so that their speedup compares like with like).
pub fn serial_loops(a: &[f64], b: &[f64], n: usize, bs: usize) -> Vec<f64> {
    let mut c = vec![0.0; n * n];
    let nb = blocks(n, bs);
    for (i, j, p) in (0..nb * nb * nb).map(|x| (x / (nb * nb), (x / nb) % nb, x % nb)) {
        let (rows, cols, mid) = (span(n, bs, i), span(n, bs, j), span(n, bs, p));
        let (at, bt, ct) = (rows.start * n + mid.start, mid.start * n + cols.start, rows.start * n + cols.start);
        loops(rows.len(), cols.len(), mid.len(), (&a[at..], n), (&b[bt..], n), (&mut c[ct..], n));
    }
    c
}

/// ‖C − A·B‖_F / (‖A‖_F‖B‖_F), against the serial product, and whether it is within the
/// bound 10·n·ε. A NaN or infinite error (a NaN or infinity anywhere, or an overflow) fails.
pub fn error_against_serial(c: &[f64], a: &[f64], b: &[f64], n: usize) -> (f64, bool) {
    let reference = serial(a, b, n);
    let err = norms::product_error(c, &reference, a, b);
    (err, within_bound(err, n))
}

/// Whether a relative error passes for order n: finite and at most 10·n·ε.
pub fn within_bound(err: f64, n: usize) -> bool {
    err.is_finite() && err <= 10.0 * n as f64 * f64::EPSILON
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_and_blocks_rebuild_the_product_with_ragged_edges() {
        let (n, bs) = (10, 4); // blocks of 4, 4, 2
        let (a, b) = (matrix(n, 1), matrix(n, 2));
        for kernel in [Kernel::Blas, Kernel::Loops] {
            let mut c = MaybeBulk::from(vec![0.0; n * n]);
            for i in 0..blocks(n, bs) {
                for j in 0..blocks(n, bs) {
                    let (h, w) = (span(n, bs, i).len(), span(n, bs, j).len());
                    let (ai, bj) = (row_strip(&a, n, bs, i), col_strip(&b.clone().into(), n, bs, j));
                    let blk = product(&ai, &bj, h, n, w, kernel);
                    put_block(&mut c, n, span(n, bs, i), span(n, bs, j), &blk, true);
                }
            }
            assert!(error_against_serial(&c, &a, &b, n).1, "{kernel:?}");
        }
    }

    #[test]
    fn the_blocked_loops_compute_the_product_with_ragged_edges() {
        let n = 10;
        let (a, b) = (matrix(n, 1), matrix(n, 2));
        for bs in [1, 4, 10] {
            let (err, ok) = error_against_serial(&serial_loops(&a, &b, n, bs), &a, &b, n);
            assert!(ok, "blocks of {bs}: error {err}");
        }
    }

    #[test]
    fn rows_are_the_rows_of_the_matrix() {
        let (n, seed) = (10, 3);
        assert_eq!(rows(n, seed, 4..7), matrix(n, seed)[4 * n..7 * n]);
    }

    #[test]
    fn verification_fails_closed_on_nan_infinity_and_error() {
        let n = 4;
        let (a, b) = (matrix(n, 1), matrix(n, 2));
        let good = serial(&a, &b, n);
        for (k, poison) in [(0, f64::NAN), (5, f64::INFINITY), (15, f64::NEG_INFINITY), (3, 1e300)] {
            let mut c = good.clone();
            c[k] = poison;
            let (err, ok) = error_against_serial(&c, &a, &b, n);
            assert!(!ok, "C[{k}] = {poison} passed with error {err}");
        }
        let mut nan_a = a.clone();
        nan_a[2] = f64::NAN;
        assert!(!error_against_serial(&good, &nan_a, &b, n).1, "a NaN operand passed");
        assert!(!within_bound(f64::NAN, n) && !within_bound(f64::INFINITY, n) && within_bound(0.0, n));
    }
}
