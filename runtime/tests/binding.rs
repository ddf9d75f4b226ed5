//! `DPS_BIND=cores` pins each rank's workers and progress thread to its own share of the
//! node's cores, read back from the kernel (`/proc/self/task/*/status`); `DPS_BIND=auto`
//! only where the ranks match the cores one to one; a bad `DPS_BIND` is refused before any
//! work. Each `scenario_*` test is `#[ignore]`d: the matching normal
//! test relaunches this test binary under `mpirun`.

use std::collections::{BTreeMap, BTreeSet};

use dps::{route, MergeFn, Node, Runtime};
use dps_launch as common;

/// Runs `scenario` of this binary on `ranks` ranks with `DPS_BIND=bind` (unset if `None`).
fn run_on(ranks: usize, bind: Option<&str>, scenario: &str) -> common::Finished {
    let env = bind.map(|b| format!("DPS_BIND={b}"));
    let mut options = vec![];
    if let Some(env) = &env {
        options.extend(["-x", env.as_str()]);
    }
    common::mpirun_with(
        ranks,
        &options,
        &std::env::current_exe().unwrap(),
        &["--ignored", "--exact", scenario, "--nocapture", "--test-threads=1"],
    )
}

/// The processing units of a kernel CPU list such as `0-2,5`.
fn cpu_list(text: &str) -> BTreeSet<usize> {
    let mut cpus = BTreeSet::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        cpus.extend(a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap());
    }
    cpus
}

/// Every thread of this process whose name starts with `dps-`, with the CPUs it may run on,
/// as the kernel reports them.
fn dps_thread_affinities() -> Vec<(String, String)> {
    let mut threads = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let dir = task.unwrap().path();
        let (Ok(name), Ok(status)) =
            (std::fs::read_to_string(dir.join("comm")), std::fs::read_to_string(dir.join("status")))
        else {
            continue; // the thread ended meanwhile
        };
        let name = name.trim().to_string();
        if name.starts_with("dps-") {
            let cpus = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim();
            threads.push((name, cpus.to_string()));
        }
    }
    threads
}

/// Per rank (from the job's `affinity` lines): its binding and each dps thread's CPUs.
type Report = BTreeMap<usize, (String, Vec<(String, BTreeSet<usize>)>)>;

fn parse_report(stdout: &str) -> Report {
    let mut report = Report::new();
    for line in stdout.lines().filter_map(|l| l.strip_prefix("affinity ")) {
        let fields: Vec<&str> = line.splitn(4, '\t').collect();
        let rank: usize = fields[0].parse().unwrap();
        let entry = report.entry(rank).or_insert_with(|| (fields[3].to_string(), Vec::new()));
        entry.1.push((fields[1].to_string(), cpu_list(fields[2])));
    }
    report
}

#[test]
fn with_dps_bind_cores_the_ranks_threads_run_on_disjoint_cores() {
    let job = run_on(2, Some("cores"), "scenario_report_affinities");
    assert!(job.status.success(), "{}\n{}", job.stdout, job.stderr);
    let report = parse_report(&job.stdout);
    assert_eq!(report.keys().copied().collect::<Vec<_>>(), [0, 1], "{}", job.stdout);
    let mut per_rank = Vec::new();
    for (rank, (binding, threads)) in &report {
        assert!(binding.starts_with("cores ") && binding.contains(&format!("rank {rank} of 2")), "{binding}");
        let names: BTreeSet<&str> = threads.iter().map(|(n, _)| n.as_str()).collect();
        assert!(names.contains("dps-progress") && names.contains("dps-worker-1"), "rank {rank}: {names:?}");
        let sets: BTreeSet<&BTreeSet<usize>> = threads.iter().map(|(_, cpus)| cpus).collect();
        assert_eq!(sets.len(), 1, "rank {rank}: its threads must share one binding: {threads:?}");
        per_rank.push(threads[0].1.clone());
    }
    let cores = std::thread::available_parallelism().unwrap().get();
    assert!(cores >= 2, "this test needs 2 cores; the machine has {cores}");
    assert!(!per_rank[0].is_empty() && per_rank[0].is_disjoint(&per_rank[1]), "ranks overlap: {per_rank:?}");
}

#[test]
fn auto_binds_where_the_ranks_match_the_cores_one_to_one_and_not_otherwise() {
    let cores = std::thread::available_parallelism().unwrap().get();
    let quota = dps::cpu_quota::limit();
    for ranks in [cores, cores + 1] {
        let job = run_on(ranks, Some("auto"), "scenario_report_affinities");
        assert!(job.status.success(), "{}\n{}", job.stdout, job.stderr);
        let report = parse_report(&job.stdout);
        assert_eq!(report.len(), ranks, "{}", job.stdout);
        for (rank, (binding, threads)) in &report {
            let sets: BTreeSet<&BTreeSet<usize>> = threads.iter().map(|(_, cpus)| cpus).collect();
            if let Some(q) = quota {
                assert!(binding.starts_with("none (auto: a CPU quota"), "quota {q}: {binding}");
            } else if ranks == cores {
                assert!(
                    binding.starts_with("cores ") && binding.contains(&format!("rank {rank} of {ranks}")),
                    "{binding}"
                );
                assert_eq!(sets.len(), 1, "rank {rank}: its threads share one binding: {threads:?}");
                assert_eq!(sets.first().unwrap().len(), 1, "rank {rank}: one core of its own: {threads:?}");
            } else {
                assert_eq!(binding, &format!("none (auto: {ranks} ranks on {cores} cores)"));
            }
        }
    }
}

#[test]
fn without_binding_the_threads_may_run_anywhere() {
    let job = run_on(2, None, "scenario_report_affinities");
    assert!(job.status.success(), "{}\n{}", job.stdout, job.stderr);
    let report = parse_report(&job.stdout);
    assert_eq!(report.len(), 2, "{}", job.stdout);
    let everywhere = cpu_list(&std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap());
    for (rank, (binding, threads)) in &report {
        assert_eq!(binding, "none");
        for (name, cpus) in threads {
            assert_eq!(cpus, &everywhere, "rank {rank}: {name} is bound");
        }
    }
}

#[test]
fn a_bad_dps_bind_is_refused_before_any_work() {
    let job = run_on(2, Some("sockets"), "scenario_report_affinities");
    assert!(!job.status.success(), "{}", job.stdout);
    assert!(job.stderr.contains("DPS_BIND=\"sockets\"") && job.stderr.contains("cores"), "{}", job.stderr);
    assert!(!job.stdout.contains("affinity "), "no work may run: {}", job.stdout);
}

/// Rank 0 prints one `affinity RANK\tTHREAD\tCPUS\tBINDING` line per dps thread of each
/// rank, read by a leaf on every rank.
#[test]
#[ignore]
fn scenario_report_affinities() {
    let rt = Runtime::init().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let threads = rt.threads_in("all*2").unwrap();
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let binding = rt.binding().to_string();
    let everywhere = rt.collection("everywhere", "all*2", move |_| binding.clone()).unwrap();
    let split = Node::split("one per thread", &main, route::fixed(0), |_: &mut (), n: usize| 0..n);
    let read = Node::leaf("read affinities", &everywhere, route::by_key(|i: &usize| *i), |binding: &mut String, _| {
        let rank = dps_harness::launch_rank().unwrap_or(0);
        let lines = dps_thread_affinities()
            .into_iter()
            .map(|(name, cpus)| format!("affinity {rank}\t{name}\t{cpus}\t{binding}\n"));
        lines.collect::<String>()
    });
    let gather = Node::merge(
        "gather",
        &main,
        MergeFn::new(
            |_: &mut ()| BTreeSet::new(),
            |_, all: &mut BTreeSet<String>, s: String| {
                all.insert(s);
            },
            |_, all| all,
        ),
    );
    let graph = rt.graph("affinities", split >> read >> gather).unwrap();
    if rt.is_root() {
        println!(); // after libtest's "test scenario_report_affinities ... "
        for lines in rt.call(&graph, threads).unwrap() {
            print!("{lines}");
        }
    }
    rt.shutdown().unwrap();
}
