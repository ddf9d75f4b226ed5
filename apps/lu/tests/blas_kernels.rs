//! `dps-lu` on corrected BLAS kernels (issue 26; the cases are dps-matmul's
//! tests/blas_kernels.rs): a generic core, forced as a dps process on another CPU would pass
//! it on, is replaced by the CPU's best, and the factorisation still verifies.

use dps_dense::kernel_choice::{amd, best_core, cpu_vectors, Vectors, CORETYPE, SET_BY_DPS};
use dps_dense::library::CHOICE;
use dps_launch::{json_record as json, mpirun_env};

const BIN: &str = env!("CARGO_BIN_EXE_dps-lu");

#[test]
fn a_generic_core_is_corrected_and_the_factorisation_verifies() {
    let cpu = cpu_vectors();
    if cpu == Vectors::Sse {
        return; // nothing wider than the generic kernels to ask for
    }
    let forced = [(CORETYPE, "Prescott"), (SET_BY_DPS, "Prescott"), (CHOICE, "openblas")];
    for ranks in [1, 2] {
        for variant in ["stream", "merge-split"] {
            let job =
                mpirun_env(ranks, &forced, BIN.as_ref(), &["--n", "200", "--variant", variant, "--verify", "--json"]);
            assert!(job.status.success(), "{variant} on {ranks} ranks: {}", job.stderr);
            let r = json(&job.stdout);
            assert_eq!(r["verified"], true, "{r}");
            assert_eq!(r["blas_core"], best_core(cpu, amd()), "{r}");
            assert_eq!(r["blas_core_chosen_by"], "dps over the library's Prescott", "{r}");
        }
    }
}

/// Both libraries factorise right in every variant (MKL: `scripts/setup.sh` installs it).
#[test]
fn the_factorisation_verifies_on_openblas_and_on_mkl() {
    for (choice, library) in [("openblas", "OpenBLAS"), ("mkl", "MKL")] {
        for variant in ["stream", "merge-split", "serial"] {
            let job = mpirun_env(
                2,
                &[(CHOICE, choice)],
                BIN.as_ref(),
                &["--n", "300", "--variant", variant, "--verify", "--json"],
            );
            assert!(job.status.success(), "{variant} with {CHOICE}={choice}: {}", job.stderr);
            let r = json(&job.stdout);
            assert_ne!(r["verified"], false, "{r}");
            assert_eq!(r["blas_library"], library, "{r}");
        }
    }
}
