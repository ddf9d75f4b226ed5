//! `dps-life`: Conway's Game of Life on DPS. See `dps-life --help`.

fn main() -> std::process::ExitCode {
    let args: dps_life::run::Args = dps_harness::parse_args();
    dps_harness::finish("dps-life", dps_life::run::run(&args))
}
