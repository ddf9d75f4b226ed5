//! Bad input: a missing or truncated data file, a station or watch file of the wrong size,
//! a manifest with an unknown field or that does not match its checksum, a `truth.csv` that
//! does not match the manifest's hash (or, in format 1, a bad header or a repeated line), a
//! watch record with flags, scale or reserved bytes this program does not read, station
//! files swapped or a `stations.sums` edited or missing (format 3; format 2 still reads),
//! an output directory that cannot be written, a result file of another data set, a full
//! disk (`/dev/full`: every write fails with ENOSPC), bad options. Each row states the exit
//! code (2: refused before any work, 1: the run failed) and words of the one-line message.
//! A few rows run the farm under mpirun on 2 ranks (`check_table`: the message is printed
//! once, no panic, no hang); the rest run the binary directly (an mpirun launch costs
//! about 2 s) with the same checks. After every row the result files that were there are
//! unchanged.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{generate, results, serial, BIN};
use dps_launch::bad_input::{case, case_on, check_table};
use dps_radiocontrol::data::{Manifest, FORMAT_2};

struct Setup {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Setup {
    fn p(&self, name: &str) -> String {
        self.root.join(name).to_str().unwrap().to_string()
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn setup() -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    let data = root.join("data");
    generate(&data, 4, 2, 1, 1);
    generate(&root.join("other"), 4, 2, 1, 2);
    // Results of the other data set, complete.
    serial(&root.join("other"), &root.join("other-out"));
    // Broken copies of the data set.
    for (name, file, size) in [
        ("short-station", "stations/S001_H00.bin", Some(3_599_999)),
        ("long-watch", "watches/W0003.bin", Some(136_801)),
        ("no-watch", "watches/W0002.bin", None),
        ("no-station", "stations/S000_H00.bin", None),
    ] {
        let dir = root.join(name);
        copy_dir(&data, &dir);
        let path = dir.join(file);
        match size {
            Some(n) => std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(n).unwrap(),
            None => std::fs::remove_file(&path).unwrap(),
        }
    }
    let bad_manifest = root.join("bad-manifest");
    copy_dir(&data, &bad_manifest);
    let manifest =
        r#"{"format": "dps-radiocontrol data 1", "watches": 0, "stations": 2, "hours": 1, "seed": 1, "dataset_id": 7}"#;
    std::fs::write(bad_manifest.join("radio.json"), manifest).unwrap();
    std::fs::write(root.join("a_file"), "not a directory").unwrap();
    // A result file that is not one, and results that go to a full disk.
    std::fs::create_dir_all(root.join("garbage-out")).unwrap();
    std::fs::write(root.join("garbage-out/results.bin"), "hello, these are not results").unwrap();
    std::fs::create_dir_all(root.join("full-out")).unwrap();
    std::os::unix::fs::symlink("/dev/full", root.join("full-out/results.bin")).unwrap();
    std::fs::create_dir_all(root.join("full-summary")).unwrap();
    std::os::unix::fs::symlink("/dev/full", root.join("full-summary/summary.csv")).unwrap();
    Setup { _tmp: tmp, root }
}

/// Runs a row directly and returns what is wrong with it.
fn check_direct(args: &[String], code: i32, words: &[&str]) -> Option<String> {
    let done = Command::new(BIN).args(args).env("RUST_BACKTRACE", "1").output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    let mut wrong = Vec::new();
    if done.status.code() != Some(code) {
        wrong.push(format!("exit {:?}, expected {code}", done.status.code()));
    }
    wrong.extend(words.iter().filter(|w| !stderr.contains(*w)).map(|w| format!("no {w:?}")));
    if stderr.contains("panicked") || stderr.contains("backtrace") {
        wrong.push("a panic".into());
    }
    if code == 2 && stderr.lines().filter(|l| l.starts_with("dps-radiocontrol:")).count() != 1 {
        wrong.push("not exactly one message line".into());
    }
    (!wrong.is_empty()).then(|| format!("{}: {}\n{stderr}", args.join(" "), wrong.join("; ")))
}

#[test]
fn every_bad_input_is_one_clear_line_and_leaves_results_valid() {
    let s = setup();
    let other_results = std::fs::read(results(&s.root.join("other-out"))).unwrap();
    // Issue 27: found only after the run before; bad input (exit 2) before any work now.
    std::fs::create_dir_all(s.root.join("dir-out/results.bin")).unwrap();
    copy_dir(&s.root.join("data"), &s.root.join("bad-truth"));
    std::fs::write(s.root.join("bad-truth/truth.csv"), "watch,minute,kind,station,lag\n0,x,listen,1,2\n").unwrap();
    copy_dir(&s.root.join("data"), &s.root.join("wrong-minute"));
    let watch = s.root.join("wrong-minute/watches/W0001.bin");
    let mut bytes = std::fs::read(&watch).unwrap();
    bytes[5 * 95] = 77; // record 5's minute (a u16 at the record's start) reads 77
    std::fs::write(&watch, bytes).unwrap();
    // Issue 27: the manifest, truth.csv and the watch records get the platform file's rigour.
    let copy = |name: &str| {
        copy_dir(&s.root.join("data"), &s.root.join(name));
        s.root.join(name)
    };
    let replace = |path: PathBuf, from: &str, to: &str| {
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{from} not in {text}");
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    };
    replace(copy("extra-field").join("radio.json"), "\"seed\"", "\"stride\": 3, \"seed\"");
    replace(copy("fewer-watches").join("radio.json"), "\"watches\": 4", "\"watches\": 3");
    replace(copy("edited-truth").join("truth.csv"), "\n0,", "\n1,");
    // Format 1 (no checksum, no truth hash): still read, its truth.csv checked line by line.
    let v1 = copy("v1");
    let manifest = std::fs::read_to_string(v1.join("radio.json")).unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let fields = m.as_object_mut().unwrap();
    fields.remove("checksum");
    fields.remove("truth_hash");
    fields.remove("stations_hash");
    fields.insert("format".into(), "dps-radiocontrol data 1".into());
    std::fs::write(v1.join("radio.json"), serde_json::to_string(&m).unwrap()).unwrap();
    // Format 2 (sealed, no station hashes): still read, without stations.sums.
    let v2 = copy("v2");
    let m = Manifest::parse(&std::fs::read_to_string(v2.join("radio.json")).unwrap()).unwrap();
    let m = Manifest { format: FORMAT_2.into(), stations_hash: None, ..m };
    let m = Manifest { checksum: Some(m.seal()), ..m };
    std::fs::write(v2.join("radio.json"), serde_json::to_string(&m).unwrap()).unwrap();
    std::fs::remove_file(v2.join("stations.sums")).unwrap();
    // Format 3: two station files swapped (same sizes, no header), and an edited sums file.
    let swapped = copy("swapped-stations").join("stations");
    std::fs::rename(swapped.join("S000_H00.bin"), swapped.join("tmp")).unwrap();
    std::fs::rename(swapped.join("S001_H00.bin"), swapped.join("S000_H00.bin")).unwrap();
    std::fs::rename(swapped.join("tmp"), swapped.join("S001_H00.bin")).unwrap();
    replace(copy("edited-sums").join("stations.sums"), "S001_H00.bin fnv1a64:", "S001_H00.bin fnv1a64:0");
    std::fs::remove_file(copy("no-sums").join("stations.sums")).unwrap();
    copy_dir(&v1, &s.root.join("v1-truth-header"));
    replace(s.root.join("v1-truth-header/truth.csv"), "watch,minute", "minute,watch");
    copy_dir(&v1, &s.root.join("v1-truth-twice"));
    let truth = std::fs::read_to_string(v1.join("truth.csv")).unwrap();
    let second = truth.lines().nth(2).unwrap();
    replace(s.root.join("v1-truth-twice/truth.csv"), truth.lines().nth(1).unwrap(), second);
    // Watch record fields this implementation does not read: flags, scale, reserved bytes.
    for (name, at, value) in
        [("watch-flags", 95 * 3 + 2, 0x81u8), ("watch-scale", 95 * 7 + 7, 0x40), ("watch-reserved", 95 * 9 + 12, 1)]
    {
        let watch = copy(name).join("watches/W0002.bin");
        let mut bytes = std::fs::read(&watch).unwrap();
        bytes[at] = value;
        std::fs::write(&watch, bytes).unwrap();
    }
    let run = |data: &str, out: &str| -> Vec<String> {
        ["run", &s.p(data), "--out", &s.p(out), "--serial"].iter().map(|w| w.to_string()).collect()
    };
    let with = |mut v: Vec<String>, more: &[&str]| {
        v.extend(more.iter().map(|w| w.to_string()));
        v
    };
    let rows: Vec<(Vec<String>, i32, Vec<String>)> = vec![
        (run("missing", "o1"), 2, vec![s.p("missing/radio.json")]),
        (run("bad-manifest", "o1"), 2, vec!["radio.json".into(), "watches 0".into()]),
        (run("short-station", "o1"), 2, vec!["S001_H00.bin".into(), "3599999 bytes".into(), "truncated".into()]),
        (run("long-watch", "o1"), 2, vec!["W0003.bin".into(), "136801 bytes".into()]),
        (run("no-watch", "o1"), 2, vec!["W0002.bin".into(), "No such file".into()]),
        (run("no-station", "o1"), 2, vec!["S000_H00.bin".into()]),
        (run("data", "a_file/out"), 2, vec!["--out".into(), "a_file".into()]),
        (run("data", "other-out"), 2, vec!["another data set".into(), "refusing to resume".into()]),
        (run("data", "garbage-out"), 2, vec!["not a dps-radiocontrol result file".into()]),
        (run("data", "dir-out"), 2, vec!["results.bin".into(), "is a directory".into()]),
        (run("wrong-minute", "o9"), 2, vec!["W0001.bin".into(), "record 5 says it is minute 77".into()]),
        (with(run("bad-truth", "o8"), &["--verify"]), 2, vec!["--verify".into(), "truth.csv".into()]),
        (run("extra-field", "o10"), 2, vec!["extra-field/radio.json".into(), "unknown field `stride`".into()]),
        (run("fewer-watches", "o10"), 2, vec!["fewer-watches/radio.json".into(), "field `checksum`".into()]),
        (
            with(run("edited-truth", "o10"), &["--verify"]),
            2,
            vec!["edited-truth/truth.csv".into(), "not the manifest's truth_hash".into()],
        ),
        (with(run("v1", "o11"), &["--verify"]), 0, vec![]),
        (with(run("v2", "o12"), &["--verify"]), 0, vec![]),
        (
            run("swapped-stations", "o10"),
            2,
            vec!["station file".into(), "S000_H00.bin".into(), "another station's or hour's file".into()],
        ),
        (run("edited-sums", "o10"), 2, vec!["stations.sums".into(), "not the manifest's stations_hash".into()]),
        (run("no-sums", "o10"), 2, vec!["no-sums/stations.sums".into(), "No such file".into()]),
        (
            with(run("v1-truth-header", "o10"), &["--verify"]),
            2,
            vec!["v1-truth-header/truth.csv:1".into(), "header \"minute,watch".into()],
        ),
        (with(run("v1-truth-twice", "o10"), &["--verify"]), 2, vec!["truth.csv:3".into(), "appears twice".into()]),
        (run("watch-flags", "o10"), 2, vec!["W0002.bin".into(), "record 3: flags 0x81".into()]),
        (run("watch-scale", "o10"), 2, vec!["W0002.bin".into(), "record 7: scale".into()]),
        (run("watch-reserved", "o10"), 2, vec!["W0002.bin".into(), "record 9: reserved bytes".into()]),
        (run("data", "full-out"), 1, vec!["results.bin".into(), "No space left on device".into()]),
        (run("data", "full-summary"), 1, vec!["summary.csv".into(), "No space left on device".into()]),
        (with(run("data", "o2"), &["--pipeline-depth", "0"]), 2, vec!["--pipeline-depth".into()]),
        (
            ["generate", "--watches", "0", "--dir", &s.p("g")].iter().map(|w| w.to_string()).collect(),
            2,
            vec!["--watches 0".into()],
        ),
        (
            ["generate", "--hours", "25", "--dir", &s.p("g")].iter().map(|w| w.to_string()).collect(),
            2,
            vec!["--hours 25".into()],
        ),
        (["supervise", "--", "true"].iter().map(|w| w.to_string()).collect(), 2, vec!["--out".into()]),
        (
            ["bench-kernel", "--path", "avx3"].iter().map(|w| w.to_string()).collect(),
            2,
            vec!["--path avx3".into(), "not a kernel path".into()],
        ),
        // The issue-27 cases: a supervise --out that the command does not write, and a
        // command that exits 0 without a complete result file.
        (
            ["supervise", "--out", &s.p("wrong"), "--", BIN, "run", &s.p("data"), "--out", &s.p("right")]
                .iter()
                .map(|w| w.to_string())
                .collect(),
            2,
            vec![format!("supervise --out {}", s.p("wrong")), format!("--out {}", s.p("right"))],
        ),
        (
            ["supervise", "--out", &s.p("o6"), "--", "true"].iter().map(|w| w.to_string()).collect(),
            1,
            vec!["exited 0".into(), "names no data set".into()],
        ),
        (
            ["supervise", "--", "true", "run", &s.p("data"), "--out", &s.p("o7")]
                .iter()
                .map(|w| w.to_string())
                .collect(),
            1,
            vec!["exited 0".into(), "not complete".into()],
        ),
        (
            ["supervise", "--", "mpirun", "-n", "1", "x", "--out", &s.p("o3")].iter().map(|w| w.to_string()).collect(),
            1,
            vec![],
        ),
    ];
    let failures: Vec<String> = rows
        .iter()
        .filter_map(|(args, code, words)| {
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            check_direct(args, *code, &words)
        })
        .collect();
    assert!(failures.is_empty(), "{} rows failed:\n{}", failures.len(), failures.join("\n"));

    // The farm on 2 ranks refuses the same way, printed once.
    let (data, short, other) = (s.p("data"), s.p("short-station"), s.p("other-out"));
    check_table(
        Path::new(BIN),
        &[
            case_on(2, &["run", &short, "--out", &s.p("o4")], 2, &["S001_H00.bin", "truncated"]),
            case_on(2, &["run", &data, "--out", &other], 2, &["another data set"]),
        ],
    );
    // The results that were there are untouched, and the summary on the full disk left
    // the results complete and valid.
    assert_eq!(std::fs::read(results(&s.root.join("other-out"))).unwrap(), other_results);
    let complete = std::fs::read(results(&s.root.join("full-summary"))).unwrap();
    assert_eq!(complete, serial(&s.root.join("data"), &s.root.join("clean")));
}

/// `run --simulate` refusals: each one line, exit 2, before any work; the failure tests'
/// options and resuming a result file make no sense in a simulation.
#[test]
fn bad_simulations_are_refused_once_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let [good, old, _, missing] = dps_harness::simulate::test_platforms(tmp.path());
    let (good, old, missing) = (good.as_str(), old.as_str(), missing.as_str());
    let data = tmp.path().join("data");
    common::generate(&data, 4, 2, 1, 1);
    let done = tmp.path().join("done");
    common::serial(&data, &done);
    let (data, done) = (data.to_str().unwrap(), done.to_str().unwrap());
    let o = tmp.path().join("o");
    let o = o.to_str().unwrap();
    let run = ["run", data, "--out", o, "--simulate"];
    check_table(
        Path::new(BIN),
        &[
            case(&[&run[..], &["0", "--platform", good]].concat(), 2, &["--simulate 0", "at least one rank"]),
            case(
                &[&run[..], &["2", "--platform", missing]].concat(),
                2,
                &["platform file", "not found", "dps-bench calibrate"],
            ),
            case(&[&run[..], &["2", "--platform", old]].concat(), 2, &["made by dps 0.0.0"]),
            case(
                &[&run[..], &["2", "--sim-mode", "pdexec", "--platform", good]].concat(),
                2,
                &["--sim-mode pdexec", "dps-radiocontrol", "--sim-mode de"],
            ),
            case(&[&run[..], &["2", "--serial", "--platform", good]].concat(), 2, &["--serial"]),
            case(&[&run[..], &["2", "--throttle-ms", "5", "--platform", good]].concat(), 2, &["--throttle-ms", "kill"]),
            case(
                &[&run[..], &["2", "--file-size-limit", "100", "--platform", good]].concat(),
                2,
                &["--file-size-limit"],
            ),
            case(
                &["run", data, "--out", done, "--simulate", "2", "--platform", good],
                2,
                &["already holds 2 of the 2 jobs", "--fresh"],
            ),
            case(
                &["supervise", "--", BIN, "run", data, "--out", o, "--simulate", "2"],
                2,
                &["supervise", "--simulate"],
            ),
            case_on(2, &[&run[..], &["2", "--platform", good]].concat(), 2, &["without mpirun"]),
            case(&["run", data, "--out", done, "--fresh", "--simulate", "2", "--platform", good], 0, &[]),
        ],
    );
}
