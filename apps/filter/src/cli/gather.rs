//! `gather`: the linear filter, the window and the output, checked.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args as ClapArgs;
use dps_harness::options::{Map, Repeat, Standard};
use dps_harness::OutputFile;

use super::source::{CheckedSource, Source, SourcePlan};
use super::{check_depth, check_window, MAP_HELP};
use crate::kernel::linear::{Area, Filter};
use crate::output_path::check_outputs_outside_store;
use crate::raster::Depth;

/// `gather`.
#[derive(ClapArgs, Debug)]
#[command(mut_arg("verify", |a| a.help("Compare the window with the serial zero-padded convolution of the image")))]
#[command(mut_arg("map", |a| a.help(MAP_HELP)))]
pub struct GatherArgs {
    /// The input.
    #[command(flatten)]
    pub source: Source,
    /// The filter (integer kernel; the output PNG is divided by the kernel's sum).
    #[arg(long, value_enum, default_value = "gauss5")]
    pub filter: Filter,
    /// The window (default: the whole image).
    #[arg(long, num_args = 4, value_names = ["X", "Y", "W", "H"])]
    pub window: Option<Vec<usize>>,
    /// Write the filtered window as PNG (normalised by the kernel's sum; outside the store).
    #[arg(short = 'o', long = "out", value_name = "OUT.png")]
    pub out: Option<PathBuf>,
    /// `--map` of the compute threads.
    #[command(flatten)]
    pub map: Map,
    /// `--reps`, `--warmup`.
    #[command(flatten)]
    pub repeat: Repeat,
    /// `--verify`, `--json`, the runtime's and the simulator's options.
    #[command(flatten)]
    pub standard: Standard,
}

/// A checked `gather` (the window is checked against the image with the input:
/// [`GatherPlan::check_input`]).
#[derive(Debug, Clone)]
pub struct GatherPlan {
    /// The input.
    pub source: SourcePlan,
    /// The filter.
    pub filter: Filter,
    /// `--window X Y W H`, if given.
    pub window: Option<Vec<usize>>,
    /// The PNG to write (rank 0), outside the store and writable.
    pub out: Option<PathBuf>,
    /// Mapping of the compute threads.
    pub map: String,
    /// Timed runs after the warm-up.
    pub repeat: Repeat,
    /// `--verify`, `--json`, the runtime's and the simulator's options.
    pub standard: Standard,
}

impl GatherArgs {
    /// Checks the options (on every rank, before the runtime starts).
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`]: a run count out of range, no input, an output inside
    /// the store or that cannot be written.
    pub fn plan(&self) -> Result<GatherPlan> {
        self.repeat.check()?;
        let source = self.source.plan()?;
        let outputs = [("--out", self.out.as_deref()), ("--trace", self.standard.runtime.trace.as_deref())];
        // Before the runtime, as median's.
        check_outputs_outside_store(source.dir.as_deref(), &outputs)?;
        // Tried before the runtime too: a bad path then ends the job at once, where after the
        // start rank 0 would wait for the other ranks' shutdown (10 s) before ending it.
        if let (Some(path), true) = (&self.out, dps_harness::launch_rank().unwrap_or(0) == 0) {
            drop(OutputFile::create("--out", path)?);
        }
        self.standard.check()?;
        Ok(GatherPlan {
            source,
            filter: self.filter,
            window: self.window.clone(),
            out: self.out.clone(),
            map: self.map.map.clone(),
            repeat: self.repeat.clone(),
            standard: self.standard.clone(),
        })
    }
}

impl GatherPlan {
    /// Checks the input against the options: its depth, and the window inside it.
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`]: a 24-bit image, a window empty or outside the image.
    pub fn check_input(&self, input: &CheckedSource) -> Result<Area> {
        check_depth(input.meta.depth(), "gather", &[Depth::Bit1, Depth::Bit8, Depth::Bit16])?;
        let (x, y, w, h) = check_window(self.window.as_deref(), input.meta.width, input.meta.height)?;
        Ok(Area { x: x as i64, y: y as i64, w, h })
    }
}
