//! `dps-radiocontrol supervise -- <mpirun or srun command>`: the watchdog of §2.8, a plain
//! process outside the MPI job.
//!
//! It starts the command in a process group of its own and polls, every `--poll-ms`:
//! - the job ended with 0: done; with 2 (bad input): stop, a restart would be refused too;
//! - any other end (a rank died and the launcher aborted the job), or no new bytes in the
//!   result file for `--stall-seconds` (a rank hung or stopped): the whole process group is
//!   killed (and every rank pid the job recorded on this host), and the command is started
//!   again with fewer ranks: its `-n`/`-np`/`--ntasks` lowered by the ranks found dead
//!   (at least one after a crash; none after a stall in which every rank is still running),
//!   never below `--min-ranks`. Under Slurm that is `srun -n` within the allocation.
//!
//! After a failed attempt, the Open MPI shared-memory segments it left are removed
//! ([`crate::shm`]: those that appeared during the attempt and that no process maps), also
//! when the ranks died before recording their pids.
//!
//! The job itself resumes from the last consistent record of its result file. A rank is
//! found dead when the pid it wrote in `OUT/ranks/rank-R.pid` is gone or stopped (state
//! `T`/`Z`) while the launcher still runs: the launcher kills the other ranks right after,
//! so only the ranks that vanished first count. Ranks on other hosts cannot be checked
//! from here; a crash there counts as one dead rank.
//!
//! When the job's hosts are known (`--hostfile`, the emulated cluster's, or the Slurm
//! allocation's: [`crate::hosts`]), every failure also asks each host whether it is alive;
//! the ranks that ran on a dead host count as dead, and the restart runs on the survivors.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context, Result};

use crate::cli::supervise::SupervisePlan;
use crate::data::Manifest;
use crate::hosts::Hosts;
use crate::launcher::{data_dir, rank_count, with_ranks};
use crate::shm;

/// After the job exited 0: its result file must exist and hold every job of its data set.
fn check_complete(cmd: &[String], results: &Path) -> Result<()> {
    let Some(data) = data_dir(cmd) else {
        bail!(
            "supervise: the job exited 0, but its command names no data set (`run DATA`) to check {} against: \
             not reported as completed",
            results.display()
        );
    };
    // The manifest alone: the files were checked when the job started.
    let manifest = Manifest::read(&data)?;
    crate::results::read_all(results, &manifest)
        .context("supervise: the job exited 0, but its result file is not complete")?;
    Ok(())
}

/// Size and mtime of the result file: progress is any change.
fn progress_mark(path: &Path) -> Option<(u64, SystemTime)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

/// The rank pids the job recorded on this host.
fn rank_pids(ranks_dir: &Path) -> Vec<(usize, i32)> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    rank_files(ranks_dir).into_iter().filter(|(_, _, h)| h == host.trim()).map(|(r, p, _)| (r, p)).collect()
}

/// Every rank the job recorded: its pid and host.
fn rank_files(ranks_dir: &Path) -> Vec<(usize, i32, String)> {
    let Ok(entries) = std::fs::read_dir(ranks_dir) else { return Vec::new() };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rank) = name.strip_prefix("rank-").and_then(|n| n.strip_suffix(".pid")).and_then(|n| n.parse().ok())
        else {
            continue;
        };
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        let mut words = text.split_whitespace();
        if let (Some(Ok(pid)), Some(h)) = (words.next().map(str::parse::<i32>), words.next()) {
            out.push((rank, pid, h.to_string()));
        }
    }
    out
}

/// Whether a process is running (not gone, not a zombie, not stopped).
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // The state follows the command name in parentheses.
            let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
            !matches!(state, Some('Z' | 'T' | 't' | 'X') | None)
        }
        Err(_) => false,
    }
}

fn kill_all(child: &mut Child, pids: &[(usize, i32)]) {
    let pgid = child.id() as i32;
    // SAFETY: kill(2) with a negative pid signals the process group we created for the
    // job; it touches no memory of ours.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    for &(_, pid) in pids {
        if pid > 1 && running_or_stopped(pid) {
            // SAFETY: as above, one process the job recorded as its rank.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
    let _ = child.wait();
}

fn running_or_stopped(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z"))
}

/// How an attempt ended.
enum End {
    Done,
    BadInput,
    Failed { code: Option<i32>, dead: usize },
    Stalled { dead: usize },
}

fn attempt(s: &SupervisePlan, cmd: &[String], results: &Path, ranks_dir: &Path) -> Result<End> {
    // Old pid files would read as dead ranks.
    if let Ok(entries) = std::fs::read_dir(ranks_dir) {
        for e in entries.flatten() {
            let _ = std::fs::remove_file(e.path());
        }
    }
    let segments_before = shm::segments(Path::new(shm::SHM_DIR));
    let mut child = Command::new(&cmd[0])
        .args(&cmd[1..])
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start {}", cmd.join(" ")))?;
    let mut mark = progress_mark(results);
    let mut last_progress = Instant::now();
    let mut seen: Vec<(usize, i32)> = Vec::new();
    let mut dead: Option<usize> = None;
    let outcome = loop {
        std::thread::sleep(Duration::from_millis(s.poll_ms));
        let pids = rank_pids(ranks_dir);
        for p in pids {
            if !seen.contains(&p) {
                seen.push(p);
            }
        }
        if let Some(status) = child.try_wait()? {
            if !status.success() {
                kill_all(&mut child, &seen);
            }
            break match status.code() {
                Some(0) => End::Done,
                Some(2) => End::BadInput,
                code => End::Failed { code, dead: dead.unwrap_or(1).max(1) },
            };
        }
        // The first poll that finds ranks gone counts them; the launcher kills the rest next.
        if dead.is_none() {
            let gone = seen.iter().filter(|(_, pid)| !running(*pid)).count();
            if gone > 0 {
                dead = Some(gone);
            }
        }
        let now = progress_mark(results);
        if now != mark {
            mark = now;
            last_progress = Instant::now();
        }
        if last_progress.elapsed().as_secs_f64() > s.stall_seconds {
            let stopped = seen.iter().filter(|(_, pid)| !running(*pid)).count();
            kill_all(&mut child, &seen);
            break End::Stalled { dead: dead.unwrap_or(stopped) };
        }
    };
    if !matches!(outcome, End::Done) {
        let removed = shm::remove_orphans(Path::new(shm::SHM_DIR), &segments_before, Duration::from_secs(3));
        if removed > 0 {
            eprintln!("supervise: removed {removed} shared-memory segment(s) the killed job left in {}", shm::SHM_DIR);
        }
    }
    Ok(outcome)
}

/// Asks the job's hosts which are alive; returns how many ranks of the last attempt ran on
/// the hosts found dead now.
fn ranks_on_lost_hosts(hosts: &mut Hosts, ranks_dir: &Path) -> Result<usize> {
    let lost = hosts.probe()?;
    if lost.is_empty() {
        return Ok(0);
    }
    let mut on_lost = rank_files(ranks_dir);
    on_lost.sort_unstable();
    let ranks: Vec<String> =
        on_lost.into_iter().filter(|(_, _, h)| lost.contains(h)).map(|(r, _, h)| format!("rank {r} on {h}")).collect();
    eprintln!(
        "supervise: host(s) {} do not answer ({}); restarting on the others",
        lost.join(", "),
        if ranks.is_empty() { "no rank recorded there".to_string() } else { ranks.join(", ") }
    );
    Ok(ranks.len())
}

/// Runs the watchdog.
///
/// # Errors
/// The job refused its input; or too many restarts.
pub fn run(s: &SupervisePlan) -> Result<()> {
    let out = &s.out;
    let results = crate::results::path_in(out);
    let ranks_dir = out.join("ranks");
    let mut ranks = rank_count(&s.command).map(|(_, n, _)| n);
    let mut cmd = s.command.clone();
    let mut hosts = s.hosts.clone();
    for restart in 0..=s.max_restarts {
        eprintln!("supervise: attempt {} : {}", restart + 1, cmd.join(" "));
        let end = attempt(s, &cmd, &results, &ranks_dir)?;
        let dead = match end {
            End::Done => {
                check_complete(&cmd, &results)?;
                eprintln!("supervise: the job completed after {restart} restarts");
                return Ok(());
            }
            End::BadInput => {
                bail!(dps_harness::BadInput::new("supervise: the job refused its input (exit 2); not restarting"))
            }
            End::Failed { code, dead } => {
                eprintln!("supervise: the job ended with {code:?}; {dead} rank(s) found dead");
                dead
            }
            End::Stalled { dead } => {
                eprintln!(
                    "supervise: no new results for {} s; killed the job; {dead} rank(s) found dead",
                    s.stall_seconds
                );
                dead
            }
        };
        let dead = match hosts.as_mut() {
            Some(h) => dead.max(ranks_on_lost_hosts(h, &ranks_dir)?),
            None => dead,
        };
        if let Some(n) = ranks {
            let next = n.saturating_sub(dead).max(s.min_ranks);
            ranks = Some(next);
            cmd = with_ranks(&s.command, next);
        }
        if let Some(h) = &hosts {
            cmd = h.restrict(cmd, out)?;
        }
        // A restart resumes: `--fresh` would throw away what the last attempt wrote.
        cmd.retain(|w| w != "--fresh");
    }
    bail!("supervise: gave up after {} restarts", s.max_restarts)
}
