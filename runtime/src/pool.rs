//! Recycling of large bulk buffers.
//!
//! Freshly allocated large vectors come from `mmap`: the first write to each page faults, and
//! freeing them unmaps the pages again. A stream of megabyte tokens would pay that on every
//! token, on both ranks. Instead, a dropped [`Bulk`](crate::Bulk) of at least `MIN_BYTES`
//! returns its vector here, and the transport (or [`Bulk::recycled`](crate::Bulk::recycled))
//! takes vectors of the same type and length back out. The pool holds at most `MAX_BYTES`.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::token::BulkVec;

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

/// Returns a vector to the pool (or frees it if the pool is full).
pub(crate) fn put(kind: u8, len: usize, bytes: usize, v: BulkVec) {
    let mut pool = POOL.lock().unwrap_or_else(|p| p.into_inner());
    let pool = pool.get_or_insert_with(Pool::default);
    if pool.bytes + bytes <= MAX_BYTES {
        pool.bytes += bytes;
        pool.free.entry((kind, len)).or_default().push(v);
    }
}

/// Takes a vector of `len` elements of type `kind`, with unspecified contents, if one is free.
pub(crate) fn take(kind: u8, len: usize, bytes: usize) -> Option<BulkVec> {
    if bytes < MIN_BYTES {
        return None;
    }
    let mut pool = POOL.lock().unwrap_or_else(|p| p.into_inner());
    let v = pool.as_mut()?.free.get_mut(&(kind, len))?.pop()?;
    pool.as_mut().unwrap().bytes -= bytes;
    Some(v)
}
