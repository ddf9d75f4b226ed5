//! `generate`: its options, checked into a [`GeneratePlan`]: the data set's sizes in range,
//! its directories made, and room for it on their file system.

use std::path::PathBuf;

use anyhow::Result;
use dps_harness::BadInput;

use crate::data::Manifest;
use crate::generate;

/// `generate`.
#[derive(clap::Args, Debug)]
pub struct GenerateArgs {
    /// Watches.
    #[arg(long, default_value_t = 20)]
    pub watches: usize,
    /// Radio stations.
    #[arg(long, default_value_t = 5)]
    pub stations: usize,
    /// Hours (from midnight).
    #[arg(long, default_value_t = 2)]
    pub hours: usize,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Directory to write (created if missing).
    #[arg(long)]
    pub dir: PathBuf,
}

/// A checked `generate`.
#[derive(Debug, Clone)]
pub struct GeneratePlan {
    /// The directory to write (it and its `stations/` and `watches/` exist).
    pub dir: PathBuf,
    /// The data set's manifest: sizes, seed and id.
    pub manifest: Manifest,
}

impl GenerateArgs {
    /// Checks the sizes, makes the directories and checks that the data set fits in their
    /// file system, before any file is written.
    ///
    /// # Errors
    /// A `dps_harness::BadInput` naming the option.
    pub fn plan(&self) -> Result<GeneratePlan> {
        let (watches, stations, hours, seed) = (self.watches, self.stations, self.hours, self.seed);
        let manifest =
            Manifest::new(watches, stations, hours, seed, generate::dataset_id(seed, watches, stations, hours));
        manifest.check().map_err(|e| {
            BadInput::new(
                e.replace("watches", "--watches").replace("stations", "--stations").replace("hours", "--hours"),
            )
        })?;
        for sub in ["stations", "watches"] {
            let d = self.dir.join(sub);
            std::fs::create_dir_all(&d).map_err(|e| BadInput::new(format!("--dir {}: {e}", d.display())))?;
        }
        generate::check_room(&self.dir, &manifest)?;
        Ok(GeneratePlan { dir: self.dir.clone(), manifest })
    }
}
