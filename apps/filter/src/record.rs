//! The result record of a run: the JSON object `--json` prints and the human-readable line.

use std::fmt;

use dps_harness::Common;
use serde::{Deserialize, Serialize};

use crate::layout::Tiling;

/// One run of `dps-filter median` or `gather`. Fields that do not apply are `null` (the
/// sweep's columns may name any of them).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Record {
    /// App (`filter`), variant (`exchange`, `serial`, `gather`), ranks, threads (compute
    /// threads), seconds (median of the timed runs), verified.
    #[serde(flatten)]
    pub common: Common,
    /// Image width, pixels.
    pub width: usize,
    /// Image height, pixels.
    pub height: usize,
    /// Tile side, pixels.
    pub tile: usize,
    /// Disks the image is striped over.
    pub disks: usize,
    /// The allocation rule's stride s.
    pub stride: usize,
    /// `preloaded` (tiles in memory) or `disk` (tile files).
    pub source: String,
    /// Output pixels per second (the window's, for gather), millions.
    pub mpix_per_s: f64,
    /// Tiles processed per run.
    pub tiles: usize,
    /// The split's flow-control window: tiles in flight at most (2 per compute thread).
    pub window: Option<usize>,
    /// Most tiles created by the client's split and not yet merged back, counted: at most
    /// `window` sent plus the one the runtime pulls ahead of the window.
    pub max_in_flight: Option<usize>,
    /// Most tiles on one compute thread (from the allocation rule: disk mod threads).
    pub tiles_max_per_node: Option<usize>,
    /// Input tiles read from files per run (cache misses; 0 preloaded).
    pub reads: Option<u64>,
    /// `reads / tiles`.
    pub reads_per_tile: Option<f64>,
    /// Tile or strip requests per run (9 per interior tile).
    pub requests: Option<u64>,
    /// The tile cache's capacity per disk, tiles (0: off).
    pub cache_tiles: Option<usize>,
    /// T_p: median time to filter one tile, s.
    pub t_p_s: Option<f64>,
    /// t_dr: median time to read one tile from a file, s (0 preloaded).
    pub t_dr_s: Option<f64>,
    /// t_dw: median time to write one tile, s.
    pub t_dw_s: Option<f64>,
    /// The model (7-7): t_dr + max tiles per node · T_p + t_dw, s.
    pub model_seconds: Option<f64>,
    /// The first call's time, s (warm-up or not), to set against `seconds`, the median of
    /// the timed calls: what starting up still costs (exchange-process-and-store).
    pub first_call_s: Option<f64>,
    /// The model's speedup N·T_p / model_seconds.
    pub model_speedup: Option<f64>,
    /// The filter: `median5`, or gather's.
    pub filter: Option<String>,
    /// `--compare-serial`: the serial whole-image median on one core of rank 0, timed after
    /// each timed run (median), Mpix/s.
    pub serial_mpix_per_s: Option<f64>,
}

impl Record {
    /// A run over `tiling`'s image from `source`: what every variant reports, and `null` for
    /// the measurements a variant adds itself (struct update syntax).
    pub fn new(common: Common, tiling: &Tiling, source: &str, mpix_per_s: f64, tiles: usize) -> Record {
        Record {
            common,
            width: tiling.width,
            height: tiling.height,
            tile: tiling.tile,
            disks: tiling.disks,
            stride: tiling.stride,
            source: source.into(),
            mpix_per_s,
            tiles,
            window: None,
            max_in_flight: None,
            tiles_max_per_node: None,
            reads: None,
            reads_per_tile: None,
            requests: None,
            cache_tiles: None,
            t_p_s: None,
            t_dr_s: None,
            t_dw_s: None,
            model_seconds: None,
            first_call_s: None,
            model_speedup: None,
            filter: None,
            serial_mpix_per_s: None,
        }
    }
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.common;
        write!(
            f,
            "filter {} {}x{} tile {} disks {} ({}) ranks={} threads={}: {:.4} s, {:.1} Mpix/s",
            c.variant,
            self.width,
            self.height,
            self.tile,
            self.disks,
            self.source,
            c.ranks,
            c.threads,
            c.seconds,
            self.mpix_per_s
        )?;
        if let (Some(reads), Some(per)) = (self.reads, self.reads_per_tile) {
            write!(f, ", {reads} tile reads ({per:.2} per tile)")?;
        }
        if let Some(serial) = self.serial_mpix_per_s {
            write!(f, ", serial kernel {serial:.1} Mpix/s on one core")?;
        }
        if let (Some(t), Some(s)) = (self.model_seconds, self.model_speedup) {
            write!(f, ", model (7-7) {t:.4} s, speedup {s:.2}")?;
        }
        match c.verified {
            Some(true) => write!(f, "; verified against the serial reference"),
            Some(false) => write!(f, "; DIFFERS from the serial reference"),
            None => Ok(()),
        }
    }
}
