//! Recycling of large bulk buffers.
//!
//! Freshly allocated large vectors come from `mmap`: the first write to each page faults, and
//! freeing them unmaps the pages again. A stream of megabyte tokens would pay that on every
//! token, on both ranks. Instead, a dropped [`Bulk`](crate::Bulk) of at least `MIN_BYTES`
//! returns its vector here, and the transport (or [`Bulk::recycled`](crate::Bulk::recycled))
//! takes vectors of the same type and length back out. The pool holds at most `MAX_BYTES`.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::bulk_vec::BulkVec;

/// Smaller buffers are left to the allocator, which recycles them well.
pub(crate) const MIN_BYTES: usize = 64 * 1024;
/// Bytes the pool may hold; buffers beyond it are freed.
const MAX_BYTES: usize = 256 << 20;

#[derive(Default)]
struct Pool {
    free: HashMap<(u8, usize), Vec<BulkVec>>,
    bytes: usize,
}

static POOL: Mutex<Option<Pool>> = Mutex::new(None);

/// Returns a vector to the pool. When the pool is full, buffers of other sizes are freed to
/// make room (the sizes in use change as a program moves on); if that is not enough, `v` is.
pub(crate) fn put(kind: u8, len: usize, bytes: usize, v: BulkVec) {
    if bytes > MAX_BYTES {
        return;
    }
    let mut guard = POOL.lock().unwrap_or_else(|p| p.into_inner());
    let pool = guard.get_or_insert_with(Pool::default);
    while pool.bytes + bytes > MAX_BYTES {
        let Some(key) = pool.free.keys().find(|k| **k != (kind, len)).copied() else { return };
        let list = pool.free.get_mut(&key).unwrap();
        let evicted = list.pop().unwrap();
        pool.bytes -= evicted.byte_len();
        if list.is_empty() {
            pool.free.remove(&key);
        }
    }
    pool.bytes += bytes;
    pool.free.entry((kind, len)).or_default().push(v);
}

/// Takes a vector of `len` elements of type `kind`, with unspecified contents, if one is free.
pub(crate) fn take(kind: u8, len: usize, bytes: usize) -> Option<BulkVec> {
    if bytes < MIN_BYTES {
        return None;
    }
    let mut pool = POOL.lock().unwrap_or_else(|p| p.into_inner());
    let pool = pool.as_mut()?;
    let list = pool.free.get_mut(&(kind, len))?;
    let v = list.pop()?;
    if list.is_empty() {
        pool.free.remove(&(kind, len));
    }
    pool.bytes -= bytes;
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

    #[test]
    fn recycles_by_type_and_length_and_evicts_other_sizes_when_full() {
        let mb = 1 << 20;
        put(1, mb, mb, BulkVec::U8(vec![7; mb]));
        assert!(take(8, mb / 8, mb).is_none(), "another element type is not a match");
        let BulkVec::U8(v) = take(1, mb, mb).unwrap() else { panic!("wrong kind") };
        assert_eq!(v[0], 7, "the same buffer comes back");
        // Fill the pool with 1 MiB buffers, then return larger ones: the small ones make room.
        for _ in 0..MAX_BYTES / mb {
            put(1, mb, mb, BulkVec::U8(vec![0; mb]));
        }
        let big = 64 * mb;
        put(1, big, big, BulkVec::U8(vec![0; big]));
        assert!(take(1, big, big).is_some());
    }
}
