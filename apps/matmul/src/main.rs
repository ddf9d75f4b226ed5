//! `dps-matmul`: block matrix multiply on DPS. See `dps-matmul --help`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = dps_matmul::run::Args::parse();
    dps::exit_code("dps-matmul", dps_matmul::run::run(&args))
}
