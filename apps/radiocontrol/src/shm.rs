//! Open MPI's shared-memory segments (`/dev/shm/vader_segment.*`, 4 MB each): a killed job
//! leaves them behind. `supervise` removes the ones its failed attempt left, found without
//! the ranks' pids: the segments that appeared while the attempt ran and that no live
//! process maps (a concurrent job's live segments are mapped, so they stay).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where Open MPI puts its segments on Linux.
pub const SHM_DIR: &str = "/dev/shm";

/// File-name prefixes of Open MPI's shared-memory transports (vader, and the older sm).
const PREFIXES: [&str; 2] = ["vader_segment.", "sm_segment."];

/// Open MPI's segments in `dir` now.
pub fn segments(dir: &Path) -> HashSet<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return HashSet::new() };
    entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| PREFIXES.iter().any(|p| n.starts_with(p))))
        .map(|e| e.path())
        .collect()
}

/// Every file some live process maps (from `/proc/*/maps`).
fn mapped_files() -> HashSet<PathBuf> {
    let mut mapped = HashSet::new();
    let Ok(procs) = std::fs::read_dir("/proc") else { return mapped };
    for p in procs.flatten() {
        if !p.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())) {
            continue;
        }
        let Ok(maps) = std::fs::read_to_string(p.path().join("maps")) else { continue };
        mapped.extend(maps.lines().filter_map(|l| l.split_whitespace().nth(5)).map(PathBuf::from));
    }
    mapped
}

/// Removes the segments of `dir` that were not in `before` and that no process maps,
/// waiting up to `patience` for dying ranks to unmap theirs; returns how many it removed.
pub fn remove_orphans(dir: &Path, before: &HashSet<PathBuf>, patience: Duration) -> usize {
    let start = Instant::now();
    let mut removed = 0;
    loop {
        let new: Vec<PathBuf> = segments(dir).into_iter().filter(|s| !before.contains(s)).collect();
        let mapped = mapped_files();
        let (orphans, busy): (Vec<PathBuf>, Vec<PathBuf>) = new.into_iter().partition(|s| !mapped.contains(s));
        removed += orphans.iter().filter(|s| std::fs::remove_file(s).is_ok()).count();
        if busy.is_empty() || start.elapsed() >= patience {
            return removed;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_new_unmapped_segments_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, vec![0u8; 4096]).unwrap();
            p
        };
        let old = file("vader_segment.n1.1a2b.0");
        let before = segments(dir.path());
        let orphan = file("vader_segment.n1.3c4d.0");
        let older_transport = file("sm_segment.n1.3c4d.1");
        let other = file("not_ours.3c4d");
        // A live job's segment: mapped by this process.
        let live = file("vader_segment.n1.5e6f.0");
        let f = std::fs::File::open(&live).unwrap();
        // SAFETY: a private read-only map of a file this test owns, unmapped below.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                std::os::fd::AsRawFd::as_raw_fd(&f),
                0,
            )
        };
        assert_ne!(addr, libc::MAP_FAILED);
        assert_eq!(remove_orphans(dir.path(), &before, Duration::ZERO), 2);
        assert!(old.exists() && other.exists() && live.exists());
        assert!(!orphan.exists() && !older_transport.exists());
        // SAFETY: the map made above.
        unsafe { libc::munmap(addr, 4096) };
    }
}
