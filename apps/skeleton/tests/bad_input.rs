//! Bad input never panics, hangs or lies: each row runs `dps-skeleton` with an image or
//! options a user may get wrong and states the exit code (2: refused before any work) and
//! words of the message. Images that are valid though odd (all black, all white, grey
//! levels) give a verified skeleton.

use std::path::{Path, PathBuf};

use dps_launch::bad_input::{case, case_on, check_table};
use dps_launch::mpirun;

const BIN: &str = env!("CARGO_BIN_EXE_dps-skeleton");

/// Writes a `w × h` grey PNG whose pixel (x, y) is `f(x, y)`.
fn png(path: &Path, w: u32, h: u32, f: impl Fn(u32, u32) -> u8) {
    image::GrayImage::from_fn(w, h, |x, y| image::Luma([f(x, y)])).save(path).unwrap();
}

struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Files {
        let files = Files { dir: tempfile::tempdir().unwrap() };
        std::fs::write(files.path("text.png"), "not an image").unwrap();
        std::fs::write(files.path("empty.png"), "").unwrap();
        png(&files.path("black.png"), 70, 50, |_, _| 255);
        png(&files.path("white.png"), 70, 50, |_, _| 0);
        png(&files.path("grey.png"), 90, 60, |x, y| ((x * 7 + y * 3) % 256) as u8);
        png(&files.path("small.png"), 20, 10, |x, _| if x > 5 { 255 } else { 0 });
        files
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn s(&self, name: &str) -> String {
        self.path(name).to_str().unwrap().to_string()
    }
}

#[test]
fn bad_input_is_refused_with_one_clear_line() {
    let f = Files::new();
    let (text, empty, missing, small) = (f.s("text.png"), f.s("empty.png"), f.s("missing.png"), f.s("small.png"));
    let nowhere = f.s("no/such/dir/out.png");
    check_table(
        BIN.as_ref(),
        &[
            case(&["--input", &text], 2, &["--input", "cannot read the image"]),
            case(&["--input", &empty], 2, &["--input", "cannot read the image"]),
            case(&["--input", &missing], 2, &["--input", "missing.png"]),
            case(&["--generate", "blobs", "0", "10"], 2, &["--generate", "width 0"]),
            case(&["--generate", "blobs", "10", "-1"], 2, &["--generate", "height"]),
            case(&["--generate", "circles", "10", "10"], 2, &["circles", "blobs, text, skewed and mixed"]),
            case(&["--generate", "blobs", "10"], 2, &["--generate"]),
            case(&[], 2, &["--input"]),
            case(&["--input", &small, "--cell", "0"], 2, &["--cell 0"]),
            case(&["--input", &small, "--cell", "21"], 2, &["--cell 21", "larger than the 20x10 image"]),
            case(&["--generate", "text", "64", "64", "--depth", "0"], 2, &["--depth 0"]),
            case(&["--generate", "text", "64", "64", "--depth", "33"], 2, &["--depth 33"]),
            case(&["--generate", "text", "64", "64", "--out", &nowhere], 2, &["--out"]),
            case(&["--generate", "text", "64", "64", "--in-flight", "0"], 2, &["--in-flight 0"]),
            // Issue 27: the image (32 MiB) fits, its 268 million cells do not.
            case(&["--generate", "blobs", "16384", "16384", "--cell", "1"], 2, &["cells of 1", "memory", "available"]),
            case_on(2, &["--input", &small, "--cell", "0"], 2, &["--cell 0"]),
        ],
    );
}

#[test]
fn odd_but_valid_images_give_a_verified_skeleton() {
    let f = Files::new();
    for (name, cell) in [("black.png", "16"), ("white.png", "16"), ("grey.png", "7"), ("small.png", "20")] {
        let path = f.s(name);
        let job = mpirun(2, BIN.as_ref(), &["--input", &path, "--cell", cell, "--verify", "--json"]);
        assert!(job.status.success(), "{name}: {}", job.stderr);
        let line = job.stdout.lines().find(|l| l.starts_with('{')).unwrap();
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(record["verified"], true, "{name}: {record}");
        if name == "white.png" {
            assert_eq!((record["black_before"].as_u64(), record["black_after"].as_u64()), (Some(0), Some(0)));
        }
        if name == "black.png" {
            assert!(record["black_after"].as_u64().unwrap() > 0, "an all-black image keeps a skeleton");
        }
    }
}

/// `--simulate` refusals: each one line, exit 2, before any work.
#[test]
fn bad_simulations_are_refused_once_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let [good, old, elsewhere, missing] = dps_harness::simulate::test_platforms(dir.path());
    let (good, old, elsewhere, missing) = (good.as_str(), old.as_str(), elsewhere.as_str(), missing.as_str());
    let blobs = ["--generate", "blobs", "64", "64", "--simulate"];
    check_table(
        Path::new(BIN),
        &[
            case(&[&blobs[..], &["0", "--platform", good]].concat(), 2, &["--simulate 0", "at least one rank"]),
            case(
                &[&blobs[..], &["2", "--platform", missing]].concat(),
                2,
                &["platform file", "not found", "dps-bench calibrate"],
            ),
            case(&[&blobs[..], &["2", "--platform", old]].concat(), 2, &["made by dps 0.0.0"]),
            case(&[&blobs[..], &["2", "--platform", elsewhere]].concat(), 2, &["not on this host"]),
            case(
                &[&blobs[..], &["2", "--sim-mode", "pdexec", "--platform", good]].concat(),
                2,
                &["--sim-mode pdexec", "dps-skeleton", "control flow depends on the data", "pixels"],
            ),
            case(
                &[&blobs[..], &["2", "--sim-mode", "noalloc", "--platform", good]].concat(),
                2,
                &["--sim-mode noalloc"],
            ),
            case(&["--generate", "blobs", "64", "64", "--sim-mode", "de"], 2, &["--simulate"]),
            case_on(2, &[&blobs[..], &["2", "--platform", good]].concat(), 2, &["without mpirun"]),
        ],
    );
}
