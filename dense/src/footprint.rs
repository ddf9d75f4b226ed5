//! What a run holds in memory, computed from its options before any work so that the apps
//! can refuse a run that cannot fit (`dps_harness::check_memory`). Sizes saturate: a size
//! that overflows `u64` needs more memory than any machine has.

/// Bytes of `count` f64 values.
pub fn f64s(count: u64) -> u64 {
    count.saturating_mul(8)
}

/// Bytes of an n×n matrix of f64.
pub fn matrix(n: usize) -> u64 {
    f64s((n as u64).saturating_mul(n as u64))
}

/// Bytes of an h×w block of f64.
pub fn block(h: usize, w: usize) -> u64 {
    f64s((h as u64).saturating_mul(w as u64))
}

/// The resident memory the BLAS library itself takes in a process, beside the data: MKL's
/// kernels and buffers measured 18.5 MB more than OpenBLAS's (peak RSS of `dps-lu --n 64
/// --variant serial`: 27.2 MB on MKL 2026.2, 8.7 MB on OpenBLAS 0.3.21, 2026-11-28); a
/// process's own baseline is not counted for either.
pub fn blas_library() -> u64 {
    match crate::library::get() {
        crate::library::Library::Mkl(_) => 20 << 20,
        crate::library::Library::OpenBlas => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_saturate_instead_of_wrapping() {
        assert_eq!(matrix(1024), 8 << 20);
        assert_eq!(matrix(1 << 32), u64::MAX);
        assert_eq!(block(usize::MAX, 2), u64::MAX);
    }
}
