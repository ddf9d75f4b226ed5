//! Transports move encoded frames between ranks. The engine sees only this trait.

pub(crate) mod mpi;
pub(crate) mod watchdog;

use crate::wire::WireToken;

pub(crate) trait Transport: Send + Sync {
    /// Queues a frame (encoded header plus optional token) for `dest`. Never blocks.
    fn send(&self, dest: usize, header: Vec<u8>, token: Option<WireToken>);
    /// Completes every queued send, waits until all ranks got here, and stops.
    fn finish(&self);
    /// Ends a wait of the progress thread at once: a worker went idle while it dozed.
    fn wake(&self);
}
