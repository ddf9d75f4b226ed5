//! `dps-matmul`: block matrix multiply on DPS. See `dps-matmul --help`.

fn main() -> std::process::ExitCode {
    let args = dps_harness::parse_args::<dps_matmul::run::Args>();
    dps_harness::finish("dps-matmul", dps_matmul::run::run(&args))
}
