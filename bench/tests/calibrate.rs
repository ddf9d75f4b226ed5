//! `dps-bench calibrate` and `tune-farm`: bad options and bad platform files are refused
//! once, with exit 2 and a line naming the option or the file (and for a file, the command
//! that makes a good one); a quick calibration on 2 ranks writes a file the loader accepts,
//! and tune-farm measures its grid from it.

use std::path::Path;
use std::process::Command;

use dps_launch::bad_input::{case, check_table};
use dps_model::fit::Segment;
use dps_model::platform::{Carrier, Header, Link, PathKind, Platform};

const BIN: &str = env!("CARGO_BIN_EXE_dps-bench");

/// The tests run one at a time: the bad-input table's processes would take CPU from the
/// calibration's ping-pong, whose times then no line fits.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// A sealed platform file of this machine, dated now (the harness's made-up one), with an
/// intra-node DPS and MPI link or none, and no kernel tables.
fn platform(links: bool) -> Platform {
    let segment = Segment { from_bytes: 1, to_bytes: 1 << 20, latency_us: 1.0, bytes_per_us: 5000.0 };
    let link = |carrier, l| Link {
        path: PathKind::IntraNode,
        carrier,
        ranks: [0, 1],
        sizes: vec![1, 1024, 1 << 20],
        times_us: vec![l, l + 0.2, l + 210.0],
        fit: vec![Segment { latency_us: l, ..segment }],
        stream: None,
    };
    let mut p = dps_harness::simulate::made_up_platform();
    p.links = if links { vec![link(Carrier::Dps, 5.0), link(Carrier::Mpi, 1.0)] } else { vec![] };
    p.kernels.clear();
    p.seal();
    p
}

#[test]
fn bad_options_and_platform_files_are_refused_once_with_exit_2() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    };
    let good = platform(true).to_toml();
    // Header edits: the hash covers what was measured, not the header.
    let with_header = |edit: &dyn Fn(&mut Header)| {
        let mut p = platform(true);
        edit(&mut p.header);
        p.to_toml()
    };
    let other_host = write("other-host.toml", &with_header(&|h| h.hosts = vec!["elsewhere".into()]));
    let other_version = write("other-version.toml", &with_header(&|h| h.dps_version = "0.0.0".into()));
    let stale = write("stale.toml", &with_header(&|h| h.date = "2020-01-01T00:00:00Z".into()));
    let other_blas = write("other-blas.toml", &with_header(&|h| h.blas = "OpenBLAS 0.0.1 Prescott".into()));
    let edited = write("edited.toml", &good.replace("latency_us = 5.0", "latency_us = 4.0"));
    let malformed = write("malformed.toml", &good.replace("cpus = ", "cpus = \"x\" # "));
    let no_links = write("no-links.toml", &platform(false).to_toml());
    let good_file = write("good.toml", &good);
    let missing = dir.path().join("missing.toml");
    let missing = missing.to_str().unwrap();
    let make_missing = format!("dps-bench calibrate --out {missing}");
    let out = dir.path().join("p.toml");
    let out = out.to_str().unwrap();
    let a_dir = dir.path().to_str().unwrap();
    let farm_of = |item_us: &str, payload: &str, platform: &str| -> Vec<String> {
        ["tune-farm", "--item-us", item_us, "--payload", payload, "--platform", platform].map(String::from).to_vec()
    };
    let farm = |platform: &str| farm_of("10", "64", platform);
    let rows: Vec<(Vec<String>, Vec<&str>)> = vec![
        (vec!["calibrate".into()], vec!["--out"]),
        (vec!["calibrate".into(), "--out".into(), "/nonexistent/dir/p.toml".into()], vec!["--out", "does not exist"]),
        (vec!["calibrate".into(), "--out".into(), a_dir.into()], vec!["--out", "is a directory"]),
        (vec!["calibrate".into(), "--out".into(), out.into(), "--ranks".into(), "0".into()], vec!["--ranks 0"]),
        (vec!["calibrate".into(), "--out".into(), out.into(), "--timeout".into(), "0".into()], vec!["--timeout 0"]),
        (farm(&other_host), vec!["not on this host", "dps-bench calibrate --out"]),
        (farm(&other_version), vec!["made by dps 0.0.0", "dps-bench calibrate --out"]),
        (farm(&stale), vec!["days ago", "stale", "dps-bench calibrate --out"]),
        (
            farm(&other_blas),
            vec!["kernel tables were measured with OpenBLAS 0.0.1 Prescott, this program runs ", "calibrate --out"],
        ),
        (farm(&edited), vec!["measured_hash", "dps-bench calibrate --out"]),
        (farm(&malformed), vec!["malformed.toml:", "dps-bench calibrate --out"]),
        (farm(missing), vec!["not found", &make_missing]),
        (farm(&no_links), vec!["no measured link", "--ranks 2"]),
        ([farm(&good_file), vec!["--sim-mode".into(), "noalloc".into()]].concat(), vec!["--sim-mode noalloc"]),
        ([farm(&good_file), vec!["--sim-cores".into(), "0".into()]].concat(), vec!["--sim-cores 0"]),
        (farm_of("0", "64", &no_links), vec!["--item-us 0"]),
        (farm_of("NaN", "64", &no_links), vec!["--item-us NaN"]),
        (farm_of("10", "100000000000", &no_links), vec!["--payload 100000000000"]),
        ([farm(&no_links), vec!["--ranks".into(), "0".into()]].concat(), vec!["--ranks 0"]),
        ([farm(&no_links), vec!["--te-us=-1".into()]].concat(), vec!["--te-us -1"]),
        ([farm(&no_links), vec!["--prec".into(), "0".into()]].concat(), vec!["--prec 0"]),
        ([farm(&no_links), vec!["--max-grain".into(), "0".into()]].concat(), vec!["--max-grain 0"]),
        ([farm(&no_links), vec!["--seconds".into(), "0".into()]].concat(), vec!["--seconds 0"]),
        ([farm(&no_links), vec!["--reps".into(), "0".into()]].concat(), vec!["--reps 0"]),
        (vec!["tune-farm".into(), "--payload".into(), "8".into()], vec!["--item-us"]),
    ];
    let args: Vec<Vec<&str>> = rows.iter().map(|(a, _)| a.iter().map(String::as_str).collect()).collect();
    let cases: Vec<_> = args.iter().zip(&rows).map(|(a, (_, words))| case(a, 2, words)).collect();
    check_table(Path::new(BIN), &cases);
    assert!(!Path::new(out).exists(), "a refused calibration wrote its file");
}

#[test]
fn a_quick_calibration_writes_a_file_the_loader_accepts_and_tune_farm_reads() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("platform.toml");
    // On a loaded machine the ping-pong times can be noise that falls with the size, which
    // calibrate refuses (no line fits): measured again, up to three times in all.
    let calibrate =
        || Command::new(BIN).args(["calibrate", "--quick", "--timeout", "120", "--out"]).arg(&file).output();
    let mut job = calibrate().unwrap();
    for _ in 0..2 {
        let stderr = String::from_utf8_lossy(&job.stderr);
        if job.status.success() || !stderr.contains("no line t = l + s/b fits") {
            break;
        }
        eprintln!("calibrating again: {}", stderr.lines().find(|l| l.contains("no line")).unwrap_or_default());
        job = calibrate().unwrap();
    }
    assert!(job.status.success(), "{}", String::from_utf8_lossy(&job.stderr));
    let summary = String::from_utf8_lossy(&job.stdout);
    assert!(summary.contains("| intra-node | dps |") && summary.contains("| gemm |"), "{summary}");
    let p = Platform::load(&file).unwrap();
    // OpenBLAS, or MKL where it is installed (dense/src/library.rs), with its version and kernels.
    let blas: Vec<&str> = p.header.blas.split_whitespace().collect();
    assert!(blas.len() == 3 && ["OpenBLAS", "MKL"].contains(&blas[0]), "the BLAS kernels are recorded: {:?}", p.header);
    for carrier in [Carrier::Dps, Carrier::Mpi] {
        let link = p.link(PathKind::IntraNode, carrier).unwrap();
        assert_eq!((link.sizes.first(), link.sizes.last()), (Some(&1), Some(&(4 << 20))));
        // The fit predicts the largest message within a factor 2 (the quick run is short and noisy).
        let (s, t) = (*link.sizes.last().unwrap(), *link.times_us.last().unwrap());
        assert!((link.time_us(s) / t - 1.0).abs() < 1.0, "{link:?}");
    }
    for name in ["gemm", "trsm", "getrf", "laswp", "copy", "life", "median"] {
        assert!(p.kernel(name).is_ok(), "{name}");
    }
    // The shapes the dense apps call besides squares: LU's tall update, matmul's long strips.
    let gemm = p.kernel("gemm").unwrap();
    assert!(gemm.at(&[256, 64, 64]).is_some() && gemm.at(&[64, 64, 256]).is_some(), "{gemm:?}");

    let job = Command::new(BIN)
        .args(["tune-farm", "--item-us", "100", "--payload", "1024", "--max-grain", "2", "--seconds", "0.02"])
        .args(["--reps", "1", "--timeout", "120", "--json", "--platform"])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&job.stderr);
    assert!(job.status.success(), "{stderr}");
    let record: serde_json::Value = serde_json::from_slice(&job.stdout).unwrap();
    let grid = record["grid"].as_array().unwrap();
    let processors = record["model"]["processors"].as_u64().unwrap();
    assert_eq!(grid.len() as u64, 2 * processors.max(record["n_hat"].as_u64().unwrap()), "{record}");
    assert!(
        grid.iter().all(|p| p["real_us"].as_f64().unwrap() > 0.0 && p["sim_us"].as_f64().unwrap() > 0.0),
        "{record}"
    );
    // The simulator (PDEXEC: the busy loop charged exactly): no faster than the loop allows,
    // and a second worker never slows a compute-bound farm down.
    let sim = |n: u64, k: u64| {
        let p = grid.iter().find(|p| p["n"] == n && p["k"] == k).unwrap();
        p["sim_us"].as_f64().unwrap()
    };
    for k in [1, 2] {
        assert!(sim(1, k) >= 100.0 && sim(2, k) >= 50.0 && sim(2, k) <= sim(1, k), "{record}");
    }
    assert_eq!(record["sim_mode"], "pdexec");
    // A compute-bound item of 100 µs: no point can run faster than 100 µs / workers.
    assert!(grid.iter().all(|p| p["real_us"].as_f64().unwrap() >= 100.0 / p["n"].as_f64().unwrap() * 0.95));
    assert!(record["n_hat"].as_u64().unwrap() <= processors);
}
