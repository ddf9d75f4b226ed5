//! Large operands on transparent huge pages (2 MiB). BLAS on an operand whose columns lie far
//! apart (a column block of n = 8192 rows: 64 KiB from one column to the next) misses the
//! TLB at nearly every column with 4 KiB pages: one core made 64-67 GFLOP/s of MKL's dgemm
//! 7680 × 3584 × 512 on them and 80-86 on huge pages, and the row interchanges of an LU
//! update ran 25-35 % faster. Debian's default (`enabled = madvise`) backs only the memory
//! that asks for them, and only where it asks before the pages are first touched: so the
//! dense apps ask at allocation, through [`HugePages`], their global allocator.

use std::alloc::{GlobalAlloc, Layout, System};

/// Allocations from this size on ask for huge pages: smaller ones cannot hold a whole one.
pub const MIN_BYTES: usize = 2 << 20;

/// The system allocator, asking for transparent huge pages for every allocation of at least
/// [`MIN_BYTES`]. Install it in a binary with
/// `#[global_allocator] static ALLOC: dps_dense::huge::HugePages = dps_dense::huge::HugePages;`.
#[derive(Debug, Clone, Copy, Default)]
pub struct HugePages;

// SAFETY: every call goes to `System` unchanged; `advise` only changes how pages are backed.
unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        advise(unsafe { System.alloc(layout) }, layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        advise(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        advise(unsafe { System.realloc(ptr, layout, new_size) }, new_size)
    }
}

/// The kernel's transparent huge pages mode: `madvise` (Debian's default: memory that asks),
/// `always`, `never`, or `unavailable` (no such kernel feature here).
pub fn mode() -> String {
    let enabled = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    let chosen = enabled.split_whitespace().find(|w| w.starts_with('['));
    chosen.map_or("unavailable".into(), |w| w.trim_matches(|c| c == '[' || c == ']').to_string())
}

/// Asks for huge pages for the whole pages of the `bytes` at `ptr` if there are at least
/// [`MIN_BYTES`] of them; returns `ptr`. Pages already touched keep their backing; a kernel
/// without transparent huge pages refuses, which changes nothing.
fn advise(ptr: *mut u8, bytes: usize) -> *mut u8 {
    const PAGE: usize = 4096;
    if ptr.is_null() || bytes < MIN_BYTES {
        return ptr;
    }
    let start = (ptr as usize).next_multiple_of(PAGE);
    let end = (ptr as usize + bytes) / PAGE * PAGE;
    // SAFETY: [start, end) lies inside the allocation at `ptr`; MADV_HUGEPAGE changes only
    // how its pages are backed, never their contents.
    unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    ptr
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Large and small allocations through it hold and keep their contents, zeroed ones
    /// come zeroed, and a reallocation keeps the prefix.
    #[test]
    fn allocations_through_it_behave_as_the_systems() {
        for size in [64, MIN_BYTES - 8, MIN_BYTES, 3 * MIN_BYTES + 24] {
            let layout = Layout::from_size_align(size, 8).unwrap();
            // SAFETY: non-zero sizes; each pointer is freed once with its layout.
            unsafe {
                let z = HugePages.alloc_zeroed(layout);
                assert!(!z.is_null() && std::slice::from_raw_parts(z, size).iter().all(|&b| b == 0));
                HugePages.dealloc(z, layout);
                let p = HugePages.alloc(layout);
                std::slice::from_raw_parts_mut(p, size).iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
                let q = HugePages.realloc(p, layout, 2 * size);
                assert!(std::slice::from_raw_parts(q, size).iter().enumerate().all(|(i, &b)| b == i as u8), "{size}");
                HugePages.dealloc(q, Layout::from_size_align(2 * size, 8).unwrap());
            }
        }
    }

    /// On a kernel that offers them on request, a large allocation touched after it was made
    /// is backed by huge pages (the process's AnonHugePages grows by at least one).
    #[test]
    fn a_large_allocation_gets_huge_pages_where_the_kernel_offers_them() {
        if !["madvise", "always"].contains(&mode().as_str()) {
            eprintln!("skipped: transparent huge pages are {} here", mode());
            return;
        }
        let huge_kib = || {
            let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").expect("smaps_rollup");
            let line = rollup.lines().find(|l| l.starts_with("AnonHugePages:")).expect("an AnonHugePages line");
            line.split_whitespace().nth(1).and_then(|v| v.parse::<usize>().ok()).expect("a size in kB")
        };
        let before = huge_kib();
        let len = 64 * MIN_BYTES;
        let layout = Layout::from_size_align(len, 8).unwrap();
        // SAFETY: non-zero size, freed once with its layout.
        unsafe {
            let p = HugePages.alloc(layout);
            std::ptr::write_bytes(p, 1, len);
            let after = huge_kib();
            HugePages.dealloc(p, layout);
            assert!(after >= before + 2048, "AnonHugePages {before} kB -> {after} kB for {len} bytes touched");
        }
    }
}
