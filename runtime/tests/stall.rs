//! The stall watchdog: a rank that stops answering ends the job with its name; a healthy
//! job that computes for a while is left alone. Each `scenario_*` test is `#[ignore]`d: the
//! matching normal test relaunches this test binary under `mpirun`.

use dps_launch as common;

use std::time::{Duration, Instant};

use dps::{route, MergeFn, Node, Runtime};

/// Runs `scenario` of this binary on `ranks` ranks with `DPS_STALL_TIMEOUT=timeout`.
fn run_on(ranks: usize, timeout: &str, scenario: &str) -> common::Finished {
    let env = format!("DPS_STALL_TIMEOUT={timeout}");
    common::mpirun_with(
        ranks,
        &["-x", &env],
        &std::env::current_exe().unwrap(),
        &["--ignored", "--exact", scenario, "--nocapture", "--test-threads=1"],
    )
}

/// Waits up to 10 s for every process running `scenario` to be gone; false if some remain.
fn none_left(scenario: &str) -> bool {
    let start = Instant::now();
    loop {
        let found = std::process::Command::new("pgrep")
            .args(["-f", "--", &format!("--exact {scenario} ")])
            .output()
            .expect("pgrep")
            .status
            .success();
        if !found {
            return true;
        }
        if start.elapsed() > Duration::from_secs(10) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Spins (a computation, not a sleep: it must compete for the cores) for `d`.
fn compute_for(d: Duration) -> u64 {
    let start = Instant::now();
    let mut x = 1u64;
    while start.elapsed() < d {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    x
}

#[test]
fn a_stopped_rank_ends_the_job_naming_it() {
    for ranks in [2, 3] {
        let job = run_on(ranks, "3", "scenario_stopped_rank");
        assert!(!job.status.success(), "{ranks} ranks: the job must fail:\n{}", job.stderr);
        assert!(
            job.stderr.contains("no message from rank 1 for ") && job.stderr.contains("DPS_STALL_TIMEOUT=3"),
            "{ranks} ranks: stderr must name rank 1:\n{}",
            job.stderr
        );
        // The watchdog, not the launcher's timeout (120 s), ended it: 3.6 s on a loaded machine.
        assert!(job.elapsed < Duration::from_secs(30), "{ranks} ranks: took {:?}", job.elapsed);
        assert!(none_left("scenario_stopped_rank"), "{ranks} ranks: processes were left behind");
        eprintln!("{ranks} ranks: a stopped rank ended the job after {:?}", job.elapsed);
    }
}

#[test]
#[ignore]
fn scenario_stopped_rank() {
    let rt = Runtime::init().unwrap();
    let on_one = rt.collection("on_one", "1", |_| ()).unwrap();
    // Rank 1 stops itself when the call reaches it (stopping at once after init would race
    // with the call). SIGSTOP stops every thread of the process, the progress thread too;
    // only SIGKILL (or SIGCONT) ends that.
    let leaf = Node::leaf("on_rank_1", &on_one, route::fixed(0), |_: &mut (), _: u64| -> u64 {
        let pid = std::process::id().to_string();
        std::process::Command::new("kill").args(["-STOP", &pid]).status().unwrap();
        // Open MPI sends SIGCONT before SIGTERM when it ends the job: stay silent meanwhile.
        loop {
            std::thread::park();
        }
    });
    let g = rt.graph("needs rank 1", leaf).unwrap();
    if rt.is_root() {
        let out = rt.call(&g, 1).unwrap();
        panic!("rank 1 is stopped, yet the call returned {out}");
    }
    rt.shutdown().unwrap();
}

#[test]
fn a_busy_job_is_not_mistaken_for_a_stalled_one() {
    let job = run_on(3, "1", "scenario_busy");
    assert!(job.status.success(), "a healthy job must not be ended:\n{}\n{}", job.stdout, job.stderr);
    assert!(!job.stderr.contains("no message from rank"), "{}", job.stderr);
    // At least 1.6 s in the call (4 jobs of 0.4 s per worker) and 2 s after it: more than
    // three stall timeouts. (The bound was 4 s, which a fast start-up could undercut.)
    assert!(job.elapsed > Duration::from_millis(3500), "the job must compute for a while: {:?}", job.elapsed);
}

#[test]
#[ignore]
fn scenario_busy() {
    let rt = Runtime::init().unwrap();
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let work = rt.collection("work", "all*2", |_| ()).unwrap();
    let split = Node::split("jobs", &main, route::fixed(0), |_: &mut (), n: u64| 0..n);
    // Every core busy (6 workers on 2 cores), the progress threads must still beat.
    let leaf = Node::leaf("spin", &work, route::round_robin(), |_: &mut (), _: u64| {
        compute_for(Duration::from_millis(400)) & 1
    });
    let merge =
        Node::merge("count", &main, MergeFn::new(|_: &mut ()| 0u64, |_, n: &mut u64, _x: u64| *n += 1, |_, n| n));
    let g = rt.graph("busy", split >> leaf >> merge).unwrap();
    if rt.is_root() {
        assert_eq!(rt.call(&g, 24).unwrap(), 24);
        // Then the other ranks wait in shutdown while rank 0 computes outside any call.
        compute_for(Duration::from_secs(2));
    }
    rt.shutdown().unwrap();
}
