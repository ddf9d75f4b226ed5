//! `dps-matmul`: block matrix multiply on DPS. See `dps-matmul --help`.

fn main() -> std::process::ExitCode {
    dps_dense::kernel_choice::use_the_best_core(); // before MPI: it may start the program again
    dps_harness::main(dps_matmul::run::run)
}
