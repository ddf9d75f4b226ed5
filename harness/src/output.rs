//! Output files that are checked before the run and never left half-written.
//!
//! [`OutputFile::create`] runs before any work: it creates a temporary file in the target's
//! directory, which proves the directory exists and is writable. The program writes into
//! it and [`OutputFile::commit`] flushes, syncs and renames it over the path, checking every
//! step. Dropped without a commit (the run failed), the temporary file is removed and the
//! path keeps whatever it held before. A path that exists and is not a regular file (a
//! device such as `/dev/null` or `/dev/full`, a pipe) is written in place, errors checked.

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
        let prefix = format!(".{}.", path.file_name().unwrap_or_default().to_string_lossy());
        let temp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".partial")
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
            Target::Temporary(t) => t.as_file_mut(),
            Target::InPlace(f) => f,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_replaces_and_drop_leaves_no_trace() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        std::fs::write(&path, "old").unwrap();
        let unfinished = OutputFile::create("--out", &path).unwrap();
        drop(unfinished);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "a temporary file was left behind");
        OutputFile::create("--out", &path).unwrap().write_and_commit(b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).unwrap().permissions());
        assert_ne!(mode & 0o044, 0, "a result file must be readable by others, as with File::create: {mode:o}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
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
