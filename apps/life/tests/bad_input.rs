//! Bad input never panics, hangs or lies: each row runs `dps-life` with options, files or
//! output paths a user may get wrong and states the exit code (2: refused before any work,
//! 1: the run failed) and words of the message. The main table runs under mpirun (some rows
//! on 2 ranks, where the message must still be printed once); the sweep of every numeric
//! option at its extremes runs the binary directly (an mpirun launch costs ~2 s here), with
//! the same checks.

use std::path::{Path, PathBuf};
use std::process::Command;

use dps_launch::bad_input::{case, case_on, check_table};

const BIN: &str = env!("CARGO_BIN_EXE_dps-life");
const MAX: &str = "18446744073709551615"; // u64::MAX
const OVER: &str = "18446744073709551616"; // u64::MAX + 1

const GLIDER: &str = "#N Glider\nx = 3, y = 3, rule = B3/S23\nbob$2bo$3o!\n";

/// The files the rows name, in a temporary directory.
struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Files {
        assert!(Path::new("/dev/full").exists(), "the rows of a full disk write to /dev/full");
        let dir = tempfile::tempdir().unwrap();
        let files = Files { dir };
        for (name, text) in [
            ("glider.rle", GLIDER),
            ("empty.rle", ""),
            ("truncated.rle", "x = 3, y = 3, rule = B3/S23\nbob$2bo$3o\n"),
            ("garbage.rle", "x = 3, y = 3\nbo$2bo$\n3q!\n"),
            ("rule.rle", "x = 3, y = 1, rule = B36/S23\n3o!\n"),
            ("wide.rle", "#N a run near 2^64 in a 10-wide pattern\nx = 10, y = 1\n5b18446744073709551614b2o!\n"),
            ("huge.rle", "x = 1000000000000, y = 1000000000000\no!\n"),
            ("a_file", "not a directory"),
        ] {
            std::fs::write(files.path(name), text).unwrap();
        }
        std::fs::write(files.path("binary.rle"), b"x = 3, y = 1\n\xff\xfe!\n").unwrap();
        std::fs::create_dir(files.path("dir.png")).unwrap();
        std::fs::create_dir(files.path("blocks")).unwrap();
        // A disk that is full: every write fails with ENOSPC.
        for name in ["full.png", "full.rle", "snap-000005.png"] {
            std::os::unix::fs::symlink("/dev/full", files.path(name)).unwrap();
        }
        files
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn s(&self, name: &str) -> String {
        self.path(name).to_str().unwrap().to_string()
    }

    /// The directory holds only the files [`Files::new`] made: no partial or temporary file.
    fn assert_nothing_left(&self) {
        let mut names: Vec<String> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        let made = [
            "a_file",
            "binary.rle",
            "blocks",
            "dir.png",
            "empty.rle",
            "full.png",
            "full.rle",
            "garbage.rle",
            "glider.rle",
            "huge.rle",
            "rule.rle",
            "snap-000005.png",
            "truncated.rle",
            "wide.rle",
        ];
        assert_eq!(names, made, "files left behind");
        assert_eq!(std::fs::read_dir(self.path("blocks")).unwrap().count(), 0, "blocks written");
    }
}

#[test]
fn bad_input_table() {
    let f = Files::new();
    let (glider, wide, huge) = (f.s("glider.rle"), f.s("wide.rle"), f.s("huge.rle"));
    let missing_dir = f.s("no/such/dir/world.png");
    let (full_png, full_rle, snap) = (f.s("full.png"), f.s("full.rle"), f.s("snap.png"));
    check_table(
        BIN.as_ref(),
        &[
            // E: an option error is printed once, by rank 0, on any number of ranks.
            case_on(2, &["--random", "10", "10", "--frobnicate"], 2, &["--frobnicate"]),
            // A: wrong results reported as verified.
            case(
                &["--rle", &glider, "--size", "10", "10", "--at", "0", "18446744073709551614", "--verify"],
                2,
                &["--rle", "does not fit", "--at", "--size"],
            ),
            case_on(
                2,
                &["--rle", &glider, "--size", "10", "10", "--at", "0", "18446744073709551614", "--verify"],
                2,
                &["does not fit"],
            ),
            case(&["--rle", &wide, "--verify"], 2, &["wide.rle:line 3", "wider than the header's x = 10"]),
            // B: panics from input.
            case(&["--rle", &glider, "--at", MAX, "0"], 2, &["--rle", "does not fit"]),
            case(&["--variant", "serial", "--random", MAX, "2"], 2, &["--random", "memory", "available"]),
            // C: memory.
            case(&["--random", "10000000", "10000000"], 2, &["--random 10000000 10000000 needs", "TiB", "available"]),
            case_on(2, &["--random", "10000000", "10000000", "--verify"], 2, &["needs", "2 ranks here"]),
            case(&["--rle", &huge], 2, &["--rle", "x = 1000000000000", "memory"]),
            // Sizes and regions.
            case_on(
                2,
                &["--random", "10", "10", "--region", "5", "5", "6", "1", "--out", &snap],
                2,
                &["--region 5 5 6 1 is not inside the 10x10 world"],
            ),
            case_on(
                2,
                &["--random", "10", "10", "--depth", "6"],
                2,
                &["--depth 6", "thinnest of the 2 bands has 5 rows"],
            ),
            case_on(
                2,
                &["--random", "10", "10", "--view", "4x4", "--view-png", &f.s("no/such/dir")],
                2,
                &["--view-png", "no such directory"],
            ),
            // A client pausing for 2^64 ms between calls still stops with the run.
            case_on(
                3,
                &["--random", "64", "64", "--generations", "20", "--view", "8x8", "--view-period-ms", MAX],
                0,
                &[],
            ),
            // D: outputs.
            case_on(2, &["--random", "10", "10", "--out", &missing_dir], 2, &["--out", "does not exist"]),
            case(&["--random", "10", "10", "--out", &full_png], 1, &["cannot write", "full.png", "No space"]),
            case_on(2, &["--random", "100", "40", "--out", &full_rle, "--verify"], 1, &["cannot write", "full.rle"]),
            case(
                &["--random", "10", "10", "--out", &snap, "--snapshot-every", "5", "--generations", "10"],
                1,
                &["cannot write", "snap-000005.png"],
            ),
            case(
                &["--variant", "serial", "--random", "10", "10", "--out", &full_png],
                1,
                &["cannot write", "full.png"],
            ),
        ],
    );
    f.assert_nothing_left();
}

/// What `dps-life args` must never do, on one process without mpirun: what
/// `dps_launch::bad_input::check_table` checks, for the sweep below.
fn problems(args: &[&str], code: i32, words: &[&str]) -> Option<String> {
    let out = Command::new(BIN).args(args).env("RUST_BACKTRACE", "1").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut found = Vec::new();
    if out.status.code() != Some(code) {
        found.push(format!("exit code {:?}, expected {code}", out.status.code()));
    }
    found.extend(words.iter().filter(|w| !stderr.contains(*w)).map(|w| format!("no {w:?} in the message")));
    let never = ["panicked", "stack backtrace", "RUST_BACKTRACE", "memory allocation of"];
    found.extend(never.iter().filter(|n| stderr.contains(*n)).map(|n| format!("the output contains {n:?}")));
    let printed = stderr.lines().filter(|l| l.starts_with("dps-life: ") || l.starts_with("error:")).count();
    if code == 2 && printed != 1 {
        found.push(format!("the error is printed {printed} times"));
    }
    (!found.is_empty()).then(|| format!("dps-life {}: {}\n{}", args.join(" "), found.join("; "), stderr.trim_end()))
}

#[test]
fn every_numeric_option_at_its_extremes() {
    let f = Files::new();
    let glider = f.s("glider.rle");
    let out = f.s("w.png");
    let small = ["--random", "20", "16"];
    let with = |extra: &[&str]| -> Vec<String> { small.iter().chain(extra).map(|s| s.to_string()).collect() };
    let mut rows: Vec<(Vec<String>, i32, Vec<&str>)> = Vec::new();
    for value in ["0", MAX, OVER, "-1", "x"] {
        let refused = if value == "0" { vec!["at least one cell"] } else { vec![] };
        rows.push((vec!["--random".into(), value.into(), "5".into()], 2, refused.clone()));
        rows.push((vec!["--random".into(), "5".into(), value.into()], 2, refused.clone()));
        let rle = |a: &str, b: &str, c: &str| vec!["--rle".into(), glider.clone(), a.into(), b.into(), c.into()];
        rows.push((rle("--size", value, "5"), 2, vec![]));
        rows.push((rle("--size", "5", value), 2, vec![]));
        // The glider at (0, 0) of its own 3x3 world is where it is.
        let at = if value == "0" { 0 } else { 2 };
        rows.push((rle("--at", value, "0"), at, vec![]));
        rows.push((rle("--at", "0", value), at, vec![]));
    }
    for (option, zero) in [
        ("--depth", "--depth must be at least 1"),
        ("--steps-per-call", "--steps-per-call 0 must be between 1 and 1024"),
        ("--generations", "--generations must be at least 1"),
        ("--snapshot-every", "--snapshot-every must be at least 1"),
    ] {
        rows.push((with(&[option, "0"]), 2, vec![zero]));
        rows.push((with(&[option, OVER]), 2, vec![option]));
        rows.push((with(&[option, "-1"]), 2, vec![]));
    }
    rows.push((with(&["--depth", MAX]), 2, vec!["--depth 18446744073709551615: the thinnest of the 1 bands"]));
    rows.push((with(&["--depth", MAX, "--variant", "serial"]), 2, vec!["--depth", "the world has 16 rows"]));
    rows.push((with(&["--steps-per-call", MAX]), 2, vec!["--steps-per-call"]));
    rows.push((with(&["--generations", MAX, "--warmup", "1"]), 2, vec!["64-bit counter"]));
    rows.push((with(&["--warmup", MAX]), 2, vec!["--warmup"]));
    rows.push((with(&["--warmup", OVER]), 2, vec!["--warmup"]));
    rows.push((with(&["--generations", MAX, "--view", "4x4"]), 2, vec!["2 times, with --variant compare or --view"]));
    for density in ["NaN", "nan", "inf", "-inf", "1.5", "-0.5", "x"] {
        rows.push((with(&[&format!("--density={density}")]), 2, vec!["--density"]));
    }
    for region in
        [["0", "0", "0", "5"], ["0", "0", "5", "0"], [MAX, "0", "2", "2"], ["0", "0", MAX, "1"], ["0", MAX, "1", "2"]]
    {
        let mut args = with(&["--out"]);
        args.push(out.clone());
        args.push("--region".into());
        args.extend(region.iter().map(|s| s.to_string()));
        rows.push((args, 2, vec!["--region", "is not inside the 20x16 world"]));
    }
    for view in ["0x4", "4x0", "4x", "x4", "abc", "4x4x4", &format!("{MAX}x1"), "21x4", "4x17", ""] {
        rows.push((with(&["--view", view]), 2, vec!["--view"]));
    }
    rows.push((with(&["--view-png", &f.s("blocks")]), 2, vec!["--view"]));
    rows.push((with(&["--view", "4x4", "--view-png", &f.s("a_file")]), 2, vec!["is not a directory"]));
    rows.push((with(&["--view", "4x4"]), 2, vec!["--view needs at least 2 ranks"]));
    rows.push((with(&["--map", ""]), 2, vec!["mapping"]));
    rows.push((with(&["--map", "0*17"]), 2, vec!["17 bands for 16 rows"]));
    let glider_in = |size: &str| vec!["--rle".to_string(), glider.clone(), "--size".into(), size.into(), size.into()];
    rows.push((glider_in("2"), 2, vec!["the 3x3 pattern", "does not fit in the 2x2 world"]));
    for (file, words) in [
        ("missing.rle", &["--rle", "missing.rle", "cannot read"][..]),
        ("blocks", &["--rle", "blocks: cannot read"]),
        ("empty.rle", &["empty.rle:line 1", "no header"]),
        ("truncated.rle", &["truncated.rle:line 2", "does not end with '!'"]),
        ("garbage.rle", &["garbage.rle:line 3", "unexpected character 'q'"]),
        ("binary.rle", &["binary.rle:line 2", "not UTF-8"]),
        ("rule.rle", &["rule.rle:line 1", "rule B36/S23 is not supported"]),
    ] {
        rows.push((vec!["--rle".into(), f.s(file)], 2, words.to_vec()));
    }
    rows.push((vec!["--rle".into(), "/dev/zero".into()], 2, vec!["/dev/zero", "too large"]));
    rows.push((with(&["--out", &f.s("a_file/x.png")]), 2, vec!["--out", "does not exist"]));
    rows.push((with(&["--out", "/proc/world.png"]), 2, vec!["--out /proc/world.png", "cannot write"]));
    rows.push((with(&["--out", "x.gif"]), 2, vec!["--out x.gif", "must end in .png or .rle"]));
    rows.push((with(&["--out", &f.s("dir.png")]), 2, vec!["--out", "is a directory"]));
    for parallel_only in [&["--view", "4x4"][..], &["--snapshot-every", "1"], &["--compare-serial"]] {
        let mut args = with(&["--variant", "serial"]);
        args.extend(parallel_only.iter().map(|s| s.to_string()));
        rows.push((args, 2, vec![parallel_only[0], "needs a parallel variant"]));
    }
    for (unknown, named) in [
        (&["--frobnicate"][..], "--frobnicate"),
        (&["--variant", "bogus"], "bogus"),
        (&["--random", "10"], "--random"),
        (&["--size", "5", "5"], "--rle"),
    ] {
        rows.push((unknown.iter().map(|s| s.to_string()).collect(), 2, vec![named]));
    }
    // --export-region, --serve-seconds, --view-process and the viewer's own options.
    for serve in ["0", "-1", "NaN", "inf", "1e9", "x"] {
        rows.push((with(&["--export-region", &format!("--serve-seconds={serve}")]), 2, vec!["--serve-seconds"]));
    }
    rows.push((with(&["--serve-seconds", "5"]), 2, vec!["--export-region"]));
    rows.push((with(&["--view-process"]), 2, vec!["--view"]));
    rows.push((with(&["--view", "4x4", "--view-fan", "2"]), 2, vec!["--view-process"]));
    for fan in ["0", "4097", OVER] {
        rows.push((with(&["--view", "4x4", "--view-process", "--view-fan", fan]), 2, vec!["--view-fan"]));
    }
    rows.push((
        with(&["--variant", "serial", "--export-region"]),
        2,
        vec!["--export-region", "needs a parallel variant"],
    ));
    let view = |extra: &[&str]| -> Vec<String> { ["view"].iter().chain(extra).map(|s| s.to_string()).collect() };
    rows.push((view(&[]), 2, vec!["--block"]));
    for block in ["0x4", "4x0", "4x", "abc", &format!("{MAX}1x1")] {
        rows.push((view(&["--block", block]), 2, vec!["--block"]));
    }
    for (option, values, words) in [
        ("--fan", &["0", "4097", OVER, "-1"][..], "--fan"),
        ("--calls", &["0", OVER, "-1"], "--calls"),
        ("--duration", &["0", "-1", "NaN", "inf", "1e9"], "--duration"),
        ("--period-ms", &[OVER, "-1"], "--period-ms"),
    ] {
        for v in values {
            rows.push((view(&["--block", "4x4", &format!("{option}={v}")]), 2, vec![words]));
        }
    }
    rows.push((view(&["--block", "4x4", "--png", &f.s("a_file")]), 2, vec!["--png", "is not a directory"]));
    rows.push((view(&["--block", "4x4", "--png", &f.s("no/such")]), 2, vec!["--png", "no such directory"]));
    rows.push((view(&["--block", "4294967296x4", "--png", &f.s("blocks")]), 2, vec!["--block"]));
    rows.push((view(&["--block", "4x4", "--random", "5", "5"]), 2, vec!["--random"]));
    // Extremes that are valid: the run goes through.
    rows.push((with(&["--seed", MAX, "--verify"]), 0, vec![]));
    rows.push((with(&["--snapshot-every", MAX, "--out", &out]), 0, vec![]));
    rows.push((with(&["--depth", "16", "--steps-per-call", "1024", "--verify"]), 0, vec![]));
    // Snapshots cut the calls of both schedules of `compare` apart, unevenly.
    let compare = ["--variant", "compare", "--warmup", "3", "--snapshot-every", "3", "--generations", "20", "--verify"];
    rows.push((with(&[&compare[..], &["--out", &out]].concat()), 0, vec![]));
    rows.push((
        vec![
            "--rle".into(),
            glider.clone(),
            "--size".into(),
            "5".into(),
            "5".into(),
            "--at".into(),
            "2".into(),
            "2".into(),
            "--verify".into(),
        ],
        0,
        vec![],
    ));

    let failures: Vec<String> = rows
        .iter()
        .filter_map(|(args, code, words)| problems(&args.iter().map(String::as_str).collect::<Vec<_>>(), *code, words))
        .collect();
    assert!(failures.is_empty(), "{} of {} rows failed:\n\n{}", failures.len(), rows.len(), failures.join("\n\n"));
}

/// A disk that fills up: a 16 KiB tmpfs, filled, mounted in a private mount namespace (needs
/// root and `unshare`; skipped, saying so, where they are missing). Every output must fail
/// with the path named, and leave nothing behind.
#[test]
fn a_full_disk_fails_the_run_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    for (out, extra) in [("x.png", ""), ("x.rle", ""), ("x.png", "--snapshot-every 1")] {
        let command = format!("{BIN} --random 64 64 --generations 2 --out {d}/{out} {extra}");
        let Some(run) = dps_launch::on_a_full_disk(dir.path(), "16k", &command) else { return };
        let (stdout, stderr) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
        assert_eq!(run.status.code(), Some(1), "{out} {extra}: {stderr}");
        assert!(stderr.contains("cannot write") && stderr.contains("No space left"), "{out} {extra}: {stderr}");
        assert_eq!(stdout.trim(), "filler", "{out} {extra}: files left on the full disk");
    }
}

/// Bad input that only a rank other than 0 sees (here under MPMD, rank 1 with a world too
/// large for memory) is still printed, by that rank, and ends the job with exit code 2.
#[test]
fn bad_input_seen_only_by_another_rank_is_printed_by_it() {
    let rank_0 = [BIN, "--random", "64", "64", "--generations", "1", ":", "-n", "1"];
    let job = dps_launch::Job::new(BIN)
        .ranks(1)
        .launcher_options(rank_0)
        .args(["--random", "10000000", "10000000"])
        .env("RUST_BACKTRACE", "1")
        .timeout_s(60)
        .output()
        .unwrap();
    assert_eq!(job.status.code(), Some(2), "{}", job.stderr);
    assert!(job.stderr.contains("rank 1: --random 10000000 10000000 needs"), "{}", job.stderr);
    assert!(!job.stderr.contains("panicked"), "{}", job.stderr);
}

#[test]
fn bad_simulations_are_refused_once_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let good = dps_harness::simulate::made_up_platform_file(dir.path());
    let good = good.as_str();
    check_table(
        Path::new(BIN),
        &[
            case(&["--random", "64", "64", "--simulate", "0", "--platform", good], 2, &["--simulate 0"]),
            // The made-up platform has no `life` table, which PDEXEC and NOALLOC charge.
            case(
                &["--random", "64", "64", "--simulate", "2", "--sim-mode", "pdexec", "--platform", good],
                2,
                &["kernel 'life'", "--sim-mode pdexec", "dps-bench calibrate"],
            ),
            case(
                &["--random", "64", "64", "--simulate", "2", "--sim-mode", "noalloc", "--platform", good],
                2,
                &["kernel 'life'", "--sim-mode noalloc", "dps-bench calibrate"],
            ),
            case(
                &["--random", "64", "64", "--simulate", "2", "--sim-mode", "pdexec", "--verify", "--platform", good],
                2,
                &["--verify", "--sim-mode pdexec", "skipped"],
            ),
            case(
                &["--random", "64", "64", "--simulate", "2", "--sim-mode", "noalloc", "--verify", "--platform", good],
                2,
                &["--verify", "--sim-mode noalloc", "left out"],
            ),
            case(
                &[
                    "--random",
                    "64",
                    "64",
                    "--simulate",
                    "2",
                    "--sim-mode",
                    "pdexec",
                    "--out",
                    "x.png",
                    "--platform",
                    good,
                ],
                2,
                &["--out", "--sim-mode pdexec"],
            ),
            case(&["--random", "64", "64", "--simulate", "2", "--view", "8x8", "--platform", good], 2, &["--view"]),
            case(
                &["--random", "64", "64", "--simulate", "2", "--compare-serial", "--platform", good],
                2,
                &["--compare-serial"],
            ),
            // Issue 27: checked before the simulator's tables (745 GiB at this P) are made.
            case(
                &["--random", "100", "100", "--simulate", "100000", "--platform", good],
                2,
                &["100000 bands for 100 rows"],
            ),
            // The same with an explicit --map: its bands are counted before the start too.
            case(
                &["--random", "100", "100", "--simulate", "100000", "--map", "all*2", "--platform", good],
                2,
                &["--map \"all*2\"", "200000 bands for 100 rows"],
            ),
            // Issue 27: 37 GiB of bands, all in this process (not 2.3 GiB on each of 16).
            case(
                &["--random", "400000", "400000", "--simulate", "16", "--platform", good],
                2,
                &["--random 400000 400000 --simulate 16", "memory", "available"],
            ),
        ],
    );
}
