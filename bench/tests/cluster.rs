//! The emulated cluster end to end (`slurm/cluster.sh`, three nodes on this machine): ranks
//! land on the nodes' hosts and CPU shares, a host-name mapping places threads (and a host
//! outside the job is a clear error), a verified LU runs across the nodes over TCP (also with
//! a node withdrawn by name from the dynamic variant's schedule), a node
//! that dies mid-run ends the job within seconds naming the node, `dps-radiocontrol
//! supervise` restarts a job on the nodes that survive one, and `down` leaves nothing.
//! Each test stands up its own cluster (one at a time: there is one per machine) and a guard
//! takes it down even when the test fails. Needs root, as the Slurm test does.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use dps_launch::{example, test_job, Finished, Job, Launcher};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../slurm/cluster.sh");

/// One cluster per machine: the tests of this file take turns.
static ONE_CLUSTER: Mutex<()> = Mutex::new(());

/// A cluster that is taken down when dropped (also when the test panics).
struct Cluster {
    dir: PathBuf,
    _turn: std::sync::MutexGuard<'static, ()>,
}

impl Cluster {
    /// Three nodes at half a core each, 100 Mbit/s links, and more `cluster.sh up` options.
    fn up(name: &str, options: &[&str]) -> Cluster {
        let turn = ONE_CLUSTER.lock().unwrap_or_else(|p| p.into_inner());
        let dir = std::env::temp_dir().join(format!("dps-cluster-{name}-{}", std::process::id()));
        let mut args = vec!["up", dir.to_str().unwrap(), "--nodes", "3", "--cpu", "0.5", "--link", "100mbit"];
        args.extend(options);
        let out = script(&args);
        // A failed `up` takes down what it made itself (and must not take down another's cluster).
        assert!(out.status.success(), "cluster.sh up failed: {}", String::from_utf8_lossy(&out.stderr));
        Cluster { dir, _turn: turn }
    }

    fn path(&self) -> &str {
        self.dir.to_str().unwrap()
    }

    /// Open MPI's settings and SLURM_CONF, as `. DIR/env` would set them (to go in the
    /// environment: srun --export= would split them at commas).
    fn settings(&self) -> Vec<(String, String)> {
        let env = std::fs::read_to_string(self.dir.join("env")).unwrap();
        let pairs = env.lines().filter_map(|l| l.strip_prefix("export ")?.split_once('='));
        pairs.map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    /// `program` on `ranks` ranks of the cluster, through scripts/mpirun, killed after 90 s.
    fn job(&self, ranks: usize, program: impl Into<PathBuf>) -> Job {
        Job::new(program).ranks(ranks).env("DPS_CLUSTER", &self.dir).timeout_s(90)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = script(&["down", self.path()]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `slurm/cluster.sh` with `args`, killed after 30 s.
fn script(args: &[&str]) -> std::process::Output {
    Command::new("timeout").args(["-k", "5", "30", SCRIPT]).args(args).current_dir(ROOT).output().unwrap()
}

/// A binary of the workspace, built next to `dps-bench`.
fn binary(name: &str) -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_dps-bench")).with_file_name(name)
}

fn assert_ok(done: &Finished, what: &str) {
    assert!(done.status.success(), "{what} failed ({}):\n{}\n{}", done.status, done.stdout, done.stderr);
}

/// What is left of any cluster on this machine: namespaces, links, cgroups, UTS files, the
/// hosts block, processes of the cluster's nodes.
fn leftovers() -> Vec<String> {
    let run = |cmd: &str, args: &[&str]| {
        String::from_utf8_lossy(&Command::new(cmd).args(args).output().unwrap().stdout).into_owned()
    };
    let mut left: Vec<String> = run("ip", &["netns", "list"])
        .lines()
        .chain(run("ip", &["-o", "link", "show"]).lines())
        .filter(|l| l.contains("dps-"))
        .map(String::from)
        .collect();
    for path in ["/sys/fs/cgroup/cpu/dps-cluster", "/run/dps-cluster"] {
        if Path::new(path).exists() {
            left.push(path.to_string());
        }
    }
    if std::fs::read_to_string("/etc/hosts").unwrap().contains("dps-cluster") {
        left.push("the /etc/hosts block".into());
    }
    left.extend(run("pgrep", &["-a", "-f", "dps-cluster"]).lines().map(String::from));
    left
}

#[test]
fn ranks_run_on_the_nodes_and_host_names_map_threads() {
    let cluster = Cluster::up("map", &[]);
    // Each rank on its own node (one slot each), in that node's CPU share.
    let where_ = cluster.job(3, "/bin/sh").args(["-c", "echo $(hostname) $(grep :cpu: /proc/self/cgroup)"]);
    let done = test_job(where_);
    assert_ok(&done, "hostname on 3 ranks");
    let mut lines: Vec<&str> = done.stdout.lines().collect();
    lines.sort_unstable();
    let expected: Vec<String> = (1..=3).map(|k| format!("n{k} 1:cpu:/dps-cluster/n{k}")).collect();
    assert_eq!(lines, expected, "{}", done.stderr);
    // The nodes weigh the most the kernel allows against the processes beside them.
    let shares = std::fs::read_to_string("/sys/fs/cgroup/cpu/dps-cluster/cpu.shares").unwrap();
    assert_eq!(shares.trim(), "262144");
    // `unthrottled` runs a program as a node's (its host name) but outside its CPU quota.
    let outside = Job::new(cluster.dir.join("unthrottled"))
        .launcher(Launcher::None)
        .args(["n2", "/bin/sh", "-c", "echo $(hostname) $(grep :cpu: /proc/self/cgroup)"])
        .timeout_s(30);
    let done = test_job(outside);
    assert_ok(&done, "unthrottled n2");
    assert!(done.stdout.starts_with("n2 ") && !done.stdout.contains("dps-cluster"), "{}", done.stdout);
    let done = test_job(Job::new(cluster.dir.join("unthrottled")).launcher(Launcher::None).args(["n9", "true"]));
    assert!(!done.status.success() && done.stderr.contains("n9 is not a node of the cluster"), "{}", done.stderr);

    let uppercase = example("uppercase");
    let done = test_job(cluster.job(4, &uppercase).args(["--map", "n1*2 n2 n3", "hello cluster"]));
    assert_ok(&done, "uppercase --map \"n1*2 n2 n3\"");
    assert!(done.stdout.contains("HELLO CLUSTER"), "{}", done.stdout);

    // Two ranks fill n1 and n2: n3 is not in the job.
    let done = test_job(cluster.job(2, &uppercase).args(["--map", "n1 n3", "x"]));
    assert!(!done.status.success(), "a mapping naming a host outside the job must fail");
    assert!(done.stderr.contains("no rank runs on host \"n3\" (hosts: n1, n2)"), "{}", done.stderr);
}

#[test]
fn verified_lu_across_the_nodes() {
    let cluster = Cluster::up("lu", &[]);
    let args = ["--n", "256", "--block", "32", "--map", "n1*2 n2 n3", "--verify", "--json"];
    let done = test_job(cluster.job(3, binary("dps-lu")).args(args));
    assert_ok(&done, "dps-lu --verify on 3 nodes");
    let record = dps_launch::json_record(&done.stdout);
    assert_eq!((record["ranks"].as_u64(), record["verified"].as_bool()), (Some(3), Some(true)), "{record}");
    // The dynamic variant with node n3 withdrawn by name at iteration 3: its one rank (2)
    // leaves, the schedule for a node fewer takes over, and the factors are still right.
    let args = ["--variant", "dynamic", "--n", "256", "--block", "32", "--withdraw", "n3@iteration:3", "--verify"];
    let done = test_job(cluster.job(3, binary("dps-lu")).args(args).arg("--json"));
    assert_ok(&done, "dps-lu --withdraw n3@iteration:3 on 3 nodes");
    let record = dps_launch::json_record(&done.stdout);
    let schedule = &record["schedule"];
    assert_eq!(record["verified"].as_bool(), Some(true), "{record}");
    assert_eq!(
        (schedule["withdrawn_rank"].as_u64(), schedule["withdrawn_at"].as_u64()),
        (Some(2), Some(3)),
        "{record}"
    );
}

/// A long job of dps-lu (many repetitions of a small factorization) on the three nodes.
fn long_lu(job: Job) -> Job {
    job.args(["--n", "512", "--block", "64", "--map", "n1 n2 n3", "--reps", "100000"]).timeout_s(90)
}

/// Kills node n2 once its rank of dps-lu has computed for a while (its process is in the
/// node's cgroup); the thread returns when it was killed.
fn kill_n2_mid_run() -> std::thread::JoinHandle<Instant> {
    std::thread::spawn(|| {
        let procs = "/sys/fs/cgroup/cpu/dps-cluster/n2/cgroup.procs";
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(60) {
            let running = std::fs::read_to_string(procs)
                .unwrap_or_default()
                .lines()
                .any(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "dps-lu"));
            if running {
                std::thread::sleep(Duration::from_millis(1500));
                let killed = Command::new(SCRIPT).args(["kill", "n2"]).status().unwrap();
                assert!(killed.success(), "cluster.sh kill n2 failed");
                return Instant::now();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the rank on n2 never started");
    })
}

/// The job failed, within `seconds` of the node's death, with a message containing `names`.
fn assert_ended_by_the_kill(done: &Finished, killer: std::thread::JoinHandle<Instant>, seconds: u64, names: &str) {
    let killed_at = killer.join().expect("the node was killed");
    assert!(!done.status.success(), "the job must fail when a node dies:\n{}", done.stdout);
    let after = killed_at.elapsed();
    assert!(after < Duration::from_secs(seconds), "the job ended {after:?} after the node died:\n{}", done.stderr);
    assert!(done.stderr.contains(names), "the message must name the node ({names}):\n{}", done.stderr);
}

#[test]
fn a_node_that_dies_ends_the_job_naming_it() {
    let cluster = Cluster::up("kill", &[]);
    let killer = kill_n2_mid_run();
    let done = test_job(long_lu(cluster.job(3, binary("dps-lu"))));
    assert_ended_by_the_kill(&done, killer, 10, "Remote daemon: [[");
    assert!(done.stderr.contains("on node n2"), "{}", done.stderr);
}

#[test]
fn srun_across_the_nodes() {
    let cluster = Cluster::up("slurm", &["--slurm"]);
    let settings = cluster.settings();
    let srun = |program: PathBuf| {
        let job = Job::new(program).launcher(Launcher::Srun).ranks(3).launcher_options(["-N", "3"]);
        settings.iter().fold(job, |job, (k, v)| job.env(k, v)).timeout_s(90)
    };
    let done = test_job(srun(example("uppercase")).args(["--map", "n1 n2 n3", "hello slurm"]));
    assert_ok(&done, "srun -N 3 uppercase --map \"n1 n2 n3\"");
    assert!(done.stdout.contains("HELLO SLURM"), "{}", done.stdout);

    // A sweep submitted with sbatch -N 3: its runs on 1, 2 and 3 ranks go through srun.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("experiments.toml");
    std::fs::write(
        &file,
        "[[experiment]]\nname = \"n3\"\ntitle = \"t\"\napp = \"dps-lu\"\n\
         args = [\"--n\", \"256\", \"--block\", \"32\", \"--verify\"]\nranks = [1, 2, 3]\nrepeat = 1\n\
         columns = [\"verified\"]\n",
    )
    .unwrap();
    let (file, out) = (file.to_str().unwrap(), tmp.path().join("out"));
    let output = format!("--output={}/sweep-%j.out", tmp.path().display());
    let bin = format!("DPS_BIN={}", binary("dps-bench").parent().unwrap().display());
    let sbatch = ["-k", "5", "120", "sbatch", "--wait", "-N", "3", &output, "--export", &format!("ALL,{bin}")];
    let sweep = ["slurm/sweep.sbatch", "--file", file, "n3", "--out", out.to_str().unwrap()];
    let done =
        Command::new("timeout").args(sbatch).args(sweep).envs(settings.iter().cloned()).current_dir(ROOT).output();
    let done = done.unwrap();
    assert!(done.status.success(), "sbatch -N 3 sweep.sbatch: {}", String::from_utf8_lossy(&done.stderr));
    let run = std::fs::read_dir(out.join("n3")).unwrap().next().unwrap().unwrap().path();
    let table = std::fs::read_to_string(run.join("table.md")).unwrap();
    assert_eq!(table.matches("| true | ok |").count(), 3, "{table}");

    // A node that dies: slurmctld declares it DOWN (SlurmdTimeout, MessageTimeout: about
    // 15 s) and srun ends the step.
    let killer = kill_n2_mid_run();
    let done = test_job(long_lu(srun(binary("dps-lu"))));
    assert_ended_by_the_kill(&done, killer, 30, "Node failure on n2");
}

#[test]
fn down_leaves_nothing_behind() {
    let cluster = Cluster::up("down", &[]);
    let done = test_job(cluster.job(3, "/bin/sleep").arg("0.1"));
    assert_ok(&done, "sleep on 3 ranks");
    // A daemon on a node, as Slurm's would be: down must stop it too.
    let daemon = Command::new(cluster.dir.join("agent")).args(["n3", "exec sleep 1000"]).spawn().unwrap();
    let started = Instant::now();
    let down = script(&["down", cluster.path()]);
    assert!(down.status.success(), "down failed: {}", String::from_utf8_lossy(&down.stderr));
    assert!(started.elapsed() < Duration::from_secs(5), "down took {:?}", started.elapsed());
    let mut daemon = daemon;
    let stopped = (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        daemon.try_wait().unwrap().is_some()
    });
    if !stopped {
        let _ = daemon.kill();
    }
    assert!(stopped, "down left a process of node n3 running");
    assert_eq!(leftovers(), Vec::<String>::new(), "left behind after down");
    let again = script(&["down", cluster.path()]);
    assert!(again.status.success(), "down twice must succeed: {}", String::from_utf8_lossy(&again.stderr));
}

/// Runs `dps-radiocontrol` with `args`; panics unless it succeeds.
fn radiocontrol(args: &[&str]) {
    let out = Command::new(binary("dps-radiocontrol")).args(args).output().expect("dps-radiocontrol is built");
    assert!(out.status.success(), "dps-radiocontrol {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A Radiocontrol run under `supervise`: its data, the serial run's result bytes, and its
/// output directory.
struct Supervised {
    tmp: tempfile::TempDir,
    reference: Vec<u8>,
}

impl Supervised {
    /// 6 jobs (2 hours of 3 stations), each paced to 0.7 s on its worker (`--throttle-ms
    /// 700`): a node can die mid-run.
    fn prepare() -> Supervised {
        let tmp = tempfile::tempdir().unwrap();
        let (data, serial) = (tmp.path().join("data"), tmp.path().join("serial"));
        let (d, s) = (data.to_str().unwrap(), serial.to_str().unwrap());
        radiocontrol(&["generate", "--watches", "12", "--stations", "3", "--hours", "2", "--seed", "1", "--dir", d]);
        radiocontrol(&["run", d, "--out", s, "--serial"]);
        let reference = std::fs::read(serial.join("results.bin")).unwrap();
        Supervised { tmp, reference }
    }

    fn data(&self) -> String {
        self.tmp.path().join("data").to_str().unwrap().to_string()
    }

    fn out(&self) -> PathBuf {
        self.tmp.path().join("out")
    }

    /// `run DATA --out OUT --throttle-ms 700`, the job's words after its launcher's.
    fn run_words(&self) -> Vec<String> {
        let out = self.out().to_str().unwrap().to_string();
        let bin = binary("dps-radiocontrol").to_str().unwrap().to_string();
        [bin, "run".into(), self.data(), "--out".into(), out, "--throttle-ms".into(), "700".into()].into()
    }

    /// Once the first record is in the file (a 64-byte header, 5780-byte records), kills
    /// node n2, which stays down; returns where rank 1 ran before.
    fn kill_n2_after_the_first_record(&self) -> String {
        let results = self.out().join("results.bin");
        let start = Instant::now();
        while std::fs::metadata(&results).map_or(0, |m| m.len()) < 64 + 5780 {
            assert!(start.elapsed() < Duration::from_secs(60), "no record after 60 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        let on_n2 = std::fs::read_to_string(self.out().join("ranks/rank-1.pid")).unwrap();
        let killed = Command::new(SCRIPT).args(["kill", "n2"]).status().unwrap();
        assert!(killed.success(), "cluster.sh kill n2 failed");
        let len = std::fs::metadata(&results).unwrap().len();
        assert!(len < 64 + 6 * 5780, "the job ended before the kill ({len} B)");
        assert!(on_n2.trim_end().ends_with(" n2"), "rank 1 ran on n2: {on_n2}");
        on_n2
    }

    /// The supervisor's end: success after one restart, bytes equal to the serial run's;
    /// returns its standard error.
    fn assert_restarted_once(&self, done: std::process::Output) -> String {
        let stderr = String::from_utf8_lossy(&done.stderr).into_owned();
        assert!(done.status.success(), "supervise failed ({}):\n{stderr}", done.status);
        assert!(stderr.contains("attempt 2") && stderr.contains("completed after 1 restarts"), "{stderr}");
        let results = std::fs::read(self.out().join("results.bin")).unwrap();
        assert!(results == self.reference, "the restarted run's bytes differ from the serial run's");
        stderr
    }
}

/// `dps-radiocontrol supervise` with its options, killed after 80 s.
fn supervise() -> Command {
    let mut command = Command::new("timeout");
    command.args(["-k", "5", "80"]).arg(binary("dps-radiocontrol")).args(["supervise", "--poll-ms", "50", "--"]);
    command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    command
}

#[test]
fn supervise_restarts_radiocontrol_on_the_surviving_nodes() {
    let cluster = Cluster::up("supervise", &[]);
    let run = Supervised::prepare();
    let mut command = supervise();
    command.args([dps_launch::MPIRUN, "--cluster", cluster.path(), "-n", "3"]).args(run.run_words());
    let child = command.spawn().unwrap();
    run.kill_n2_after_the_first_record();
    let stderr = run.assert_restarted_once(child.wait_with_output().unwrap());
    assert!(stderr.contains("host(s) n2 do not answer (rank 1 on n2)"), "{stderr}");
    let o = run.out().to_str().unwrap().to_string();
    let restart = format!("--mca orte_default_hostfile {o}/hosts.alive -n 2 ");
    assert!(stderr.contains(&restart), "{stderr}");
    assert_eq!(std::fs::read_to_string(run.out().join("hosts.alive")).unwrap(), "n1 slots=1\nn3 slots=1\n");
    let on_n3 = std::fs::read_to_string(run.out().join("ranks/rank-1.pid")).unwrap();
    assert!(on_n3.trim_end().ends_with(" n3"), "the restart's rank 1 ran on n3: {on_n3}");
}

#[test]
fn supervise_restarts_radiocontrol_under_slurm_on_the_surviving_nodes() {
    let cluster = Cluster::up("supervise-slurm", &["--slurm"]);
    let run = Supervised::prepare();
    let settings = cluster.settings();
    // --no-kill: the allocation (and the supervisor in it) outlives a node.
    let mut command = Command::new("timeout");
    command.args(["-k", "5", "85", "salloc", "--no-kill", "-N", "3"]);
    let supervise = supervise();
    command.arg(supervise.get_program()).args(supervise.get_args());
    command.args(["srun", "--mpi=pmix", "-N", "3", "-n", "3"]).args(run.run_words()).envs(settings);
    let child = command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    run.kill_n2_after_the_first_record();
    let stderr = run.assert_restarted_once(child.wait_with_output().unwrap());
    assert!(stderr.contains("--exclude=n2"), "the restart must leave out n2: {stderr}");
    let on_n3 = std::fs::read_to_string(run.out().join("ranks/rank-1.pid")).unwrap();
    assert!(!on_n3.trim_end().ends_with(" n2"), "the restart's rank 1 ran on n2: {on_n3}");
}

/// Runs `dps-bench sweep` on the experiments `file` into `out`, killed after 150 s.
fn sweep(file: &Path, out: &Path) -> std::process::Output {
    let bench = env!("CARGO_BIN_EXE_dps-bench");
    let (file, out) = (file.to_str().unwrap(), out.to_str().unwrap());
    Command::new("timeout").args(["-k", "5", "150", bench, "sweep", "--file", file, "--out", out]).output().unwrap()
}

#[test]
fn a_sweep_runs_an_experiment_on_a_cluster_it_stands_up_and_takes_down() {
    // The sweep stands up its own cluster: it takes its turn like the other tests.
    let _turn = ONE_CLUSTER.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("experiments.toml");
    let experiment = |name: &str, cpu: &str, ranks: &str| {
        format!(
            "[[experiment]]\nname = \"{name}\"\ntitle = \"t\"\napp = \"dps-matmul\"\n\
             args = [\"--variant\", \"pipelined\", \"--n\", \"256\", \"--block\", \"64\", \"--verify\"]\n\
             reference = [\"--variant\", \"serial\", \"--n\", \"256\", \"--block\", \"64\"]\n\
             ranks = [{ranks}]\nrepeat = 2\ncolumns = [\"verified\"]\n\
             cluster = {{ cpu = {cpu}, link = \"1gbit\" }}\n\
             published = [{{ match = {{ ranks = 3 }}, values = {{ S = \"2.9\" }} }}]\n"
        )
    };
    // One node more than cores, at a core each, does not fit: skipped, not failed.
    let cores = std::thread::available_parallelism().unwrap().get();
    let too_many = format!("1, {}", cores + 1);
    std::fs::write(&file, experiment("fits", "0.3", "1, 3") + &experiment("too-big", "1.0", &too_many)).unwrap();
    let done = sweep(&file, &tmp.path().join("out"));
    let (stdout, stderr) = (String::from_utf8_lossy(&done.stdout), String::from_utf8_lossy(&done.stderr));
    assert!(done.status.success(), "the sweep failed:\n{stdout}\n{stderr}");
    let table = |name: &str| {
        let dir = std::fs::read_dir(tmp.path().join("out").join(name)).unwrap().next().unwrap().unwrap().path();
        std::fs::read_to_string(dir.join("table.md")).unwrap()
    };
    let fits = table("fits");
    assert!(fits.contains("Emulated cluster: one rank per node, each node 0.3 of a core, 1gbit links."), "{fits}");
    let rows: Vec<&str> = fits.lines().filter(|l| l.starts_with("| 1 ") || l.starts_with("| 3 ")).collect();
    assert_eq!(rows.len(), 2, "{fits}");
    for row in rows {
        // ranks, time, spread (two runs), speedups, verified, paper: S, status.
        assert!(row.ends_with("| true | 2.9 | ok |") || row.ends_with("| true |  | ok |"), "{row}");
        assert!(row.split('|').nth(3).unwrap().trim().ends_with('%'), "no spread in {row}");
    }
    let too_big = table("too-big");
    let why = format!("skipped: no emulated cluster here ({} nodes at 1 of a core need", cores + 1);
    assert!(too_big.contains(&why), "{too_big}");
    assert_eq!(leftovers(), Vec::<String>::new(), "the sweep left its cluster behind");
}

#[test]
fn up_refuses_shares_beyond_the_cores_before_making_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let cores = std::thread::available_parallelism().unwrap().get();
    // Nodes n2..n3 at 0.5 fit; a master's n1 at `cores` of a core more does not.
    let first = cores.to_string();
    let out = script(&["up", dir, "--nodes", "3", "--cpu", "0.5", "--first-cpu", &first]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    let why = format!("3 nodes at 0.5 of a core (n1 at {cores}) need {} cores; this machine has {cores}", cores + 1);
    assert!(said.contains(&why), "{said}");
    let out = script(&["up", dir, "--first-cpu", "half"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--first-cpu must be a fraction of a core >= 0.01, not \"half\"")
    );
    assert!(std::fs::read_dir(dir).unwrap().next().is_none(), "a refused up wrote into its directory");
}

#[test]
fn a_sweep_gives_the_master_a_node_of_its_own() {
    let _turn = ONE_CLUSTER.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("experiments.toml");
    std::fs::write(
        &file,
        "[[experiment]]\nname = \"farm\"\ntitle = \"t\"\napp = \"dps-matmul\"\n\
         args = [\"--variant\", \"farm\", \"--n\", \"256\", \"--block\", \"64\", \"--verify\"]\n\
         reference = [\"--variant\", \"serial\", \"--n\", \"256\", \"--block\", \"64\"]\n\
         ranks = [2]\nrepeat = 1\ncolumns = [\"verified\"]\n\
         cluster = { cpu = 0.3, link = \"none\", master = 0.6 }\n",
    )
    .unwrap();
    let done = sweep(&file, &tmp.path().join("out"));
    let (stdout, stderr) = (String::from_utf8_lossy(&done.stdout), String::from_utf8_lossy(&done.stderr));
    assert!(done.status.success(), "the sweep failed:\n{stdout}\n{stderr}");
    let dir = std::fs::read_dir(tmp.path().join("out").join("farm")).unwrap().next().unwrap().unwrap().path();
    let table = std::fs::read_to_string(dir.join("table.md")).unwrap();
    let heading = "the master (rank 0) alone on a node of 0.6 of a core, each of the P worker ranks on a node of 0.3";
    assert!(table.contains(heading), "{table}");
    assert!(table.lines().any(|l| l.starts_with("| 2 ") && l.ends_with("| true | ok |")), "{table}");
    // The row's job: 3 ranks, rank 0 the master alone, 2 worker threads on ranks 1 and 2.
    let runs = std::fs::read_to_string(dir.join("runs.jsonl")).unwrap();
    let farm: Vec<serde_json::Value> = runs
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["record"].clone())
        .filter(|r| r["variant"] == "farm")
        .collect();
    assert_eq!(farm.len(), 1, "{runs}");
    assert_eq!((farm[0]["ranks"].as_u64(), farm[0]["threads"].as_u64()), (Some(3), Some(2)), "{runs}");
    assert_eq!(leftovers(), Vec::<String>::new(), "the sweep left its cluster behind");
}

#[test]
fn a_client_on_another_node_calls_a_service_over_tcp() {
    let cluster = Cluster::up("service", &[]);
    let registry = tempfile::tempdir().unwrap();
    let reg = registry.path();
    // The service on n1 (one rank), its addresses over TCP in a registry all nodes see.
    let stop = reg.join("stop");
    let args = ["--name", "far", "--until", stop.to_str().unwrap(), "--seconds", "60"];
    let server = cluster
        .job(1, example("service_server"))
        .args(args)
        .env("DPS_SERVICES", reg)
        .env("DPS_SERVICE_NET", "tcp")
        .spawn_logged(reg, "server");
    let entry = reg.join("far.squares.service");
    let start = Instant::now();
    while !entry.exists() {
        assert!(start.elapsed() < Duration::from_secs(30), "the service was not exported: {:?}", server.outputs());
        std::thread::sleep(Duration::from_millis(50));
    }
    // The client, a plain process on n3, calls it across the bridge.
    let client = format!("{} --name far --requests 300 --window 16", example("service_client").display());
    let done = test_job(
        Job::new(cluster.dir.join("agent"))
            .launcher(Launcher::None)
            .args(["n3", &format!("hostname && {client}")])
            .env("DPS_SERVICES", reg)
            .timeout_s(60),
    );
    assert_ok(&done, "service_client on n3");
    assert!(done.stdout.starts_with("n3\n"), "the client ran on n3: {}", done.stdout);
    assert!(done.stdout.contains("checked 300 replies of far.squares"), "{}", done.stdout);
    std::fs::write(&stop, b"").unwrap();
    let (status, out, err) = server.wait();
    assert!(status.success(), "the server: {status}\n{out}\n{err}");
    assert!(out.contains("far.squares: served 300 calls"), "{out}");
}
