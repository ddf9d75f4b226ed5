//! The command line: the subcommands' options, each parsed and checked once into its plan
//! before any work (bad input exits 2 here); nothing past this module sees the raw options.
//! One file per subcommand: [`generate`], [`run`], [`supervise`], [`bench_kernel`].

pub mod bench_kernel;
pub mod generate;
pub mod run;
pub mod supervise;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// `dps-radiocontrol`: radio listening rates (thesis ch. 9) on DPS.
#[derive(Parser, Debug)]
#[command(name = "dps-radiocontrol", version, about)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// What to do.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Write a synthetic data set with its ground truth (§2.10 formats).
    Generate(generate::GenerateArgs),
    /// Correlate a data set into OUT/results.bin (resuming what is there), on any number of ranks.
    Run(run::RunArgs),
    /// Run a job and restart it on the surviving ranks when it dies or stops writing results.
    Supervise(supervise::SuperviseArgs),
    /// Time the direct and the FFT correlation kernels on one core.
    BenchKernel(bench_kernel::BenchKernelArgs),
}

/// A checked subcommand.
#[derive(Debug)]
pub enum Plan {
    /// `generate`.
    Generate(generate::GeneratePlan),
    /// `run`.
    Run(run::RunPlan),
    /// `supervise`.
    Supervise(supervise::SupervisePlan),
    /// `bench-kernel`.
    BenchKernel(bench_kernel::BenchKernelPlan),
}

impl Args {
    /// Checks the subcommand's options into its plan (bad input, before any work).
    ///
    /// # Errors
    /// A `dps_harness::BadInput` naming the option or the file.
    pub fn plan(&self) -> Result<Plan> {
        Ok(match &self.command {
            Command::Generate(g) => Plan::Generate(g.plan()?),
            Command::Run(r) => Plan::Run(r.plan()?),
            Command::Supervise(s) => Plan::Supervise(s.plan()?),
            Command::BenchKernel(b) => Plan::BenchKernel(b.plan()?),
        })
    }
}
