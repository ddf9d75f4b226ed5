//! `dps-life view`: the options of the separately started viewer (the DPS paper's Fig. 10
//! client), checked into a [`ViewPlan`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use dps_harness::options::{Output, Seed};
use dps_harness::OutputFile;

use crate::output::{self, Format};

/// The name the region service is exported under.
pub const REGION_SERVICE: &str = "life.region";

/// The name the world's size is exported under.
pub const WORLD_SERVICE: &str = "life.world";

/// Most calls the viewer keeps in flight.
pub const MAX_FAN: usize = 4096;

/// Longest --duration (a week).
const MAX_DURATION_S: f64 = 7.0 * 86400.0;

/// `dps-life view`: imports `life.region` from a running `dps-life --export-region` (the
/// registry DPS_SERVICES names) and asks it for randomly placed W×H blocks, --fan calls in
/// flight at a time, until --calls, --duration or the end of the served run.
#[derive(clap::Args, Debug)]
#[command(mut_arg("seed", |a| a.help("Seed of the block positions")))]
pub struct ViewArgs {
    /// The block size, WxH cells.
    #[arg(long, value_name = "WxH")]
    pub block: String,
    /// Calls in flight at a time: each round, the viewer's split fans this many requests out
    /// to the service (called as a leaf of its own graph) and its merge collects them.
    #[arg(long, value_name = "K", default_value_t = 4)]
    pub fan: usize,
    /// Pause between two rounds.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub period_ms: u64,
    /// Stop after this many calls (default: until --duration or the served run ends).
    #[arg(long, value_name = "N")]
    pub calls: Option<u64>,
    /// Stop after this many seconds (default: until --calls or the served run ends).
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,
    /// Directory where each block is written as PNG: `block-00007-x12-y40-gen96.png`
    /// (`gen96-104` for a block whose rows come from two generations).
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,
    /// Stop when standard input closes; a `p` on it pauses the calls, an `r` resumes them
    /// (how `dps-life --view-process` drives its viewer).
    #[arg(long, hide = true)]
    pub until_eof: bool,
    /// `--seed`.
    #[command(flatten)]
    pub seed: Seed<1>,
    /// `--json`.
    #[command(flatten)]
    pub output: Output,
    /// The runtime's options.
    #[command(flatten)]
    pub runtime: dps::RuntimeArgs,
}

/// A checked `dps-life view`.
#[derive(Debug, Clone)]
pub struct ViewPlan {
    /// The block, W × H (checked against the world once connected).
    pub block: (usize, usize),
    /// Calls in flight at a time, 1 to [`MAX_FAN`].
    pub fan: usize,
    /// Pause between two rounds.
    pub period: Duration,
    /// Stop after this many calls.
    pub calls: Option<u64>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Where the blocks go as PNG (a directory checked writable).
    pub png_dir: Option<PathBuf>,
    /// Stop when standard input closes.
    pub until_eof: bool,
    /// Seed of the block positions.
    pub seed: u64,
    /// Print the record as JSON.
    pub json: bool,
    /// The runtime's options.
    pub runtime: dps::RuntimeArgs,
}

impl ViewArgs {
    /// Checks the options (bad input, before any work).
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`] naming the option.
    pub fn plan(&self) -> Result<ViewPlan> {
        dps_harness::input(self.check())
    }

    fn check(&self) -> Result<ViewPlan> {
        let block = super::input::block("--block", &self.block)?;
        if !(1..=MAX_FAN).contains(&self.fan) {
            bail!("--fan {} must be between 1 and {MAX_FAN}", self.fan);
        }
        if self.calls == Some(0) {
            bail!("--calls must be at least 1");
        }
        let duration = match self.duration {
            Some(s) if !(s.is_finite() && s > 0.0 && s <= MAX_DURATION_S) => {
                bail!("--duration {s} must be a number of seconds above 0 and at most {MAX_DURATION_S}")
            }
            s => s.map(Duration::from_secs_f64),
        };
        if let Some(dir) = &self.png {
            if !dir.is_dir() {
                let why = if dir.exists() { "is not a directory" } else { "no such directory" };
                bail!("--png {}: {why}", dir.display());
            }
            Format::Png.check_size("--block", block.0, block.1)?;
            drop(OutputFile::create("--png", &output::block_path(dir, 0, 0))?);
        }
        dps_harness::options::check_trace(&self.runtime)?;
        Ok(ViewPlan {
            block,
            fan: self.fan,
            period: Duration::from_millis(self.period_ms),
            calls: self.calls,
            duration,
            png_dir: self.png.clone(),
            until_eof: self.until_eof,
            seed: self.seed.seed,
            json: self.output.json,
            runtime: self.runtime.clone(),
        })
    }
}
