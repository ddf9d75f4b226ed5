//! The BLAS kernels `dps-matmul` runs (issue 26; `dps-lu`: its tests/blas_kernels.rs): never a generic fallback on a CPU
//! with wider vectors, corrected when the library's core is too narrow (the program starts
//! again with `OPENBLAS_CORETYPE`), and the user's own `OPENBLAS_CORETYPE` kept; every run's
//! record says which, and the corrected kernels compute right (`--verify`).
//!
//! This machine's OpenBLAS may know its CPU; a generic core is then forced the way a dps
//! process on another CPU passes its choice on (`OPENBLAS_CORETYPE` marked by
//! `DPS_BLAS_CORETYPE`), which the correction must override like the library's own choice.

use dps_dense::kernel_choice::{amd, best_core, cpu_vectors, vectors_of_core, Vectors, CORETYPE, SET_BY_DPS};
use dps_dense::library::CHOICE;
use dps_launch::{json_record as json, mpirun_env};

const MATMUL: &str = env!("CARGO_BIN_EXE_dps-matmul");

/// The record of `program args` on `ranks` ranks with `env`, which must succeed and verify.
fn verified_record(ranks: usize, env: &[(&str, &str)], program: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let job = mpirun_env(ranks, env, program, args);
    assert!(job.status.success(), "{} {args:?} with {env:?} on {ranks} ranks: {}", program.display(), job.stderr);
    let r = json(&job.stdout);
    assert_eq!(r["verified"], true, "{r}");
    r
}

#[test]
fn the_core_in_use_is_as_wide_as_the_cpu() {
    let cpu = cpu_vectors();
    for (choice, library) in [("openblas", "OpenBLAS"), ("auto", "MKL")] {
        for ranks in [1, 2] {
            let r = verified_record(ranks, &[(CHOICE, choice)], MATMUL.as_ref(), &["--n", "96", "--verify", "--json"]);
            let core = r["blas_core"].as_str().unwrap();
            let v = vectors_of_core(core);
            assert!(v.is_some_and(|v| v >= cpu), "{library} runs {core} on a CPU with {cpu:?}: {r}");
            // scripts/setup.sh installs MKL, and `auto` takes it where it is installed.
            assert_eq!(r["blas_library"], library, "{CHOICE}={choice}: {r}");
            assert!(r["blas_threads"].as_u64().unwrap() >= 1, "{r}");
            assert_eq!(r["huge_pages"], dps_dense::huge::mode().as_str(), "{r}");
            assert_eq!(r["shared_memory_huge_pages"], dps::shared_memory_huge_pages().as_str(), "{r}");
        }
    }
}

#[test]
fn a_bad_blas_choice_is_refused_before_work_starts() {
    for bad in ["atlas", "/nonexistent/libmkl_rt.so"] {
        let job = mpirun_env(1, &[(CHOICE, bad)], MATMUL.as_ref(), &["--n", "96", "--json"]);
        assert_eq!(job.status.code(), Some(2), "{CHOICE}={bad}: {}", job.stderr);
        assert!(job.stderr.contains(CHOICE) && job.stdout.trim().is_empty(), "{}", job.stderr);
    }
}

#[test]
fn a_generic_core_is_corrected_and_the_results_verify() {
    let cpu = cpu_vectors();
    if cpu == Vectors::Sse {
        return; // nothing wider than the generic kernels to ask for
    }
    let best = best_core(cpu, amd());
    let forced = [(CORETYPE, "Prescott"), (SET_BY_DPS, "Prescott"), (CHOICE, "openblas")];
    for ranks in [1, 2] {
        for args in [vec!["--n", "96", "--verify", "--json"], vec!["--n", "96", "--variant", "serial", "--json"]] {
            let job = mpirun_env(ranks, &forced, MATMUL.as_ref(), &args);
            assert!(job.status.success(), "{args:?} on {ranks} ranks: {}", job.stderr);
            let r = json(&job.stdout);
            assert_ne!(r["verified"], false, "{r}");
            assert_eq!(r["blas_core"], best, "{r}");
            assert_eq!(r["blas_core_chosen_by"], "dps over the library's Prescott", "{r}");
        }
    }
}

#[test]
fn the_users_coretype_is_kept() {
    let users = [(CORETYPE, "Prescott")];
    for ranks in [1, 2] {
        let r = verified_record(ranks, &users, MATMUL.as_ref(), &["--n", "96", "--verify", "--json"]);
        assert_eq!(r["blas_core"], "Prescott", "{r}");
        assert_eq!(r["blas_core_chosen_by"], CORETYPE, "{r}");
    }
}
