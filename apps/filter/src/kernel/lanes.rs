//! Lane vectors of `u8` for the median's networks: one pixel (`u8`), or 32 (AVX2) or 64
//! (AVX-512BW) consecutive pixels, with load, store and per-lane min/max.
//!
//! The vector types may only exist inside code that runs after its CPU features were
//! detected (`median5`'s dispatch): their methods use the instructions unconditionally.
//! They are private to the crate for that reason, and constructed only by `load`.

/// A vector of `N` lanes of `u8`.
pub(crate) trait Lanes: Copy {
    /// Lanes per vector.
    const N: usize;
    /// The `N` bytes of `src` from `at`.
    ///
    /// # Safety
    /// `at + N <= src.len()` (checked only in debug builds: the kernel checks its ranges
    /// once per pass, not once per vector).
    unsafe fn load(src: &[u8], at: usize) -> Self;
    /// Writes the lanes to the `N` bytes of `dst` from `at`.
    ///
    /// # Safety
    /// `at + N <= dst.len()`, as for `load`.
    unsafe fn store(self, dst: &mut [u8], at: usize);
    fn min(self, other: Self) -> Self;
    fn max(self, other: Self) -> Self;
}

impl Lanes for u8 {
    const N: usize = 1;
    #[inline(always)]
    unsafe fn load(src: &[u8], at: usize) -> u8 {
        debug_assert!(at < src.len());
        // SAFETY: `at < src.len()` (the caller's contract).
        unsafe { *src.get_unchecked(at) }
    }
    #[inline(always)]
    unsafe fn store(self, dst: &mut [u8], at: usize) {
        debug_assert!(at < dst.len());
        // SAFETY: `at < dst.len()` (the caller's contract).
        unsafe { *dst.get_unchecked_mut(at) = self }
    }
    #[inline(always)]
    fn min(self, other: u8) -> u8 {
        Ord::min(self, other)
    }
    #[inline(always)]
    fn max(self, other: u8) -> u8 {
        Ord::max(self, other)
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{Avx2, Avx512};

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::Lanes;

    /// 32 lanes in an AVX2 register. Exists only where AVX2 was detected (module doc).
    #[derive(Clone, Copy)]
    pub(crate) struct Avx2(__m256i);

    impl Lanes for Avx2 {
        const N: usize = 32;
        #[inline(always)]
        unsafe fn load(src: &[u8], at: usize) -> Avx2 {
            debug_assert!(at + 32 <= src.len());
            // SAFETY: 32 bytes from `at` are readable (the caller's contract); unaligned
            // load. AVX2 is present: this runs only inside `median5`'s paths for it, after
            // detection.
            Avx2(unsafe { _mm256_loadu_si256(src.as_ptr().add(at).cast()) })
        }
        #[inline(always)]
        unsafe fn store(self, dst: &mut [u8], at: usize) {
            debug_assert!(at + 32 <= dst.len());
            // SAFETY: 32 bytes from `at` are writable (the caller's contract); AVX2 is
            // present (as in `load`).
            unsafe { _mm256_storeu_si256(dst.as_mut_ptr().add(at).cast(), self.0) }
        }
        #[inline(always)]
        fn min(self, other: Avx2) -> Avx2 {
            // SAFETY: AVX2 is present: a value of this type exists only after detection.
            Avx2(unsafe { _mm256_min_epu8(self.0, other.0) })
        }
        #[inline(always)]
        fn max(self, other: Avx2) -> Avx2 {
            // SAFETY: as in `min`.
            Avx2(unsafe { _mm256_max_epu8(self.0, other.0) })
        }
    }

    /// 64 lanes in an AVX-512 register. Exists only where AVX-512F and BW were detected.
    #[derive(Clone, Copy)]
    pub(crate) struct Avx512(__m512i);

    impl Lanes for Avx512 {
        const N: usize = 64;
        #[inline(always)]
        unsafe fn load(src: &[u8], at: usize) -> Avx512 {
            debug_assert!(at + 64 <= src.len());
            // SAFETY: 64 bytes from `at` are readable (the caller's contract); unaligned
            // load. AVX-512F is present: this runs only inside `median5`'s paths for it, after
            // detection.
            Avx512(unsafe { _mm512_loadu_si512(src.as_ptr().add(at).cast()) })
        }
        #[inline(always)]
        unsafe fn store(self, dst: &mut [u8], at: usize) {
            debug_assert!(at + 64 <= dst.len());
            // SAFETY: 64 bytes from `at` are writable (the caller's contract); AVX-512F is
            // present (as in `load`).
            unsafe { _mm512_storeu_si512(dst.as_mut_ptr().add(at).cast(), self.0) }
        }
        #[inline(always)]
        fn min(self, other: Avx512) -> Avx512 {
            // SAFETY: AVX-512BW is present: a value of this type exists only after detection.
            Avx512(unsafe { _mm512_min_epu8(self.0, other.0) })
        }
        #[inline(always)]
        fn max(self, other: Avx512) -> Avx512 {
            // SAFETY: as in `min`.
            Avx512(unsafe { _mm512_max_epu8(self.0, other.0) })
        }
    }
}
