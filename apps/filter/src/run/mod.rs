//! The runner: executes a checked [`Plan`]: `store` and `load` here (serial, one process),
//! `gather`, `median` and `serve` on the DPS runtime (modules `gather`, `median`, `serve`),
//! each on its input (`input`) and its collections and graphs (`job`); `client` (module
//! `client`) on a runtime of its own that imports `serve`'s service.

mod client;
mod gather;
mod input;
mod job;
mod median;
mod scratch;
mod serve;

use anyhow::{bail, Result};
use dps_harness::OutputFile;

use crate::cli::load::LoadPlan;
use crate::cli::store::StorePlan;
use crate::cli::{Args, Plan};
use crate::record::Record;
use crate::store::{self, Generation};

/// The program: checks the options into a plan, then executes it.
///
/// # Errors
/// Bad options or input (a [`dps_harness::BadInput`], before any work), a failed run or
/// output, a failed verification.
pub fn run(args: &Args) -> Result<()> {
    execute(&args.plan()?)
}

/// Executes a plan.
///
/// # Errors
/// Bad input found once the runtime runs (the input checked on every rank), a failed run or
/// output, a failed verification.
pub fn execute(plan: &Plan) -> Result<()> {
    match plan {
        Plan::Store(p) => execute_store(p),
        Plan::Load(p) => execute_load(p),
        Plan::Gather(p) => gather::execute(p),
        Plan::Median(p) => median::execute(p),
        Plan::Serve(p) => serve::execute(p),
        Plan::Client(p) => client::execute(p),
    }
}

/// `store`: makes the disk directories, checks that they can hold the tile files, and writes
/// the image (serially).
fn execute_store(plan: &StorePlan) -> Result<()> {
    let (dir, tiling) = (&plan.dir, plan.tiling);
    for d in 0..tiling.disks {
        let disk = store::disk_dir(dir, d);
        if !disk.exists() {
            std::fs::create_dir(&disk).map_err(|e| {
                dps_harness::BadInput::new(format!("cannot create disk directory {}: {e}", disk.display()))
            })?;
        }
    }
    let image = &plan.image;
    let generation = Generation::fresh();
    store::check_writable(dir, &plan.name, &store::Meta::new(tiling, image.depth, generation))?;
    store::write(dir, &plan.name, image, tiling, generation)?;
    println!(
        "stored {} ({}x{}, {} bits) as {} tiles of {} on {} disks (s = {}) in {}",
        plan.input.display(),
        image.width,
        image.height,
        image.depth.bits(),
        tiling.count(),
        tiling.tile,
        tiling.disks,
        tiling.stride,
        dir.display()
    );
    if let Some(note) = &plan.note {
        eprintln!("dps-filter: note: {note}");
    }
    Ok(())
}

/// `load`: reads the window (serially) and writes it as a PNG.
fn execute_load(plan: &LoadPlan) -> Result<()> {
    let out = OutputFile::create("--out", &plan.out)?;
    let image = store::read_window(&plan.dir, &plan.name, &plan.meta, plan.window)?;
    image.write_png(out)
}

/// Compares an output with its reference; a difference is the run's error.
fn verdict<T: PartialEq + Copy + std::fmt::Debug>(
    got: &[T],
    want: &[T],
    width: usize,
    record: &mut Record,
) -> Result<()> {
    let first = (0..want.len().max(got.len())).find(|&i| got.get(i) != want.get(i));
    record.common.verified = Some(first.is_none() && got.len() == want.len());
    match first {
        None if got.len() == want.len() => Ok(()),
        None => bail!("verification failed: {} values, expected {}", got.len(), want.len()),
        Some(i) => {
            let differ = got.iter().zip(want).filter(|(a, b)| a != b).count() + got.len().abs_diff(want.len());
            bail!(
                "verification failed: {differ} values differ from the serial reference, the first at ({}, {}): {:?} instead of {:?}",
                i % width,
                i / width,
                got.get(i),
                want.get(i)
            )
        }
    }
}
