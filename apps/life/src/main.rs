//! `dps-life`: Conway's Game of Life on DPS. See `dps-life --help`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = dps_life::run::Args::parse();
    match dps_life::run::run(&args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dps-life: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
