//! Pinning a rank's threads to its share of the node's cores (`--bind cores`, `DPS_BIND=cores`),
//! or only where the node's ranks match its cores one to one (`--bind auto`).
//!
//! The node's cores (those this process may use, as hwloc sees them) are divided among the
//! ranks on the node: local rank `i` of `L` gets the contiguous slice of cores
//! `i*C/L .. (i+1)*C/L` (slices differ by at most one core when `L` does not divide `C`).
//! With fewer cores than ranks every rank still gets one core, shared with the other ranks
//! of its slice: `L = 4` on `C = 2` puts local ranks 0 and 1 on core 0, 2 and 3 on core 1,
//! and the binding's description says so. A core is bound with all its hardware threads.
//!
//! Binding is off by default: Open MPI is told not to bind (`scripts/mpirun`), and the OS
//! then moves threads freely. What is bound: every worker thread and the progress thread,
//! by the code that spawns them ([`Binding::pin`]). The main thread is left alone: it runs
//! the program's own serial work (input, verification), which should not compete with the
//! workers of one rank only.

use std::os::unix::thread::JoinHandleExt;
use std::thread::JoinHandle;

use hwlocality::cpu::binding::CpuBindingFlags;
use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::object::types::ObjectType;
use hwlocality::Topology;

use crate::error::{Error, ErrorKind};

/// Where a rank's threads run: `--bind` on the command line, or `DPS_BIND`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Bind {
    /// No binding: the OS places the threads (the default).
    #[default]
    None,
    /// Each rank's workers and progress thread on the rank's share of the node's cores.
    Cores,
    /// As `Cores` where the node has exactly one core per rank on it and no CPU quota
    /// (cgroup) applies; else as `None`. Ranks that share cores, or that leave cores free for
    /// a threaded library, are better left to the OS; a quota (a node of the emulated
    /// cluster, a container) may be shared by nodes that see the same cores.
    Auto,
}

/// The environment variable read when `--bind` is not given.
pub(crate) const BIND_VAR: &str = "DPS_BIND";

impl Bind {
    /// `DPS_BIND` (`cores`, `auto` or `none`); `none` if it is not set.
    ///
    /// # Errors
    /// If it is set to anything else.
    pub(crate) fn from_env() -> Result<Bind, Error> {
        match std::env::var(BIND_VAR) {
            Err(std::env::VarError::NotPresent) => Ok(Bind::None),
            Ok(v) if v.trim() == "none" || v.trim().is_empty() => Ok(Bind::None),
            Ok(v) if v.trim() == "cores" => Ok(Bind::Cores),
            Ok(v) if v.trim() == "auto" => Ok(Bind::Auto),
            Ok(v) => Err(bad_value(&v)),
            Err(std::env::VarError::NotUnicode(v)) => Err(bad_value(&v.to_string_lossy())),
        }
    }
}

fn bad_value(value: &str) -> Error {
    Error::new(
        ErrorKind::Usage,
        format!("{BIND_VAR}={value:?} is not a binding: use {BIND_VAR}=cores (pin each rank's threads to its share of the cores), {BIND_VAR}=auto (the same where the node's ranks match its cores one to one) or {BIND_VAR}=none"),
    )
}

/// The binding a rank uses, decided once at start.
pub(crate) struct Binding {
    /// What [`crate::Runtime::binding`] reports: "none", or the cores and why.
    description: String,
    /// The topology (to bind with) and this rank's processing units; `None`: no binding.
    target: Option<(Topology, CpuSet)>,
}

impl std::fmt::Debug for Binding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Binding({})", self.description)
    }
}

impl Binding {
    /// No binding.
    pub(crate) fn none() -> Binding {
        Binding { description: "none".into(), target: None }
    }

    /// The binding `bind` asks for, for local rank `local_rank` of `local_ranks` on this node.
    ///
    /// # Errors
    /// If hwloc cannot read the machine's topology or finds no core this process may use.
    pub(crate) fn new(bind: Bind, local_rank: usize, local_ranks: usize) -> Result<Binding, Error> {
        if bind == Bind::None {
            return Ok(Binding::none());
        }
        let fail = |what: String| Error::new(ErrorKind::Usage, format!("dps: --bind cores: {what}"));
        let topology = Topology::new().map_err(|e| fail(format!("hwloc cannot read the topology: {e}")))?;
        let allowed = topology.allowed_cpuset().clone_target();
        let cores: Vec<CpuSet> = topology
            .objects_with_type(ObjectType::Core)
            .filter_map(|core| core.cpuset().map(|set| &*set & &allowed))
            .filter(|set| !set.is_empty())
            .collect();
        if cores.is_empty() {
            return Err(fail(format!("hwloc finds no core among the allowed processing units {}", pu_list(&allowed))));
        }
        if bind == Bind::Auto {
            let why = match crate::cpu_quota::limit() {
                Some(quota) => Some(format!("a CPU quota of {quota:.2} cores")),
                None if local_ranks != cores.len() => {
                    let ranks = if local_ranks == 1 { "1 rank".to_string() } else { format!("{local_ranks} ranks") };
                    Some(format!("{ranks} on {} cores", cores.len()))
                }
                None => None,
            };
            if let Some(why) = why {
                return Ok(Binding { description: format!("none (auto: {why})"), target: None });
            }
        }
        let (first, end) = share(local_rank, local_ranks, cores.len());
        let mut set = CpuSet::new();
        for core in &cores[first..end] {
            set |= core;
        }
        let sharing = if local_ranks > cores.len() {
            format!(", {local_ranks} ranks on {} cores: ranks share cores", cores.len())
        } else {
            String::new()
        };
        let description = format!(
            "cores {first}-{} (PUs {}; rank {local_rank} of {local_ranks} on this node{sharing})",
            end - 1,
            pu_list(&set)
        );
        Ok(Binding { description, target: Some((topology, set)) })
    }

    /// "none", or the cores this rank's threads are bound to and why.
    pub(crate) fn describe(&self) -> &str {
        &self.description
    }

    /// Binds the thread of `handle` (just spawned by the caller) to this rank's cores.
    ///
    /// # Panics
    /// If the OS refuses the binding (the job then ends, as on any runtime failure).
    pub(crate) fn pin<T>(&self, handle: &JoinHandle<T>) {
        if let Some((topology, set)) = &self.target {
            let name = handle.thread().name().unwrap_or("a thread");
            topology
                // No target flag: the thread is named by its handle.
                .bind_thread_cpu(handle.as_pthread_t(), set, CpuBindingFlags::empty())
                .unwrap_or_else(|e| panic!("dps: cannot bind {name} to {}: {e}", self.description));
        }
    }
}

/// A set of processing units as the kernel writes it: `0-3,6`.
fn pu_list(set: &CpuSet) -> String {
    // The bitmap's own Display (hwloc's list format); CpuSet's wraps it in `CpuSet(..)`.
    let bitmap: &hwlocality::bitmap::Bitmap = set.as_ref();
    bitmap.to_string()
}

/// The cores `[first, end)` of local rank `i` of `ranks` on a node of `cores` cores: a
/// contiguous slice, at least one core, ranks sharing cores when there are fewer than ranks.
fn share(i: usize, ranks: usize, cores: usize) -> (usize, usize) {
    let first = i * cores / ranks;
    let end = ((i + 1) * cores / ranks).max(first + 1);
    (first, end)
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn shares_are_contiguous_disjoint_and_cover_the_cores() {
        for cores in 1..=9 {
            for ranks in 1..=cores {
                let shares: Vec<_> = (0..ranks).map(|i| share(i, ranks, cores)).collect();
                assert_eq!(shares[0].0, 0);
                assert_eq!(shares[ranks - 1].1, cores);
                for pair in shares.windows(2) {
                    assert_eq!(pair[0].1, pair[1].0, "{ranks} ranks on {cores} cores: {shares:?}");
                }
                let sizes: Vec<_> = shares.iter().map(|(a, b)| b - a).collect();
                assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "{sizes:?}");
            }
        }
    }

    #[test]
    fn more_ranks_than_cores_share_cores_evenly() {
        let shares: Vec<_> = (0..4).map(|i| share(i, 4, 2)).collect();
        assert_eq!(shares, [(0, 1), (0, 1), (1, 2), (1, 2)]);
        let shares: Vec<_> = (0..3).map(|i| share(i, 3, 1)).collect();
        assert_eq!(shares, [(0, 1); 3]);
    }
}
