//! `dps-lu` as a plain process (one rank, no mpirun), with OpenBLAS free to use threads: the
//! program makes each BLAS call single-threaded itself (`dps_dense::blas::one_thread_per_worker`)
//! instead of relying on `scripts/mpirun`'s `OPENBLAS_NUM_THREADS=1`. Before it did, the
//! workers' concurrent calls of a threaded dgetrf crashed most runs (a segfault in
//! `dgetrf_parallel`) and one gave a factorization that --verify refused.

use dps_launch::{json_record, Job, Launcher};

const BIN: &str = env!("CARGO_BIN_EXE_dps-lu");

#[test]
fn every_schedule_factors_correctly_with_a_threaded_openblas() {
    for variant in ["stream", "merge-split", "dynamic"] {
        // Each crashed in 4 to 6 runs of 6 before the fix.
        for run in 0..3 {
            let args = ["--n", "1024", "--block", "128", "--variant", variant, "--warmup", "1", "--reps", "3"];
            let job = Job::new(BIN)
                .launcher(Launcher::None)
                .env("OPENBLAS_NUM_THREADS", "2")
                .args(args)
                .args(["--verify", "--json"])
                .timeout_s(120)
                .output()
                .unwrap();
            assert!(job.status.success(), "{variant}, run {run}: {} {}", job.status, job.stderr);
            assert_eq!(json_record(&job.stdout)["verified"], true, "{variant}, run {run}");
        }
    }
}
