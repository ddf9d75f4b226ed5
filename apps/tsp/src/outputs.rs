//! The run's output files (`--tour-out`, `--plot`): opened as unnamed files in their
//! directories before any work, written and renamed into place together at the end.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result};
use dps_harness::OutputFile;

use crate::kernel::instance::Instance;
use crate::{plot, tsplib};

/// The output files of a run, opened.
#[derive(Debug, Default)]
pub struct Outputs {
    tour: Option<OutputFile>,
    plot: Option<OutputFile>,
}

impl Outputs {
    /// Opens the files the options name, so that a path that cannot be written fails
    /// before any work.
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`] naming the option.
    pub fn create(tour_out: &Option<PathBuf>, plot: &Option<PathBuf>) -> Result<Outputs> {
        let open =
            |option: &str, path: &Option<PathBuf>| path.as_ref().map(|p| OutputFile::create(option, p)).transpose();
        Ok(Outputs { tour: open("--tour-out", tour_out)?, plot: open("--plot", plot)? })
    }

    /// Writes every output into its temporary file, then renames them all: a failed write
    /// (a full disk) leaves none of them behind.
    ///
    /// # Errors
    /// A file that cannot be written or renamed, or a plot that cannot be drawn.
    pub fn write(mut self, inst: &Instance, length: i64, tour: &[usize]) -> Result<()> {
        let fill = |file: &mut OutputFile, bytes: &[u8]| {
            let path = file.path().display().to_string();
            file.file()
                .write_all(bytes)
                .and_then(|()| file.file().flush())
                .with_context(|| format!("cannot write {path}"))
        };
        if let Some(file) = &mut self.tour {
            fill(file, tsplib::to_tour_file(&inst.name, length, tour).as_bytes())?;
        }
        if let (Some(file), Some(coords)) = (&mut self.plot, &inst.coords) {
            fill(file, &plot::png(coords, tour).context("cannot draw the plot")?)?;
        }
        for file in [self.tour, self.plot].into_iter().flatten() {
            file.commit()?;
        }
        Ok(())
    }
}
