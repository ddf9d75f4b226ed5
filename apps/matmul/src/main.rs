//! `dps-matmul`: block matrix multiply on DPS. See `dps-matmul --help`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = dps_matmul::run::Args::parse();
    match dps_matmul::run::run(&args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dps-matmul: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
