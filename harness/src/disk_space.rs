//! Disk space before writing: a large output that cannot fit on its file system is refused
//! with the figures before any of it is written, instead of failing half-way with a
//! truncated file (a paper-scale Radiocontrol data set is 86 GB).

use std::path::Path;

use crate::{format_bytes, BadInput};

/// The bytes an unprivileged writer can still put on the file system holding `dir`
/// (`statvfs`: available blocks × fragment size); `None` where it cannot be read.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    let stat = rustix::fs::statvfs(dir).ok()?;
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// Refuses (bad input) to write `need` bytes of `what` into `dir` when its file system has
/// less free; `reclaimed` bytes of old files the write replaces count as free.
///
/// # Errors
/// A [`BadInput`] with both figures.
pub fn check_disk_space(what: &str, dir: &Path, need: u64, reclaimed: u64) -> anyhow::Result<()> {
    let Some(free) = free_bytes(dir) else { return Ok(()) };
    let room = free.saturating_add(reclaimed);
    if need > room {
        return Err(BadInput::new(format!(
            "{what} needs {} of disk space in {}, but its file system has {} free",
            format_bytes(need),
            dir.display(),
            format_bytes(room)
        ))
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_than_the_file_system_holds_is_refused_with_the_figures() {
        let dir = tempfile::tempdir().unwrap();
        let free = free_bytes(dir.path()).expect("statvfs works on a temporary directory");
        assert!(check_disk_space("the test", dir.path(), free / 2, 0).is_ok());
        let e = check_disk_space("the test", dir.path(), u64::MAX, 0).unwrap_err();
        assert!(e.downcast_ref::<BadInput>().is_some(), "{e}");
        let e = e.to_string();
        assert!(e.contains("the test needs") && e.contains("free"), "{e}");
    }
}
