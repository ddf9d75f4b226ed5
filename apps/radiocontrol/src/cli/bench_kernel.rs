//! `bench-kernel`: its options, checked into a [`BenchKernelPlan`].

use anyhow::Result;
use dps_harness::bad_input;
use dps_harness::options::Output;

use crate::kernel::Path;

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
    /// The direct kernel's code path: avx512-vnni, avx2 or portable (default: the fastest
    /// this CPU has, the one `run` takes).
    #[arg(long)]
    pub path: Option<String>,
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
    /// The direct kernel's code path.
    pub path: Path,
    /// Print one JSON object.
    pub json: bool,
}

impl BenchKernelArgs {
    /// Checks the counts.
    ///
    /// # Errors
    /// A `dps_harness::BadInput` if one is 0, or `--path` names no path or one this CPU
    /// cannot run.
    pub fn plan(&self) -> Result<BenchKernelPlan> {
        if self.watches == 0 || self.minutes == 0 || self.reps == 0 {
            bad_input!("--watches, --minutes and --reps must be at least 1");
        }
        let available = Path::available();
        let names = || available.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ");
        let path = match self.path.as_deref() {
            None => Path::detect(),
            Some(name) => match Path::from_name(name) {
                None => bad_input!("--path {name}: not a kernel path (avx512-vnni, avx2 or portable)"),
                Some(path) if !available.contains(&path) => {
                    bad_input!("--path {name}: this CPU cannot run it (it can: {})", names())
                }
                Some(path) => path,
            },
        };
        Ok(BenchKernelPlan {
            watches: self.watches,
            minutes: self.minutes,
            reps: self.reps,
            path,
            json: self.output.json,
        })
    }
}
