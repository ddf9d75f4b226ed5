//! Thread collections: named sets of threads, each with its own user state, mapped onto ranks.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What every rank knows about a collection.
#[derive(Debug)]
pub(crate) struct CollInfo {
    pub(crate) id: usize,
    pub(crate) name: String,
    pub(crate) mapping: String,
    /// Rank of each thread when the collection was created.
    pub(crate) ranks: Vec<usize>,
    /// Where this rank believes each thread lives now: `epoch << 32 | rank`, where `epoch`
    /// counts the thread's moves (see `engine::migration`); a view is only replaced by a
    /// newer one.
    owners: Vec<AtomicU64>,
}

impl CollInfo {
    pub(crate) fn new(id: usize, name: String, mapping: String, ranks: Vec<usize>) -> Self {
        let owners = ranks.iter().map(|&r| AtomicU64::new(r as u64)).collect();
        CollInfo { id, name, mapping, ranks, owners }
    }

    /// The rank this rank believes hosts thread `index` (a stale belief is corrected by
    /// forwarding: see `engine::migration`).
    pub(crate) fn rank_of(&self, index: usize) -> usize {
        (self.owners[index].load(Ordering::Acquire) & u64::from(u32::MAX)) as usize
    }

    /// Records that thread `index` lives on `rank` since its move number `epoch`, unless a
    /// newer move is already known.
    pub(crate) fn relocate(&self, index: usize, rank: usize, epoch: u32) {
        let new = (u64::from(epoch) << 32) | rank as u64;
        let _ = self.owners[index]
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |old| ((old >> 32) < u64::from(epoch)).then_some(new));
    }
}

/// A collection of threads whose state has type `S`. Create one with
/// [`Runtime::collection`](crate::Runtime::collection); the handle is cheap to clone.
pub struct Collection<S> {
    pub(crate) info: Arc<CollInfo>,
    _state: PhantomData<fn(S)>,
}

impl<S> Collection<S> {
    pub(crate) fn new(info: Arc<CollInfo>) -> Self {
        Collection { info, _state: PhantomData }
    }

    /// Number of threads.
    pub fn len(&self) -> usize {
        self.info.ranks.len()
    }

    /// Always false: a collection has at least one thread.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The rank hosting thread `index`, as far as this rank knows: threads of a movable
    /// collection may have moved since (see [`Runtime::migrate`](crate::Runtime::migrate));
    /// on the rank that moved them it is exact once the move returned.
    pub fn rank_of(&self, index: usize) -> usize {
        self.info.rank_of(index)
    }

    /// The collection's name.
    pub fn name(&self) -> &str {
        &self.info.name
    }
}

impl<S> Clone for Collection<S> {
    fn clone(&self) -> Self {
        Collection::new(self.info.clone())
    }
}

impl<S> std::fmt::Debug for Collection<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Collection({:?}: \"{}\")", self.info.name, self.info.mapping)
    }
}
