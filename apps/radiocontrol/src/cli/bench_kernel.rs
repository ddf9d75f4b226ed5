//! `bench-kernel`: its options, checked into a [`BenchKernelPlan`].

use anyhow::Result;
use dps_harness::bad_input;
use dps_harness::options::Output;

/// `bench-kernel`.
#[derive(clap::Args, Debug)]
pub struct BenchKernelArgs {
    /// Watches per station minute.
    #[arg(long, default_value_t = 1000)]
    pub watches: usize,
    /// Station minutes per sample.
    #[arg(long, default_value_t = 2)]
    pub minutes: usize,
    /// Samples (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// `--json`.
    #[command(flatten)]
    pub output: Output,
}

/// A checked `bench-kernel`.
#[derive(Debug, Clone)]
pub struct BenchKernelPlan {
    /// Watches per station minute.
    pub watches: usize,
    /// Station minutes per sample.
    pub minutes: usize,
    /// Samples.
    pub reps: usize,
    /// Print one JSON object.
    pub json: bool,
}

impl BenchKernelArgs {
    /// Checks the counts.
    ///
    /// # Errors
    /// A `dps_harness::BadInput` if one is 0.
    pub fn plan(&self) -> Result<BenchKernelPlan> {
        if self.watches == 0 || self.minutes == 0 || self.reps == 0 {
            bad_input!("--watches, --minutes and --reps must be at least 1");
        }
        Ok(BenchKernelPlan { watches: self.watches, minutes: self.minutes, reps: self.reps, json: self.output.json })
    }
}
