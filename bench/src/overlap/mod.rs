//! `overlap`: what pipelining communication with computation gains over doing the same work
//! communication-then-computation, on two ranks.
//!
//! Pipelined: one graph sends N blocks from rank 0 to rank 1, which computes on each block as
//! it arrives. Phased: graph A sends all N blocks to rank 1, which stores them in its thread
//! state; then graph B computes on the stored blocks. Graph A's time is the communication
//! time, graph B's the computation time; their ratio gives the paper's potential gain,
//! `r / (r + 1)` for `r <= 1` and `1 / (1 + r)` above.

mod graphs;

use std::io::Write;

use anyhow::{ensure, Context, Result};
use clap::Args;
use mpi::topology::Communicator;
use serde::{Deserialize, Serialize};

use crate::launch;
use dps_harness::median;

/// The blocks of one run hold about this many bytes in total...
const TOTAL_BYTES: usize = 256 << 20;
/// ...in at least this many and at most this many blocks.
const BLOCK_COUNT: (usize, usize) = (16, 2048);
/// Flow-control window of the splits that emit blocks.
const WINDOW: usize = 16;

/// Options shared by the launcher and the worker.
#[derive(Args, Clone, Debug)]
pub(crate) struct Options {
    /// Repetitions of each measurement (the median is reported; 1 to 10000).
    #[arg(long, default_value_t = 5)]
    pub(crate) reps: usize,
    /// Block sizes: a block is SIZE x SIZE doubles.
    #[arg(long, value_delimiter = ',', default_value = "32,64,128,256,512,1024")]
    pub(crate) blocks: Vec<usize>,
    /// Element updates (one multiply and one add each) per block, whatever its size.
    #[arg(long, default_value_t = 1 << 19)]
    pub(crate) work: usize,
}

/// The most repetitions `--reps` accepts.
const MAX_REPS: usize = 10_000;

impl Options {
    /// Checks the options (bad input); returns the bytes of the largest block.
    fn checked(&self) -> Result<u64> {
        if !(1..=MAX_REPS).contains(&self.reps) {
            dps_harness::bad_input!("--reps {} must be between 1 and {MAX_REPS}", self.reps);
        }
        if self.work == 0 {
            dps_harness::bad_input!("--work 0: each block needs at least one element update");
        }
        let mut largest = 0;
        for &b in &self.blocks {
            // Blocks travel with u32 sides; the byte count must not overflow.
            let bytes = u32::try_from(b).ok().and_then(|_| b.checked_mul(b)?.checked_mul(8));
            match bytes {
                Some(0) => dps_harness::bad_input!("--blocks: a block side must be at least 1"),
                Some(bytes) => largest = largest.max(bytes as u64),
                None => dps_harness::bad_input!("--blocks {b}: a {b}x{b} block of doubles is too large"),
            }
        }
        if self.blocks.is_empty() {
            dps_harness::bad_input!("--blocks: give at least one block size");
        }
        Ok(largest)
    }

    /// Checks the options and that the blocks fit in this node's memory.
    fn check(&self) -> Result<()> {
        let largest = self.checked()?;
        let side = self.blocks.iter().copied().max().unwrap_or(0);
        // Rank 1 stores every block of the phased schedule; both ranks hold a window of
        // blocks in flight and the copies the computation works on.
        let stored = (block_count(side) as u64).saturating_mul(largest);
        let in_flight = largest.saturating_mul(2 * (WINDOW as u64 + 2));
        dps_harness::check_memory(&format!("--blocks {side}"), stored.saturating_add(in_flight), 0)
    }

    fn to_args(&self) -> Vec<String> {
        let blocks = self.blocks.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(",");
        let reps = self.reps.to_string();
        let work = self.work.to_string();
        ["--reps", &reps, "--blocks", &blocks, "--work", &work].iter().map(|s| s.to_string()).collect()
    }
}

/// The results for one block size.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct Record {
    /// Block side: a block is `block x block` doubles.
    block: usize,
    /// Number of blocks.
    blocks: usize,
    /// Bytes per block.
    block_bytes: usize,
    /// Pipelined graph time, s (median).
    pipelined_s: f64,
    /// Phased time (graph A + graph B), s (median).
    phased_s: f64,
    /// Phased graph A (communication), s (median).
    comm_s: f64,
    /// Phased graph B (computation), s (median).
    comp_s: f64,
    /// `1 - pipelined_s / phased_s`.
    gain: f64,
    /// `comm_s / comp_s`.
    comm_comp_ratio: f64,
    /// The gain perfect overlap would give at this ratio.
    potential_gain: f64,
    /// Repetitions per measurement.
    reps: usize,
}

/// The paper's potential gain of overlapping for a communication/computation ratio `r`.
fn potential_gain(r: f64) -> f64 {
    if r <= 1.0 {
        r / (r + 1.0)
    } else {
        1.0 / (1.0 + r)
    }
}

fn block_count(block: usize) -> usize {
    (TOTAL_BYTES / (8 * block * block).max(1)).clamp(BLOCK_COUNT.0, BLOCK_COUNT.1)
}

/// The launcher: one `mpirun -n 2` of `overlap-worker`, then prints its records.
pub(crate) fn launch(opts: &Options, json: bool, timeout_s: u64) -> Result<()> {
    opts.check()?;
    launch::run_and_print::<Record>(2, "overlap-worker", opts.to_args(), timeout_s, json)
}

/// The worker, on exactly two ranks; rank 0 prints the records.
pub(crate) fn worker(opts: &Options) -> Result<()> {
    opts.checked()?;
    let (universe, _) =
        mpi::initialize_with_threading(mpi::Threading::Multiple).context("MPI was already initialised")?;
    ensure!(universe.world().size() == 2, "overlap-worker needs exactly 2 ranks, got {}", universe.world().size());
    let rt = dps::Runtime::from_universe(universe)?;
    let graphs = graphs::Graphs::build(&rt, opts.work, WINDOW)?;
    if rt.is_root() {
        let mut out = std::io::stdout().lock();
        for &block in &opts.blocks {
            let record = measure(&rt, &graphs, block, opts.reps)?;
            writeln!(out, "{}", serde_json::to_string(&record)?)?;
            out.flush()?;
        }
    }
    rt.shutdown()?;
    Ok(())
}

/// Runs the phased and the pipelined schedule `reps` times each (alternating, after one
/// small warm-up) and checks that they compute the same result.
fn measure(rt: &dps::Runtime, graphs: &graphs::Graphs, block: usize, reps: usize) -> Result<Record> {
    let n = block_count(block);
    let warm = n.min(2 * WINDOW);
    graphs.phased(rt, block, warm)?;
    graphs.pipelined(rt, block, warm)?;
    let (mut comm, mut comp, mut phased, mut pipelined) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..reps {
        let p = graphs.phased(rt, block, n)?;
        let q = graphs.pipelined(rt, block, n)?;
        let tolerance = 1e-9 * p.checksum.abs().max(1.0);
        ensure!(
            (p.checksum - q.checksum).abs() <= tolerance,
            "block {block}: phased checksum {} differs from pipelined {}",
            p.checksum,
            q.checksum
        );
        comm.push(p.comm_s);
        comp.push(p.comp_s);
        phased.push(p.comm_s + p.comp_s);
        pipelined.push(q.comm_s);
    }
    let (comm_s, comp_s, phased_s, pipelined_s) = (median(&comm), median(&comp), median(&phased), median(&pipelined));
    let ratio = comm_s / comp_s;
    Ok(Record {
        block,
        blocks: n,
        block_bytes: 8 * block * block,
        pipelined_s,
        phased_s,
        comm_s,
        comp_s,
        gain: 1.0 - pipelined_s / phased_s,
        comm_comp_ratio: ratio,
        potential_gain: potential_gain(ratio),
        reps,
    })
}

#[cfg(test)]
mod tests {
    use super::potential_gain;

    #[test]
    fn potential_gain_peaks_at_one() {
        assert_eq!(potential_gain(1.0), 0.5);
        assert!((potential_gain(0.25) - 0.2).abs() < 1e-12);
        assert!((potential_gain(4.0) - 0.2).abs() < 1e-12);
        assert_eq!(potential_gain(0.0), 0.0);
    }
}
