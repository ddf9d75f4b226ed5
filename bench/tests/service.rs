//! `dps-bench service`: a service exported by one process and called from another runs,
//! and prints both the service's and the in-application round trip and bandwidth, over the
//! abstract Unix socket and over TCP; bad options are refused.

use dps_launch::bad_input::{case, check_table};
use dps_launch::{test_job, Job, Launcher};

const BIN: &str = env!("CARGO_BIN_EXE_dps-bench");

fn bench(args: &[&str]) -> dps_launch::Finished {
    test_job(Job::new(BIN).launcher(Launcher::None).args(args).timeout_s(120))
}

#[test]
fn the_service_case_prints_round_trips_and_bandwidths_beside_the_in_application_ones() {
    for net in [&[][..], &["--tcp"][..]] {
        let args = [&["service", "--reps", "1", "--bytes", "65536", "--json", "--timeout", "100"][..], net].concat();
        let job = bench(&args);
        assert!(job.status.success(), "{args:?}: {}\n{}", job.stdout, job.stderr);
        let r = dps_launch::json_record(&job.stdout);
        assert_eq!(r["net"], if net.is_empty() { "unix" } else { "tcp" }, "{r}");
        assert_eq!(r["bytes"], 65536, "{r}");
        for field in
            ["service_rtt_us", "in_app_rtt_us", "local_rtt_us", "service_gbps", "in_app_gbps", "rtt_ratio", "bw_ratio"]
        {
            let v = r[field].as_f64().unwrap_or_else(|| panic!("no {field} in {r}"));
            assert!(v.is_finite() && v > 0.0, "{field} = {v} in {r}");
        }
    }
    // The table names both sides.
    let job = bench(&["service", "--reps", "1", "--bytes", "4096"]);
    assert!(job.status.success(), "{}", job.stderr);
    assert!(job.stdout.contains("| service_rtt_us | in_app_rtt_us |"), "{}", job.stdout);
}

#[test]
fn bad_service_options_are_refused_with_one_line() {
    check_table(
        BIN.as_ref(),
        &[
            case(&["service", "--reps", "0"], 2, &["--reps 0 must be between 1 and 10000"]),
            case(&["service", "--bytes", "0"], 2, &["--bytes 0 must be between 1 and 268435456"]),
            case(&["service", "--timeout", "0"], 2, &["--timeout"]),
        ],
    );
}
