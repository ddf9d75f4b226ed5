//! The emulated cluster an experiment with a `cluster` key runs on: stood up with
//! `slurm/cluster.sh up` before its first run, taken down when the experiment is done (also
//! when the sweep fails on the way: [`Drop`]). Its jobs find it through `DPS_CLUSTER`, which
//! `scripts/mpirun` reads.

use std::path::Path;
use std::process::Command;

use super::config::Cluster;

/// The script that stands an emulated cluster up and takes it down.
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../slurm/cluster.sh");

/// Seconds `up` and `down` may take (they take about one).
const TIMEOUT_S: &str = "60";

/// A cluster that is up, in a directory of its own; down when dropped.
pub(crate) struct Up {
    dir: tempfile::TempDir,
}

/// Why a cluster is not up.
pub(crate) enum NotUp {
    /// This machine cannot emulate it (no root, no namespaces or cgroups, too few cores):
    /// the experiment is skipped, with the reason in its table.
    Unavailable(String),
    /// `up` failed (another cluster is up, ...): the experiment's runs fail with the reason.
    Failed(String),
}

impl Up {
    /// Stands up `nodes` nodes with the CPU share and link of `spec`, and before them the
    /// master's node n1 if `spec` has one.
    pub(crate) fn stand_up(spec: &Cluster, nodes: usize, cores: usize) -> Result<Up, NotUp> {
        if let Some(why) = spec.too_big(nodes, cores) {
            return Err(NotUp::Unavailable(why));
        }
        let dir = tempfile::Builder::new()
            .prefix("dps-sweep-cluster")
            .tempdir()
            .map_err(|e| NotUp::Failed(format!("cannot make the cluster's directory: {e}")))?;
        let all = nodes + usize::from(spec.master.is_some());
        let (all, cpu) = (all.to_string(), spec.cpu.to_string());
        let first = spec.master.map(|m| ["--first-cpu".to_string(), m.to_string()]);
        let out = Command::new("timeout")
            .args([TIMEOUT_S, SCRIPT, "up"])
            .arg(dir.path())
            .args(["--nodes", &all, "--cpu", &cpu, "--link", &spec.link])
            .args(first.iter().flatten())
            .output()
            .map_err(|e| NotUp::Failed(format!("cannot run {SCRIPT}: {e}")))?;
        let said = String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("").trim().to_string();
        match out.status.code() {
            Some(0) => Ok(Up { dir }),
            // The script's exit 2: something this machine lacks (root, namespaces, cgroups).
            Some(2) => Err(NotUp::Unavailable(said)),
            _ => Err(NotUp::Failed(format!("slurm/cluster.sh up failed: {said}"))),
        }
    }

    /// The cluster's directory: `DPS_CLUSTER` for its jobs.
    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        let down = Command::new("timeout").args([TIMEOUT_S, SCRIPT, "down"]).arg(self.dir.path()).output();
        if !down.as_ref().is_ok_and(|o| o.status.success()) {
            eprintln!("sweep: slurm/cluster.sh down {} failed; run it by hand", self.dir.path().display());
        }
    }
}
