//! Bad input never panics, hangs or lies: every row runs `dps-tsp` under `scripts/mpirun`
//! (with `RUST_BACKTRACE=1`) and states the exit code and the words of its message; the
//! runner also fails a row on a panic, a backtrace, an allocation failure, a hang or a
//! bad-input message printed more than once. Then the cases a table cannot state: time
//! limits that hold, outputs on a full disk.

use std::path::{Path, PathBuf};
use std::process::Command;

use dps_launch::bad_input::{case, case_on, check_table};

fn exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_dps-tsp"))
}

/// A directory of instances for the rows: each name, and its path as a string.
struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Files {
        Files { dir: tempfile::tempdir().unwrap() }
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

/// An EUC_2D instance with these coordinates (the first city on line 6).
fn coords(points: &[(&str, &str)]) -> String {
    let mut text =
        format!("NAME: c\nTYPE: TSP\nDIMENSION: {}\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n", points.len());
    for (k, (x, y)) in points.iter().enumerate() {
        text.push_str(&format!("{} {x} {y}\n", k + 1));
    }
    text + "EOF\n"
}

fn explicit(n: &str, format: &str, body: &str) -> String {
    format!(
        "NAME: e\nTYPE: TSP\nDIMENSION: {n}\nEDGE_WEIGHT_TYPE: EXPLICIT\nEDGE_WEIGHT_FORMAT: {format}\n\
         EDGE_WEIGHT_SECTION\n{body}\nEOF\n"
    )
}

fn data(name: &str) -> String {
    format!("{}/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn bad_input_table() {
    let f = Files::new();
    let four = [("0", "0"), ("1", "0"), ("1", "1"), ("0", "1")];
    let with = |k: usize, x: &'static str| {
        let mut p = four;
        p[k] = (x, "0");
        coords(&p)
    };
    let inf = f.write("inf.tsp", &with(1, "inf"));
    let nan = f.write("nan.tsp", &with(1, "nan"));
    let huge = f.write("huge.tsp", &with(1, "1e300"));
    let beyond = f.write("beyond.tsp", &with(1, "4e15"));
    let att = f.write("att.tsp", &with(1, "1e300").replace("EUC_2D", "ATT"));
    let near_2_63 =
        f.write("w63.tsp", &explicit("4", "UPPER_ROW", "9223372036854775000 1 2\n3 4\n9223372036854775000"));
    let bomb = f.write("bomb.tsp", &explicit("200000", "FULL_MATRIX", "1 2 3"));
    let tiny_big = f.write("tiny.tsp", &explicit("20000", "FULL_MATRIX", "1 2 3"));
    let absurd = f.write("absurd.tsp", &explicit("100000000000000", "FULL_MATRIX", "1 2 3"));
    let empty = f.write("empty.tsp", "");
    let truncated = f.write("trunc.tsp", &coords(&four)[..80]);
    let euc3d = f.write("euc3d.tsp", "NAME: t\nTYPE: TSP\nDIMENSION: 3\nEDGE_WEIGHT_TYPE: EUC_3D\n");
    let dims: Vec<String> = ["0", "1", "2", "-4", "x"]
        .iter()
        .map(|d| f.write(&format!("dim{d}.tsp"), &format!("DIMENSION: {d}\n")))
        .collect();
    let twice = f.write("twice.tsp", "DIMENSION: 3\nDIMENSION: 4\n");
    let asym = f.write("asym.tsp", &explicit("3", "FULL_MATRIX", "0 1 2\n1 0 3\n2 4 0"));
    let missing_dir = f.path("no/such/dir/t.tour");
    let dir = f.dir.path().display().to_string();
    let gr17 = data("gr17.tsp");

    // One statement, so that the argument arrays live as long as the table.
    check_table(
        exe(),
        &[
            // A. Wrong results reported as verified: refused before any work.
            case(&[&inf, "--verify"], 2, &["inf.tsp", "line 7", "coordinate \"inf\" is not a finite number"]),
            case(&[&nan, "--verify"], 2, &["line 7", "coordinate \"nan\" is not a finite number"]),
            case(&[&huge, "--verify"], 2, &["line 7", "largest distance", "2 (line 7)", "2^53", "scale"]),
            case(&[&beyond, "--verify"], 2, &["4000000000000000", "at most 2251799813685248"]),
            case(&[&att, "--verify"], 2, &["largest distance", "not a finite number below 2^63"]),
            case_on(2, &[&near_2_63, "--verify"], 2, &["line 9", "largest edge weight, 9223372036854775000", "2^53"]),
            // B. Hangs and memory bombs.
            case(&["--steps", "0", "--random", "60"], 2, &["--steps 0"]),
            case_on(2, &["--variant", "thesis", "--steps", "0", "--random", "8"], 2, &["--steps 0"]),
            case(&["--variant", "thesis", "--steps", "1", "--random", "8", "--verify"], 0, &[]),
            case_on(2, &["--variant", "thesis", "--steps", "1", "--random", "8", "--verify"], 0, &[]),
            case_on(2, &["--steps", "1", "--random", "12", "--verify"], 0, &[]),
            case(&[&bomb], 2, &["bomb.tsp", "line 3", "DIMENSION 200000", "memory"]),
            case(&[&tiny_big], 2, &["tiny.tsp", "DIMENSION 20000"]),
            case(&[&absurd], 2, &["DIMENSION 100000000000000", "more than 16 EiB"]),
            case_on(2, &["--random", "100000"], 2, &["--random 100000", "memory", "available"]),
            case(&["--random", "70000", "--variant", "thesis", "--threads", "1"], 2, &["--random 70000"]),
            // C. Time limits that would panic in Duration.
            case(&["--random", "8", "--time-limit=-1"], 2, &["--time-limit -1"]),
            case(&["--random", "8", "--time-limit", "-1"], 2, &["--time-limit -1"]),
            case(&["--random", "8", "--time-limit", "nan"], 2, &["--time-limit NaN"]),
            case(&["--random", "8", "--time-limit", "inf"], 2, &["--time-limit inf"]),
            case(&["--random", "8", "--time-limit", "1e300"], 2, &["--time-limit 1e300"]),
            case_on(2, &["--random", "8", "--time-limit", "0"], 2, &["--time-limit 0"]),
            // D. Outputs: checked before the run; a full disk is a failure.
            case(&["--random", "8", "--tour-out", &missing_dir], 2, &["--tour-out", "does not exist"]),
            case_on(2, &["--random", "8", "--plot", &dir], 2, &["--plot", "is a directory"]),
            case(&["--random", "8", "--trace", &missing_dir], 2, &["--trace", "does not exist"]),
            case(&["--random", "8", "--tour-out", "/dev/full"], 1, &["cannot write /dev/full"]),
            case(&["--random", "8", "--plot", "/dev/full"], 1, &["cannot write /dev/full"]),
            case(&[&gr17, "--plot", &f.path("gr17.png")], 2, &["--plot", "no coordinates"]),
            // F. Option errors: once, exit 2.
            case_on(2, &["--bogus"], 2, &["--bogus"]),
            case(&[], 2, &["FILE.tsp"]),
            case(&[&gr17, "--random", "8"], 2, &["--random"]),
            // G. Files.
            case_on(2, &["/nonexistent/x.tsp"], 2, &["/nonexistent/x.tsp", "No such file"]),
            case(&[&dir], 2, &["Is a directory"]),
            case(&[&empty], 2, &["empty.tsp", "no DIMENSION"]),
            case(&[&truncated], 2, &["trunc.tsp", "ends after"]),
            case(&[&euc3d], 2, &["line 4", "EDGE_WEIGHT_TYPE EUC_3D is not supported"]),
            case(&[&dims[0]], 2, &["DIMENSION 0", "at least 3"]),
            case(&[&dims[1]], 2, &["DIMENSION 1", "at least 3"]),
            case(&[&dims[2]], 2, &["DIMENSION 2", "at least 3"]),
            case(&[&dims[3]], 2, &["DIMENSION \"-4\""]),
            case(&[&dims[4]], 2, &["DIMENSION \"x\""]),
            case(&[&twice], 2, &["line 2", "DIMENSION given twice"]),
            case(&[&asym], 2, &["not symmetric"]),
            case(&["/dev/zero"], 2, &["/dev/zero", "more than 1 GiB"]),
            // G. Numeric options at 0, negative, huge, not a number.
            case(&["--random", "0"], 2, &["--random 0"]),
            case(&["--random", "2"], 2, &["--random 2"]),
            case(&["--random", "-5"], 2, &["--random"]),
            case(&["--random", "abc"], 2, &["--random"]),
            case(&["--random", "99999999999999999999999"], 2, &["--random"]),
            case(&["--random", "8", "--variant", "greedy"], 2, &["--variant", "greedy"]),
            case(&["--random", "8", "--steps", "-1"], 2, &["--steps"]),
            case(&["--random", "8", "--threads", "0"], 2, &["--threads 0"]),
            case(&["--random", "8", "--threads", "100000"], 2, &["--threads 100000"]),
            case(&["--random", "8", "--pipeline-depth", "0"], 2, &["--pipeline-depth 0"]),
            case(&["--random", "8", "--pipeline-depth", "18446744073709551615"], 2, &["--pipeline-depth"]),
            case(&["--random", "8", "--cutoff", "9"], 2, &["--cutoff 9", "at most 8"]),
            case(&["--random", "8", "--cutoff", "-1"], 2, &["--cutoff"]),
            case(&["--random", "8", "--kicks", "-1"], 2, &["--kicks"]),
            case(&["--random", "8", "--seed", "-1"], 2, &["--seed"]),
            // Huge values that are valid run and stay correct.
            case(&["--random", "9", "--variant", "thesis", "--cutoff", "18446744073709551615", "--verify"], 0, &[]),
            case(&["--random", "9", "--steps", "18446744073709551615", "--verify"], 0, &[]),
        ],
    );
}

/// `--time-limit` holds during the start: the first tour's local search and the root's bound
/// used to run to the end (9.7 s for 1 s on 200 cities).
#[test]
fn the_time_limit_holds_from_the_start() {
    let job = dps_launch::mpirun(1, exe(), &["--random", "200", "--time-limit", "1", "--json"]);
    assert_eq!(job.status.code(), Some(0), "{}", job.stderr);
    let line = job.stdout.lines().find(|l| l.starts_with('{')).expect("a JSON line");
    let r: serde_json::Value = serde_json::from_str(line).unwrap();
    let seconds = r["seconds"].as_f64().unwrap();
    assert!(seconds < 2.5, "the 1 s limit took {seconds} s: {r}");
    assert!(job.elapsed.as_secs_f64() < 10.0, "the job took {:?}", job.elapsed);
    if r["optimal"] == false {
        assert!(r["length"].as_i64().is_some(), "the first tour is reported: {r}");
    }
}

/// A run whose output fails leaves no file behind: the `.tour` is not renamed into place
/// when the plot cannot be written, and no temporary file is left.
#[test]
fn a_failed_output_leaves_no_file() {
    let f = Files::new();
    let tour = f.path("t.tour");
    let job = dps_launch::mpirun(2, exe(), &["--random", "10", "--tour-out", &tour, "--plot", "/dev/full"]);
    assert_eq!(job.status.code(), Some(1), "{}", job.stderr);
    assert!(job.stderr.contains("/dev/full"), "{}", job.stderr);
    let left: Vec<PathBuf> = std::fs::read_dir(f.dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(left.is_empty(), "files left behind: {left:?}");
}

/// The report itself on a full standard output is a failure, not a success nobody saw (and
/// not a panic in `println!`).
#[test]
fn a_full_standard_output_is_a_failure() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    let out = Command::new(exe())
        .args(["--random", "8"])
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("standard output") && !stderr.contains("panicked"), "{stderr}");
}

/// `--simulate` refusals: each one line, exit 2, before any work.
#[test]
fn bad_simulations_are_refused_once_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let [good, old, elsewhere, missing] = dps_harness::simulate::test_platforms(dir.path());
    let (good, old, elsewhere, missing) = (good.as_str(), old.as_str(), elsewhere.as_str(), missing.as_str());
    let n8 = ["--random", "8", "--simulate"];
    check_table(
        exe(),
        &[
            case(&[&n8[..], &["0", "--platform", good]].concat(), 2, &["--simulate 0", "at least one rank"]),
            case(
                &[&n8[..], &["2", "--platform", missing]].concat(),
                2,
                &["platform file", "not found", "dps-bench calibrate --out"],
            ),
            case(&[&n8[..], &["2", "--platform", old]].concat(), 2, &["made by dps 0.0.0", "dps-bench calibrate"]),
            case(&[&n8[..], &["2", "--platform", elsewhere]].concat(), 2, &["not on this host", "dps-bench calibrate"]),
            case(
                &[&n8[..], &["2", "--sim-mode", "pdexec", "--platform", good]].concat(),
                2,
                &["--sim-mode pdexec", "dps-tsp", "control flow depends on the data", "bounds"],
            ),
            case(&[&n8[..], &["2", "--sim-mode", "noalloc", "--platform", good]].concat(), 2, &["--sim-mode noalloc"]),
            case(
                &[&n8[..], &["2", "--time-limit", "5", "--platform", good]].concat(),
                2,
                &["--time-limit", "wall-clock"],
            ),
            case(&["--random", "8", "--sim-mode", "de"], 2, &["--simulate"]),
        ],
    );
}
