//! The result record of a solve: the JSON object `--json` prints (and `dps-bench sweep`
//! reads back) and the human-readable report, both from [`Record`].

use std::fmt;

use dps_harness::Common;
use serde::{Deserialize, Serialize};

/// One solve of `dps-tsp`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Record {
    /// App, variant, ranks, threads (slave threads per rank), seconds (first tour and
    /// search), verified.
    #[serde(flatten)]
    pub common: Common,
    /// The instance's name.
    pub instance: String,
    /// Cities.
    pub n: usize,
    /// Slave threads in all.
    pub slaves: usize,
    /// Jobs in flight per slave.
    pub pipeline_depth: usize,
    /// Branch-and-bound steps per job.
    pub steps: u64,
    /// Cities left below which a job is searched whole.
    pub cutoff: usize,
    /// Nodes searched per second.
    pub nodes_per_s: f64,
    /// The best tour's length; `null` when no tour was found before the time limit.
    pub length: Option<i64>,
    /// Whether the search finished, which proves the tour optimal.
    pub optimal: bool,
    /// Branch-and-bound nodes searched.
    pub nodes: u64,
    /// Jobs sent to the slaves.
    pub jobs: u64,
    /// Idle tokens the slaves sent.
    pub idle_tokens: u64,
    /// Time of the first tour (local search), s.
    pub first_tour_seconds: f64,
    /// The first tour's length; `null` when the variant starts without one.
    pub initial_length: Option<i64>,
    /// The tour, cities from 0: in the human report only.
    #[serde(skip)]
    pub tour: Vec<usize>,
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.common;
        let status = match (self.length, self.optimal) {
            (None, _) => "(no tour found before the time limit)",
            (Some(_), true) => "optimal (proven)",
            (Some(_), false) => "not proven optimal (time limit)",
        };
        let check = match c.verified {
            Some(true) => ", verified",
            Some(false) => ", VERIFICATION FAILED",
            None => "",
        };
        let length = self.length.map_or("-".to_string(), |l| l.to_string());
        let cities: Vec<String> = self.tour.iter().map(|c| (c + 1).to_string()).collect();
        write!(
            f,
            "{}: {} cities, length {length} {status}, {} nodes, {} jobs, {} ranks x {} slave threads, {:.3} s ({:.0} nodes/s){check}\ntour: {}",
            self.instance,
            self.n,
            self.nodes,
            self.jobs,
            c.ranks,
            c.threads,
            c.seconds,
            self.nodes_per_s,
            cities.join(" ")
        )
    }
}
