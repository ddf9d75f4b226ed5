//! `dps-lu`: block LU factorization with partial pivoting on DPS. See `dps-lu --help`.

fn main() -> std::process::ExitCode {
    let args = dps_harness::parse_args::<dps_lu::run::Args>();
    dps_harness::finish("dps-lu", dps_lu::run::run(&args))
}
