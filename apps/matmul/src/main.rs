//! `dps-matmul`: block matrix multiply on DPS. See `dps-matmul --help`.

/// Large operands on huge pages: BLAS runs 20-25 % faster on them (`dps_dense::huge`).
#[global_allocator]
static ALLOC: dps_dense::huge::HugePages = dps_dense::huge::HugePages;

fn main() -> std::process::ExitCode {
    dps_dense::kernel_choice::use_the_best_core(); // before MPI: it may start the program again
    dps_harness::main(dps_matmul::run::run)
}
