//! The Table 1 replica of `sim-accuracy` (the simulator paper, Table 1: LU of a 2592×2592 matrix,
//! r = 216, basic graph, real on 8 nodes against DE, PDEXEC and PDEXEC+NOALLOC
//! predictions, with the simulator's own running time and memory). Here: the same matrix
//! and block, the merge-split graph (no overlap between steps: the basic graph), for real
//! on 2 ranks and on 1, then simulated on 2 virtual ranks in each mode; then NOALLOC alone
//! at larger n, to show that its memory does not depend on n.
//!
//! Every run is a process of its own, measured from outside: its wall time (generation,
//! warm-up and repetitions, the same work in every row) and the peak resident memory of
//! its largest process (`wait4`'s rusage: the tree's largest `ru_maxrss`, ranks included,
//! since mpirun waits for them).

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use dps_launch::{Job, Launcher};

/// The paper's matrix order and block.
const N: usize = 2592;
const BLOCK: usize = 216;

/// What one process did.
struct Measured {
    /// The record's `seconds`: measured (real) or predicted (simulated).
    seconds: f64,
    /// The process's wall time, seconds.
    wall: f64,
    /// Peak resident memory of its largest process, bytes.
    rss: u64,
}

/// Runs `job`, capturing its output, and reaps it with `wait4` for its resource usage.
fn measure(job: &Job) -> Result<Measured> {
    let words = job.command_line();
    let start = Instant::now();
    let mut child = Command::new(&words[0])
        .args(&words[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {}", job.display()))?;
    let mut err = child.stderr.take().context("stderr piped")?;
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut stdout = String::new();
    child.stdout.take().context("stdout piped")?.read_to_string(&mut stdout)?;
    let stderr = stderr.join().unwrap_or_default();
    let pid = libc::pid_t::try_from(child.id()).context("pid out of range")?;
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 writes the status and the usage into the two exclusive borrows; `pid` is
    // our own child, not waited for yet (`child` is never waited on after this).
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed().as_secs_f64();
    if reaped != pid {
        bail!("{}: wait4 failed: {}", job.display(), std::io::Error::last_os_error());
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        bail!("{} failed (status {status:#x}): {}", job.display(), stderr.trim());
    }
    let line = stdout.lines().find(|l| l.starts_with('{')).with_context(|| format!("{}: no JSON", job.display()))?;
    let record: serde_json::Value = serde_json::from_str(line)?;
    let seconds = record["seconds"].as_f64().filter(|s| s.is_finite() && *s > 0.0);
    let seconds = seconds.with_context(|| format!("{}: no positive seconds in {line}", job.display()))?;
    // Linux reports ru_maxrss in KiB.
    Ok(Measured { seconds, wall, rss: u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024 })
}

/// One run of dps-lu: `n`, `ranks` real (`mode` None) or simulated on 2 virtual ranks.
fn lu(bin: &Path, n: usize, ranks: usize, mode: Option<&str>, platform: &str, reps: usize) -> Result<Measured> {
    let mut args: Vec<String> =
        format!("--n {n} --block {BLOCK} --variant merge-split --json --warmup 1 --reps {reps}")
            .split_whitespace()
            .map(String::from)
            .collect();
    let launcher = match mode {
        Some(mode) => {
            args.extend(["--simulate", "2", "--sim-mode", mode, "--platform", platform].map(String::from));
            Launcher::None
        }
        None => Launcher::Mpirun,
    };
    let job = Job::new(bin.join("dps-lu")).launcher(launcher).ranks(ranks).args(&args).timeout_s(300);
    measure(&if mode.is_none() { super::bound_as_simulated(job) } else { job })
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

fn pct(x: f64) -> String {
    format!("{:+.1} %", 100.0 * x)
}

/// The replica and the NOALLOC memory sweep, as markdown.
pub(super) fn table1(bin: &Path, platform: &str, reps: usize) -> Result<String> {
    let real2 = lu(bin, N, 2, None, platform, reps)?;
    let real1 = lu(bin, N, 1, None, platform, reps)?;
    let modes = ["de", "pdexec", "noalloc"];
    let sims: Vec<Measured> = modes.iter().map(|m| lu(bin, N, 2, Some(m), platform, reps)).collect::<Result<_>>()?;
    let published =
        ["193.0 s, 127 MB → 60.7 s (−2.6 %)", "9.1 s, 124 MB → 60.3 s (−3.2 %)", "6.5 s, 14 MB → 59.9 s (−3.9 %)"];
    let mut out = format!(
        "\n### Table 1 replica: LU n = {N}, r = {BLOCK}, merge-split (the simulator paper's basic graph)\n\n\
         Each row is one process, warm-up and {reps} repetitions; wall time and peak RSS of its \
         largest process measured from outside; \"timed\" is the record's median (measured, or \
         predicted by the simulator on 2 virtual ranks).\n\n\
         | run | timed (s) | error vs real 2 ranks | process wall (s) | peak RSS (MiB) | the simulator paper (UltraSparc II, 8 nodes): wall, memory → predicted (error) |\n\
         |---|---:|---:|---:|---:|---|\n"
    );
    out += &format!(
        "| real, 2 ranks | {:.4} | | {:.2} | {:.0} | 62.3 s measured |\n",
        real2.seconds,
        real2.wall,
        mib(real2.rss)
    );
    out += &format!(
        "| real, 1 rank | {:.4} | | {:.2} | {:.0} | 185.1 s, 108 MB (serial) |\n",
        real1.seconds,
        real1.wall,
        mib(real1.rss)
    );
    for ((mode, sim), paper) in modes.iter().zip(&sims).zip(published) {
        let name = if *mode == "noalloc" { "PDEXEC+NOALLOC".to_string() } else { mode.to_uppercase() };
        out += &format!(
            "| {name} (simulator) | {:.4} | {} | {:.2} | {:.0} | {paper} |\n",
            sim.seconds,
            pct((sim.seconds - real2.seconds) / real2.seconds),
            sim.wall,
            mib(sim.rss)
        );
    }
    let (de, noalloc) = (&sims[0], &sims[2]);
    out += &format!(
        "\n- DE overhead against the 1-rank run (process wall): {} (the simulator paper: +4.3 %).\n\
         - NOALLOC prediction against DE's: {} (the simulator paper: −1.3 %).\n\
         - NOALLOC simulation against the real 2-rank run (process wall): {:.1}× faster (the simulator paper: 9.6×).\n",
        pct(de.wall / real1.wall - 1.0),
        pct(noalloc.seconds / de.seconds - 1.0),
        real2.wall / noalloc.wall
    );
    out += "\nThe simulator's memory against n (one repetition each, 2 virtual ranks, r = 216):\n\n\
            | n | matrix (MiB) | mode | predicted (s) | simulator wall (s) | simulator peak RSS (MiB) |\n\
            |---:|---:|---|---:|---:|---:|\n";
    for (n, mode) in [(N, "pdexec"), (2 * N, "pdexec"), (N, "noalloc"), (4 * N, "noalloc"), (8 * N, "noalloc")] {
        let sim = lu(bin, n, 2, Some(mode), platform, 1)?;
        out += &format!(
            "| {n} | {:.0} | {mode} | {:.3} | {:.2} | {:.0} |\n",
            mib((n * n * 8) as u64),
            sim.seconds,
            sim.wall,
            mib(sim.rss)
        );
    }
    Ok(out)
}
