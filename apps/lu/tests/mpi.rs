//! `dps-lu` under mpirun: both schedules factor correctly (HPL residual, pivots equal to
//! dgetrf's) on 1, 2 and 4 ranks for orders the block size does not divide; a singular
//! matrix gives a clear error (bad input: tests/bad_input.rs).

use dps_launch::json_record as json;
use dps_launch::mpirun;

const BIN: &str = env!("CARGO_BIN_EXE_dps-lu");

fn matrix_file(name: &str, text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("dps-lu-{}-{name}.mtx", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn both_schedules_match_dgetrf_on_1_2_4_ranks() {
    for ranks in [1, 2, 4] {
        for variant in ["stream", "merge-split"] {
            // Graded blocks (n ≥ 4 blocks, the middle one partial at n = 37), uniform ones
            // asked for, and uniform ones where n is under 4 blocks.
            for (n, block, map, blocking) in [
                ("37", "8", "all*2", "graded"),
                ("37", "8", "all", "uniform"),
                ("100", "30", "all", "uniform"),
                ("64", "64", "all", "uniform"),
            ] {
                let mut args =
                    vec!["--n", n, "--block", block, "--variant", variant, "--map", map, "--verify", "--json"];
                if blocking == "uniform" && n == "37" {
                    args.push("--uniform-blocks");
                }
                let job = mpirun(ranks, BIN.as_ref(), &args);
                assert!(job.status.success(), "{ranks} ranks {variant} n {n}: {}", job.stderr);
                let r = json(&job.stdout);
                assert!(r["residual"].as_f64().unwrap() < 16.0, "{r}");
                assert_eq!(r["pivots_match"], true, "{r}");
                assert_eq!(r["blocking"], blocking, "{r}");
            }
        }
    }
}

#[test]
fn thesis_example_and_singular_matrix() {
    // (6-15) of the thesis, [3 5; 6 7]: pivoting picks row 2.
    let example = matrix_file("example", "%%MatrixMarket matrix array real general\n2 2\n3\n6\n5\n7\n");
    let job = mpirun(2, BIN.as_ref(), &["--file", example.to_str().unwrap(), "--block", "1", "--verify", "--json"]);
    assert!(job.status.success(), "{}", job.stderr);
    assert_eq!(json(&job.stdout)["pivots_match"], true);

    let singular = matrix_file("singular", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n2\n4\n");
    let job = mpirun(2, BIN.as_ref(), &["--file", singular.to_str().unwrap(), "--block", "1"]);
    assert_eq!(job.status.code(), Some(2));
    assert!(job.stderr.contains("the matrix is singular: U(2,2) is exactly zero"), "{}", job.stderr);
    let _ = std::fs::remove_file(example);
    let _ = std::fs::remove_file(singular);
}

/// `--variant dynamic`: every allocation strategy factors correctly on 1, 2 and 4 ranks, and
/// each iteration reports the allocation its strategy gives (P ranks, then the first half).
#[test]
fn every_allocation_strategy_matches_dgetrf_on_1_2_4_ranks() {
    for ranks in [1usize, 2, 4] {
        let half = (ranks / 2).max(1);
        for (alloc, map) in [("all", "all"), ("half", "all*2"), ("half-after:1", "all"), ("half-after:3", "all")] {
            let args = ["--variant", "dynamic", "--n", "37", "--block", "8", "--alloc", alloc, "--map", map];
            let job = mpirun(ranks, BIN.as_ref(), &[&args[..], &["--per-iteration", "--verify", "--json"]].concat());
            assert!(job.status.success(), "{ranks} ranks --alloc {alloc}: {}", job.stderr);
            let r = json(&job.stdout);
            assert!(r["residual"].as_f64().unwrap() < 16.0, "{r}");
            assert_eq!((&r["pivots_match"], &r["verified"], &r["alloc"]), (&true.into(), &true.into(), &alloc.into()));
            let per: Vec<(u64, u64)> = r["iterations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| (i["ranks"].as_u64().unwrap(), i["multiplications"].as_u64().unwrap()))
                .collect();
            let after = match alloc {
                "all" => 5,
                "half" => 0,
                _ => alloc["half-after:".len()..].parse().unwrap(),
            };
            let expected: Vec<(u64, u64)> =
                (0..5).map(|k| (if k < after { ranks } else { half } as u64, (4 - k as u64).pow(2))).collect();
            assert_eq!(per, expected, "{ranks} ranks --alloc {alloc}: {r}");
            for i in r["iterations"].as_array().unwrap() {
                let e = i["efficiency"].as_f64().unwrap();
                assert!(e.is_finite() && e > 0.0, "{i}");
            }
        }
    }
}
