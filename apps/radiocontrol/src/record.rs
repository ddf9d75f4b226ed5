//! The JSON record of `run` (and `bench-kernel`'s).

use std::fmt;

use dps_harness::Common;
use serde::{Deserialize, Serialize};

/// Hours of the thesis's serial run of the paper-scale day (eq. 9-16).
pub const THESIS_SERIAL_HOURS: f64 = 74.0;

/// One `run`.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Record {
    /// App, variant, ranks, threads (workers), seconds, verified.
    #[serde(flatten)]
    pub common: Common,
    /// Watches, stations, hours of the data set.
    pub watches: usize,
    /// See `watches`.
    pub stations: usize,
    /// See `watches`.
    pub hours: usize,
    /// Jobs of the data set (hours × stations).
    pub jobs: usize,
    /// Jobs already in the result file when the run started (resumed).
    pub jobs_resumed: usize,
    /// Jobs this run computed and appended.
    pub jobs_run: usize,
    /// Correlations this run computed (jobs_run × 60 × watches).
    pub correlations: u64,
    /// `correlations / seconds`.
    pub correlations_per_s: f64,
    /// Wall seconds per job of this run.
    pub seconds_per_job: f64,
    /// The paper-scale day (§2.5: 144 M correlations) at this run's rate, in hours.
    pub paper_day_hours: f64,
    /// The thesis's model (9-20) for as many PCs as this run has workers: 74 / n hours.
    pub model_9_20_hours: f64,
    /// Seconds the workers spent reading, summed (hidden behind the correlation).
    pub read_seconds: f64,
    /// Seconds the workers spent correlating, summed.
    pub compute_seconds: f64,
    /// Jobs per worker (rank) in this run.
    pub per_worker: Vec<usize>,
    /// Bytes of a torn or inconsistent tail cut from the result file at the start.
    pub cut_bytes: u64,
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = match self.common.verified {
            None => "not verified".to_string(),
            Some(true) => "verified".to_string(),
            Some(false) => "VERIFICATION FAILED".to_string(),
        };
        write!(
            f,
            "radiocontrol {} on {} ranks: {} jobs ({} resumed), {} correlations in {:.2} s, {:.0}/s; \
             paper-scale day {:.2} h (thesis model {:.1} h); {v}",
            self.common.variant,
            self.common.ranks,
            self.jobs_run,
            self.jobs_resumed,
            self.correlations,
            self.common.seconds,
            self.correlations_per_s,
            self.paper_day_hours,
            self.model_9_20_hours,
        )
    }
}
