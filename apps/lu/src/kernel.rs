//! Plain functions on plain data. The matrix is n×n, split into column blocks
//! ([`Blocking`]); a column block is stored column-major, n × w (leading dimension n). Step
//! k factors the panel, the rows of block k from its first column on, with LAPACK's dgetrf,
//! then every block j > k applies the panel: row interchanges, a triangular solve for its
//! rows of U, and a dgemm for its trailing rows.

use std::ops::Range;

use dps_dense::{blas, gen, norms};
use serde::{Deserialize, Serialize};

/// How the n columns of the matrix are cut into blocks: of width r (the last narrower where r
/// does not divide n), or graded: the first r columns and the last r each cut into two
/// blocks of half the width. In the staged pipeline the first panel is factored while every
/// other thread waits, and each of the last steps waits for its panel: half-width blocks there
/// halve those waits (n = 8192 in blocks of 512 on 2 ranks: 2-5 % faster).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blocking {
    /// Matrix order.
    pub n: usize,
    /// Block width (away from the ends, if graded).
    pub r: usize,
    graded: bool,
}

impl Blocking {
    /// Blocks of width r.
    pub fn uniform(n: usize, r: usize) -> Self {
        Blocking { n, r, graded: false }
    }

    /// Half-width blocks at both ends, where at least two blocks of r lie between them
    /// (uniform otherwise).
    pub fn graded(n: usize, r: usize) -> Self {
        Blocking { n, r, graded: r >= 2 && n >= 4 * r }
    }

    /// Whether the ends are cut in halves.
    pub fn is_graded(&self) -> bool {
        self.graded
    }

    /// The columns (or rows) of block i.
    pub fn span(&self, i: usize) -> Range<usize> {
        let (n, r) = (self.n, self.r);
        if !self.graded {
            return i * r..((i + 1) * r).min(n);
        }
        let (half, middle) = (r / 2, (n - 2 * r).div_ceil(r));
        match i {
            0 => 0..half,
            1 => half..r,
            i if i < 2 + middle => r * (i - 1)..(r * i).min(n - r),
            i if i == 2 + middle => n - r..n - r + half,
            _ => n - r + half..n,
        }
    }

    /// Blocks (and steps of the factorization).
    pub fn count(&self) -> usize {
        match self.graded {
            false => self.n.div_ceil(self.r),
            true => (self.n - 2 * self.r).div_ceil(self.r) + 4,
        }
    }
}

/// Where the matrix comes from.
#[derive(Clone, Debug)]
pub enum Source {
    /// The random matrix `seed` (entries uniform in [-1, 1)).
    Random(u64),
    /// A matrix read from a file, column-major.
    Given(std::sync::Arc<Vec<f64>>),
}

impl Source {
    /// Column block `j` of `blocking`, column-major n × w.
    pub fn column_block(&self, blocking: Blocking, j: usize) -> Vec<f64> {
        let (n, cols) = (blocking.n, blocking.span(j));
        match self {
            Source::Random(seed) => gen::cols_major(*seed, 0..n, cols),
            Source::Given(a) => a[cols.start * n..cols.end * n].to_vec(),
        }
    }

    /// The whole matrix, column-major.
    pub fn matrix(&self, n: usize) -> Vec<f64> {
        self.column_block(Blocking::uniform(n, n), 0)
    }
}

/// A factored panel: rows n − m.. of block k (m × w, column-major, leading dimension m), the
/// unit lower L and the upper U11 in LAPACK's packed form, and its pivots (1-based, relative
/// to row n − m, the block's first column).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Panel {
    /// Step.
    pub k: usize,
    /// Rows.
    pub m: usize,
    /// Columns.
    pub w: usize,
    /// The factored rows (absent under NOALLOC).
    pub lu: dps::MaybeBulk<f64>,
    /// Row interchanges.
    pub ipiv: Vec<i32>,
    /// LAPACK's info: > 0 if U(info, info) of this panel is exactly zero.
    pub info: i32,
}

/// In a PDEXEC or NOALLOC simulation, charges the calibrated cost of copying `elems`
/// doubles (the platform's `copy` table) and returns true: the caller skips the copy.
pub fn skip_copy(elems: usize) -> bool {
    let bytes = 8 * elems as u64;
    dps::skip_kernel("copy", &[bytes], bytes as f64)
}

/// In a PDEXEC or NOALLOC simulation, charges `swaps` row interchanges over `cols` columns
/// (the platform's `laswp` table) and returns true: the caller skips them.
pub fn skip_swaps(swaps: usize, cols: usize) -> bool {
    dps::skip_kernel("laswp", &[swaps as u64, cols as u64], (swaps * cols) as f64)
}

/// Applies the row interchanges of rows `s..n` to column block `col` (n × w) in one pass.
/// `ipiv` holds, for each row i in `s..n`, the 1-based global row it swaps with (LAPACK's
/// order: i = s first). Equal to one `dlaswp` per later panel, but reads and writes each
/// column once instead of visiting two scattered rows of every column per interchange: at
/// n = 8192 the end of the factorization swapped the left blocks for 0.19 s this way.
pub fn swap_rows_once(col: &mut [f64], n: usize, w: usize, s: usize, ipiv: &[i32]) {
    assert_eq!(ipiv.len(), n - s, "swap_rows_once: one pivot per row of s..n");
    // from[i] = the original row that ends at row s + i.
    let mut from: Vec<usize> = (0..n - s).collect();
    for (i, &p) in ipiv.iter().enumerate() {
        let p = usize::try_from(p - 1).expect("swap_rows_once: pivots are 1-based") - s;
        from.swap(i, p);
    }
    if from.iter().enumerate().all(|(i, &f)| i == f) {
        return;
    }
    let mut scratch = vec![0.0; n - s];
    for c in 0..w {
        let rows = &mut col[c * n + s..(c + 1) * n];
        for (x, &f) in scratch.iter_mut().zip(&from) {
            *x = rows[f];
        }
        rows.copy_from_slice(&scratch);
    }
}

/// Factors panel k of column block `col` (n × w) in place; returns the panel for the others.
///
/// Under PDEXEC and NOALLOC simulations dgetrf and the copy of the panel are charged, not
/// run, and the pivots are the identity: the graph's structure does not depend on them
/// (the simulator paper, §5). Under NOALLOC `col` is empty (the block is not allocated) and so is
/// the panel.
pub fn factor_panel(col: &mut [f64], blocking: Blocking, k: usize) -> Panel {
    let (n, cols) = (blocking.n, blocking.span(k));
    let (s, w) = (cols.start, cols.len());
    let m = n - s;
    let (mf, wf) = (m as f64, w as f64);
    let mut lu = dps::MaybeBulk::recycled(m * w);
    if dps::skip_kernel("getrf", &[m as u64, w as u64], mf * wf * wf - wf.powi(3) / 3.0) {
        skip_copy(m * w);
        let identity = (1..=w.min(m) as i32).collect();
        return Panel { k, m, w, lu, ipiv: identity, info: 0 };
    }
    let (ipiv, info) = blas::getrf(m, w, &mut col[s..], n);
    for c in 0..w {
        lu[c * m..(c + 1) * m].copy_from_slice(&col[c * n + s..(c + 1) * n]);
    }
    Panel { k, m, w, lu, ipiv, info }
}

/// Applies panel `p` to column block `col` (n × w) of a later block column.
pub fn apply_panel(col: &mut [f64], n: usize, p: &Panel) {
    apply_panel_to(col, n, col.len() / n, p);
}

/// [`apply_panel`] to a block of `w` columns: under PDEXEC and NOALLOC the row swaps, the
/// trsm, the packing of U_kj and the gemm are charged, not run (NOALLOC: `col` is empty).
pub fn apply_panel_to(col: &mut [f64], n: usize, w: usize, p: &Panel) {
    let s = n - p.m;
    let swapped = skip_swaps(p.ipiv.len(), w);
    let (pw, wf) = (p.w as f64, w as f64);
    let solved = dps::skip_kernel("trsm", &[p.w as u64, w as u64], pw * pw * wf);
    let h = p.m - p.w;
    let multiplied = h > 0 && {
        let packed = skip_copy(p.w * w);
        let multiplied = dps::skip_kernel("gemm", &[h as u64, w as u64, p.w as u64], 2.0 * h as f64 * wf * pw);
        packed && multiplied
    };
    if swapped || solved || multiplied {
        return; // a simulation that skips kernels skips them all
    }
    blas::swap_rows(col, n, w, s, &p.ipiv);
    blas::trsm_unit_lower(p.w, w, &p.lu, p.m, &mut col[s..], n);
    if h > 0 {
        // U_kj, packed: the product reads it while writing other rows of the same columns.
        // A recycled buffer: a fresh one would fault in its pages at every update.
        let mut u = dps::Bulk::<f64>::recycled(p.w * w);
        for c in 0..w {
            u[c * p.w..(c + 1) * p.w].copy_from_slice(&col[c * n + s..c * n + s + p.w]);
        }
        blas::gemm_col(h, w, p.w, -1.0, &p.lu[p.w..], p.m, &u, p.w, 1.0, &mut col[s + p.w..], n);
    }
}

/// The LU factors and pivots of the serial reference (LAPACK dgetrf on the whole matrix).
pub fn serial(a: &mut [f64], n: usize) -> (Vec<i32>, i32) {
    blas::getrf(n, n, a, n)
}

/// What `--verify` measures: the HPL scaled residual of solving A·x = b with the factors, and
/// whether the pivots equal those of a serial dgetrf.
#[derive(Debug)]
pub struct Check {
    /// ‖A·x − b‖∞ / (ε·(‖A‖∞·‖x‖∞ + ‖b‖∞)·n); must be below 16.
    pub residual: f64,
    /// The pivot rows equal the serial dgetrf's.
    pub pivots_match: bool,
}

/// Checks factors `lu` (column-major n × n) and global pivots against the matrix `a`.
pub fn check(a: &[f64], n: usize, lu: &[f64], ipiv: &[i32]) -> Check {
    let b: Vec<f64> = (0..n).map(|i| gen::entry(0xB, i, 0)).collect();
    let mut x = b.clone();
    blas::getrs(n, lu, n, ipiv, &mut x);
    let residual = norms::hpl_residual(n, a, &x, &b);
    let mut reference = a.to_vec();
    let (serial_ipiv, _) = serial(&mut reference, n);
    Check { residual, pivots_match: serial_ipiv == ipiv }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One pass over the columns equals one dlaswp per panel, in order.
    #[test]
    fn swap_rows_once_equals_dlaswp_per_panel() {
        let (n, r, w, s) = (37, 5, 3, 5);
        let block = dps_dense::gen::cols_major(9, 0..n, 0..w);
        // Global 1-based pivots for rows s..n: each row swaps with itself or a later row.
        let ipiv: Vec<i32> = (s..n).map(|i| (i + 1 + (i * 7) % (n - i)) as i32).collect();
        let mut expected = block.clone();
        for k in (s..n).step_by(r) {
            let end = (k + r).min(n);
            let local: Vec<i32> = ipiv[k - s..end - s].iter().map(|v| v - k as i32).collect();
            blas::swap_rows(&mut expected, n, w, k, &local);
        }
        let mut once = block.clone();
        swap_rows_once(&mut once, n, w, s, &ipiv);
        assert_eq!(once, expected);
        assert_ne!(once, block, "the pivots must move rows for the test to mean anything");
    }

    /// The block algorithm on one thread equals dgetrf (pivots) and solves accurately, in
    /// uniform and in graded blocks.
    #[test]
    fn blocked_steps_reproduce_dgetrf() {
        let n = 23;
        for blocking in [Blocking::uniform(n, 5), Blocking::graded(n, 5)] {
            let src = Source::Random(3);
            let nb = blocking.count();
            let mut blocks: Vec<Vec<f64>> = (0..nb).map(|j| src.column_block(blocking, j)).collect();
            let mut ipiv = vec![0; n];
            let mut panels = Vec::new();
            for k in 0..nb {
                let p = factor_panel(&mut blocks[k], blocking, k);
                let s = blocking.span(k).start;
                for (i, v) in p.ipiv.iter().enumerate() {
                    ipiv[s + i] = v + s as i32;
                }
                for block in blocks.iter_mut().skip(k + 1) {
                    apply_panel(block, n, &p);
                }
                panels.push(p);
            }
            for (j, block) in blocks.iter_mut().enumerate() {
                for p in &panels[j + 1..] {
                    let w = block.len() / n;
                    blas::swap_rows(block, n, w, n - p.m, &p.ipiv);
                }
            }
            let lu: Vec<f64> = blocks.concat();
            let c = check(&src.matrix(n), n, &lu, &ipiv);
            assert!(c.residual < 16.0, "{blocking:?}: {c:?}");
            assert!(c.pivots_match, "{blocking:?}");
        }
    }

    /// Graded blocks: halves at both ends, r between them, every column once, in order.
    #[test]
    fn graded_blocks_cover_the_columns_in_order() {
        let widths = |b: Blocking| (0..b.count()).map(|j| b.span(j).len()).collect::<Vec<_>>();
        assert_eq!(widths(Blocking::graded(4096, 512)), [256, 256, 512, 512, 512, 512, 512, 512, 256, 256]);
        assert_eq!(widths(Blocking::graded(2100, 512)), [256, 256, 512, 512, 52, 256, 256]);
        assert_eq!(widths(Blocking::graded(23, 5)), [2, 3, 5, 5, 3, 2, 3]);
        assert_eq!(widths(Blocking::graded(2047, 512)), [512, 512, 512, 511], "too small: uniform");
        for b in [Blocking::graded(4096, 512), Blocking::graded(2100, 512), Blocking::graded(23, 5)] {
            let spans: Vec<Range<usize>> = (0..b.count()).map(|j| b.span(j)).collect();
            assert_eq!(spans[0].start, 0);
            assert_eq!(spans.last().unwrap().end, b.n);
            assert!(spans.windows(2).all(|w| w[0].end == w[1].start), "{spans:?}");
        }
    }
}
