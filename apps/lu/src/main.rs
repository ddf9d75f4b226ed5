//! `dps-lu`: block LU factorization with partial pivoting on DPS. See `dps-lu --help`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = dps_lu::run::Args::parse();
    dps::exit_code("dps-lu", dps_lu::run::run(&args))
}
