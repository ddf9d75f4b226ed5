//! `dps-bench topology` on 1 and 2 ranks: the machine's cores and caches, and each rank's
//! binding, unbound by default and on disjoint cores with `--bind cores`.

use std::path::Path;

const BIN: &str = env!("CARGO_BIN_EXE_dps-bench");

/// The `PUs` of `thread` in rank `rank`'s report.
fn pus_of<'a>(stdout: &'a str, rank: usize, thread: &str) -> Option<&'a str> {
    let report = stdout.split(&format!("rank {rank} on ")).nth(1)?;
    let report = report.split("\nrank ").next()?;
    report.lines().find_map(|l| l.trim().strip_prefix(&format!("{thread}: PUs ")))
}

#[test]
fn one_rank_prints_the_machine_and_its_binding() {
    let job = dps_launch::mpirun(1, Path::new(BIN), &["topology"]);
    assert!(job.status.success(), "{}\n{}", job.stdout, job.stderr);
    let cores = std::thread::available_parallelism().unwrap().get();
    for line in ["machine: 1 package(s)", "core 0: PUs ", "NUMA node 0: ", "rank 0 on ", "binding none", "BLAS: "] {
        assert!(job.stdout.contains(line), "no {line:?} in:\n{}", job.stdout);
    }
    // OpenBLAS, or MKL where it is installed (dense/src/library.rs).
    let blas = job.stdout.lines().find(|l| l.starts_with("BLAS: ")).unwrap_or_default();
    assert!(blas.starts_with("BLAS: OpenBLAS 0.") || blas.starts_with("BLAS: MKL 20"), "{blas}");
    assert!(job.stdout.contains(&format!("core {}: PUs ", cores - 1)), "{}", job.stdout);
    assert!(job.stdout.lines().any(|l| l.starts_with("L1 ")), "no L1 cache:\n{}", job.stdout);
    // Rank 0 hosts two DPS threads (main, reporters), so two workers; a worker names itself
    // when it first runs, and under load one may not have run when the report reads
    // /proc/self/task (it failed so here once): either worker counts.
    let worker_reported = ["dps-worker-0", "dps-worker-1"].iter().any(|w| pus_of(&job.stdout, 0, w).is_some());
    assert!(worker_reported, "{}", job.stdout);
}

#[test]
fn two_ranks_report_their_bindings_gathered_on_rank_0() {
    let unbound = dps_launch::mpirun(2, Path::new(BIN), &["topology", "--ranks"]);
    assert!(unbound.status.success(), "{}\n{}", unbound.stdout, unbound.stderr);
    assert_eq!(unbound.stdout.matches("machine: ").count(), 1, "only rank 0 prints:\n{}", unbound.stdout);
    assert_eq!(unbound.stdout.matches("binding none").count(), 2, "{}", unbound.stdout);

    let bound = dps_launch::mpirun(2, Path::new(BIN), &["topology", "--ranks", "--bind", "cores"]);
    assert!(bound.status.success(), "{}\n{}", bound.stdout, bound.stderr);
    for rank in 0..2 {
        assert!(bound.stdout.contains(&format!("rank {rank} of 2 on this node")), "{}", bound.stdout);
    }
    let progress: Vec<_> = (0..2).map(|r| pus_of(&bound.stdout, r, "dps-progress").unwrap_or("?")).collect();
    let workers: Vec<_> = (0..2).map(|r| pus_of(&bound.stdout, r, "dps-worker-0").unwrap_or("?")).collect();
    assert_eq!(progress, workers, "a rank's progress thread and workers share its cores:\n{}", bound.stdout);
    assert_ne!(workers[0], workers[1], "the ranks must be on different cores:\n{}", bound.stdout);
}

#[test]
fn a_bad_bind_value_is_refused_before_any_work() {
    let job = dps_launch::mpirun(1, Path::new(BIN), &["topology", "--bind", "sockets"]);
    assert_eq!(job.status.code(), Some(2), "{}\n{}", job.stdout, job.stderr);
    assert!(job.stderr.contains("sockets") && job.stderr.contains("cores"), "{}", job.stderr);
    assert!(!job.stdout.contains("machine:"), "{}", job.stdout);
}
