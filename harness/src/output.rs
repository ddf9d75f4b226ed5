//! Output files that are checked before the run and never left half-written:
//! [`dps::OutputFile`] (an unnamed file until the commit names it, so that not even a
//! killed rank leaves a partial file), with errors that name the option and the path.

use std::io::Write;
use std::path::Path;

use anyhow::Context;

use crate::BadInput;

/// An output file of the run: see [`dps::OutputFile`].
#[derive(Debug)]
pub struct OutputFile(dps::OutputFile);

impl OutputFile {
    /// Checks that `path` can be written (`option` names where the path came from, such as
    /// `"--out"`) and opens an unnamed file beside it.
    ///
    /// # Errors
    /// A [`BadInput`] naming the option and the path: a missing directory, a directory that
    /// cannot be written, a path that is a directory.
    pub fn create(option: &str, path: &Path) -> anyhow::Result<OutputFile> {
        let file = dps::OutputFile::create(path)
            .map_err(|why| BadInput::new(format!("{option} {}: {why}", path.display())))?;
        Ok(OutputFile(file))
    }

    /// The path the file will have once committed.
    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// The open file to write to (wrap it in a `BufWriter` and flush that, checking the
    /// error, before [`commit`](Self::commit)).
    pub fn file(&mut self) -> &mut std::fs::File {
        self.0.file()
    }

    /// Flushes and syncs the file and gives it its path.
    ///
    /// # Errors
    /// Any failed write, sync, link or rename, naming the path; nothing is left behind.
    pub fn commit(self) -> anyhow::Result<()> {
        let path = self.path().to_path_buf();
        self.0.commit().with_context(|| format!("cannot write {}", path.display()))
    }

    /// Writes `bytes` and commits.
    ///
    /// # Errors
    /// As [`commit`](Self::commit), or the failed write.
    pub fn write_and_commit(mut self, bytes: &[u8]) -> anyhow::Result<()> {
        let path = self.path().to_path_buf();
        self.file().write_all(bytes).with_context(|| format!("cannot write {}", path.display()))?;
        self.commit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
