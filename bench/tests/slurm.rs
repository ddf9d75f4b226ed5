//! The Slurm path end to end, on a one-node cluster started for the test: `sbatch` runs a
//! small sweep through `srun`, `srun -n 2` runs an app, and the cluster is stopped (even when
//! the test fails), leaving no daemon behind.

use std::path::{Path, PathBuf};
use std::process::Command;

use dps_launch::{Job, Launcher};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// Stops the cluster when dropped.
struct Cluster {
    dir: PathBuf,
}

impl Cluster {
    fn up(dir: &Path) -> Cluster {
        let cluster = Cluster { dir: dir.to_path_buf() };
        let status = Command::new(format!("{ROOT}/slurm/local-cluster.sh"))
            .arg("up")
            .arg(dir)
            .env("FAKE_CPUS", "2")
            .status()
            .unwrap();
        assert!(status.success(), "the local Slurm cluster did not start; see {}/log", dir.display());
        cluster
    }

    /// Runs a Slurm command (sbatch) from the workspace root, which its paths are relative to.
    fn run(&self, program: &str, args: &[&str]) -> std::process::Output {
        Command::new("timeout")
            .args(["-k", "5", "180", program])
            .args(args)
            .env("SLURM_CONF", self.dir.join("slurm.conf"))
            .current_dir(ROOT)
            .output()
            .unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(format!("{ROOT}/slurm/local-cluster.sh")).arg("down").arg(&self.dir).status();
    }
}

/// The processes running with `dir`'s configuration, after up to 10 s for them to end (the
/// cluster's `down` sends KILL to a daemon slow to stop and does not wait for it to go).
fn daemons_of(dir: &Path) -> String {
    let start = std::time::Instant::now();
    loop {
        let out = Command::new("pgrep").args(["-a", "-f", &dir.join("slurm.conf").to_string_lossy()]).output().unwrap();
        let found = String::from_utf8_lossy(&out.stdout).into_owned();
        if found.is_empty() || start.elapsed().as_secs() >= 10 {
            return found;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn sbatch_sweep_and_srun_app_on_a_local_cluster() {
    let dir = std::env::temp_dir().join(format!("dps-slurm-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    {
        let cluster = Cluster::up(&dir);
        let bin = Path::new(env!("CARGO_BIN_EXE_dps-bench")).parent().unwrap().to_str().unwrap().to_string();
        let results = dir.join("results");

        let output = format!("--output={}/sweep-%j.out", dir.display());
        let export = format!("--export=ALL,DPS_BIN={bin}");
        let out_dir = results.display().to_string();
        let sbatch = ["--wait", "--ntasks=2", &output, &export, "slurm/sweep.sbatch", "smoke", "--out", &out_dir];
        let out = cluster.run("sbatch", &sbatch);
        let log: String = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("sweep-"))
            .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
            .collect();
        assert!(out.status.success(), "sbatch failed: {}\n{log}", String::from_utf8_lossy(&out.stderr));
        let run_dir = std::fs::read_dir(results.join("smoke"))
            .expect("the sweep wrote its results")
            .next()
            .unwrap()
            .unwrap()
            .path();
        let table = std::fs::read_to_string(run_dir.join("table.md")).unwrap();
        assert_eq!(table.matches("| ok |").count(), 2, "both rank counts ran under srun:\n{table}\n{log}");
        assert!(run_dir.join("speedup.png").exists());

        let matmul = Job::new(format!("{bin}/dps-matmul")).launcher(Launcher::Srun).ranks(2);
        let matmul = matmul.args(["--n", "64", "--block", "16", "--verify", "--json"]);
        let out = matmul.env("SLURM_CONF", dir.join("slurm.conf")).timeout_s(180).output().unwrap();
        let stdout = &out.stdout;
        assert!(out.status.success(), "srun failed: {}", out.stderr);
        assert!(stdout.contains("\"ranks\":2") && stdout.contains("\"verified\":true"), "{stdout}");
    }
    assert_eq!(daemons_of(&dir), "", "daemons left behind");
    let _ = std::fs::remove_dir_all(&dir);
}
