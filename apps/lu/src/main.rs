//! `dps-lu`: block LU factorization with partial pivoting on DPS. See `dps-lu --help`.

fn main() -> std::process::ExitCode {
    dps_harness::main(dps_lu::run::run)
}
