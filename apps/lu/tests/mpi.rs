//! `dps-lu` under mpirun: both schedules factor correctly (HPL residual, pivots equal to
//! dgetrf's) on 1, 2 and 4 ranks for orders the block size does not divide; a singular
//! matrix gives a clear error (bad input: tests/bad_input.rs).

use dps_harness::launch::json_record as json;
use dps_harness::launch::mpirun;

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
            for (n, block, map) in [("37", "8", "all*2"), ("100", "30", "all"), ("64", "64", "all")] {
                let args = ["--n", n, "--block", block, "--variant", variant, "--map", map, "--verify", "--json"];
                let job = mpirun(ranks, BIN.as_ref(), &args);
                assert!(job.status.success(), "{ranks} ranks {variant} n {n}: {}", job.stderr);
                let r = json(&job.stdout);
                assert!(r["residual"].as_f64().unwrap() < 16.0, "{r}");
                assert_eq!(r["pivots_match"], true, "{r}");
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
