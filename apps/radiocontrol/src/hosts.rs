//! The hosts a supervised job runs on, and which of them still answer: after a failure,
//! `supervise` asks each host and restarts the job on the survivors only.
//!
//! - Open MPI (`mpirun`): the hosts are a hostfile's (`--hostfile`, or the emulated
//!   cluster's `DIR/hostfile` when the command is `scripts/mpirun --cluster DIR` or
//!   `DPS_CLUSTER=DIR` is set). A host is alive when `PROBE HOST true` exits 0 within
//!   [`PROBE_SECONDS`]; PROBE is `--probe`, else the cluster's launch agent (`DIR/agent`, the
//!   one mpirun uses), else ssh, as mpirun's default agent. The restart gets
//!   `--mca orte_default_hostfile OUT/hosts.alive`, the hostfile's lines of the survivors (a
//!   setting on the command line wins over the cluster's environment).
//! - Slurm (the command is `srun` and `SLURM_JOB_NODELIST` is set): the allocation's nodes;
//!   a node is alive unless `sinfo` reports it down, drained, failing or not responding. The
//!   restart gets `--exclude=DEAD`, and `-N` at most the survivors. The allocation must
//!   outlive a node: `sbatch --no-kill` (else Slurm ends the whole job, this watchdog too).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use dps_harness::bad_input;

use crate::launcher::rank_count;

/// How long a host may take to answer a probe.
pub const PROBE_SECONDS: u64 = 10;

/// Where the hosts come from and how they are asked.
#[derive(Debug, Clone)]
enum Ask {
    /// `PROBE HOST true`.
    Probe(Vec<String>),
    /// `sinfo`'s state of the node.
    Slurm,
}

/// The job's hosts: each with its hostfile line (the name, for Slurm), and the dead ones.
#[derive(Debug, Clone)]
pub struct Hosts {
    ask: Ask,
    hosts: Vec<(String, String)>,
    dead: Vec<String>,
}

/// The DIR of `scripts/mpirun --cluster DIR ...`, or of `DPS_CLUSTER`.
fn cluster_dir(cmd: &[String]) -> Option<PathBuf> {
    match cmd {
        [_, flag, dir, ..] if flag == "--cluster" => Some(PathBuf::from(dir)),
        _ => std::env::var_os("DPS_CLUSTER").filter(|d| !d.is_empty()).map(PathBuf::from),
    }
}

fn is_srun(cmd: &[String]) -> bool {
    cmd.first().is_some_and(|w| Path::new(w).file_name().is_some_and(|n| n == "srun"))
}

impl Hosts {
    /// The job's hosts, when they can be known: `--hostfile`, the emulated cluster's, or
    /// the Slurm allocation's; `None` otherwise (a restart then only lowers the rank count).
    ///
    /// # Errors
    /// A `dps_harness::BadInput`: an unreadable or empty hostfile, an empty `--probe`.
    pub fn for_job(hostfile: Option<&Path>, probe: Option<&str>, cmd: &[String]) -> Result<Option<Hosts>> {
        let probe_words = match probe {
            Some(p) if p.split_whitespace().next().is_none() => bad_input!("--probe: an empty command"),
            Some(p) => Some(p.split_whitespace().map(String::from).collect::<Vec<_>>()),
            None => None,
        };
        let cluster = cluster_dir(cmd);
        let file = hostfile.map(Path::to_path_buf).or_else(|| cluster.as_ref().map(|d| d.join("hostfile")));
        if let Some(file) = file.filter(|_| !is_srun(cmd)) {
            let text = match std::fs::read_to_string(&file) {
                Ok(t) => t,
                Err(e) => bad_input!("--hostfile {}: {e}", file.display()),
            };
            let hosts: Vec<(String, String)> = text
                .lines()
                .map(|l| l.split('#').next().unwrap_or("").trim())
                .filter_map(|l| Some((l.split_whitespace().next()?.to_string(), l.to_string())))
                .collect();
            if hosts.is_empty() {
                bad_input!("--hostfile {}: no host in it", file.display());
            }
            let agent = cluster.map(|d| d.join("agent")).filter(|a| a.exists());
            let ask = probe_words.unwrap_or_else(|| match agent {
                Some(a) => vec![a.to_string_lossy().into_owned()],
                None => ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5"].map(String::from).to_vec(),
            });
            return Ok(Some(Hosts { ask: Ask::Probe(ask), hosts, dead: Vec::new() }));
        }
        let Some(list) = std::env::var("SLURM_JOB_NODELIST").ok().filter(|_| is_srun(cmd)) else {
            return Ok(None);
        };
        let out = Command::new("scontrol").args(["show", "hostnames", &list]).output();
        let names = match out {
            Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
            _ => bail!("supervise: `scontrol show hostnames {list}` failed: cannot tell the allocation's nodes"),
        };
        let hosts = names.split_whitespace().map(|n| (n.to_string(), n.to_string())).collect();
        Ok(Some(Hosts { ask: probe_words.map_or(Ask::Slurm, Ask::Probe), hosts, dead: Vec::new() }))
    }

    /// The hosts found dead so far.
    pub fn dead(&self) -> &[String] {
        &self.dead
    }

    /// Asks every host not yet dead, all at once; returns the ones that did not answer.
    ///
    /// # Errors
    /// No host is left.
    pub fn probe(&mut self) -> Result<Vec<String>> {
        let alive: Vec<String> = self.hosts.iter().map(|(h, _)| h.clone()).filter(|h| !self.dead.contains(h)).collect();
        let lost = match &self.ask {
            Ask::Probe(words) => probe_all(words, &alive),
            Ask::Slurm => slurm_down(&alive),
        };
        self.dead.extend(lost.iter().cloned());
        if self.dead.len() == self.hosts.len() {
            bail!("supervise: no host of the job answers ({}): nothing to restart on", self.dead.join(", "));
        }
        Ok(lost)
    }

    /// `cmd` restricted to the hosts alive (unchanged while none is dead); for Open MPI, the
    /// survivors' hostfile is written into `out`.
    ///
    /// # Errors
    /// The hostfile of the survivors cannot be written.
    pub fn restrict(&self, cmd: Vec<String>, out: &Path) -> Result<Vec<String>> {
        if self.dead.is_empty() {
            return Ok(cmd);
        }
        let alive: Vec<&(String, String)> = self.hosts.iter().filter(|(h, _)| !self.dead.contains(h)).collect();
        let mut cmd = cmd;
        // The launcher's options go before its rank count (or right after the launcher).
        let at = match rank_count(&cmd) {
            Some((i, _, prefix)) => i - usize::from(prefix.is_none()),
            None if cmd.get(1).is_some_and(|w| w == "--cluster") => 3.min(cmd.len()),
            None => 1.min(cmd.len()),
        };
        let added = if is_srun(&cmd) {
            lower_nodes(&mut cmd, alive.len());
            vec![format!("--exclude={}", self.dead.join(","))]
        } else {
            let file = out.join("hosts.alive");
            let lines: String = alive.iter().map(|(_, l)| format!("{l}\n")).collect();
            std::fs::write(&file, lines).with_context(|| format!("supervise: cannot write {}", file.display()))?;
            vec!["--mca".into(), "orte_default_hostfile".into(), file.to_string_lossy().into_owned()]
        };
        cmd.splice(at..at, added);
        Ok(cmd)
    }
}

/// The hosts of `hosts` that do not answer `PROBE HOST true` within [`PROBE_SECONDS`].
fn probe_all(probe: &[String], hosts: &[String]) -> Vec<String> {
    let mut children: Vec<(String, Option<std::process::Child>)> = hosts
        .iter()
        .map(|h| {
            let child = Command::new(&probe[0])
                .args(&probe[1..])
                .args([h.as_str(), "true"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .ok();
            (h.clone(), child)
        })
        .collect();
    let start = Instant::now();
    let mut lost = Vec::new();
    while !children.is_empty() {
        children.retain_mut(|(h, child)| {
            let status = match child {
                Some(c) => match c.try_wait() {
                    Ok(None) if start.elapsed() < Duration::from_secs(PROBE_SECONDS) => return true,
                    Ok(None) => {
                        let _ = c.kill();
                        let _ = c.wait();
                        None
                    }
                    Ok(Some(s)) => Some(s),
                    Err(_) => None,
                },
                None => None,
            };
            if !status.is_some_and(|s| s.success()) {
                lost.push(h.clone());
            }
            false
        });
        std::thread::sleep(Duration::from_millis(20));
    }
    lost.sort_by_key(|h| hosts.iter().position(|x| x == h));
    lost
}

/// The nodes of `hosts` that Slurm reports down, drained, failing or not responding (`*`).
fn slurm_down(hosts: &[String]) -> Vec<String> {
    let Ok(out) = Command::new("sinfo").args(["-h", "-N", "-n", &hosts.join(","), "-o", "%N %T"]).output() else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lost: Vec<String> = text
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, state)| ["down", "drain", "fail", "*"].iter().any(|s| state.contains(s)))
        .map(|(n, _)| n.to_string())
        .collect();
    lost.dedup();
    lost
}

/// Lowers srun's node count (`-N K`, `--nodes=K`) to at most `alive`.
fn lower_nodes(cmd: &mut [String], alive: usize) {
    for i in 0..cmd.len() {
        if cmd[i].contains("dps-radiocontrol") {
            return;
        }
        let lower = |v: &str| v.parse::<usize>().ok().filter(|&k| k > alive).map(|_| alive.to_string());
        if cmd[i] == "-N" || cmd[i] == "--nodes" {
            if let Some(v) = cmd.get(i + 1).and_then(|v| lower(v)) {
                cmd[i + 1] = v;
            }
        } else if let Some((p, v)) = ["--nodes=", "-N"].iter().find_map(|p| Some((*p, cmd[i].strip_prefix(p)?))) {
            if let Some(v) = lower(v) {
                cmd[i] = format!("{p}{v}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn hosts(ask: Ask, dead: &[&str]) -> Hosts {
        let hosts = ["n1", "n2", "n3"].map(|h| (h.to_string(), format!("{h} slots=1"))).to_vec();
        Hosts { ask, hosts, dead: dead.iter().map(|h| h.to_string()).collect() }
    }

    #[test]
    fn a_restart_runs_on_the_hosts_alive() {
        let tmp = tempfile::tempdir().unwrap();
        let cmd = words("scripts/mpirun --cluster C -n 2 dps-radiocontrol run D --out R");
        let all = hosts(Ask::Probe(words("true")), &[]);
        assert_eq!(all.restrict(cmd.clone(), tmp.path()).unwrap(), cmd, "nothing dead: unchanged");
        let some = hosts(Ask::Probe(words("true")), &["n2"]);
        let file = tmp.path().join("hosts.alive");
        let expected = format!(
            "scripts/mpirun --cluster C --mca orte_default_hostfile {} -n 2 dps-radiocontrol run D --out R",
            file.display()
        );
        assert_eq!(some.restrict(cmd, tmp.path()).unwrap(), words(&expected));
        assert_eq!(std::fs::read_to_string(file).unwrap(), "n1 slots=1\nn3 slots=1\n");
        let srun = words("srun -N 3 --ntasks=3 dps-radiocontrol run D --out R -N 9");
        let expected = "srun -N 2 --exclude=n2 --ntasks=3 dps-radiocontrol run D --out R -N 9";
        assert_eq!(some.restrict(srun, tmp.path()).unwrap(), words(expected));
    }

    #[test]
    fn a_host_that_does_not_answer_is_dead() {
        // `sh -c 'test $0 != n2' n2 true`: every host but n2 answers.
        let mut h = hosts(Ask::Probe(vec!["sh".into(), "-c".into(), "test $0 != n2".into()]), &[]);
        assert_eq!(h.probe().unwrap(), vec!["n2".to_string()]);
        assert_eq!(h.probe().unwrap(), Vec::<String>::new(), "only the hosts alive are asked again");
        assert_eq!(h.dead(), ["n2"]);
        let mut none = hosts(Ask::Probe(words("false")), &[]);
        assert!(none.probe().is_err(), "no host left");
    }
}
