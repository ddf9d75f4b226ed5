//! Recycling of large bulk buffers.
//!
//! Freshly allocated large vectors come from `mmap`: the first write to each page faults, and
//! freeing them unmaps the pages again. A stream of megabyte tokens would pay that on every
//! token, on both ranks. Instead, a dropped [`Bulk`](crate::Bulk) of at least `MIN_BYTES`
//! returns its vector here, and the transport (or [`Bulk::recycled`](crate::Bulk::recycled))
//! takes vectors of the same type back out: the smallest free one that holds the length
//! asked for, up to twice that, so that tokens that shrink from one step to the next (an LU
//! factorization's panels) reuse each other's pages. The pool holds at most `MAX_BYTES`,
//! and no buffer over `MAX_ONE`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use crate::bulk_vec::BulkVec;

/// Smaller buffers are left to the allocator, which recycles them well.
pub(crate) const MIN_BYTES: usize = 64 * 1024;
/// Bytes the pool may hold; buffers beyond it are freed.
const MAX_BYTES: usize = 512 << 20;
/// Larger buffers go back to the allocator: kept, one would push out everything else (a
/// thread's whole matrix when it is reloaded, say, against the smaller tokens in flight).
const MAX_ONE: usize = MAX_BYTES / 4;
/// A free buffer serves requests down to 1 / `MAX_WASTE` of its capacity.
const MAX_WASTE: usize = 2;

/// Free vectors by element type, then by capacity (elements).
#[derive(Default)]
struct Pool {
    free: HashMap<u8, BTreeMap<usize, Vec<BulkVec>>>,
    bytes: usize,
}

impl Pool {
    /// Removes one vector of `kind` with capacity `cap` (which must be there).
    fn remove(&mut self, kind: u8, cap: usize) -> BulkVec {
        let by_cap = self.free.get_mut(&kind).expect("a kind in the pool");
        let list = by_cap.get_mut(&cap).expect("a capacity in the pool");
        let v = list.pop().expect("lists in the pool are not empty");
        if list.is_empty() {
            by_cap.remove(&cap);
        }
        self.bytes -= v.capacity_bytes();
        v
    }
}

static POOL: Mutex<Option<Pool>> = Mutex::new(None);

/// Returns a vector to the pool. When the pool is full, buffers of other sizes are freed to
/// make room (the sizes in use change as a program moves on); if that is not enough, `v` is.
pub(crate) fn put(v: BulkVec) {
    let (kind, cap, bytes) = (v.kind(), v.capacity(), v.capacity_bytes());
    if !(MIN_BYTES..=MAX_ONE).contains(&bytes) {
        return;
    }
    let mut guard = POOL.lock().unwrap_or_else(|p| p.into_inner());
    let pool = guard.get_or_insert_with(Pool::default);
    while pool.bytes + bytes > MAX_BYTES {
        let other =
            pool.free.iter().find_map(|(&k, by_cap)| by_cap.keys().find(|&&c| (k, c) != (kind, cap)).map(|&c| (k, c)));
        let Some((k, c)) = other else { return };
        pool.remove(k, c);
    }
    pool.bytes += bytes;
    pool.free.entry(kind).or_default().entry(cap).or_default().push(v);
}

/// Takes a vector of `len` elements of type `kind` (`bytes` long), with unspecified contents,
/// if one is free.
pub(crate) fn take(kind: u8, len: usize, bytes: usize) -> Option<BulkVec> {
    if bytes < MIN_BYTES {
        return None;
    }
    let mut guard = POOL.lock().unwrap_or_else(|p| p.into_inner());
    let pool = guard.as_mut()?;
    let cap = *pool.free.get(&kind)?.range(len..=len.saturating_mul(MAX_WASTE)).next()?.0;
    let mut v = pool.remove(kind, cap);
    v.fit(len);
    Some(v)
}

/// A vector of `count` elements of the type tagged `kind`: a recycled one if one is free (its
/// contents are then unspecified), else zeroed; `None` if `kind` is no element type.
pub(crate) fn alloc(kind: u8, count: usize) -> Option<BulkVec> {
    let bytes = count * BulkVec::elem_size(kind)?;
    take(kind, count, bytes).or_else(|| BulkVec::zeroed(kind, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Held by the tests that fill the pool: filling it evicts the other tests' buffers.
    static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn recycles_by_type_and_length_and_evicts_other_sizes_when_full() {
        let _alone = ALONE.lock().unwrap_or_else(|p| p.into_inner());
        let mb = 1 << 20;
        put(BulkVec::U8(vec![7; mb]));
        assert!(take(8, mb / 8, mb).is_none(), "another element type is not a match");
        let BulkVec::U8(v) = take(1, mb, mb).unwrap() else { panic!("wrong kind") };
        assert_eq!(v[0], 7, "the same buffer comes back");
        // Fill the pool with 1 MiB buffers, then return larger ones: the small ones make room.
        for _ in 0..MAX_BYTES / mb {
            put(BulkVec::U8(vec![0; mb]));
        }
        let big = 64 * mb;
        put(BulkVec::U8(vec![0; big]));
        assert!(take(1, big, big).is_some());
    }

    #[test]
    fn a_shorter_request_takes_the_smallest_buffer_that_holds_it_up_to_twice_its_length() {
        let _alone = ALONE.lock().unwrap_or_else(|p| p.into_inner());
        let mb = 1 << 20; // i32 elements: this test's own kind (5), untouched by the others
        put(BulkVec::I32(vec![3; 3 * mb]));
        put(BulkVec::I32(vec![2; 2 * mb]));
        assert!(take(5, mb - 1, 4 * (mb - 1)).is_none(), "no buffer within twice the length");
        let BulkVec::I32(v) = take(5, 2 * mb - 1, 8 * mb - 4).unwrap() else { panic!("wrong kind") };
        assert_eq!((v.len(), v[0]), (2 * mb - 1, 2), "the smallest that holds it, cut to length");
        put(BulkVec::I32(v));
        let BulkVec::I32(v) = take(5, 2 * mb, 8 * mb).unwrap() else { panic!("wrong kind") };
        assert_eq!((v.len(), v[2 * mb - 1]), (2 * mb, 0), "grown back within its capacity, the new element zeroed");
        let BulkVec::I32(v) = take(5, 3 * mb, 12 * mb).unwrap() else { panic!("wrong kind") };
        assert_eq!(v[0], 3);
    }
}
