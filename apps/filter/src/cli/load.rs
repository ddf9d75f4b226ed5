//! `load`: a stored image's window and the PNG to write it to, checked.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args as ClapArgs;
use dps_harness::OutputFile;

use super::{check_name, check_window};
use crate::output_path::check_outside_store;
use crate::store::{self, Meta};

/// `load`.
#[derive(ClapArgs, Debug)]
pub struct LoadArgs {
    /// The store's directory.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The stored image's name.
    #[arg(long, default_value = "image")]
    pub name: String,
    /// The window to read (default: the whole image).
    #[arg(long, num_args = 4, value_names = ["X", "Y", "W", "H"])]
    pub window: Option<Vec<usize>>,
    /// The PNG to write (outside the store).
    #[arg(short = 'o', long = "out", value_name = "OUT.png")]
    pub out: PathBuf,
}

/// A checked `load`: the stored image opened (every tile file checked), the window inside
/// it, the output writable and outside the store.
#[derive(Debug)]
pub struct LoadPlan {
    /// The store's directory.
    pub dir: PathBuf,
    /// The stored image's name.
    pub name: String,
    /// Its metadata.
    pub meta: Meta,
    /// The window `(x, y, w, h)`.
    pub window: (usize, usize, usize, usize),
    /// The PNG to write.
    pub out: PathBuf,
}

impl LoadArgs {
    /// Checks the options and opens the stored image.
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`]: a bad name, a missing or damaged store, a window outside
    /// the image, an output inside the store or that cannot be written.
    pub fn plan(&self) -> Result<LoadPlan> {
        check_name(&self.name, "--name")?;
        let meta = store::open(&self.dir, &self.name)?;
        let window = check_window(self.window.as_deref(), meta.width, meta.height)?;
        check_outside_store("--out", &self.out, &self.dir)?;
        // A probe: the run opens it again (no file is left until the image is written).
        drop(OutputFile::create("--out", &self.out)?);
        Ok(LoadPlan { dir: self.dir.clone(), name: self.name.clone(), meta, window, out: self.out.clone() })
    }
}
