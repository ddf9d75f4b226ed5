//! The examples under `mpirun` on 1, 2 and 4 ranks, and the errors they must report.

use common::{example, mpirun, mpirun_env};
use dps_launch as common;

#[test]
fn uppercase_tutorial_on_1_2_4_ranks() {
    for ranks in [1, 2, 4] {
        for map in ["all", "0 0", "all*3"] {
            let job = mpirun(ranks, &example("uppercase"), &["--map", map, "hello dps world"]);
            assert!(job.status.success(), "{ranks} ranks, map {map}: {}", job.stderr);
            assert_eq!(job.stdout.trim(), "HELLO DPS WORLD", "{ranks} ranks, map {map}");
        }
    }
}

#[test]
fn flood_merges_every_token() {
    for ranks in [1, 2, 4] {
        let job = mpirun(ranks, &example("flood"), &["--tokens", "20000", "--window", "8"]);
        assert!(job.status.success(), "{ranks} ranks: {}", job.stderr);
        assert!(job.stdout.contains("merged 20000 tokens"), "{}", job.stdout);
    }
}

#[test]
fn bad_mapping_is_a_clear_error_before_any_work() {
    for ranks in [1, 2] {
        let job = mpirun(ranks, &example("uppercase"), &["--map", "0 7"]);
        assert!(!job.status.success());
        assert!(
            job.stderr.contains("collection \"compute\": bad mapping \"0 7\": rank 7 does not exist"),
            "stderr: {}",
            job.stderr
        );
        assert!(!job.stdout.contains("HELLO"), "no work may have been done");
        let job = mpirun(ranks, &example("uppercase"), &["--map", "0*two"]);
        assert!(job.stderr.contains("\"two\" in \"0*two\" is not a count"), "stderr: {}", job.stderr);
    }
}

#[test]
fn trace_has_spans_and_messages_of_every_rank() {
    let path = std::env::temp_dir().join(format!("dps-trace-test-{}.json", std::process::id()));
    let job = mpirun(2, &example("uppercase"), &["--trace", path.to_str().unwrap(), "traced"]);
    assert!(job.status.success(), "{}", job.stderr);
    let trace: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).ok();
    let events = trace["traceEvents"].as_array().unwrap();
    let spans = |op: &str| events.iter().filter(|e| e["ph"] == "X" && e["name"] == op).count();
    assert_eq!(spans("to_upper"), 6, "one span per character");
    assert_eq!(spans("split_string"), 1);
    for rank in [0, 1] {
        assert!(
            events.iter().any(|e| e["ph"] == "i" && e["pid"] == rank),
            "rank {rank} sent messages, they must appear in the trace"
        );
    }
}

/// Peak RSS in KiB from flood's output line.
fn peak_rss_kib(stdout: &str) -> u64 {
    let after = stdout.split("peak RSS ").nth(1).expect("flood prints its peak RSS");
    after.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn flow_control_keeps_a_large_split_in_bounded_memory() {
    let tokens = "300000";
    let windowed = mpirun(2, &example("flood"), &["--tokens", tokens, "--window", "64"]);
    assert!(windowed.status.success(), "{}", windowed.stderr);
    // A window as large as the split: every token exists at once.
    let unbounded = mpirun(2, &example("flood"), &["--tokens", tokens, "--window", tokens]);
    assert!(unbounded.status.success(), "{}", unbounded.stderr);
    let (small, large) = (peak_rss_kib(&windowed.stdout), peak_rss_kib(&unbounded.stdout));
    assert!(small < 48 * 1024, "window 64: peak RSS {small} KiB");
    assert!(large > small + 50 * 1024, "unbounded split should need far more memory: {large} vs {small} KiB");
}

/// Runs an example as a single process (no mpirun), under a timeout.
fn alone(name: &str, args: &[&str]) -> common::Finished {
    common::test_job(common::Job::new(example(name)).launcher(common::Launcher::None).args(args).timeout_s(60))
}

#[test]
fn bad_options_are_one_line_errors_with_exit_code_2() {
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "flood",
            &["--window", "0"],
            "split \"emit\" has window 0: a window of 0 tokens would never let a token through",
        ),
        ("flood", &["--window", "18446744073709551615"], "it is above dps::MAX_WINDOW"),
        ("flood", &["--window", "abc"], "invalid value 'abc' for '--window <WINDOW>'"),
        ("flood", &["--tokens", "-1"], "invalid value '-1' for '--tokens <TOKENS>'"),
        ("flood", &["--map", "all*99999999999"], "it names more than 1048576 threads"),
        ("flood", &["--map", "0*0"], "repeats zero times"),
        ("flood", &["--stall-timeout", "-1"], "'--stall-timeout <SECS>': not a positive time"),
        ("flood", &["--bogus"], "unexpected argument '--bogus'"),
        ("uppercase", &["--map", ""], "it names no thread"),
        ("uppercase", &["--map", "all*99999999999999999999"], "is not a count"),
        ("uppercase", &["--stall-timeout", "x"], "not a number"),
    ];
    for (name, args, expect) in cases {
        let out = alone(name, args);
        let stderr = &out.stderr;
        assert_eq!(out.status.code(), Some(2), "{name} {args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{name} {args:?}: one line expected:\n{stderr}");
        assert!(stderr.starts_with(&format!("{name}: ")) && stderr.contains(expect), "{name} {args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{name} {args:?}: no work may be done");
    }
    let job = mpirun(2, &example("flood"), &["--window", "0"]);
    assert_eq!(job.status.code(), Some(2), "{}", job.stderr);
    assert!(job.stderr.contains("has window 0") && !job.stderr.contains("panicked"), "{}", job.stderr);
}

#[test]
fn a_trace_path_that_cannot_be_written_fails_before_any_work() {
    let dir = std::env::temp_dir().join(format!("dps-missing-{}", std::process::id()));
    let path = dir.join("t.json");
    for ranks in [1, 2] {
        let job = mpirun(ranks, &example("uppercase"), &["--trace", path.to_str().unwrap(), "never"]);
        assert!(!job.status.success());
        let expect = format!("--trace {}: the directory {} does not exist", path.display(), dir.display());
        assert!(job.stderr.contains(&expect), "{ranks} ranks: stderr lacks {expect}:\n{}", job.stderr);
        assert!(!job.stdout.contains("NEVER"), "no work may have been done");
    }
    assert!(!dir.exists());
}

#[test]
fn a_full_device_as_trace_is_a_clear_error() {
    let job = mpirun(2, &example("uppercase"), &["--trace", "/dev/full", "full"]);
    // The path passed the check before the run; failing to write it is a failure of the
    // run (exit code 1, as for every app), reported by the rank that wrote it.
    assert_eq!(job.status.code(), Some(1), "{}", job.stderr);
    assert!(
        job.stderr.contains("uppercase: rank 0: dps: trace: cannot write /dev/full: No space left on device"),
        "{}",
        job.stderr
    );
}

#[test]
fn a_bad_dps_workers_is_refused_before_any_work() {
    for ranks in [1, 2] {
        for bad in ["0", "-1", "abc", "100000", ""] {
            let job = mpirun_env(ranks, &[("DPS_WORKERS", bad)], &example("uppercase"), &["hello"]);
            assert!(!job.status.success(), "DPS_WORKERS={bad:?} on {ranks} ranks: {}", job.stdout);
            let said = format!("DPS_WORKERS=\"{bad}\"");
            assert!(job.stderr.contains(&said) && job.stderr.contains("1 to 1024"), "{bad:?}: {}", job.stderr);
            assert!(!job.stdout.contains("HELLO"), "no work may run: {}", job.stdout);
        }
    }
    let job = mpirun_env(2, &[("DPS_WORKERS", "1")], &example("uppercase"), &["--map", "all*2", "hello"]);
    assert!(job.status.success() && job.stdout.trim() == "HELLO", "{}\n{}", job.stdout, job.stderr);
}

#[test]
fn a_bad_dps_shared_memory_is_refused_before_any_work() {
    let job = mpirun_env(2, &[("DPS_SHARED_MEMORY", "of")], &example("uppercase"), &["hello"]);
    assert!(!job.status.success() && !job.stdout.contains("HELLO"), "{}", job.stdout);
    assert!(job.stderr.contains("DPS_SHARED_MEMORY=\"of\"") && job.stderr.contains("on or off"), "{}", job.stderr);
    for good in ["on", "off", "1", "0"] {
        let job = mpirun_env(2, &[("DPS_SHARED_MEMORY", good)], &example("uppercase"), &["hello"]);
        assert!(job.status.success() && job.stdout.trim() == "HELLO", "{good}: {}\n{}", job.stdout, job.stderr);
    }
}
