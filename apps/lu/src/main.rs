//! `dps-lu`: block LU factorization with partial pivoting on DPS. See `dps-lu --help`.

fn main() -> std::process::ExitCode {
    dps_dense::kernel_choice::use_the_best_core(); // before MPI: it may start the program again
    dps_harness::main(dps_lu::run::run)
}
