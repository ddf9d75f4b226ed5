//! Output files that are checked before the run and never left half-written: the trace
//! file here, every app's results through `dps_harness::OutputFile`.
//!
//! [`OutputFile::create`] runs before any work: it opens an unnamed file (Linux's
//! `O_TMPFILE`) in the target's directory, which proves the directory exists and is
//! writable. The program writes into it and [`OutputFile::commit`] flushes and syncs it,
//! links it under a temporary name and renames that over the path, checking every step
//! (where a sandbox refuses the link through `/proc`, it copies the bytes instead).
//! Until the commit the file has no name: a run that fails, panics, is aborted by MPI or is
//! killed by mpirun or Slurm leaves nothing behind, and the path keeps whatever it held
//! before. Where the file system has no unnamed files (or `/proc` is not mounted), a named
//! temporary file `.NAME.XXXXXX.partial` stands in, removed on drop but left behind by a
//! killed process. A path that exists and is not a regular file (a device such as
//! `/dev/null` or `/dev/full`, a pipe) is written in place, errors checked.

use std::fs::File;
use std::io::{self, Seek, Write};
use std::path::{Path, PathBuf};

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
    /// Checks that `path` can be written and opens an unnamed file beside it.
    ///
    /// # Errors
    /// What is wrong with the path, for a message that names it: "is a directory", "the
    /// directory D does not exist", "cannot write in D: ...".
    pub fn create(path: &Path) -> Result<OutputFile, String> {
        Self::open(path, true)
    }

    /// [`create`](Self::create), with the unnamed file tried first or (for the fallback's
    /// tests) not at all.
    fn open(path: &Path, try_unnamed: bool) -> Result<OutputFile, String> {
        if let Ok(meta) = std::fs::metadata(path) {
            if meta.is_dir() {
                return Err("is a directory".into());
            }
            if !meta.is_file() {
                let file = File::options().write(true).open(path).map_err(|e| e.to_string())?;
                return Ok(OutputFile { path: path.to_path_buf(), target: Target::InPlace(file) });
            }
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if path.file_name().is_none() {
            return Err("is not a file name".into());
        }
        if !dir.is_dir() {
            return Err(format!("the directory {} does not exist", dir.display()));
        }
        if let Some(file) = try_unnamed.then(|| unnamed_file_in(dir)).flatten() {
            let target = Target::Unnamed { file, dir: dir.to_path_buf() };
            return Ok(OutputFile { path: path.to_path_buf(), target });
        }
        let temp =
            named_temporary(dir, path).map_err(|e| format!("cannot write in {}: {}", dir.display(), os_error(&e)))?;
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

    /// Flushes and syncs the file and gives it its path.
    ///
    /// # Errors
    /// Any failed write, sync, link or rename; nothing is left behind.
    pub fn commit(self) -> io::Result<()> {
        match self.target {
            Target::InPlace(mut file) => file.flush(),
            Target::Unnamed { mut file, dir } => {
                file.flush()?;
                file.sync_all()?;
                match link_beside(&file, &dir, &self.path) {
                    Ok(linked) => linked.persist(&self.path).map_err(|e| e.error)?,
                    // No link through /proc (some sandboxes): the bytes are copied instead.
                    Err(_) => copy_beside(&mut file, &dir, &self.path)?,
                }
                Ok(())
            }
            Target::Temporary(mut temp) => {
                temp.flush()?;
                sync_and_rename(temp, &self.path)
            }
        }
    }
}

/// Links the unnamed `file` in `dir` under a fresh temporary name beside `path` (rename
/// cannot replace a path with an unnamed file); the link is removed if it is dropped.
fn link_beside(file: &File, dir: &Path, path: &Path) -> io::Result<tempfile::NamedTempFile<()>> {
    let fd = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(file));
    tempfile::Builder::new().prefix(&temporary_prefix(path)).suffix(TEMPORARY_SUFFIX).make_in(dir, |name| {
        let follow = rustix::fs::AtFlags::SYMLINK_FOLLOW;
        Ok(rustix::fs::linkat(rustix::fs::CWD, fd.as_str(), rustix::fs::CWD, name, follow)?)
    })
}

/// Where the unnamed file cannot be linked: copies it into a named temporary file beside
/// `path`, synced, and renames that over the path.
fn copy_beside(file: &mut File, dir: &Path, path: &Path) -> io::Result<()> {
    let mut temp = named_temporary(dir, path)?;
    file.seek(io::SeekFrom::Start(0))?;
    io::copy(file, &mut temp)?;
    sync_and_rename(temp, path)
}

/// A named temporary file in `dir` beside `path`, removed on drop.
fn named_temporary(dir: &Path, path: &Path) -> io::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new()
        .prefix(&temporary_prefix(path))
        .suffix(TEMPORARY_SUFFIX)
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666)) // as File::create: the umask applies
        .tempfile_in(dir)
}

/// Syncs the written `temp` and renames it over `path` (removed if the rename fails).
fn sync_and_rename(temp: tempfile::NamedTempFile, path: &Path) -> io::Result<()> {
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// An unnamed file in `dir`, readable by others as with `File::create` (the umask
/// applies); `None` where the file system or the kernel has none, or where `/proc`, which
/// names it at the commit, is not mounted.
fn unnamed_file_in(dir: &Path) -> Option<File> {
    if !Path::new("/proc/self/fd").is_dir() {
        return None;
    }
    let flags = rustix::fs::OFlags::TMPFILE | rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC;
    let fd = rustix::fs::openat(rustix::fs::CWD, dir, flags, rustix::fs::Mode::from_raw_mode(0o666)).ok()?;
    Some(File::from(fd))
}

/// The temporary name's start beside `path`, while the file is written (the fallback) or
/// renamed into place; a random part and [`TEMPORARY_SUFFIX`] follow.
fn temporary_prefix(path: &Path) -> String {
    format!(".{}.", path.file_name().unwrap_or_default().to_string_lossy())
}

const TEMPORARY_SUFFIX: &str = ".partial";

/// The operating system's own error, without the name of the temporary file that
/// `tempfile` appends (it was never created and would only confuse).
fn os_error(e: &io::Error) -> String {
    let text = e.to_string();
    text.split(" at path \"").next().unwrap_or_default().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_replaces_and_drop_leaves_no_trace() {
        for try_unnamed in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("out.txt");
            std::fs::write(&path, "old").unwrap();
            let unfinished = OutputFile::open(&path, try_unnamed).unwrap();
            drop(unfinished);
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "a temporary file was left behind");
            let mut out = OutputFile::open(&path, try_unnamed).unwrap();
            out.file().write_all(b"new").unwrap();
            out.commit().unwrap();
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
            .args(["--exact", "output_file::tests::writer_that_aborts", "--ignored", "--nocapture"])
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
        let mut out = OutputFile::create(&Path::new(&dir).join("out.txt")).unwrap();
        out.file().write_all(b"half of the result").unwrap();
        println!("aborting");
        std::process::abort();
    }

    /// The commit's fallback where the unnamed file cannot be linked gives the same file.
    #[test]
    fn an_unnamed_file_that_cannot_be_linked_is_copied() {
        let dir = tempfile::tempdir().unwrap();
        let Some(mut file) = unnamed_file_in(dir.path()) else { return };
        let path = dir.path().join("out.txt");
        std::fs::write(&path, "old").unwrap();
        file.write_all(b"new result").unwrap();
        copy_beside(&mut file, dir.path(), &path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new result");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "a temporary file was left behind");
    }

    #[test]
    fn bad_paths_say_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let e = OutputFile::create(&dir.path().join("no/such/dir/x.png")).unwrap_err();
        assert!(e.contains("does not exist") && e.contains("no/such/dir"), "{e}");
        assert_eq!(OutputFile::create(dir.path()).unwrap_err(), "is a directory");
    }
}
