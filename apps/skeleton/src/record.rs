//! The result record of a run: the JSON object `--json` prints and the human-readable line,
//! both from [`Record`].

use std::fmt;

use dps_harness::Common;
use serde::{Deserialize, Serialize};

/// One run of `dps-skeleton`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Record {
    /// App, variant (`static`, `migrate`), ranks, threads (cells), seconds (from the first
    /// round to the skeleton, migrations included), verified.
    #[serde(flatten)]
    pub common: Common,
    /// The input: a file, or `KIND WxH seed S`.
    pub input: String,
    /// Image width.
    pub width: usize,
    /// Image height.
    pub height: usize,
    /// Cell side, pixels.
    pub cell: usize,
    /// Passes per round.
    pub depth: usize,
    /// Passes of the rule until the image stopped changing, the unchanged one included
    /// (the serial reference's count).
    pub iterations: u64,
    /// Rounds run.
    pub rounds: u64,
    /// Cell rounds run (dead cells are skipped).
    pub cell_rounds: u64,
    /// Cells moved to another rank.
    pub migrations: usize,
    /// Time rank 0 spent moving cells, s (part of `seconds`).
    pub migration_seconds: f64,
    /// The first run's time, s (warm-up or not; of the last variant with `compare`), to set
    /// against `seconds`, the median of the timed runs: what starting up still costs.
    pub first_call_s: f64,
    /// Time rank 0 spent between rounds on its bookkeeping (the living cells, the round's
    /// lists, the reports), s (part of `seconds`).
    pub bookkeeping_seconds: f64,
    /// Image pixels over `seconds`, millions per second.
    pub mpix_per_s: f64,
    /// Foreground pixels before and after.
    pub black_before: u64,
    /// Foreground pixels of the skeleton.
    pub black_after: u64,
    /// `compare`: both variants, side by side.
    #[serde(flatten)]
    pub compare: Option<Compare>,
    /// `--verify`: the serial reference's time, s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial_seconds: Option<f64>,
    /// `--verify`: the serial reference's rate, Mpixel/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial_mpix_per_s: Option<f64>,
}

/// `compare`: static distribution against cell migration, in the same job.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Compare {
    /// Median time of the static runs, s.
    pub static_seconds: f64,
    /// Median time of the migrating runs, s.
    pub migrate_seconds: f64,
    /// `static_seconds / migrate_seconds`.
    pub gain: f64,
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.common;
        write!(
            f,
            "skeleton {} {}x{} cells of {} ({}) depth {} ranks={}: {} passes in {} rounds, {:.3} s, {:.1} Mpixel/s, {} migrations ({:.3} s), bookkeeping {:.3} s, {} -> {} foreground pixels",
            c.variant,
            self.width,
            self.height,
            self.cell,
            c.threads,
            self.depth,
            c.ranks,
            self.iterations,
            self.rounds,
            c.seconds,
            self.mpix_per_s,
            self.migrations,
            self.migration_seconds,
            self.bookkeeping_seconds,
            self.black_before,
            self.black_after
        )?;
        if let Some(c) = &self.compare {
            write!(f, "; static {:.3} s, migrate {:.3} s: gain {:.2}", c.static_seconds, c.migrate_seconds, c.gain)?;
        }
        if let Some(s) = self.serial_mpix_per_s {
            write!(f, "; serial reference {s:.1} Mpixel/s")?;
        }
        match c.verified {
            Some(true) => write!(f, "; verified against the serial reference"),
            Some(false) => write!(f, "; DIFFERS from the serial reference"),
            None => Ok(()),
        }
    }
}
