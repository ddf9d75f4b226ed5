//! `dps-tsp` under `scripts/mpirun` on 1, 2 and 4 ranks (each job under `timeout -k 5 120`,
//! so a hang fails its test): agreement with the dynamic program, bad files, termination
//! when the optimum is found early, and the output files.

use std::path::{Path, PathBuf};

use dps_launch::Finished;
use dps_tsp::kernel::{dp, instance::Instance};

/// `dps-tsp args` on `ranks` ranks (through the harness's launcher, under its timeout).
fn mpirun(ranks: usize, args: &[&str]) -> Finished {
    dps_launch::mpirun(ranks, Path::new(env!("CARGO_BIN_EXE_dps-tsp")), args)
}

/// The JSON record of a successful run.
fn record(ranks: usize, args: &[&str]) -> serde_json::Value {
    let job = mpirun(ranks, args);
    assert_eq!(job.status.code(), Some(0), "{ranks} ranks {args:?}: {}", job.stderr);
    let line = job.stdout.lines().find(|l| l.starts_with('{')).unwrap_or_else(|| panic!("no JSON in {}", job.stdout));
    serde_json::from_str(line).unwrap()
}

fn temp_file(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("dps-tsp-{}-{name}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn dp_and_branch_and_bound_agree_on_1_2_4_ranks() {
    // Tiny budgets and cut-offs force many jobs, re-queues and (thesis) job splits.
    let variants: [(&str, &[&str]); 3] = [
        ("fast", &["--steps", "2", "--cutoff", "1", "--kicks", "0"]),
        ("thesis", &["--steps", "40", "--cutoff", "2"]),
        ("thesis", &["--steps", "300", "--cutoff", "0", "--pipeline-depth", "3", "--threads", "2", "--no-crossing"]),
    ];
    for ranks in [1, 2, 4] {
        for (k, (variant, extra)) in variants.iter().enumerate() {
            let (n, seed) = (9 + (ranks + k) % 4, (10 * ranks + k) as u64);
            let (opt, _) = dp::solve(&Instance::random(n, seed)).unwrap();
            let (n_arg, seed_arg) = (n.to_string(), seed.to_string());
            let mut args = vec!["--random", &n_arg, "--seed", &seed_arg, "--variant", variant, "--json", "--verify"];
            args.extend_from_slice(extra);
            let r = record(ranks, &args);
            let what = format!("{ranks} ranks, {variant} {extra:?}, n {n} seed {seed}");
            assert_eq!(r["length"], opt, "{what}");
            assert_eq!(r["optimal"], true, "{what}");
            assert_eq!(r["verified"], true, "{what}");
            assert_eq!(r["ranks"], ranks, "{what}");
        }
    }
}

#[test]
fn known_optima_of_small_tsplib_instances_on_2_ranks() {
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/data"));
    for (name, opt) in [("burma14", 3323), ("ulysses16", 6859), ("gr17", 2085), ("bays29", 2020), ("att48", 10628)] {
        let file = dir.join(format!("{name}.tsp"));
        let r = record(2, &[file.to_str().unwrap(), "--json", "--verify", "--steps", "4"]);
        assert_eq!((r["length"].as_i64(), r["optimal"].as_bool()), (Some(opt), Some(true)), "{name}");
    }
}

#[test]
fn bad_files_give_the_documented_errors() {
    let cases = [
        ("type.tsp", "NAME: t\nTYPE: TSP\nDIMENSION: 3\nEDGE_WEIGHT_TYPE: EUC_3D\n", "line 4: EDGE_WEIGHT_TYPE EUC_3D is not supported"),
        (
            "short.tsp",
            "NAME: s\nTYPE: TSP\nDIMENSION: 4\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n1 0 0\n2 1 1\n3 2 0\nEOF\n",
            "line 9: NODE_COORD_SECTION ends after 3 of DIMENSION 4 cities",
        ),
        (
            "matrix.tsp",
            "NAME: m\nTYPE: TSP\nDIMENSION: 4\nEDGE_WEIGHT_TYPE: EXPLICIT\nEDGE_WEIGHT_FORMAT: UPPER_ROW\nEDGE_WEIGHT_SECTION\n1 2 3\n4 5\nEOF\n",
            "line 8: EDGE_WEIGHT_SECTION (line 6) has 5 weights; DIMENSION 4 needs 6",
        ),
        ("junk.tsp", "NAME: j\nTYPE: TSP\nDIMENSION: 3\nEDGE_WEIGHT_TYPE: GEO\nNODE_COORD_SECTION\n1 0 0\n2 a 1\n", "line 7: coordinate \"a\" is not a number"),
    ];
    for (name, text, message) in cases {
        let path = temp_file(name, text);
        for ranks in [1, 2] {
            let job = mpirun(ranks, &[path.to_str().unwrap()]);
            assert_eq!(job.status.code(), Some(2), "{name} on {ranks} ranks: {}", job.stderr);
            assert!(job.stderr.contains(message), "{name}: expected \"{message}\" in:\n{}", job.stderr);
            assert!(job.stdout.is_empty(), "no work may have been done: {}", job.stdout);
        }
        std::fs::remove_file(path).ok();
    }
    let job = mpirun(1, &["/nonexistent/x.tsp"]);
    assert_eq!(job.status.code(), Some(2));
    assert!(job.stderr.contains("/nonexistent/x.tsp"), "{}", job.stderr);
}

/// Cities on a circle, numbered in order: the thesis's first descent (ascending city order)
/// is the optimal tour, so one slave finds the optimum at once and every other job must be
/// pruned; the fast variant's root bound proves the first tour optimal without any job.
#[test]
fn terminates_when_the_optimum_is_found_early() {
    let n = 11;
    let mut text = format!("NAME: circle\nTYPE: TSP\nDIMENSION: {n}\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n");
    for i in 0..n {
        let a = i as f64 * std::f64::consts::TAU / n as f64;
        text.push_str(&format!("{} {:.0} {:.0}\n", i + 1, 500.0 + 400.0 * a.cos(), 500.0 + 400.0 * a.sin()));
    }
    text.push_str("EOF\n");
    let path = temp_file("circle.tsp", &text);
    let inst = dps_tsp::tsplib::read(&path).unwrap();
    let ring: Vec<usize> = (0..n).collect();
    let opt = dp::solve(&inst).unwrap().0;
    assert_eq!(inst.tour_length(&ring), opt, "the circle's ring is optimal");
    let file = path.to_str().unwrap();
    for ranks in [2, 4] {
        let r = record(ranks, &[file, "--variant", "thesis", "--steps", "30", "--cutoff", "3", "--json"]);
        assert_eq!((r["length"].as_i64(), r["optimal"].as_bool()), (Some(opt), Some(true)));
        let r = record(ranks, &[file, "--json", "--threads", "2"]);
        assert_eq!((r["length"].as_i64(), r["optimal"].as_bool()), (Some(opt), Some(true)));
        assert_eq!(r["jobs"], 0, "the root bound proves the ring optimal");
    }
    std::fs::remove_file(path).ok();
}

#[test]
fn json_tour_file_and_plot() {
    let tour = std::env::temp_dir().join(format!("dps-tsp-{}.tour", std::process::id()));
    let png = std::env::temp_dir().join(format!("dps-tsp-{}.png", std::process::id()));
    let r = record(
        2,
        &[
            "--random",
            "30",
            "--seed",
            "3",
            "--json",
            "--verify",
            "--tour-out",
            tour.to_str().unwrap(),
            "--plot",
            png.to_str().unwrap(),
        ],
    );
    for key in
        ["app", "variant", "ranks", "threads", "n", "seconds", "nodes_per_s", "verified", "length", "optimal", "nodes"]
    {
        assert!(!r[key].is_null(), "JSON lacks \"{key}\": {r}");
    }
    assert_eq!((r["app"].as_str(), r["variant"].as_str(), r["n"].as_u64()), (Some("tsp"), Some("fast"), Some(30)));
    let text = std::fs::read_to_string(&tour).unwrap();
    assert!(text.starts_with("NAME : random30-seed3.tour\n"), "{text}");
    assert!(text.contains(&format!("COMMENT : Length = {}", r["length"])), "{text}");
    assert_eq!(text.lines().filter(|l| l.parse::<usize>().is_ok()).count(), 30);
    assert!(text.ends_with("-1\nEOF\n"));
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
    std::fs::remove_file(tour).ok();
    std::fs::remove_file(png).ok();
}
