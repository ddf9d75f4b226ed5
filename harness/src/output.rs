//! Output files that are checked before the run and never left half-written.
//!
//! [`OutputFile::create`] runs before any work: it opens an unnamed file (Linux's
//! `O_TMPFILE`) in the target's directory, which proves the directory exists and is
//! writable. The program writes into it and [`OutputFile::commit`] flushes and syncs it,
//! links it under a temporary name and renames that over the path, checking every step.
//! Until the commit the file has no name: a run that fails, panics, is aborted by MPI or is
//! killed by mpirun or Slurm leaves nothing behind, and the path keeps whatever it held
//! before. Where the file system has no unnamed files (or `/proc` is not mounted), a named
//! temporary file `.NAME.XXXXXX.partial` stands in, removed on drop but left behind by a
//! killed process. A path that exists and is not a regular file (a device such as
//! `/dev/null` or `/dev/full`, a pipe) is written in place, errors checked.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::BadInput;

/// An output file of the run: see the module documentation.
#[derive(Debug)]
pub struct OutputFile {
    path: PathBuf,
    target: Target,
}

#[derive(Debug)]
enum Target {
    /// An unnamed file in `dir`, named at the commit.
    Unnamed {
        file: File,
        dir: PathBuf,
    },
    /// A named temporary file, removed on drop.
    Temporary(tempfile::NamedTempFile),
    InPlace(File),
}

impl OutputFile {
    /// Checks that `path` can be written (`option` names where the path came from, such as
    /// `"--out"`) and opens a temporary file beside it.
    ///
    /// # Errors
    /// A [`BadInput`] naming the option and the path: a missing directory, a directory that
    /// cannot be written, a path that is a directory.
    pub fn create(option: &str, path: &Path) -> anyhow::Result<OutputFile> {
        Self::open(option, path, true)
    }

    /// [`create`](Self::create), with the unnamed file tried first or (for the fallback's
    /// tests) not at all.
    fn open(option: &str, path: &Path, try_unnamed: bool) -> anyhow::Result<OutputFile> {
        let refuse = |why: String| anyhow::Error::new(BadInput::new(format!("{option} {}: {why}", path.display())));
        if let Ok(meta) = std::fs::metadata(path) {
            if meta.is_dir() {
                return Err(refuse("is a directory".into()));
            }
            if !meta.is_file() {
                let file = std::fs::OpenOptions::new().write(true).open(path).map_err(|e| refuse(e.to_string()))?;
                return Ok(OutputFile { path: path.to_path_buf(), target: Target::InPlace(file) });
            }
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if path.file_name().is_none() {
            return Err(refuse("is not a file name".into()));
        }
        if !dir.is_dir() {
            return Err(refuse(format!("the directory {} does not exist", dir.display())));
        }
        if let Some(file) = try_unnamed.then(|| unnamed_file_in(dir)).flatten() {
            return Ok(OutputFile {
                path: path.to_path_buf(),
                target: Target::Unnamed { file, dir: dir.to_path_buf() },
            });
        }
        let temp = tempfile::Builder::new()
            .prefix(&temporary_prefix(path))
            .suffix(TEMPORARY_SUFFIX)
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666)) // as File::create: the umask applies
            .tempfile_in(dir)
            .map_err(|e| refuse(format!("cannot write in {}: {e}", dir.display())))?;
        Ok(OutputFile { path: path.to_path_buf(), target: Target::Temporary(temp) })
    }

    /// The path the file will have once committed.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open file to write to (wrap it in a `BufWriter` and flush that, checking the
    /// error, before [`commit`](Self::commit)).
    pub fn file(&mut self) -> &mut File {
        match &mut self.target {
            Target::Unnamed { file, .. } | Target::InPlace(file) => file,
            Target::Temporary(t) => t.as_file_mut(),
        }
    }

    /// Flushes and syncs the file and renames it over the path.
    ///
    /// # Errors
    /// Any failed write, sync or rename, naming the path; the temporary file is removed.
    pub fn commit(self) -> anyhow::Result<()> {
        let path = self.path;
        let context = || format!("cannot write {}", path.display());
        match self.target {
            Target::InPlace(mut file) => file.flush().with_context(context),
            Target::Unnamed { mut file, dir } => {
                file.flush().with_context(context)?;
                file.sync_all().with_context(context)?;
                // A link under a fresh temporary name (rename cannot replace with an
                // unnamed file), removed again if the rename fails.
                let fd = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&file));
                let linked = tempfile::Builder::new()
                    .prefix(&temporary_prefix(&path))
                    .suffix(TEMPORARY_SUFFIX)
                    .make_in(&dir, |name| {
                        let follow = rustix::fs::AtFlags::SYMLINK_FOLLOW;
                        rustix::fs::linkat(rustix::fs::CWD, fd.as_str(), rustix::fs::CWD, name, follow)
                            .map_err(std::io::Error::from)
                    })
                    .with_context(context)?;
                linked.persist(&path).map_err(|e| e.error).with_context(context)?;
                Ok(())
            }
            Target::Temporary(mut temp) => {
                temp.flush().with_context(context)?;
                temp.as_file().sync_all().with_context(context)?;
                temp.persist(&path).map_err(|e| e.error).with_context(context)?;
                Ok(())
            }
        }
    }

    /// Writes `bytes` and commits.
    ///
    /// # Errors
    /// As [`commit`](Self::commit), or the failed write.
    pub fn write_and_commit(mut self, bytes: &[u8]) -> anyhow::Result<()> {
        let path = self.path.clone();
        self.file().write_all(bytes).with_context(|| format!("cannot write {}", path.display()))?;
        self.commit()
    }
}

/// An unnamed file in `dir`, readable by others as with `File::create` (the umask
/// applies); `None` where the file system or the kernel has none, or where `/proc`, which
/// names it at the commit, is not mounted.
fn unnamed_file_in(dir: &Path) -> Option<File> {
    if !Path::new("/proc/self/fd").is_dir() {
        return None;
    }
    let flags = rustix::fs::OFlags::TMPFILE | rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC;
    let fd = rustix::fs::openat(rustix::fs::CWD, dir, flags, rustix::fs::Mode::from_raw_mode(0o666)).ok()?;
    Some(File::from(fd))
}

/// The temporary name's start beside `path`, while the file is written (the fallback) or
/// renamed into place; a random part and [`TEMPORARY_SUFFIX`] follow.
fn temporary_prefix(path: &Path) -> String {
    format!(".{}.", path.file_name().unwrap_or_default().to_string_lossy())
}

const TEMPORARY_SUFFIX: &str = ".partial";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_replaces_and_drop_leaves_no_trace() {
        for try_unnamed in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("out.txt");
            std::fs::write(&path, "old").unwrap();
            let unfinished = OutputFile::open("--out", &path, try_unnamed).unwrap();
            drop(unfinished);
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "a temporary file was left behind");
            OutputFile::open("--out", &path, try_unnamed).unwrap().write_and_commit(b"new").unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
            let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).unwrap().permissions());
            assert_ne!(mode & 0o044, 0, "a result file must be readable by others, as with File::create: {mode:o}");
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        }
    }

    /// Where unnamed files exist (Linux file systems), a process killed while it writes
    /// (here it aborts, as MPI_Abort and mpirun's kill end a rank: no destructor runs) leaves
    /// the directory as it was.
    #[test]
    fn a_killed_writer_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        if unnamed_file_in(dir.path()).is_none() {
            eprintln!("skipped: no unnamed files in {}", dir.path().display());
            return;
        }
        std::fs::write(dir.path().join("out.txt"), "old").unwrap();
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "output::tests::writer_that_aborts", "--ignored", "--nocapture"])
            .env(ABORTING_WRITER_DIR, dir.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&child.stdout);
        assert!(stdout.contains("aborting"), "the writer did not run: {stdout}");
        assert!(!child.status.success());
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["out.txt"], "files left behind");
        assert_eq!(std::fs::read_to_string(dir.path().join("out.txt")).unwrap(), "old");
    }

    const ABORTING_WRITER_DIR: &str = "DPS_TEST_ABORTING_WRITER_DIR";

    /// The child of [`a_killed_writer_leaves_nothing_behind`]; does nothing when run alone.
    #[test]
    #[ignore = "run by a_killed_writer_leaves_nothing_behind"]
    fn writer_that_aborts() {
        let Some(dir) = std::env::var_os(ABORTING_WRITER_DIR) else { return };
        let mut out = OutputFile::create("--out", &Path::new(&dir).join("out.txt")).unwrap();
        out.file().write_all(b"half of the result").unwrap();
        println!("aborting");
        std::process::abort();
    }

    #[test]
    fn bad_paths_are_bad_input_naming_option_and_path() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no/such/dir/x.png");
        let e = OutputFile::create("--out", &missing).unwrap_err();
        assert!(e.is::<BadInput>());
        assert!(e.to_string().contains("--out") && e.to_string().contains("does not exist"), "{e}");
        let e = OutputFile::create("-o", dir.path()).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
    }

    #[test]
    fn a_full_device_is_an_error_at_commit() {
        let full = Path::new("/dev/full");
        if !full.exists() {
            return;
        }
        let out = OutputFile::create("--out", full).unwrap();
        let e = out.write_and_commit(&[0u8; 1 << 16]).unwrap_err();
        assert!(format!("{e:#}").contains("/dev/full"), "{e:#}");
    }
}
