//! `dps-tsp`: travelling salesman branch and bound on DPS. See `dps-tsp --help`.
//!
//! ```text
//! dps-tsp berlin52.tsp                                 # fast variant, one rank
//! scripts/mpirun -n 2 target/release/dps-tsp att48.tsp --json --verify
//! scripts/mpirun -n 2 target/release/dps-tsp --random 14 --variant thesis
//! target/release/dps-bench sweep tsp-tsplib            # the TSPLIB table on 1 and 2 ranks
//! ```
//!
//! Exit codes: 0 success, 2 unusable input, 1 any other failure.

fn main() -> std::process::ExitCode {
    dps_harness::main(dps_tsp::run::run)
}
