//! `dps-life --simulate P --sim-mode pdexec`: the band kernel is skipped and charged from the
//! platform file's `life` table. The prediction is the same at every run, and on a world
//! whose time is the kernel's it is within a factor of 4 of direct execution's when the
//! table holds this build's kernel speed (timed here, on the bands' shape). NOALLOC charges
//! the same and leaves the cells out: the same prediction, in memory that does not grow with
//! the world. No mpirun.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use dps_launch::json_record;
use dps_life::kernel::{advance, Geometry, Scratch, Sweep};
use dps_model::platform::{Kernel, KernelPoint};

const BIN: &str = env!("CARGO_BIN_EXE_dps-life");

/// The world: 2 bands of 1024 × 512 rows, one generation per step.
const WORLD: [&str; 9] = ["--random", "1024", "1024", "--generations", "8", "--warmup", "0", "--depth", "1"];

/// Seconds of one `advance` of `rows` rows of `width` cells, one generation (median of 5).
fn kernel_seconds(width: usize, rows: usize) -> f64 {
    let g = Geometry::new(width, false);
    let src: Vec<u64> = (0..(rows + 2) * g.words).map(|i| (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
    let (mut dst, mut scratch) = (vec![0u64; src.len()], Scratch::default());
    let sweep = Sweep { rows: 1..rows + 1, depth: 1, live: 0..rows + 2 };
    let mut times: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            advance(&g, &src, &mut dst, &sweep, &mut scratch, &mut |_| {});
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[2]
}

/// A platform file with a `life` table measured now, on this build, at the bands' shape.
fn platform(dir: &Path) -> std::path::PathBuf {
    platform_with_band_seconds(dir, kernel_seconds(1024, 512))
}

/// A platform file whose `life` table says a band of the world's shape takes `seconds`.
fn platform_with_band_seconds(dir: &Path, seconds: f64) -> std::path::PathBuf {
    let mut p = dps_harness::simulate::made_up_platform();
    let (width, rows) = (1024, 512);
    let point = KernelPoint { dims: vec![width as u64, rows as u64, 1], seconds, work: (width * rows) as f64 };
    p.kernels.push(Kernel {
        name: "life".into(),
        dims: "width,rows,depth".into(),
        work_unit: "cell update".into(),
        points: vec![point],
    });
    p.seal();
    let path = dir.join("platform.toml");
    std::fs::write(&path, p.to_toml()).unwrap();
    path
}

fn simulate(platform: &Path, mode: &str) -> serde_json::Value {
    simulate_world(platform, mode, &WORLD)
}

fn simulate_world(platform: &Path, mode: &str, world: &[&str]) -> serde_json::Value {
    let out = Command::new(BIN)
        .args(world)
        .args(["--simulate", "2", "--sim-mode", mode, "--json", "--platform"])
        .arg(platform)
        .output()
        .unwrap();
    assert!(out.status.success(), "{mode}: {}", String::from_utf8_lossy(&out.stderr));
    json_record(&String::from_utf8_lossy(&out.stdout))
}

#[test]
fn pdexec_is_deterministic_and_near_direct_execution() {
    let _alone = dps_harness::simulate::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let platform = platform(dir.path());
    let (a, b) = (simulate(&platform, "pdexec"), simulate(&platform, "pdexec"));
    assert_eq!(a["sim_mode"], "pdexec");
    for field in ["predicted_seconds", "sim_busy_seconds", "sim_total_seconds", "sim_operations", "sim_messages"] {
        assert_eq!(a[field], b[field], "{field}: the same inputs give the same prediction");
    }
    // 8 generations of 2 bands, each ~one kernel call of the table's shape per generation:
    // the kernel is most of the time, so a prediction that forgot to charge it falls
    // outside the factor.
    let seconds = |platform: &Path, mode: &str| simulate(platform, mode)["predicted_seconds"].as_f64().unwrap();
    dps_harness::simulate::assert_near_de_in_one_of_three_rounds("life", || {
        let platform = self::platform(dir.path());
        seconds(&platform, "pdexec") / seconds(&platform, "de")
    });
}

#[test]
fn pdexec_charges_each_band_once_per_generation() {
    // Independent of this host's speed: a table that says a band takes 10 ms, 2 bands on 2
    // ranks, 8 generations: each rank steps its band 8 times, one after the other, so the
    // prediction is 80 ms and what the messages add (the made-up link's microseconds).
    let _alone = dps_harness::simulate::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let predicted =
        simulate(&platform_with_band_seconds(dir.path(), 0.010), "pdexec")["predicted_seconds"].as_f64().unwrap();
    assert!((0.080..0.088).contains(&predicted), "{predicted} s predicted for 8 generations of 10 ms");
}

#[test]
fn noalloc_predicts_what_pdexec_does_without_the_cells() {
    let _alone = dps_harness::simulate::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let platform = platform(dir.path());
    let (pdexec, noalloc) = (simulate(&platform, "pdexec"), simulate(&platform, "noalloc"));
    assert_eq!(noalloc["sim_mode"], "noalloc");
    // The same charges: the kernel from the table, the ghost rows at their full size.
    for field in ["predicted_seconds", "sim_busy_seconds", "sim_operations", "sim_messages"] {
        assert_eq!(noalloc[field], pdexec[field], "{field}: NOALLOC charges what PDEXEC does");
    }
    // Neither counts a population that is not the world's.
    assert!(noalloc.get("population").is_none() && pdexec.get("population").is_none(), "{noalloc}");
}

#[test]
fn noalloc_memory_does_not_grow_with_the_world() {
    let _alone = dps_harness::simulate::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let platform = platform(dir.path());
    let world = |side| ["--random", side, side, "--generations", "8", "--warmup", "0", "--depth", "1"];
    // 65536² cells are 512 MiB a buffer, 1 GiB double-buffered.
    dps_harness::simulate::assert_peak_memory_is_flat(
        |world| simulate_world(&platform, "noalloc", world),
        ("1024²", &world("1024")),
        ("65536²", &world("65536")),
    );
}
