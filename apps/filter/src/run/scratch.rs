//! The scratch store of `--storage disk`: `BASE/dps-filter-scratch-<job>`, made by rank 0,
//! which holds a lock on its `.lock` file for as long as it runs and removes the directory
//! when dropped (at the end, and on every error path). A store whose owner was killed
//! (its lock released with the process) is removed by the next run in the same base
//! directory.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The prefix of a scratch store's directory name.
const PREFIX: &str = "dps-filter-scratch-";

/// The scratch store's path in `base`, the same on every rank of the job.
pub(super) fn path(base: &Path) -> PathBuf {
    let job = std::env::var("PMIX_NAMESPACE").unwrap_or_else(|_| format!("pid{}", std::process::id()));
    base.join(format!("{PREFIX}{job}"))
}

/// A scratch store made by this process, removed when dropped.
#[derive(Debug)]
pub(super) struct Scratch {
    dir: PathBuf,
    /// Locked for the life of the process (the kernel releases it when the process dies).
    _lock: File,
}

impl Scratch {
    /// Removes the stale scratch stores in `dir`'s parent, then makes `dir` and locks it.
    ///
    /// # Errors
    /// The directory or its lock file cannot be made.
    pub(super) fn create(dir: &Path) -> Result<Scratch> {
        if let Some(base) = dir.parent() {
            remove_stale(base);
        }
        std::fs::create_dir(dir).with_context(|| format!("cannot make the scratch store {}", dir.display()))?;
        let lock = File::create(dir.join(".lock")).and_then(|f| lock(&f, false).map(|()| f));
        match lock {
            Ok(file) => Ok(Scratch { dir: dir.to_path_buf(), _lock: file }),
            Err(e) => {
                let _ = std::fs::remove_dir_all(dir);
                Err(e).with_context(|| format!("cannot lock the scratch store {}", dir.display()))
            }
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Removes every scratch store in `base` whose lock nobody holds (its run was killed).
/// Best effort: a store that cannot be read or removed is left.
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else { return };
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let dir = entry.path();
        // No lock file: being made this instant, or not ours; left alone.
        let Ok(file) = File::open(dir.join(".lock")) else { continue };
        if lock(&file, true).is_ok() {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// An exclusive lock on `file` (`try_only`: fail at once if another process holds it).
fn lock(file: &File, try_only: bool) -> std::io::Result<()> {
    let op = libc::LOCK_EX | if try_only { libc::LOCK_NB } else { 0 };
    // SAFETY: flock on a descriptor this File owns.
    if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
