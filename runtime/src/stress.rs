//! Support for the stress tests of the engine's lock-free protocols (test builds only): random
//! pauses, taken by the protocols' threads between the steps where another thread's steps
//! could fall in, so that the rare interleavings happen in every run.

use std::cell::RefCell;

/// A small xorshift generator: the delays need to vary, not to be good random numbers.
#[derive(Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator seeded by `seed` (made non-zero: xorshift stays at zero).
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    /// Goes on at once, yields the core, or spins for up to a few microseconds.
    pub(crate) fn pause(&mut self) {
        match self.below(4) {
            0 => {}
            1 => std::thread::yield_now(),
            _ => (0..self.below(300)).for_each(|_| std::hint::spin_loop()),
        }
    }
}

thread_local! {
    /// Each thread's own generator, seeded from its id.
    static PAUSES: RefCell<Rng> = RefCell::new(Rng::new({
        use std::hash::{BuildHasher, RandomState};
        RandomState::new().hash_one(std::thread::current().id())
    }));
}

/// A random pause of the calling thread (see [`Rng::pause`]).
pub(crate) fn random_pause() {
    PAUSES.with(|r| r.borrow_mut().pause());
}
