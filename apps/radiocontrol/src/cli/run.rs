//! `run`: its options, checked into a [`RunPlan`] on every rank before any work: the
//! options a simulation cannot have, the data set (every file), the output directory (made,
//! with this rank's pid for the watchdog), the result file's header, the ground truth of
//! `--verify`, and the trace file.

use std::path::PathBuf;

use anyhow::Result;
use dps_harness::options::Standard;
use dps_harness::{bad_input, OutputFile};

use crate::data::{read_truth, DataSet};
use crate::results;

/// `run`.
#[derive(clap::Args, Debug)]
#[command(mut_arg("verify", |a| a.help("Check the results against the ground truth and a serial run, byte for byte")))]
pub struct RunArgs {
    /// The data set directory.
    pub data: PathBuf,
    /// Output directory: results.bin, summary.csv, ranks/ (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// The serial reference: the §2.4 loops in one process, no MPI.
    #[arg(long)]
    pub serial: bool,
    /// Start a new result file, discarding OUT/results.bin (default: resume it).
    #[arg(long)]
    pub fresh: bool,
    /// Jobs queued per worker (the thesis's PipelineDepth).
    #[arg(long, default_value_t = 2)]
    pub pipeline_depth: usize,
    /// Test pacing: each job also sleeps this long on its worker, so that a test can kill
    /// a rank mid-run on a tiny data set. Not for production.
    #[arg(long, default_value_t = 0, hide = true)]
    pub throttle_ms: u64,
    /// Test of a full disk under MPI: once MPI has started (its shared-memory files are
    /// made), rank 0 sets its file-size limit (RLIMIT_FSIZE) to this many bytes, so the
    /// kernel refuses the result file's writes beyond it. (`ulimit -f` before mpirun would
    /// also break MPI's own start.) Not for production.
    #[arg(long, hide = true)]
    pub file_size_limit: Option<u64>,
    /// `--verify`, `--json`, the runtime's and the simulator's options.
    #[command(flatten)]
    pub standard: Standard,
}

/// A checked `run`.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// The data set, every file checked.
    pub data: DataSet,
    /// The output directory (it and its `ranks/` exist).
    pub out: PathBuf,
    /// The serial reference instead of the farm.
    pub serial: bool,
    /// Jobs queued per worker.
    pub pipeline_depth: usize,
    /// Test pacing: each job also sleeps this long.
    pub throttle_ms: u64,
    /// Test of a full disk: rank 0's file-size limit once MPI has started.
    pub file_size_limit: Option<u64>,
    /// `--verify`, `--json`, the runtime's and the simulator's options.
    pub standard: Standard,
}

impl RunArgs {
    /// Checks the options on this rank (rank 0 for `--serial`), in this order: what a
    /// simulation cannot have, the input and the output directory (`check_input`), then
    /// the trace file (not for `--serial`, which starts no runtime). With `--fresh`, rank 0
    /// removes the result file here.
    ///
    /// # Errors
    /// A `dps_harness::BadInput` naming the option or the file.
    pub fn plan(&self) -> Result<RunPlan> {
        check_simulation(self)?;
        let rank = if self.serial { 0 } else { dps_harness::launch_rank().unwrap_or(0) };
        let data = check_input(self, rank)?;
        if !self.serial {
            self.standard.check()?;
        }
        Ok(RunPlan {
            data,
            out: self.out.clone(),
            serial: self.serial,
            pipeline_depth: self.pipeline_depth,
            throttle_ms: self.throttle_ms,
            file_size_limit: self.file_size_limit,
            standard: self.standard.clone(),
        })
    }
}

/// The options a simulated run cannot have, refused before any work: the serial reference
/// (no graph) and the tests of failures, which a simulation has none of.
fn check_simulation(r: &RunArgs) -> Result<()> {
    let Some(p) = r.standard.sim.simulate else { return Ok(()) };
    if r.serial {
        bad_input!("--simulate {p}: --serial runs no DPS graph to simulate");
    }
    if r.throttle_ms > 0 {
        bad_input!("--simulate {p}: --throttle-ms paces a real run so that a test can kill a rank; a simulation has no rank to kill");
    }
    if r.file_size_limit.is_some() {
        bad_input!("--simulate {p}: --file-size-limit tests a full disk under MPI; a simulation runs without MPI");
    }
    Ok(())
}

/// The checks every rank makes before any work: the data set, the output directory, and
/// the result file's header.
fn check_input(r: &RunArgs, rank: usize) -> Result<DataSet> {
    if r.pipeline_depth == 0 {
        bad_input!("--pipeline-depth must be at least 1");
    }
    let data = DataSet::open(&r.data)?;
    let out = &r.out;
    let ranks_dir = out.join("ranks");
    if let Err(e) = std::fs::create_dir_all(&ranks_dir) {
        bad_input!("--out {}: cannot create {}: {e}", out.display(), ranks_dir.display());
    }
    // Each rank's pid and host, for the watchdog (and the operator).
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let pid_file = ranks_dir.join(format!("rank-{rank}.pid"));
    if let Err(e) = std::fs::write(&pid_file, format!("{} {}\n", std::process::id(), host.trim())) {
        bad_input!("--out {}: cannot write {}: {e}", out.display(), pid_file.display());
    }
    let path = results::path_in(out);
    if path.is_dir() {
        bad_input!("--out {}: {} is a directory, so no result file can be kept there", out.display(), path.display());
    }
    if r.standard.verify() {
        // Read now as well as at the end: a malformed truth file is bad input, found before
        // hours of correlation, not after them.
        read_truth(&data).map_err(|e| dps_harness::BadInput::new(format!("--verify: {e:#}")))?;
    }
    if r.fresh && rank == 0 {
        if let Err(e) = std::fs::remove_file(&path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                bad_input!("--fresh: cannot remove {}: {e}", path.display());
            }
        }
    }
    // The header only: the file may be huge, or a device that never ends (/dev/full).
    // (Not with --fresh: rank 0 is removing the file.)
    if let Some(file) = std::fs::File::open(&path).ok().filter(|_| !r.fresh) {
        let mut head = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::Read::take(file, results::HEADER as u64), &mut head);
        if head.iter().any(|&b| b != 0) {
            if let Some(why) = results::check_header(&data.manifest, &head) {
                bad_input!("--out: {} {why}", path.display());
            }
        }
    }
    if rank == 0 {
        // Proves the directory writable for the summary (no partial file is left).
        drop(OutputFile::create("--out", &out.join("summary.csv"))?);
    }
    Ok(data)
}
