//! `dps-filter`: parallel imaging on DPS. See `dps-filter --help`.

fn main() -> std::process::ExitCode {
    dps_harness::main(dps_filter::run::run)
}
