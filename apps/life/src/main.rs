//! `dps-life`: Conway's Game of Life on DPS. See `dps-life --help`.

fn main() -> std::process::ExitCode {
    dps_harness::main(dps_life::run::run)
}
