//! `dps-lu`: block LU factorization with partial pivoting on DPS. See `dps-lu --help`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = dps_lu::run::Args::parse();
    match dps_lu::run::run(&args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dps-lu: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
