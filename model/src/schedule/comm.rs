//! The cost of a redistribution phase, τ_comm(n, p) (the scheduling paper §3.3): `n` bytes
//! exchanged all-to-all among `p` processors, each sending p − 1 messages of n/p² bytes over
//! a link of latency `l` and bandwidth `b` from the platform file:
//! τ_comm(n, p) = (p − 1)·(l + n/(p²·b)), and 0 for p = 1 or n = 0.

use crate::platform::{Carrier, PathKind, Platform};

/// A link's latency and bandwidth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Comm {
    /// Seconds per message.
    pub latency_s: f64,
    /// Bytes per second.
    pub bytes_per_s: f64,
}

impl Comm {
    /// No communication cost (no platform file).
    pub const FREE: Comm = Comm { latency_s: 0.0, bytes_per_s: f64::INFINITY };

    /// The DPS link of the platform file, inter-node if measured, else intra-node (its
    /// first fitted segment: small messages' latency, and the bandwidth of the largest).
    pub fn from_platform(platform: &Platform) -> Option<Comm> {
        let link = platform
            .link(PathKind::InterNode, Carrier::Dps)
            .or_else(|| platform.link(PathKind::IntraNode, Carrier::Dps))?;
        let first = link.fit.first()?;
        let last = link.fit.last()?;
        Some(Comm { latency_s: first.latency_us * 1e-6, bytes_per_s: last.bytes_per_us * 1e6 })
    }

    /// τ_comm(`bytes`, `p`), seconds.
    pub fn tau(&self, bytes: f64, p: usize) -> f64 {
        if p <= 1 || bytes <= 0.0 {
            return 0.0;
        }
        let p = p as f64;
        (p - 1.0) * (self.latency_s + bytes / (p * p * self.bytes_per_s))
    }
}
