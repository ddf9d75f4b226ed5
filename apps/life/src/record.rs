//! The result record of a run: the JSON object `--json` prints and the human-readable line,
//! both from [`Record`].

use std::fmt;

use dps_harness::Common;
use serde::{Deserialize, Serialize};

/// One run of `dps-life`. Fields of other variants and options are absent, not null. Rates
/// and medians are plain numbers, `null` when not finite (serde_json's rule).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Record {
    /// App, variant, ranks, threads (bands), seconds (the timed generations), verified.
    #[serde(flatten)]
    pub common: Common,
    /// World width, cells.
    pub width: usize,
    /// World height, cells.
    pub height: usize,
    /// Whether the world is a torus.
    pub wrap: bool,
    /// Timed generations.
    pub generations: u64,
    /// Generations per step.
    pub depth: usize,
    /// Steps per call of the generation graph (not in the serial variant).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps_per_call: Option<usize>,
    /// Why this depth and these steps per call: the options, or the default schedule's
    /// choice (`schedule`; not in the serial variant).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_reason: Option<String>,
    /// Cell updates per second over the timed generations.
    pub cups: f64,
    /// The median of the calls' times per generation, s (not in the serial variant).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iteration_median_s: Option<f64>,
    /// The job's first call's time per generation, s (a warm-up call if there is one), to
    /// set against `iteration_median_s`: what starting up still costs (not in the serial
    /// variant).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_iteration_s: Option<f64>,
    /// `compare`: both schedules, side by side.
    #[serde(flatten)]
    pub compare: Option<Compare>,
    /// `--compare-serial`: the serial kernel, in blocks alternating with the parallel calls.
    #[serde(flatten)]
    pub serial: Option<AgainstSerial>,
    /// `--view`: the region-service client's calls.
    #[serde(flatten)]
    pub view: Option<View>,
    /// `--export-region`: what was served to other programs.
    #[serde(flatten)]
    pub served: Option<Served>,
    /// Generations run in all, warm-up and untimed ones included (not in the serial variant).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generations_run: Option<u64>,
    /// Live cells at the end (not counted in a PDEXEC or NOALLOC simulation, where the
    /// cells are skipped or left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub population: Option<u64>,
    /// `--verify` passed: the reference it was checked against (`naive` or `bit-serial`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

/// `compare`: the `simple` and `overlap` schedules (the paper's Fig. 9).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Compare {
    /// Median time per generation of `simple`, s.
    pub simple_iteration_median_s: f64,
    /// Median time per generation of `overlap`, s.
    pub overlap_iteration_median_s: f64,
    /// Cell updates per second of `simple` (from its median).
    pub simple_cups: f64,
    /// Cell updates per second of `overlap` (from its median).
    pub overlap_cups: f64,
    /// `simple_iteration_median_s / overlap_iteration_median_s`.
    pub speedup: f64,
}

/// `--compare-serial`: the parallel efficiency against the serial kernel in the same run.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct AgainstSerial {
    /// Median time per generation of the serial kernel, s.
    pub serial_iteration_median_s: f64,
    /// Cell updates per second of the serial kernel.
    pub serial_cups: f64,
    /// Median time per generation of the parallel blocks, s.
    pub parallel_iteration_median_s: f64,
    /// Serial over parallel time, over the ranks holding bands.
    pub efficiency: f64,
}

/// `--view`: the region service's calls while the simulation runs (the paper's Table 2).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct View {
    /// The block requested, `WxH`.
    pub view_block: String,
    /// Calls made.
    pub view_calls: usize,
    /// Median time of a call, s.
    pub view_call_median_s: f64,
    /// Median time of the read inside a call, s.
    pub view_read_median_s: f64,
    /// Calls whose block straddled two bands.
    pub view_straddling_calls: usize,
    /// Median time per generation without calls, s.
    pub iteration_without_calls_s: f64,
    /// Median time per generation while the client calls, s.
    pub iteration_with_calls_s: f64,
    /// How much longer a generation takes while the client calls: with / without - 1 (the
    /// DPS paper's Table 2 figure).
    pub iteration_overhead: f64,
    /// `--view-process`: calls per second of the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view_calls_per_s: Option<f64>,
    /// `--view-process`: median of each call's time less its read (communication and
    /// scheduling), s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view_comm_median_s: Option<f64>,
}

/// `--export-region`: what the run served to viewers started separately.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Served {
    /// Calls of `life.region` answered (or failed).
    pub served_calls: u64,
    /// Generations run after the timed ones, while serving (--serve-seconds).
    pub serve_generations: u64,
}

/// `dps-life view`: the record of a viewer started separately.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ViewerRecord {
    /// App `life`, variant `view`, ranks, threads (the callers), seconds (from the first
    /// call to the end).
    #[serde(flatten)]
    pub common: Common,
    /// The served world's width, cells.
    pub width: usize,
    /// The served world's height, cells.
    pub height: usize,
    /// The block requested, `WxH`.
    pub view_block: String,
    /// Calls in flight at a time.
    pub fan: usize,
    /// Calls answered.
    pub view_calls: usize,
    /// Calls per second (answered calls over `seconds`).
    pub view_calls_per_s: f64,
    /// Median time of a call, from the viewer's split to its merge, s.
    pub view_call_median_s: f64,
    /// Median time the served bands spent reading a block (processing), s.
    pub view_read_median_s: f64,
    /// Median of each call's time less its read (communication and scheduling), s.
    pub view_comm_median_s: f64,
    /// Calls whose rows came from two generations.
    pub view_straddling_calls: usize,
    /// Oldest and newest generation seen (absent without calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view_generations: Option<(u64, u64)>,
    /// Why the viewer stopped: `calls`, `duration`, `stdin` or `service ended`.
    pub stopped_by: String,
}

impl fmt::Display for ViewerRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "life view {} blocks of a {}x{} world, {} in flight: {} calls in {:.3} s ({:.1} calls/s), \
             median call {:.3} ms (read {:.3} ms, communication {:.3} ms), {} straddling; stopped by {}",
            self.view_block,
            self.width,
            self.height,
            self.fan,
            self.view_calls,
            self.common.seconds,
            self.view_calls_per_s,
            self.view_call_median_s * 1e3,
            self.view_read_median_s * 1e3,
            self.view_comm_median_s * 1e3,
            self.view_straddling_calls,
            self.stopped_by
        )?;
        if let Some((lo, hi)) = self.view_generations {
            write!(f, "; generations {lo} to {hi}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.common;
        write!(
            f,
            "life {} {}x{} ranks={} bands={}: {} generations in {:.3} s, {:.3e} cell updates/s",
            c.variant, self.width, self.height, c.ranks, c.threads, self.generations, c.seconds, self.cups,
        )?;
        if let Some(p) = self.population {
            write!(f, ", population {p}")?;
        }
        if let Some(compare) = &self.compare {
            write!(f, "; overlap/simple speedup {:.3}", compare.speedup)?;
        }
        if let Some(s) = &self.serial {
            write!(f, "; serial {:.3e} cups, efficiency {:.3}", s.serial_cups, s.efficiency)?;
        }
        if let Some(v) = &self.view {
            write!(
                f,
                "; view {} blocks: {} calls, median {:.3} ms, iteration {:.3} ms without calls, {:.3} ms with",
                v.view_block,
                v.view_calls,
                v.view_call_median_s * 1e3,
                v.iteration_without_calls_s * 1e3,
                v.iteration_with_calls_s * 1e3
            )?;
            if let Some(rate) = v.view_calls_per_s {
                write!(f, ", {rate:.1} calls/s")?;
            }
        }
        if let Some(s) = &self.served {
            write!(f, "; served {} region calls", s.served_calls)?;
        }
        match c.verified {
            Some(true) => write!(f, "; verified against the serial reference"),
            Some(false) => write!(f, "; DIFFERS from the serial reference"),
            None => Ok(()),
        }
    }
}
