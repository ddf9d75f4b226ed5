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
    /// The first `N` bytes of `src`. Panics if it is shorter.
    fn load(src: &[u8]) -> Self;
    /// Writes the lanes to the first `N` bytes of `dst`. Panics if it is shorter.
    fn store(self, dst: &mut [u8]);
    fn min(self, other: Self) -> Self;
    fn max(self, other: Self) -> Self;
}

impl Lanes for u8 {
    const N: usize = 1;
    #[inline(always)]
    fn load(src: &[u8]) -> u8 {
        src[0]
    }
    #[inline(always)]
    fn store(self, dst: &mut [u8]) {
        dst[0] = self;
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
        fn load(src: &[u8]) -> Avx2 {
            assert!(src.len() >= 32);
            // SAFETY: 32 bytes are readable (checked); unaligned load. AVX2 is present: this
            // runs only inside `median5`'s AVX2 or AVX-512 path, after detection.
            Avx2(unsafe { _mm256_loadu_si256(src.as_ptr().cast()) })
        }
        #[inline(always)]
        fn store(self, dst: &mut [u8]) {
            assert!(dst.len() >= 32);
            // SAFETY: 32 bytes are writable (checked); AVX2 is present (as in `load`).
            unsafe { _mm256_storeu_si256(dst.as_mut_ptr().cast(), self.0) }
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
        fn load(src: &[u8]) -> Avx512 {
            assert!(src.len() >= 64);
            // SAFETY: 64 bytes are readable (checked); unaligned load. AVX-512F is present:
            // this runs only inside `median5`'s AVX-512 path, after detection.
            Avx512(unsafe { _mm512_loadu_si512(src.as_ptr().cast()) })
        }
        #[inline(always)]
        fn store(self, dst: &mut [u8]) {
            assert!(dst.len() >= 64);
            // SAFETY: 64 bytes are writable (checked); AVX-512F is present (as in `load`).
            unsafe { _mm512_storeu_si512(dst.as_mut_ptr().cast(), self.0) }
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
