//! `dps-lu` with bad options, files and sizes, as a new user would try them: each row gives
//! the exit code (2: refused before any work, 1: the run failed) and words the message must
//! contain; `check_table` also fails a row on a panic, a backtrace or a message printed
//! more than once. Each row is an mpirun job (about a second), so the rows cover each kind
//! of fault once; the reader's every error is tested in dps-dense (unit and property tests).

use std::path::Path;

use dps_launch::bad_input::{case, case_on, check_table};

const BIN: &str = env!("CARGO_BIN_EXE_dps-lu");

const ARRAY: &str = "%%MatrixMarket matrix array real general";
const COORD: &str = "%%MatrixMarket matrix coordinate real general";

/// The Matrix Market files of the table, by name.
fn files() -> Vec<(&'static str, String)> {
    vec![
        ("empty", String::new()),
        ("garbage", "hello, this is not a matrix\n".into()),
        ("two-words", "%%MatrixMarket matrix\n2 2\n1\n2\n3\n4\n".into()),
        ("truncated", format!("{ARRAY}\n3 3\n1\n2\n3\n4\n")),
        ("nonsquare", format!("{ARRAY}\n2 3\n1 2 3 4 5 6\n")),
        ("pattern", "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1\n".into()),
        ("complex", "%%MatrixMarket matrix array complex general\n1 1\n1 0\n".into()),
        ("symmetric", "%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n3\n".into()),
        ("out-of-range", format!("{COORD}\n2 2 1\n3 1 1.0\n")),
        ("duplicate", format!("{COORD}\n2 2 2\n1 1 1.0\n1 1 2.0\n")),
        ("too-few", format!("{COORD}\n2 2 3\n1 1 1.0\n2 2 1.0\n")),
        ("nan", format!("{ARRAY}\n2 2\n3\nnan\n5\n7\n")),
        ("inf", format!("{COORD}\n2 2 2\n1 1 1\n2 2 -inf\n")),
        ("huge", format!("{COORD}\n4294967296 4294967296 1\n1 1 1\n")),
        ("too-big", format!("{COORD}\n3000000 3000000 1\n1 1 1\n")),
        ("singular", format!("{ARRAY}\n2 2\n1\n2\n2\n4\n")),
        ("thesis", format!("{ARRAY}\n2 2\n3\n6\n5\n7\n")),
    ]
}

#[test]
fn bad_input_is_refused_once_with_exit_2_and_failures_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files() {
        std::fs::write(dir.path().join(format!("{name}.mtx")), text).unwrap();
    }
    let path = |name: &str| dir.path().join(format!("{name}.mtx")).to_string_lossy().into_owned();
    let p: Vec<String> = files().iter().map(|(name, _)| path(name)).collect();
    let f = |name: &str| p[files().iter().position(|(n, _)| *n == name).unwrap()].as_str();
    let missing_dir = dir.path().join("no/such/dir/trace.json");
    let missing_dir = missing_dir.to_str().unwrap();
    // Both ranks of a 2-rank job run on this host.
    let this_host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let this_host_at_2 = format!("{}@iteration:2", this_host.trim());

    check_table(
        Path::new(BIN),
        &[
            // Options.
            case(&["--n", "0"], 2, &["--n 0", "at least 1"]),
            case(&["--n", "3000000"], 2, &["--n 3000000", "memory", "available"]),
            case(&["--n", "64"], 0, &[]),
            case(&["--n", "64", "--block", "65"], 2, &["--block 65", "larger than", "n = 64"]),
            case(&["--n", "10", "--block", "0"], 2, &["--block 0"]),
            case(&["--n", "8", "--block", "3", "--reps", "0"], 2, &["--reps"]),
            case(&["--n", "8", "--warmup", "18446744073709551615"], 2, &["--warmup", "overflow"]),
            case(&["--n", "8", "--blas-threads", "0"], 2, &["--blas-threads 0"]),
            case(&["--n", "8", "--variant", "bogus"], 2, &["bogus", "--variant"]),
            case(&["--n", "8", "--trace", missing_dir], 2, &["--trace", "does not exist"]),
            case(&["--file", f("thesis"), "--n", "3"], 2, &["--file", "--n"]),
            // --variant dynamic: n = 64 in blocks of 8 has 8 iterations.
            case(
                &["--variant", "dynamic", "--n", "64", "--block", "8", "--alloc", "half-after:8"],
                2,
                &["--alloc half-after:8", "between 1 and 7", "8 iterations"],
            ),
            case(
                &["--variant", "dynamic", "--n", "64", "--block", "8", "--alloc", "half-after:0"],
                2,
                &["--alloc half-after:0", "between 1 and 7"],
            ),
            case(
                &["--variant", "dynamic", "--n", "64", "--alloc", "quarter"],
                2,
                &["quarter", "--alloc", "all, half, half-after:K"],
            ),
            case(
                &["--variant", "dynamic", "--n", "64", "--alloc", "half-after:x"],
                2,
                &["half-after:x", "--alloc", "iteration number"],
            ),
            case(&["--n", "64", "--alloc", "half"], 2, &["--alloc half", "--variant dynamic"]),
            // --withdraw RANK@iteration:K (n = 64 in blocks of 8: iterations 1..=8).
            case(
                &["--variant", "dynamic", "--n", "64", "--block", "8", "--withdraw", "1@iteration:2"],
                2,
                &["--withdraw 1@iteration:2", "rank 1 is not in the job", "only rank 0"],
            ),
            case(&["--variant", "dynamic", "--n", "64", "--withdraw", "n1@4"], 2, &["n1@4", "RANK@iteration:K"]),
            case(&["--n", "64", "--withdraw", "1@iteration:2"], 2, &["--withdraw 1@iteration:2", "--variant dynamic"]),
            case(
                &["--n", "64", "--variant", "merge-split", "--per-iteration"],
                2,
                &["--per-iteration", "--variant dynamic"],
            ),
            case(
                &["--n", "64", "--variant", "dynamic", "--uniform-blocks"],
                2,
                &["--uniform-blocks", "stream or merge-split", "dynamic"],
            ),
            // Files.
            case(&["--file", "/nonexistent/a.mtx"], 2, &["/nonexistent/a.mtx"]),
            case(&["--file", f("empty")], 2, &["empty.mtx:1", "empty file"]),
            case(&["--file", f("garbage")], 2, &["garbage.mtx:1", "not a Matrix Market file"]),
            case(&["--file", f("two-words")], 2, &["two-words.mtx:1", "2 words"]),
            case(&["--file", f("truncated")], 2, &["truncated.mtx:2", "4 entries for a 3x3 matrix"]),
            case(&["--file", f("nonsquare")], 2, &["nonsquare.mtx:2", "2x3", "square"]),
            case(&["--file", f("pattern")], 2, &["pattern.mtx:1", "pattern general"]),
            case(&["--file", f("complex")], 2, &["complex.mtx:1", "complex general"]),
            case(&["--file", f("symmetric")], 2, &["symmetric.mtx:1", "real symmetric"]),
            case(&["--file", f("out-of-range")], 2, &["out-of-range.mtx:3", "out of range"]),
            case(&["--file", f("duplicate")], 2, &["duplicate.mtx:4", "given twice"]),
            case(&["--file", f("too-few")], 2, &["too-few.mtx:2", "2 entries", "announces 3"]),
            case(&["--file", f("nan"), "--verify"], 2, &["nan.mtx:4", "\"nan\" is not a finite number"]),
            case(&["--file", f("inf"), "--verify"], 2, &["inf.mtx:4", "\"-inf\" is not a finite number"]),
            case(&["--file", f("huge")], 2, &["huge.mtx:2", "4294967296x4294967296", "address"]),
            case(&["--file", f("too-big")], 2, &["too-big.mtx", "n = 3000000", "memory", "available"]),
            case(&["--file", f("thesis"), "--verify"], 0, &[]),
            // A singular matrix has no LU factorization: the input's fault, found by the run.
            case(&["--file", f("singular"), "--block", "1"], 2, &["singular", "U(2,2)"]),
            case(&["--file", f("singular"), "--variant", "serial"], 2, &["singular", "U(2,2)"]),
            case(&["--file", f("singular"), "--variant", "dynamic", "--block", "1"], 2, &["singular", "U(2,2)"]),
            // On two ranks, every rank refuses but only rank 0 prints.
            case_on(2, &["--n", "3000000"], 2, &["--n 3000000", "memory"]),
            case_on(2, &["--file", f("nan")], 2, &["nan.mtx:4"]),
            case_on(2, &["--n", "8", "--map", "bogus"], 2, &["bogus"]),
            case_on(
                2,
                &["--variant", "dynamic", "--n", "8", "--map", "1", "--alloc", "half"],
                2,
                &["--map", "no multiplication thread", "ranks 0..1"],
            ),
            case_on(
                2,
                &["--variant", "dynamic", "--n", "64", "--block", "8", "--withdraw", "1@iteration:9"],
                2,
                &["--withdraw 1@iteration:9", "iterations 1..=8"],
            ),
            case_on(
                2,
                &["--variant", "dynamic", "--n", "64", "--block", "8", "--withdraw", "0@iteration:2"],
                2,
                &["--withdraw 0@iteration:2", "rank 0", "coordinator"],
            ),
            case_on(
                2,
                &[
                    "--variant",
                    "dynamic",
                    "--n",
                    "64",
                    "--block",
                    "8",
                    "--alloc",
                    "half",
                    "--withdraw",
                    "1@iteration:2",
                ],
                2,
                &["--withdraw 1@iteration:2", "--alloc schedule", "not half"],
            ),
            // A host named by --withdraw is resolved once the job's hosts are known.
            case_on(
                2,
                &["--variant", "dynamic", "--n", "64", "--block", "8", "--withdraw", "nosuchhost@iteration:2"],
                2,
                &["--withdraw nosuchhost@iteration:2", "no rank of the job runs on nosuchhost", "hosts: "],
            ),
            case_on(
                2,
                &["--variant", "dynamic", "--n", "64", "--block", "8", "--withdraw", &this_host_at_2],
                2,
                &[&this_host_at_2, "runs ranks 0, 1", "name it by number"],
            ),
            // A rank holding column blocks may be withdrawn (its column thread moves); the
            // column ranks must be ranks of the job, and only the dynamic variant has them.
            case_on(
                2,
                &["--variant", "dynamic", "--n", "64", "--block", "8", "--column-ranks", "3"],
                2,
                &["--column-ranks 3", "between 1 and 2"],
            ),
            case(&["--n", "64", "--column-ranks", "1"], 2, &["--column-ranks 1", "--variant dynamic"]),
            case_on(
                2,
                &["--variant", "dynamic", "--n", "64", "--block", "8", "--map", "1", "--withdraw", "1@iteration:2"],
                2,
                &["--map", "every multiplication thread on rank 1"],
            ),
        ],
    );
}

#[test]
fn verified_is_true_only_for_a_finite_small_residual_and_matching_pivots() {
    use dps_lu::kernel::Check;
    use dps_lu::run::passes;
    assert!(passes(&Check { residual: 0.5, pivots_match: true }));
    assert!(!passes(&Check { residual: 0.5, pivots_match: false }), "pivots differ from dgetrf");
    assert!(!passes(&Check { residual: 16.0, pivots_match: true }));
    assert!(!passes(&Check { residual: f64::NAN, pivots_match: true }), "a NaN residual passed");
    assert!(!passes(&Check { residual: f64::INFINITY, pivots_match: true }));
}

#[test]
fn bad_simulations_are_refused_once_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.toml");
    let write = |name: &str, drop_kernel: &str| {
        let mut p = dps_harness::simulate::made_up_platform();
        p.kernels.retain(|k| k.name != drop_kernel);
        p.seal();
        let path = dir.path().join(name);
        std::fs::write(&path, p.to_toml()).unwrap();
        path.to_str().unwrap().to_string()
    };
    let good = write("good.toml", "");
    // Calibrated before the row swaps were measured.
    let no_laswp = write("no-laswp.toml", "laswp");
    let sim = |mode: &str, platform: &str, extra: &[&str]| -> Vec<String> {
        let base = ["--n", "64", "--simulate", "2", "--sim-mode", mode, "--platform", platform];
        base.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let rows = [
        (sim("pdexec", &good, &["--variant", "dynamic"]), 2, &["--sim-mode pdexec", "dynamic", "--sim-mode de"][..]),
        (sim("noalloc", &good, &["--variant", "dynamic"]), 2, &["--sim-mode noalloc", "dynamic"]),
        (sim("pdexec", &good, &["--verify"]), 2, &["--verify", "pdexec", "no result to verify", "--sim-mode de"]),
        (sim("noalloc", &good, &["--verify"]), 2, &["--verify", "noalloc", "--sim-mode de"]),
        (sim("pdexec", &no_laswp, &[]), 2, &["no cost table for kernel 'laswp'", "dps-bench calibrate"]),
        (sim("noalloc", &good, &["--variant", "merge-split"]), 0, &[]),
        (sim("pdexec", &good, &[]), 0, &[]),
    ];
    let args: Vec<Vec<&str>> = rows.iter().map(|(a, _, _)| a.iter().map(String::as_str).collect()).collect();
    let cases: Vec<_> = rows.iter().zip(&args).map(|((_, code, words), a)| case(a, *code, words)).collect();
    check_table(Path::new(BIN), &cases);
    check_table(
        Path::new(BIN),
        &[
            case(
                &["--file", "m.mtx", "--simulate", "2", "--sim-mode", "noalloc", "--platform", &good],
                2,
                &["--file", "noalloc", "--n"],
            ),
            case(
                &["--n", "64", "--simulate", "2", "--platform", missing.to_str().unwrap()],
                2,
                &["platform file", "not found", "dps-bench calibrate --out"],
            ),
        ],
    );
}
