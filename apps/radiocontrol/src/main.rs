//! `dps-radiocontrol`: radio listening rates (thesis ch. 9) on DPS. See `dps-radiocontrol --help`.

fn main() -> std::process::ExitCode {
    dps_harness::main(dps_radiocontrol::run::run)
}
