//! `dps-matmul` with bad options and sizes, as a new user would try them: each row gives the
//! exit code (2: refused before any work) and words the message must contain; `check_table`
//! also fails a row on a panic, a backtrace or a message printed more than once.

use std::path::Path;

use dps_launch::bad_input::{case, case_on, check_table};

const BIN: &str = env!("CARGO_BIN_EXE_dps-matmul");

#[test]
fn bad_options_are_refused_once_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("no/such/dir/trace.json");
    let trace = trace.to_str().unwrap();
    check_table(
        Path::new(BIN),
        &[
            case(&["--n", "0"], 2, &["--n must be at least 1"]),
            case(&["--n", "10000000"], 2, &["--n 10000000", "memory", "available"]),
            case(&["--n", "10000000", "--variant", "serial"], 2, &["--n 10000000", "memory"]),
            case(&["--n", "99999999999999999999999"], 2, &["--n"]),
            case(&["--n", "10", "--block", "0"], 2, &["--block 0"]),
            case(&["--n", "10", "--block", "11"], 2, &["--block 11 must be between 1 and n = 10"]),
            case(&["--n", "10", "--s", "0"], 2, &["--s must be at least 1"]),
            case(&["--n", "10", "--s", "11"], 2, &["--s 11", "n = 10"]),
            case(&["--n", "10", "--s", "2", "--block", "5"], 2, &["--s", "--block"]),
            case(&["--n", "10", "--window", "0"], 2, &["--window 0"]),
            case(&["--n", "10", "--reps", "0"], 2, &["--reps"]),
            case(&["--n", "10", "--warmup", "18446744073709551615"], 2, &["--warmup", "overflow"]),
            case(&["--n", "10", "--blas-threads", "0"], 2, &["--blas-threads 0"]),
            case(&["--n", "10", "--variant", "bogus"], 2, &["bogus", "--variant"]),
            case(&["--n", "10", "--kernel", "bogus"], 2, &["bogus", "--kernel"]),
            case(&["--n", "10", "--trace", trace], 2, &["--trace", "does not exist"]),
            // The default block (the cost model's) stays within a small n.
            case(&["--n", "64", "--verify"], 0, &[]),
            case(&["--n", "37", "--window", "1", "--variant", "farm", "--verify"], 0, &[]),
            case_on(2, &["--n", "10000000"], 2, &["--n 10000000", "memory"]),
            case_on(2, &["--n", "10", "--window", "0"], 2, &["--window 0"]),
            case_on(2, &["--n", "10", "--map", "bogus"], 2, &["bogus"]),
        ],
    );
}

/// Platform files for the simulator rows: good, of another version, of another host,
/// without the gemm table, without the copy table (calibrated before it was measured).
fn platforms(dir: &Path) -> [String; 5] {
    let write = |name: &str, edit: &dyn Fn(&mut dps_model::platform::Platform)| {
        let mut p = dps_harness::simulate::made_up_platform();
        edit(&mut p);
        p.seal();
        let path = dir.join(name);
        std::fs::write(&path, p.to_toml()).unwrap();
        path.to_str().unwrap().to_string()
    };
    [
        write("good.toml", &|_| {}),
        write("old.toml", &|p| p.header.dps_version = "0.0.0".into()),
        write("elsewhere.toml", &|p| p.header.hosts = vec!["some-other-host".into()]),
        write("no-gemm.toml", &|p| p.kernels.clear()),
        write("no-copy.toml", &|p| p.kernels.retain(|k| k.name != "copy")),
    ]
}

/// Issue 27: platform files (sealed, so only the range check can refuse them) with values
/// that overflowed the simulated clock and made the prediction *smaller*: each refused
/// before any work, naming the file, the field and its limit.
#[test]
fn platform_values_beyond_the_simulated_clock_are_refused_with_the_field_and_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, edit: &dyn Fn(&mut dps_model::platform::Platform)| {
        let mut p = dps_harness::simulate::made_up_platform();
        edit(&mut p);
        p.seal();
        let path = dir.path().join(name);
        std::fs::write(&path, p.to_toml()).unwrap();
        path.to_str().unwrap().to_string()
    };
    let latency_1e17 = write("l17.toml", &|p| p.links[0].fit[0].latency_us = 1e17);
    let latency_1e30 = write("l30.toml", &|p| p.links[0].fit[0].latency_us = 1e30);
    let send_1e20 = write("send.toml", &|p| p.overheads.send.us_per_message = 1e20);
    let bandwidth = write("b.toml", &|p| p.links[0].fit[0].bytes_per_us = 1e-12);
    let (l17, l30, send, b) =
        (simulate(&latency_1e17), simulate(&latency_1e30), simulate(&send_1e20), simulate(&bandwidth));
    check_table(
        Path::new(BIN),
        &[
            case(
                &l17,
                2,
                &[&latency_1e17, "links[0].fit[0].latency_us = 1e17", "above the limit of 3.6e9 µs (1 hour)"],
            ),
            case(&l30, 2, &[&latency_1e30, "links[0].fit[0].latency_us = 1e30", "above the limit of 3.6e9 µs"]),
            case(&send, 2, &[&send_1e20, "overheads.send.us_per_message = 1e20", "above the limit of 3.6e9 µs"]),
            case(&b, 2, &[&bandwidth, "links[0].fit[0].bytes_per_us = 1e-12", "below the limit of 1e-6 bytes/µs"]),
        ],
    );
}

/// A simulation of a small product with `platform`.
fn simulate(platform: &str) -> [&str; 6] {
    ["--n", "64", "--simulate", "2", "--platform", platform]
}

#[test]
fn bad_simulations_are_refused_once_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let [good, old, elsewhere, no_gemm, no_copy] = platforms(dir.path());
    let missing = dir.path().join("none.toml");
    let missing = missing.to_str().unwrap();
    check_table(
        Path::new(BIN),
        &[
            case(&["--n", "64", "--simulate", "0", "--platform", &good], 2, &["--simulate 0", "at least one rank"]),
            // Issue 27: the simulator's own tables grow with P²; a P no memory holds is refused.
            case(
                &["--n", "64", "--simulate", "100000", "--platform", &good],
                2,
                &["--simulate 100000", "GiB of memory"],
            ),
            case(&["--n", "64", "--simulate", "4294967295", "--platform", &good], 2, &["more than 16 EiB"]),
            case(
                &["--n", "64", "--simulate", "2", "--platform", missing],
                2,
                &["platform file", "not found", "dps-bench calibrate --out"],
            ),
            case(
                &["--n", "64", "--simulate", "2", "--platform", &old],
                2,
                &["made by dps 0.0.0", "dps-bench calibrate"],
            ),
            case(
                &["--n", "64", "--simulate", "2", "--platform", &elsewhere],
                2,
                &["not on this host", "dps-bench calibrate"],
            ),
            case(
                &["--n", "64", "--simulate", "2", "--sim-mode", "pdexec", "--platform", &no_gemm],
                2,
                &["no cost table for kernel 'gemm'", "dps-bench calibrate"],
            ),
            case(
                &["--n", "64", "--simulate", "2", "--sim-mode", "noalloc", "--platform", &no_copy],
                2,
                &["no cost table for kernel 'copy'", "dps-bench calibrate"],
            ),
            case(
                &["--n", "64", "--simulate", "2", "--sim-mode", "noalloc", "--verify", "--platform", &good],
                2,
                &["--verify", "noalloc", "no result to verify", "--sim-mode de"],
            ),
            case(&["--n", "64", "--simulate", "2", "--sim-mode", "noalloc", "--platform", &good], 0, &[]),
            case(
                &["--n", "64", "--simulate", "2", "--sim-mode", "pdexec", "--verify", "--platform", &good],
                2,
                &["--verify", "pdexec", "--sim-mode de"],
            ),
            case(
                &["--n", "64", "--simulate", "2", "--sim-mode", "pdexec", "--kernel", "loops", "--platform", &good],
                2,
                &["--kernel loops", "pdexec", "--sim-mode de"],
            ),
            case(&["--n", "64", "--simulate", "2", "--sim-cores", "0", "--platform", &good], 2, &["--sim-cores 0"]),
            case(&["--n", "64", "--simulate", "2", "--variant", "serial", "--platform", &good], 2, &["serial"]),
            case(&["--n", "64", "--sim-mode", "de"], 2, &["--simulate"]),
            case_on(2, &["--n", "64", "--simulate", "2", "--platform", &good], 2, &["without mpirun"]),
            case(&["--n", "64", "--simulate", "3", "--verify", "--platform", &good], 0, &[]),
        ],
    );
}
