//! Thread collections: named sets of threads, each with its own user state, mapped onto ranks.

use std::marker::PhantomData;
use std::sync::Arc;

/// What every rank knows about a collection.
#[derive(Debug)]
pub(crate) struct CollInfo {
    pub(crate) id: usize,
    pub(crate) name: String,
    pub(crate) mapping: String,
    /// Rank of each thread.
    pub(crate) ranks: Vec<usize>,
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

    /// The rank hosting thread `index`.
    pub fn rank_of(&self, index: usize) -> usize {
        self.info.ranks[index]
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
