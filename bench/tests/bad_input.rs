//! `dps-bench` with bad options, experiment files and output paths, as a new user would try
//! them: each row gives the exit code (2: refused before any run) and words the message must
//! contain; `check_table` also fails a row on a panic, a backtrace or a message printed more
//! than once. A sweep writes its files whole or not at all.

use std::path::Path;
use std::process::Command;

use dps_launch::bad_input::{case, case_on, check_table};

const BIN: &str = env!("CARGO_BIN_EXE_dps-bench");

/// An experiments file with one experiment `a`, plus `extra` lines.
fn experiments(app: &str, extra: &str) -> String {
    format!("[[experiment]]\nname = \"a\"\ntitle = \"t\"\napp = \"{app}\"\nlauncher = \"none\"\nrepeat = 1\n{extra}")
}

#[test]
fn bad_input_is_refused_once_with_exit_2_before_any_run() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    };
    let malformed = write("malformed.toml", "[[experiment]]\nname = \"a\"\nranks = [1,\n");
    let unknown_key = write("unknown-key.toml", &experiments("dps-bench", "colour = \"red\"\n"));
    let zero_repeat = write("zero-repeat.toml", &experiments("dps-bench", "").replace("repeat = 1", "repeat = 0"));
    let no_app = write("no-app.toml", &experiments("dps-nothing", ""));
    let big_share = write("big-share.toml", &experiments("dps-bench", "cluster = { cpu = 2.0, link = \"none\" }\n"));
    let bad_link = write("bad-link.toml", &experiments("dps-bench", "cluster = { cpu = 0.5, link = \"fast\" }\n"));
    // Its app is dps-bench itself, built with this test (the apps of the real file may not be).
    let good = write("good.toml", &experiments("dps-bench", "args = [\"table\"]\n"));
    let a_file = write("a-file", "");
    let under_a_file = format!("{a_file}/results");
    let missing_dir = dir.path().join("no/such/dir/report.md");
    let missing_dir = missing_dir.to_str().unwrap();
    let a_dir = dir.path().to_str().unwrap();
    let out = dir.path().join("results");
    let out = out.to_str().unwrap();

    check_table(
        Path::new(BIN),
        &[
            case(&["bogus"], 2, &["bogus"]),
            case(&["peak", "--seconds", "0"], 2, &["--seconds 0", "0.05..=60"]),
            case(&["peak", "--seconds", "NaN"], 2, &["--seconds NaN"]),
            case(&["peak", "--seconds", "0.05", "--json"], 0, &[]),
            case(&["transport", "--max-bytes", "0"], 2, &["--max-bytes 0", "smallest payload"]),
            case(&["transport", "--bytes", "0"], 2, &["--bytes", "at least 1 byte"]),
            case(&["transport", "--bytes", "100000000000"], 2, &["--bytes 100000000000", "memory", "available"]),
            case(&["transport", "--reps", "0"], 2, &["--reps 0"]),
            case(&["transport", "--timeout", "0"], 2, &["--timeout 0"]),
            case(&["overlap", "--blocks", "0"], 2, &["--blocks", "at least 1"]),
            case(&["overlap", "--blocks", "5000000000"], 2, &["--blocks 5000000000", "too large"]),
            case(&["overlap", "--blocks", "200000"], 2, &["--blocks 200000", "memory"]),
            case(&["overlap", "--work", "0"], 2, &["--work 0"]),
            case(&["overlap", "--reps", "100000"], 2, &["--reps 100000"]),
            case(&["table"], 2, &["no JSON lines"]),
            case(&["sweep", "transport", "--repeat", "0"], 2, &["--repeat 0"]),
            case(&["sweep", "nope"], 2, &["no experiment named \"nope\"", "smoke"]),
            case(&["sweep", "smoke", "--launcher", "foo"], 2, &["--launcher", "foo"]),
            case(
                &["sweep", "--file", "/nonexistent/experiments.toml"],
                2,
                &["--file", "/nonexistent/experiments.toml"],
            ),
            case(&["sweep", "--file", &malformed], 2, &["malformed.toml:4"]),
            case(&["sweep", "--file", &unknown_key], 2, &["unknown-key.toml:7", "colour"]),
            case(&["sweep", "--file", &zero_repeat], 2, &["zero-repeat.toml:2", "experiment \"a\"", "repeat 0"]),
            case(&["sweep", "--file", &big_share], 2, &["big-share.toml:2", "cluster: cpu 2", "share of a core"]),
            case(&["sweep", "--file", &bad_link], 2, &["bad-link.toml:2", "cluster: link \"fast\""]),
            case(&["sim-accuracy", "--platform", "none.toml", "--ranks", "0"], 2, &["--ranks"]),
            case(
                &["sim-accuracy", "--platform", "none.toml", "--cluster", a_dir],
                2,
                &["--cluster", "no cluster is up"],
            ),
            case(&["sweep", "--file", &no_app, "--out", out], 2, &["experiment \"a\"", "dps-nothing"]),
            case(&["sweep", "--file", &good, "--out", &under_a_file], 2, &["--out", "a-file"]),
            case(
                &["sweep", "--file", &good, "--out", out, "--report", missing_dir],
                2,
                &["--report", "does not exist"],
            ),
            case(&["sweep", "--file", &good, "--out", out, "--report", a_dir], 2, &["--report", "is a directory"]),
            case_on(2, &["sweep", "transport", "--repeat", "0"], 2, &["--repeat 0"]),
            case_on(2, &["transport", "--max-bytes", "0"], 2, &["--max-bytes 0"]),
        ],
    );
    assert!(!Path::new(out).exists(), "a refused sweep created its results directory");
}

#[test]
fn a_sweep_writes_whole_files_and_records_failed_runs() {
    let dir = tempfile::tempdir().unwrap();
    // dps-bench itself as the app: `table --json` is refused, so the run is recorded as failed
    // and the sweep goes on to write its files.
    let file = dir.path().join("x.toml");
    std::fs::write(&file, experiments("dps-bench", "args = [\"table\"]\n")).unwrap();
    let (out, report) = (dir.path().join("results"), dir.path().join("report.md"));
    let job = Command::new(BIN)
        .args(["sweep", "a", "--file"])
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .arg("--report")
        .arg(&report)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&job.stderr);
    // A sweep with a failed run says so, with the run's own words, and exits 1.
    assert_eq!(job.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("1 run(s) failed") && stderr.contains("unexpected argument '--json'"), "{stderr}");
    let runs: Vec<_> = std::fs::read_dir(out.join("a")).unwrap().collect();
    assert_eq!(runs.len(), 1, "one timestamped directory");
    let run_dir = runs[0].as_ref().unwrap().path();
    let mut names: Vec<String> =
        std::fs::read_dir(&run_dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    // One rank count: no plots, and no temporary file left for them.
    assert_eq!(names, ["runs.jsonl", "summary.csv", "table.md"]);
    let table = std::fs::read_to_string(run_dir.join("table.md")).unwrap();
    assert!(table.contains("failed"), "{table}");
    assert!(std::fs::read_to_string(run_dir.join("runs.jsonl")).unwrap().contains("\"error\""));
    assert!(std::fs::read_to_string(&report).unwrap().contains(&table));
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 3, "x.toml, results and report.md only: {left:?}");
}

/// A run that outlives its experiment's `timeout_s` is killed and recorded as timed out (the
/// sweep goes on, lists it and exits 1), well before the run would have ended.
#[test]
fn a_run_past_its_timeout_is_killed_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.toml");
    // `peak --seconds 30` would measure for 30 s.
    std::fs::write(&file, experiments("dps-bench", "args = [\"peak\", \"--seconds\", \"30\"]\ntimeout_s = 1\n"))
        .unwrap();
    let started = std::time::Instant::now();
    let job = Command::new(BIN)
        .args(["sweep", "a", "--file"])
        .arg(&file)
        .arg("--out")
        .arg(dir.path().join("results"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&job.stderr);
    assert_eq!(job.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("1 run(s) failed") && stderr.contains("a ranks=1: failed: timed out after 1 s"),
        "{stderr}"
    );
    assert!(started.elapsed().as_secs() < 20, "the sweep waited {:?}", started.elapsed());
}
