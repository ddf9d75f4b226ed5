//! `dps-life` under mpirun: oscillators, spaceships and a gun across band boundaries on 1, 2
//! and 4 ranks; both schedules bit-identical to the serial reference; PNG, RLE and snapshot
//! output; the region-service client; bad input rejected with the line at fault.

use std::path::PathBuf;

use dps_launch::json_record as json;
use dps_launch::mpirun;
use dps_life::rle::{self, Pattern};

const BIN: &str = env!("CARGO_BIN_EXE_dps-life");

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("dps-life-{}-{name}", std::process::id()))
}

fn write(name: &str, text: &str) -> PathBuf {
    let path = temp(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A `w × h` world with live cells `cells` (wrapped around), as a pattern.
fn world(w: usize, h: usize, cells: impl IntoIterator<Item = (usize, usize)>) -> Pattern {
    let mut rows = vec![vec![b'.'; w]; h];
    for (x, y) in cells {
        rows[y % h][x % w] = b'o';
    }
    let rows: Vec<String> = rows.into_iter().map(|r| String::from_utf8(r).unwrap()).collect();
    let mut p = Pattern::from_rows(&rows.iter().map(String::as_str).collect::<Vec<_>>());
    p.width = w;
    p
}

/// Runs `pattern` placed at `at` in a `size` world for `generations`; returns the final world.
fn evolve(
    ranks: usize,
    variant: &str,
    pattern: &str,
    size: (usize, usize),
    at: (usize, usize),
    generations: u64,
    wrap: bool,
) -> Pattern {
    let file = write(&format!("in-{ranks}-{variant}-{generations}-{wrap}.rle"), pattern);
    let out = temp(&format!("out-{ranks}-{variant}-{generations}-{wrap}.rle"));
    let (w, h, x, y, g) =
        (size.0.to_string(), size.1.to_string(), at.0.to_string(), at.1.to_string(), generations.to_string());
    let mut args: Vec<&str> = vec!["--rle", file.to_str().unwrap(), "--size", &w, &h, "--at", &x, &y];
    args.extend(["--generations", &g, "--variant", variant, "--out", out.to_str().unwrap(), "--verify", "--json"]);
    if wrap {
        args.push("--wrap");
    }
    let job = mpirun(ranks, BIN.as_ref(), &args);
    assert!(job.status.success(), "{ranks} ranks {variant}: {}", job.stderr);
    assert_eq!(json(&job.stdout)["verified"], true);
    let (world, _) = rle::parse(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let _ = std::fs::remove_file(file);
    let _ = std::fs::remove_file(out);
    world
}

const GLIDER: &str = "#N Glider\nx = 3, y = 3, rule = B3/S23\nbob$2bo$3o!\n";
const GLIDER_CELLS: [(usize, usize); 5] = [(1, 0), (2, 1), (0, 2), (1, 2), (2, 2)];

#[test]
fn blinker_and_glider_cross_band_boundaries_on_1_2_4_ranks() {
    // 16 rows: on 4 ranks the bands are rows 0-3, 4-7, 8-11, 12-15.
    for ranks in [1, 2, 4] {
        for variant in ["simple", "overlap"] {
            // A horizontal blinker on row 4 turns vertical across rows 3-5, then back.
            let blinker = "x = 3, y = 1, rule = B3/S23\n3o!\n";
            let one = evolve(ranks, variant, blinker, (16, 16), (5, 4), 1, false);
            assert_eq!(one, world(16, 16, [(6, 3), (6, 4), (6, 5)]), "{ranks} ranks {variant}");
            let two = evolve(ranks, variant, blinker, (16, 16), (5, 4), 2, false);
            assert_eq!(two, world(16, 16, [(5, 4), (6, 4), (7, 4)]), "{ranks} ranks {variant}");
            // A glider moves by (1, 1) every 4 generations, here from rows 2-4 to 3-5, and
            // on a torus across the bottom-right corner.
            let moved = evolve(ranks, variant, GLIDER, (16, 16), (2, 2), 4, false);
            assert_eq!(moved, world(16, 16, GLIDER_CELLS.map(|(x, y)| (x + 3, y + 3))), "{ranks} ranks {variant}");
            let wrapped = evolve(ranks, variant, GLIDER, (16, 16), (13, 13), 8, true);
            assert_eq!(wrapped, world(16, 16, GLIDER_CELLS.map(|(x, y)| (x + 15, y + 15))), "{ranks} ranks {variant}");
        }
    }
}

#[test]
fn gosper_gun_adds_a_glider_every_30_generations() {
    let gun = "#N Gosper glider gun\nx = 36, y = 9, rule = B3/S23\n24bo$22bobo$12b2o6b2o12b2o$11bo3bo4b2o12b2o$2o8bo5bo3b2o$2o8bo3bob2o4b\nobo$10bo5bo7bo$11bo3bo$12b2o!\n";
    let file = write("gun.rle", gun);
    for ranks in [1, 2, 4] {
        let args = [
            "--rle",
            file.to_str().unwrap(),
            "--size",
            "80",
            "64",
            "--at",
            "1",
            "3",
            "--generations",
            "120",
            "--verify",
            "--json",
        ];
        let job = mpirun(ranks, BIN.as_ref(), &args);
        assert!(job.status.success(), "{ranks} ranks: {}", job.stderr);
        let r = json(&job.stdout);
        assert_eq!(r["population"], 36 + 4 * 5, "{ranks} ranks: {r}");
        assert_eq!(r["verified"], true);
    }
    let _ = std::fs::remove_file(file);
}

#[test]
fn schedules_equal_the_serial_reference_on_1_2_4_ranks() {
    // Steps of several generations (--depth) exchange that many rows; by default as many as
    // the thinnest band has, up to 8 (here 2 to 8).
    for ranks in [1, 2, 4] {
        for (size, map, wrap, depth) in [
            (["130", "45"], "all*2", true, "3"),
            (["64", "9"], "all", false, "default"),
            (["200", "33"], "all", true, "1"),
            (["70", "61"], "all", false, "default"),
        ] {
            let mut args = vec!["--random", size[0], size[1], "--density", "0.35", "--variant", "compare"];
            args.extend(["--generations", "12", "--map", map, "--compare-serial", "--verify", "--json"]);
            if wrap {
                args.push("--wrap");
            }
            if depth != "default" {
                args.extend(["--depth", depth]);
            }
            let job = mpirun(ranks, BIN.as_ref(), &args);
            assert!(job.status.success(), "{ranks} ranks {size:?}: {}", job.stderr);
            let r = json(&job.stdout);
            assert_eq!(r["verified"], true, "{r}");
            assert_eq!(r["generations_run"], 24, "{r}");
            for key in ["cups", "speedup", "efficiency", "first_iteration_s", "iteration_median_s"] {
                assert!(r[key].as_f64().unwrap() > 0.0, "{key}: {r}");
            }
            if std::env::var_os("DPS_BIND").is_none() {
                // Life binds each rank's threads to its share of the cores by default.
                assert!(r["binding"].as_str().unwrap().starts_with("cores"), "{r}");
            }
        }
    }
}

#[test]
fn overlap_calls_of_several_steps_equal_the_serial_reference() {
    // Within a call a band may get its neighbour's ghost rows a step early; uneven bands
    // (61 rows on 4 ranks and 2 threads each) and a torus make the neighbours drift.
    for ranks in [1, 2, 4] {
        for (depth, steps) in [("1", "5"), ("2", "3"), ("3", "8")] {
            let mut args = vec!["--random", "70", "61", "--density", "0.4", "--wrap", "--map", "all*2"];
            args.extend(["--depth", depth, "--steps-per-call", steps, "--generations", "50", "--verify", "--json"]);
            let job = mpirun(ranks, BIN.as_ref(), &args);
            assert!(job.status.success(), "{ranks} ranks depth {depth} steps {steps}: {}", job.stderr);
            let r = json(&job.stdout);
            assert_eq!(r["verified"], true, "{r}");
            assert_eq!(r["generations_run"], 50, "{r}");
        }
    }
}

#[test]
fn png_snapshots_and_region() {
    let out = temp("world.png");
    let args =
        ["--random", "100", "40", "--generations", "10", "--snapshot-every", "5", "--out", out.to_str().unwrap()];
    let job = mpirun(2, BIN.as_ref(), &args);
    assert!(job.status.success(), "{}", job.stderr);
    for path in [out.clone(), temp("world-000005.png"), temp("world-000010.png")] {
        let img = image::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!((img.width(), img.height()), (100, 40));
        let _ = std::fs::remove_file(path);
    }
    let args = [
        "--random",
        "100",
        "40",
        "--generations",
        "3",
        "--region",
        "10",
        "20",
        "30",
        "7",
        "--out",
        out.to_str().unwrap(),
    ];
    let job = mpirun(2, BIN.as_ref(), &args);
    assert!(job.status.success(), "{}", job.stderr);
    let img = image::open(&out).unwrap();
    assert_eq!((img.width(), img.height()), (30, 7));
    let _ = std::fs::remove_file(out);
}

#[test]
fn region_service_client_calls_while_the_simulation_runs() {
    let dir = temp("blocks");
    std::fs::create_dir_all(&dir).unwrap();
    let args = ["--random", "512", "512", "--generations", "150", "--view", "40x40", "--view-period-ms", "1"];
    let mut args = args.to_vec();
    args.extend(["--view-png", dir.to_str().unwrap(), "--verify", "--json"]);
    let job = mpirun(3, BIN.as_ref(), &args);
    assert!(job.status.success(), "{}", job.stderr);
    let r = json(&job.stdout);
    assert_eq!(r["threads"], 2, "the client rank hosts no band: {r}");
    if std::env::var_os("DPS_BIND").is_none() {
        // Not bound by default: the client's core share would leave the band ranks one core.
        assert_eq!(r["binding"], "none", "{r}");
    }
    assert_eq!(r["generations_run"], 300, "{r}");
    assert_eq!(r["verified"], true, "{r}");
    let calls = r["view_calls"].as_u64().unwrap();
    assert!(calls >= 1, "{r}");
    assert!(r["view_call_median_s"].as_f64().unwrap() > 0.0, "{r}");
    let pngs = std::fs::read_dir(&dir).unwrap().count() as u64;
    assert!(pngs >= calls, "{pngs} PNGs for {calls} calls");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_input_names_the_line() {
    let malformed = write("malformed.rle", "#C a comment\nx = 3, y = 3\nbo$2bo$\n3q!\n");
    let rule = write("rule.rle", "x = 3, y = 1, rule = B36/S23\n3o!\n");
    let big = write("big.rle", "#N too big\nx = 36, y = 9, rule = B3/S23\n36o!\n");
    for (args, message) in [
        (vec!["--rle", malformed.to_str().unwrap()], ":line 4: unexpected character 'q'"),
        (vec!["--rle", rule.to_str().unwrap()], ":line 1: rule B36/S23 is not supported"),
        (
            vec!["--rle", big.to_str().unwrap(), "--size", "20", "20"],
            ":line 2: the 36x9 pattern at (0, 5) does not fit in the 20x20 world",
        ),
        (vec!["--random", "10", "10", "--out", "x.gif"], "must end in .png or .rle"),
        (vec!["--random", "10", "10", "--view", "40x40"], "larger than the 10x10 world"),
        (vec!["--random", "10", "10", "--view", "4x4"], "--view needs at least 2 ranks"),
        (vec!["--random", "10", "10", "--region", "5", "5", "6", "1", "--out", "x.png"], "not inside the 10x10 world"),
        (vec!["--random", "10", "10", "--depth", "0"], "--depth must be at least 1"),
        (vec!["--random", "10", "10", "--steps-per-call", "0"], "--steps-per-call 0 must be between 1 and"),
        (vec!["--random", "10", "10", "--depth", "11"], "--depth 11: the thinnest of the 1 bands has 10 rows"),
        (vec!["--random", "10", "10", "--depth", "11", "--variant", "serial"], "--depth 11: the world has 10 rows"),
    ] {
        let out = std::process::Command::new(BIN).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    for f in [malformed, rule, big] {
        let _ = std::fs::remove_file(f);
    }
}
