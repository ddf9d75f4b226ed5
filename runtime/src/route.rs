//! Routing: which thread of the next collection receives a token.
//!
//! A [`Route`] maps a token to a thread index in `0..cx.threads`. It runs on the thread that
//! produced the token, so routing never costs a message. Routes never drop or duplicate
//! tokens; an index out of range ends the job with an error naming the operation.

use std::sync::atomic::{AtomicUsize, Ordering};

/// What a route may look at besides the token.
#[derive(Clone, Copy, Debug)]
pub struct RouteCtx {
    /// Number of threads in the target collection.
    pub threads: usize,
    /// The flow-control slot of the innermost split instance this token belongs to, if the
    /// split has a window. Slot `s` is reused only after its previous token was merged.
    pub slot: Option<usize>,
}

/// Chooses the thread that receives a token.
///
/// Closures `Fn(&T, &RouteCtx) -> usize` are routes:
/// ```
/// use dps::{Route, RouteCtx};
/// let by_position = |t: &(char, usize), cx: &RouteCtx| t.1 % cx.threads;
/// assert_eq!(by_position.route(&('a', 5), &RouteCtx { threads: 2, slot: None }), 1);
/// ```
pub trait Route<T>: Send + Sync + 'static {
    /// Returns the index of the target thread, in `0..cx.threads`.
    fn route(&self, token: &T, cx: &RouteCtx) -> usize;
}

impl<T, F: Fn(&T, &RouteCtx) -> usize + Send + Sync + 'static> Route<T> for F {
    fn route(&self, token: &T, cx: &RouteCtx) -> usize {
        self(token, cx)
    }
}

/// Always the same thread.
#[derive(Debug, Clone, Copy)]
pub struct Fixed(pub usize);

impl<T> Route<T> for Fixed {
    fn route(&self, _: &T, _: &RouteCtx) -> usize {
        self.0
    }
}

/// Always thread `index`.
pub fn fixed(index: usize) -> Fixed {
    Fixed(index)
}

/// Threads in turn (per producing rank).
#[derive(Debug, Default)]
pub struct RoundRobin(AtomicUsize);

impl<T> Route<T> for RoundRobin {
    fn route(&self, _: &T, cx: &RouteCtx) -> usize {
        self.0.fetch_add(1, Ordering::Relaxed) % cx.threads
    }
}

/// Threads in turn.
pub fn round_robin() -> RoundRobin {
    RoundRobin::default()
}

/// `key(token) % threads`: tokens with equal keys meet on the same thread.
pub fn by_key<T, K: Fn(&T) -> usize + Send + Sync + 'static>(key: K) -> impl Route<T> {
    move |t: &T, cx: &RouteCtx| key(t) % cx.threads
}

/// Load-balanced routing (the thesis's `Slave[cap_fcindex0 % N]`): the token goes to thread
/// `slot % threads`, where `slot` is its flow-control slot. A slot is freed when its token is
/// merged, so the next token goes to the thread that just returned one. Give the split a
/// window that is a small multiple of the thread count (2-3 tokens per thread).
/// Outside a windowed split it falls back to round robin.
#[derive(Debug, Default)]
pub struct LoadBalanced(RoundRobin);

impl<T> Route<T> for LoadBalanced {
    fn route(&self, t: &T, cx: &RouteCtx) -> usize {
        match cx.slot {
            Some(s) => s % cx.threads,
            None => self.0.route(t, cx),
        }
    }
}

/// See [`LoadBalanced`].
pub fn load_balanced() -> LoadBalanced {
    LoadBalanced::default()
}
