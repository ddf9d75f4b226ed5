//! `dps-skeleton`: skeletonization of binary images on DPS. See `dps-skeleton --help`.

fn main() -> std::process::ExitCode {
    dps_harness::main(dps_skeleton::run::run)
}
