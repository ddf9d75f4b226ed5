//! Safe wrappers over the BLAS/LAPACK routines the apps use, in the library this process
//! calls (OpenBLAS or MKL: [`crate::library`]). Dimensions are checked against the slices
//! before calling into BLAS, so a wrong size panics here instead of corrupting memory.

use cblas::{Diagonal, Layout, Part, Side, Transpose};

use crate::library::{self, Library};

extern "C" {
    fn openblas_set_num_threads(n: std::ffi::c_int);
}

/// Sets the number of threads one BLAS call may use in this process.
pub fn set_threads(n: usize) {
    match library::get() {
        // SAFETY: a plain setter exported by libopenblas.
        Library::OpenBlas => unsafe { openblas_set_num_threads(n as std::ffi::c_int) },
        Library::Mkl(mkl) => mkl.set_threads(n),
    }
}

/// A dimension as the 32-bit int of the libraries' interfaces.
fn int(n: usize) -> i32 {
    i32::try_from(n).expect("a BLAS dimension beyond i32")
}

/// Before a DPS run (real or simulated): one OpenBLAS thread per call. The runtime's workers
/// call BLAS at the same time, each on its own core share; OpenBLAS's own threads would
/// oversubscribe the cores, and a threaded `dgetrf` called from two workers at once
/// crashed (a segfault in `dgetrf_parallel`, OpenBLAS 0.3.21 on Debian 12) in a plain
/// process, where `scripts/mpirun`'s `OPENBLAS_NUM_THREADS=1` is not set. DE also measures
/// the calling thread's CPU time only.
pub fn one_thread_per_worker() {
    set_threads(1);
}

fn need(len: usize, rows: usize, cols: usize, ld: usize, what: &str) {
    if rows > 0 && cols > 0 {
        assert!(
            ld >= rows && len >= ld * (cols - 1) + rows,
            "{what}: slice of {len} too small for {rows}x{cols}, ld {ld}"
        );
    }
}

/// C = alpha·A·B + beta·C, column-major: A is m×k (lda), B is k×n (ldb), C is m×n (ldc).
#[allow(clippy::too_many_arguments)]
pub fn gemm_col(
    m: usize,
    n: usize,
    k: usize,
    alpha: f64,
    a: &[f64],
    lda: usize,
    b: &[f64],
    ldb: usize,
    beta: f64,
    c: &mut [f64],
    ldc: usize,
) {
    if m == 0 || n == 0 {
        return;
    }
    need(a.len(), m, k, lda, "gemm A");
    need(b.len(), k, n, ldb, "gemm B");
    need(c.len(), m, n, ldc, "gemm C");
    if let Library::Mkl(mkl) = library::get() {
        let (m, n, k, lda, ldb, ldc) = (int(m), int(n), int(k), int(lda), int(ldb), int(ldc));
        // SAFETY: the dimensions were checked against the slices above; Fortran interface.
        unsafe {
            (mkl.dgemm)(
                c"N".as_ptr(),
                c"N".as_ptr(),
                &m,
                &n,
                &k,
                &alpha,
                a.as_ptr(),
                &lda,
                b.as_ptr(),
                &ldb,
                &beta,
                c.as_mut_ptr(),
                &ldc,
            )
        };
        return;
    }
    // SAFETY: the dimensions were checked against the slices above.
    unsafe {
        cblas::dgemm(
            Layout::ColumnMajor,
            Transpose::None,
            Transpose::None,
            m as i32,
            n as i32,
            k as i32,
            alpha,
            a,
            lda as i32,
            b,
            ldb as i32,
            beta,
            c,
            ldc as i32,
        )
    }
}

/// C = A·B + beta·C for row-major A (m×k), B (k×n) and C (m×n), all densely packed (beta
/// 0: C is only written).
pub fn gemm_row(m: usize, n: usize, k: usize, a: &[f64], b: &[f64], beta: f64, c: &mut [f64]) {
    // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ.
    gemm_col(n, m, k, 1.0, b, n, a, k, beta, c, n);
}

/// B = L⁻¹·B, column-major, L the unit lower triangle of the m×m matrix `l` (ldl), B m×n (ldb).
pub fn trsm_unit_lower(m: usize, n: usize, l: &[f64], ldl: usize, b: &mut [f64], ldb: usize) {
    if m == 0 || n == 0 {
        return;
    }
    need(l.len(), m, m, ldl, "trsm L");
    need(b.len(), m, n, ldb, "trsm B");
    if let Library::Mkl(mkl) = library::get() {
        let (m, n, ldl, ldb) = (int(m), int(n), int(ldl), int(ldb));
        let (side, part, op, diag) = (c"L".as_ptr(), c"L".as_ptr(), c"N".as_ptr(), c"U".as_ptr());
        // SAFETY: the dimensions were checked against the slices above; Fortran interface.
        unsafe { (mkl.dtrsm)(side, part, op, diag, &m, &n, &1.0, l.as_ptr(), &ldl, b.as_mut_ptr(), &ldb) };
        return;
    }
    // SAFETY: the dimensions were checked against the slices above.
    unsafe {
        cblas::dtrsm(
            Layout::ColumnMajor,
            Side::Left,
            Part::Lower,
            Transpose::None,
            Diagonal::Unit,
            m as i32,
            n as i32,
            1.0,
            l,
            ldl as i32,
            b,
            ldb as i32,
        )
    }
}

/// LU with partial pivoting of the m×n column-major matrix `a` (lda), in place (LAPACK dgetrf).
/// Returns the 1-based pivot rows and LAPACK's `info` (> 0: U(info, info) is exactly zero).
pub fn getrf(m: usize, n: usize, a: &mut [f64], lda: usize) -> (Vec<i32>, i32) {
    let mut ipiv = vec![0i32; m.min(n)];
    let mut info = 0;
    if m == 0 || n == 0 {
        return (ipiv, 0);
    }
    need(a.len(), m, n, lda, "getrf A");
    match library::get() {
        // SAFETY: the dimensions were checked against the slices above; ipiv has min(m, n) entries.
        Library::OpenBlas => unsafe { lapack::dgetrf(m as i32, n as i32, a, lda as i32, &mut ipiv, &mut info) },
        Library::Mkl(mkl) => {
            let (m, n, lda) = (int(m), int(n), int(lda));
            // SAFETY: as above.
            unsafe { (mkl.dgetrf)(&m, &n, a.as_mut_ptr(), &lda, ipiv.as_mut_ptr(), &mut info) }
        }
    }
    (ipiv, info)
}

/// Solves A·x = b in place with the factors from [`getrf`] of the n×n matrix (lda).
pub fn getrs(n: usize, lu: &[f64], lda: usize, ipiv: &[i32], b: &mut [f64]) {
    need(lu.len(), n, n, lda, "getrs LU");
    assert!(b.len() >= n && ipiv.len() >= n, "getrs: b or ipiv too short");
    let mut info = 0;
    match library::get() {
        // SAFETY: the dimensions were checked above.
        Library::OpenBlas => unsafe { lapack::dgetrs(b'N', n as i32, 1, lu, lda as i32, ipiv, b, n as i32, &mut info) },
        Library::Mkl(mkl) => {
            let (n, lda) = (int(n), int(lda));
            // SAFETY: as above.
            unsafe {
                (mkl.dgetrs)(c"N".as_ptr(), &n, &1, lu.as_ptr(), &lda, ipiv.as_ptr(), b.as_mut_ptr(), &n, &mut info)
            }
        }
    }
    assert_eq!(info, 0, "dgetrs: bad argument {}", -info);
}

/// Applies the row interchanges `ipiv` (1-based, row `offset + i` swapped with `offset +
/// ipiv[i] - 1`, in order) to the `cols` columns of the column-major matrix `a` (lda).
pub fn swap_rows(a: &mut [f64], lda: usize, cols: usize, offset: usize, ipiv: &[i32]) {
    if cols == 0 || ipiv.is_empty() {
        return;
    }
    let last = ipiv.iter().map(|&p| p as usize).max().unwrap_or(0).max(ipiv.len());
    need(a.len().saturating_sub(offset), last, cols, lda, "swap_rows A");
    assert!(ipiv.iter().all(|&p| p >= 1), "swap_rows: pivots are 1-based");
    let (cols, lda, k2) = (int(cols), int(lda), int(ipiv.len()));
    match library::get() {
        // SAFETY: every row an interchange touches (offset + 0..last) lies inside `a`, checked above.
        Library::OpenBlas => unsafe { lapack::dlaswp(cols, &mut a[offset..], lda, 1, k2, ipiv, 1) },
        // SAFETY: as above.
        Library::Mkl(mkl) => unsafe { (mkl.dlaswp)(&cols, a[offset..].as_mut_ptr(), &lda, &1, &k2, ipiv.as_ptr(), &1) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swap_rows_applies_interchanges_in_order() {
        // 4x2 column-major, rows r0..r3; from row 1: swap 1<->3, then 2<->3.
        let mut a = [0.0, 1.0, 2.0, 3.0, 10.0, 11.0, 12.0, 13.0];
        swap_rows(&mut a, 4, 2, 1, &[3, 3]);
        assert_eq!(a, [0.0, 3.0, 1.0, 2.0, 10.0, 13.0, 11.0, 12.0]);
    }

    #[test]
    fn gemm_row_matches_the_definition() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2x3
        let b = [7.0, 8.0, 9.0, 10.0, 11.0, 12.0]; // 3x2
        let mut c = [0.0; 4];
        gemm_row(2, 2, 3, &a, &b, 0.0, &mut c);
        assert_eq!(c, [58.0, 64.0, 139.0, 154.0]);
    }

    #[test]
    fn getrf_of_the_thesis_example() {
        // (6-15): [3 5; 6 7] pivots on 6: P·A = [6 7; 3 5] = [1 0; .5 1]·[6 7; 0 1.5].
        let mut a = [3.0, 6.0, 5.0, 7.0]; // column-major
        let (ipiv, info) = getrf(2, 2, &mut a, 2);
        assert_eq!((ipiv, info), (vec![2, 2], 0));
        assert_eq!(a, [6.0, 0.5, 7.0, 1.5]);
    }
}
