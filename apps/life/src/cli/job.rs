//! The checks that need the job's size, once the runtime has started: the viewer's rank, the
//! bands (--map), their depth and schedule, and the memory the ranks on this node need.

use anyhow::Result;
use dps::Runtime;
use dps_harness::bad_input;

use super::Plan;
use crate::footprint::{self, sum};
use crate::layout::Layout;
use crate::output::Format;
use crate::report::uses_naive;
use crate::schedule::{self, Steps};

/// The job: where the bands and the viewer are, and the schedule chosen for them.
#[derive(Clone, Debug)]
pub struct Job {
    /// The viewer's rank (the last), with --view.
    pub viewer: Option<usize>,
    /// The band collection's mapping.
    pub map: String,
    /// How the world is cut into the bands.
    pub layout: Layout,
    /// Generations per step and steps per call, and why.
    pub steps: Steps,
}

impl Plan {
    /// Checks the plan against the job's size and chooses the schedule: the viewer needs a
    /// rank of its own, every band a row, --depth at most the rows of the thinnest band; and
    /// the memory (unless NOALLOC leaves the cells out).
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`] naming the option, or a mapping the runtime rejects.
    pub fn job(&self, rt: &Runtime) -> Result<Job> {
        let ranks = rt.ranks();
        let viewer = match &self.viewer {
            Some(v) if v.process_fan.is_some() => None,
            Some(_) if ranks < 2 => bad_input!("--view needs at least 2 ranks: the last one is the client"),
            Some(_) => Some(ranks - 1),
            None => None,
        };
        let map = match (&self.map, viewer) {
            (Some(m), _) => m.clone(),
            (None, Some(v)) => (0..v).map(|r| r.to_string()).collect::<Vec<_>>().join(" "),
            (None, None) => "all".to_string(),
        };
        let bands = rt.threads_in(&map)?;
        let (layout, steps) = self.size(ranks, &map, bands)?;
        Ok(Job { viewer, map, layout, steps })
    }

    /// Under `--simulate P`, the checks of [`Plan::job`] before the runtime starts (with
    /// `--map`, its bands counted on P virtual ranks of this host): the simulator's tables
    /// take memory like P² (1.4 GB at P = 4000), which a world of fewer rows than its bands,
    /// or too large for the node, must not cost before its refusal.
    ///
    /// # Errors
    /// As [`Plan::job`].
    pub fn check_before_start(&self) -> Result<()> {
        // P = 0 is the simulator's to refuse.
        let Some(p) = self.standard.simulated_ranks().filter(|&p| p > 0) else { return Ok(()) };
        match &self.map {
            None => self.size(p, "all", p).map(|_| ()),
            Some(map) => {
                let bands = dps::Runtime::simulated_threads_in(map, p)?;
                self.size(p, map, bands).map(|_| ())
            }
        }
    }

    /// Checks `bands` bands of `map` on `ranks` ranks against the world (a row each, a
    /// depth that fits the thinnest) and the memory; returns their layout and schedule.
    fn size(&self, ranks: usize, map: &str, bands: usize) -> Result<(Layout, Steps)> {
        let (width, height) = (self.source.width(), self.source.height());
        if bands == 0 || bands > height {
            bad_input!("--map {map:?}: {bands} bands for {height} rows: every band needs at least one row");
        }
        // The bands' rows are `height * b / bands`: the product must not wrap.
        if height.checked_mul(bands).is_none() {
            bad_input!("--map {map:?}: {bands} bands of a world {height} rows high are too many");
        }
        let layout = Layout { width, height, bands, wrap: self.wrap };
        let thinnest = (0..bands).map(|b| layout.rows(b).len()).min().unwrap_or(0);
        let given = self.depth.map(|d| step_depth(Some(d), thinnest, &format!("the thinnest of the {bands} bands")));
        let steps = schedule::choose(self.generations, thinnest, given.transpose()?, self.steps_per_call);
        if !self.standard.sim.noalloc() {
            dps_harness::input(self.check_memory(ranks, bands, steps.depth))?;
        }
        Ok((layout, steps))
    }

    /// Refuses the run when the ranks on this node need more memory than it has: the
    /// `bands` bands (double-buffered, with their ghost rows and the rows in flight), and
    /// what rank 0 adds (the world gathered and the serial reference for --verify, the
    /// region gathered and encoded for --out and the snapshots, the serial copy of
    /// --compare-serial) and the viewer its blocks. The total is shared evenly by the
    /// `ranks` in the figure given to [`dps_harness::check_memory`], so every rank reaches
    /// the same verdict (and the node's total is exact on one node, whatever --map says).
    /// Under --simulate, the whole job and the simulator's tables are in this process.
    fn check_memory(&self, ranks: usize, bands: usize, depth: usize) -> Result<()> {
        let total = self.memory_total(bands, depth);
        if let Some(p) = self.standard.simulated_ranks() {
            // Every virtual rank lives in this process, beside the simulator's tables.
            let need = total.saturating_add(dps_harness::simulate::simulator_bytes(p));
            return dps_harness::check_memory(&format!("{} --simulate {p}", self.size_from), need, 0);
        }
        let per_rank = total.div_ceil(ranks.max(1) as u64);
        dps_harness::check_memory(&self.size_from, per_rank, per_rank)
    }

    /// The bytes [`check_memory`](Self::check_memory) counts for the whole job.
    fn memory_total(&self, bands: usize, depth: usize) -> u64 {
        let (w, h) = (self.source.width(), self.source.height());
        let mut rank0 = self.rank0_extra(depth);
        rank0 = rank0.saturating_add(if self.standard.verify() { footprint::gathered(w, h) } else { 0 });
        let viewer = match &self.viewer {
            Some(v) if v.png_dir.is_some() => {
                sum(&[footprint::gathered(v.block.0, v.block.1), footprint::png(v.block.0, v.block.1)])
            }
            Some(v) => footprint::gathered(v.block.0, v.block.1),
            None => 0,
        };
        sum(&[footprint::bands(w, h, bands, depth), rank0, viewer])
    }

    /// The memory [`Plan::job`] checks for a simulation on `p` virtual ranks with one band
    /// each: the whole job, in this process, with the simulator's tables.
    ///
    /// # Errors
    /// As [`Plan::job`].
    pub fn simulated_memory_need(&self, p: usize) -> Result<u64> {
        let (_, steps) = self.size(p, "all", p)?;
        Ok(self.memory_total(p, steps.depth).saturating_add(dps_harness::simulate::simulator_bytes(p)))
    }

    /// As [`check_memory`](Self::check_memory), for `--variant serial`: the world alone.
    pub(super) fn check_serial_memory(&self, depth: usize) -> Result<()> {
        let (w, h) = (self.source.width(), self.source.height());
        let need = sum(&[footprint::serial_world(w, h, depth), self.rank0_extra(depth)]);
        dps_harness::check_memory(&self.size_from, need, need)
    }

    /// What rank 0 holds beyond its bands, at its peak: the largest of the --verify
    /// reference and an output being written, plus the serial copy of --compare-serial.
    fn rank0_extra(&self, depth: usize) -> u64 {
        let (w, h) = (self.source.width(), self.source.height());
        let reference = match (self.standard.verify(), uses_naive(w, h, self.total_generations)) {
            (false, _) => 0,
            (true, true) => sum(&[footprint::bytes(w, h).saturating_mul(2), footprint::serial_world(w, h, 1)]),
            (true, false) => footprint::serial_world(w, h, 1),
        };
        let (rw, rh) = (self.rect.width, self.rect.height);
        let png = self.snapshots.is_some() || self.out.as_ref().is_some_and(|(_, f)| *f == Format::Png);
        let output = if self.out.is_some() || self.snapshots.is_some() {
            sum(&[footprint::gathered(rw, rh), if png { footprint::png(rw, rh) } else { 0 }])
        } else {
            0
        };
        let serial = if self.compare_serial { footprint::serial_world(w, h, depth) } else { 0 };
        reference.max(output).saturating_add(serial)
    }
}

/// The generations per step: `depth` (--depth), or [`schedule::DEFAULT_DEPTH`] if `rows`
/// (the rows of `what`) allow it, else `rows`.
pub(super) fn step_depth(depth: Option<usize>, rows: usize, what: &str) -> Result<usize> {
    match depth {
        Some(d) if d > rows => bad_input!(
            "--depth {d}: {what} has {rows} rows, and a step exchanges --depth rows with each neighbour, \
             so --depth can be at most {rows}"
        ),
        Some(d) => Ok(d),
        None => Ok(schedule::DEFAULT_DEPTH.min(rows)),
    }
}
