//! `dps-matmul`: block matrix multiply on DPS. See `dps-matmul --help`.

fn main() -> std::process::ExitCode {
    dps_harness::main(dps_matmul::run::run)
}
