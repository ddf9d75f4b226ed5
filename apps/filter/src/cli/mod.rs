//! The command line: the options of `store`, `load` (serial, one process), `gather`,
//! `median`, `serve` and `client` (DPS, any number of ranks), each checked into its plan before any work (bad
//! input exits 2 here); nothing past this module sees the raw options.
//!
//! `gather` and `median` check their input in two steps, in the order they always did: the
//! options before the runtime starts ([`Args::plan`]), then the input itself once the
//! runtime has said how many compute threads there are (the default disk count of a random
//! image): [`source::SourcePlan::check`], [`gather::GatherPlan::check_input`],
//! [`median::MedianPlan::check_input`].

pub mod client;
pub mod gather;
pub mod load;
pub mod median;
pub mod memory;
pub mod serve;
pub mod source;
pub mod store;

use anyhow::Result;
use clap::{Parser, Subcommand};
use dps_harness::bad_input;

use crate::layout::{self, StrideQuality};
use crate::raster::Depth;

/// `dps-filter`: parallel imaging on DPS (thesis ch. 7). Images are stored as square tiles
/// striped over D disks (directories `DIR/disk0` … `DIR/disk<D-1>`) by the rule
/// disk(r, c) = (c + r·s) mod D; `gather` runs a linear filter where the tiles are and
/// adds the results up on rank 0 (process-and-gather); `median` runs the 5×5 median
/// with the tiles' borders exchanged between the ranks and writes the result striped like
/// the input (exchange-process-and-store).
#[derive(Parser, Debug)]
#[command(name = "dps-filter", version, about, long_about, after_long_help = EXAMPLES)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub mode: Mode,
}

const EXAMPLES: &str = "Examples:
  dps-filter store in.png --tiles 512 --disks 8 --dir store     (s = 5: all 8 neighbours on other disks)
  dps-filter load store --window 100 200 640 480 -o part.png
  mpirun -n 4 dps-filter gather --dir store --filter gauss5 --window 100 200 640 480 -o blurred.png --verify
  mpirun -n 4 dps-filter median --dir store --verify          (writes image-median, striped like image)
  mpirun -n 2 dps-filter median --random 8192 8192 --seed 1 --tiles 512 --verify --json
  mpirun -n 4 dps-filter median --random 4096 4096 --storage disk --cache 0 --json
  dps-filter median --variant serial --random 8192 8192
  mpirun -n 2 dps-filter serve --dir store --service filter.store --until stop &   (touch stop to end it)
  mpirun -n 2 dps-filter client --service filter.store --window 0 0 640 480 --window 640 0 640 480 --out-dir parts

The 5x5 median clamps at the image's edges (a pixel outside takes the nearest pixel's value);
linear filters take the image as 0 outside (the thesis's rule). Bad input (a missing, truncated
or foreign file, a window outside the image, a tile size of 0 or larger than the image, a
missing disk directory or a tile file of the wrong size, a stride the rule does not allow) is
refused with one line and exit code 2 before any work; no partial file is left.";

/// The modes.
#[derive(Subcommand, Debug)]
pub enum Mode {
    /// Store a PNG as striped tiles: DIR/NAME.json and DIR/disk<k>/NAME.<generation>.tiles
    /// (one process); an image of the same name is replaced atomically.
    Store(store::StoreArgs),
    /// Read a window of a stored image back into a PNG (one process).
    Load(load::LoadArgs),
    /// Process-and-gather: a linear filter over a window, tiles filtered where they are
    /// stored and added up on rank 0 (overlap-add).
    Gather(gather::GatherArgs),
    /// Exchange-process-and-store: the 5×5 median of a whole 8-bit image, each tile with
    /// its neighbours' borders, written back striped like the input.
    Median(median::MedianArgs),
    /// The striped file service (the DPS paper, Fig. 5): keep the image's tiles on the
    /// ranks' disk threads and export the window-reading graph under --service, for
    /// `client`s started separately, until --until FILE exists, --serve-seconds pass, or
    /// SIGINT/SIGTERM.
    Serve(serve::ServeArgs),
    /// Read windows through a running `serve`'s service (started separately, on any number
    /// of ranks): a split fans them out through the imported service, a merge collects
    /// them; prints each window's checksum and writes it as PNG with --out-dir.
    Client(client::ClientArgs),
}

/// `--map` of `gather` and `median`.
const MAP_HELP: &str = "Mapping of the compute threads (one per rank by default); disk k is served on the rank of compute thread k mod S, which also processes its tiles";

/// A checked run of one mode.
#[derive(Debug)]
pub enum Plan {
    /// `store`.
    Store(store::StorePlan),
    /// `load`.
    Load(load::LoadPlan),
    /// `gather`.
    Gather(gather::GatherPlan),
    /// `median`.
    Median(median::MedianPlan),
    /// `serve`.
    Serve(serve::ServePlan),
    /// `client`.
    Client(client::ClientPlan),
}

impl Args {
    /// Checks the options of the mode (bad input, before any work).
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`] naming the option or file at fault.
    pub fn plan(&self) -> Result<Plan> {
        Ok(match &self.mode {
            Mode::Store(a) => Plan::Store(a.plan()?),
            Mode::Load(a) => Plan::Load(a.plan()?),
            Mode::Gather(a) => Plan::Gather(a.plan()?),
            Mode::Median(a) => Plan::Median(a.plan()?),
            Mode::Serve(a) => Plan::Serve(a.plan()?),
            Mode::Client(a) => Plan::Client(a.plan()?),
        })
    }
}

/// Tiles in flight per compute thread in `gather` and `serve`: the thesis's
/// `flow_control(2*P)` (`median` has `--in-flight`).
pub const THESIS_IN_FLIGHT: usize = 2;

/// The default tile side of a stored image: 512, or the image's larger side if that is smaller.
pub fn default_tile(tiles: Option<usize>, width: usize, height: usize) -> usize {
    tiles.unwrap_or(512.min(width.max(height)))
}

/// The default tile side of a random image for `threads` compute threads: the largest of
/// 512, 1024 and 2048 that still leaves every thread 8 tiles (else [`default_tile`]'s).
/// Larger tiles need fewer neighbour strips per pixel, each a request to a disk thread: the
/// median of 8192² on 2 ranks made about 1350 Mpix/s with tiles of 512, 1570 with 1024 and
/// 1640 with 2048 (4 alternating rounds each).
pub fn default_random_tile(tiles: Option<usize>, width: usize, height: usize, threads: usize) -> usize {
    let fits = |side: usize| width.div_ceil(side) * height.div_ceil(side) >= 8 * threads;
    tiles.unwrap_or_else(|| {
        [2048, 1024].into_iter().find(|&side| fits(side)).unwrap_or(default_tile(None, width, height))
    })
}

/// The stride for `disks` disks: `--stride`, checked, or the default, with a note when D has
/// no stride that keeps all 8 neighbours of a tile off its disk (D = 2, 3, 4, 6).
///
/// # Errors
/// A [`dps_harness::BadInput`] for a stride the rule does not allow.
pub fn choose_stride(stride: Option<usize>, disks: usize) -> Result<(usize, Option<String>)> {
    let (default, quality) = layout::default_stride(disks);
    match stride {
        Some(s) if s == default || layout::is_valid_stride(s, disks) => Ok((s, None)),
        Some(s) => bad_input!(
            "--stride {s}: the rule needs s coprime to --disks {disks} and s ∉ {{1, D−1}}{}",
            if quality == StrideQuality::Spec {
                format!(" (for example {default})")
            } else {
                format!("; none exists for D = {disks}, the closest rule is s = {default}")
            }
        ),
        None => {
            let note = match quality {
                StrideQuality::Spec => None,
                StrideQuality::NotCoprime => Some(format!(
                    "no stride is coprime to {disks} disks and ∉ {{1, {}}}; used s = {default}, which still puts all 8 neighbours of a tile on other disks",
                    disks - 1
                )),
                StrideQuality::Partial if disks > 1 => Some(format!(
                    "with {disks} disks no stride puts all 8 neighbours of a tile on other disks; used s = {default} (diagonal neighbours may share a disk)"
                )),
                StrideQuality::Partial => None,
            };
            Ok((default, note))
        }
    }
}

/// A stored image's name: a plain file name.
///
/// # Errors
/// A [`dps_harness::BadInput`] for an empty name or one with a path separator.
pub fn check_name(name: &str, option: &str) -> Result<()> {
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        bad_input!("{option} {name:?}: must be a plain file name (no '/', not starting with '.')");
    }
    Ok(())
}

/// `--window X Y W H` (default: the whole image), checked against the image.
///
/// # Errors
/// A [`dps_harness::BadInput`] for an empty window or one reaching outside the image.
pub fn check_window(window: Option<&[usize]>, width: usize, height: usize) -> Result<(usize, usize, usize, usize)> {
    let Some(&[x, y, w, h]) = window else { return Ok((0, 0, width, height)) };
    if w == 0 || h == 0 {
        bad_input!("--window {x} {y} {w} {h}: the window is empty");
    }
    if x.checked_add(w).is_none_or(|e| e > width) || y.checked_add(h).is_none_or(|e| e > height) {
        bad_input!("--window {x} {y} {w} {h}: outside the {width}x{height} image");
    }
    Ok((x, y, w, h))
}

/// The depth a mode needs.
///
/// # Errors
/// A [`dps_harness::BadInput`] naming the mode and the image's depth.
pub fn check_depth(depth: Depth, mode: &str, ok: &[Depth]) -> Result<()> {
    if !ok.contains(&depth) {
        let bits: Vec<String> = ok.iter().map(|d| d.bits().to_string()).collect();
        bad_input!("{mode} needs {}-bit grey pixels; the image has {} bits", bits.join("- or "), depth.bits());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::default_random_tile;

    #[test]
    fn random_tiles_are_as_large_as_8_tiles_per_thread_allow() {
        assert_eq!(default_random_tile(None, 8192, 8192, 2), 2048); // 16 tiles
        assert_eq!(default_random_tile(None, 8192, 8192, 4), 1024);
        assert_eq!(default_random_tile(None, 4096, 4096, 2), 1024);
        assert_eq!(default_random_tile(None, 1024, 1024, 2), 512);
        assert_eq!(default_random_tile(None, 300, 200, 2), 300);
        assert_eq!(default_random_tile(Some(64), 8192, 8192, 2), 64);
    }
}
