//! `dps-life`: Conway's Game of Life on DPS. See `dps-life --help`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = dps_life::run::Args::parse();
    dps::exit_code("dps-life", dps_life::run::run(&args))
}
