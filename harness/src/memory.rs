//! Memory before work: a run whose data cannot fit in this node's memory is refused with
//! the figures, instead of dying half-way with "memory allocation failed" and a backtrace.
//!
//! Callers compute their needs from the options with saturating arithmetic (a size that
//! overflows `u64` needs more memory than any machine has).

use std::path::Path;

use crate::BadInput;

/// The bytes this node can still give: `MemAvailable` of `/proc/meminfo`, lowered to the
/// cgroup's limit when one is set; `None` where neither can be read.
pub fn available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let available = meminfo.as_deref().and_then(|text| {
        let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib.saturating_mul(1024))
    });
    let read = |file: &str| std::fs::read_to_string(Path::new("/sys/fs/cgroup").join(file)).ok();
    let cgroup = match (read("memory.max"), read("memory.current")) {
        (Some(max), Some(current)) => match (max.trim().parse::<u64>(), current.trim().parse::<u64>()) {
            (Ok(max), Ok(current)) => Some(max.saturating_sub(current)),
            _ => None, // "max": no limit
        },
        _ => None,
    };
    match (available, cgroup) {
        (Some(a), Some(c)) => Some(a.min(c)),
        (a, c) => a.or(c),
    }
}

/// The ranks the launcher started on this node (1 for a plain process).
pub fn ranks_on_this_node() -> u64 {
    ["OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"]
        .iter()
        .find_map(|var| std::env::var(var).ok()?.parse().ok())
        .unwrap_or(1)
}

/// Set (to anything), [`check_memory`] prints each estimate it checks on standard error,
/// starting with [`REPORT_PREFIX`]: the tests hold the estimates against measured peaks.
pub const REPORT_VAR: &str = "DPS_REPORT_MEMORY";

/// How [`REPORT_VAR`]'s lines start: `dps memory estimate: <bytes> B for <what>`.
pub const REPORT_PREFIX: &str = "dps memory estimate: ";

/// The last estimate [`check_memory`] printed under [`REPORT_VAR`] in `stderr`, bytes.
pub fn reported_estimate(stderr: &str) -> Option<u64> {
    let line = stderr.lines().rev().find_map(|l| l.strip_prefix(REPORT_PREFIX))?;
    line.split_whitespace().next()?.parse().ok()
}

/// Refuses the run ([`BadInput`]) when the ranks on this node need more than it has
/// available: rank 0 needs `rank0` bytes, every other rank `other`. `what` names the
/// options that set the size, e.g. `"--n 100000"`.
///
/// # Errors
/// A [`BadInput`] with the need, the ranks and the memory available.
pub fn check_memory(what: &str, rank0: u64, other: u64) -> anyhow::Result<()> {
    let ranks = ranks_on_this_node().max(1);
    let is_rank0 = crate::launch_rank().unwrap_or(0) == 0;
    let need =
        if is_rank0 { rank0.saturating_add(other.saturating_mul(ranks - 1)) } else { other.saturating_mul(ranks) };
    if std::env::var_os(REPORT_VAR).is_some() {
        eprintln!("{REPORT_PREFIX}{need} B for {what}");
    }
    let Some(available) = available_bytes() else { return Ok(()) };
    if need > available {
        let per_rank = if ranks == 1 || rank0 == other {
            format!("{} per rank", format_bytes(other.max(rank0)))
        } else {
            format!("{} on rank 0 and {} on each other rank", format_bytes(rank0), format_bytes(other))
        };
        return Err(BadInput::new(format!(
            "{what} needs {} of memory on this node ({per_rank}, {ranks} rank{} here), but it has {} available",
            format_bytes(need),
            if ranks == 1 { "" } else { "s" },
            format_bytes(available)
        ))
        .into());
    }
    Ok(())
}

/// `bytes` in the largest binary unit that keeps it at least 1: "1.5 GiB", "32 KiB", "512 B".
pub fn format_bytes(bytes: u64) -> String {
    if bytes == u64::MAX {
        return "more than 16 EiB".to_string();
    }
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < units.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else if value.fract() == 0.0 {
        format!("{value} {}", units[unit])
    } else {
        format!("{value:.1} {}", units[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_sizes() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(3 << 29), "1.5 GiB");
        assert_eq!(format_bytes(32 * 1024), "32 KiB");
        assert_eq!(format_bytes(u64::MAX), "more than 16 EiB");
    }

    #[test]
    fn refuses_what_cannot_fit_and_accepts_what_can() {
        let e = check_memory("--n 10000000", u64::MAX, 0).unwrap_err();
        assert!(e.is::<BadInput>());
        let text = e.to_string();
        assert!(text.starts_with("--n 10000000 needs more than 16 EiB"), "{text}");
        assert!(text.contains("available"), "{text}");
        check_memory("--n 10", 800, 800).unwrap();
        assert!(available_bytes().is_some_and(|b| b > 0));
    }
}
