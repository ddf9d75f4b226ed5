//! `dps-filter` under mpirun: exchange-process-and-store (5×5 median) bit-exact against the
//! serial whole-image median for tiles 256 and 512 on 1, 2, 3 and 4 ranks with D = P and
//! 2P, preloaded and from tile files (with and without the tile cache, reads counted);
//! process-and-gather bit-exact against the zero-padded convolution for aligned and
//! unaligned windows on 1, 2 and 4 ranks; store/load round trips.

use std::path::Path;

use dps_filter::kernel::median::median_image;
use dps_filter::store::open;
use dps_launch::json_record as json;
use dps_launch::mpirun;
use rand::{Rng, SeedableRng};

const BIN: &str = env!("CARGO_BIN_EXE_dps-filter");

fn run(ranks: usize, args: &[&str]) -> serde_json::Value {
    let job = mpirun(ranks, BIN.as_ref(), args);
    assert!(job.status.success(), "{ranks} ranks {}: {}", args.join(" "), job.stderr);
    json(&job.stdout)
}

/// A random grey PNG (8 or 16 bits), returned with its levels.
fn random_png(path: &Path, w: u32, h: u32, sixteen: bool, seed: u64) -> Vec<u16> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    if sixteen {
        let levels: Vec<u16> = (0..w * h).map(|_| rng.gen()).collect();
        image::ImageBuffer::<image::Luma<u16>, _>::from_raw(w, h, levels.clone()).unwrap().save(path).unwrap();
        levels
    } else {
        let levels: Vec<u8> = (0..w * h).map(|_| rng.gen()).collect();
        image::GrayImage::from_raw(w, h, levels.clone()).unwrap().save(path).unwrap();
        levels.into_iter().map(u16::from).collect()
    }
}

fn store(dir: &Path, png: &Path, tiles: usize, disks: usize) {
    let out = std::process::Command::new(BIN)
        .args(["store", png.to_str().unwrap(), "--tiles", &tiles.to_string(), "--disks", &disks.to_string()])
        .args(["--dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "store: {}", String::from_utf8_lossy(&out.stderr));
}

fn load(dir: &Path, name: &str, window: [usize; 4], out: &Path) -> Vec<u16> {
    let w: Vec<String> = window.iter().map(|v| v.to_string()).collect();
    let status = std::process::Command::new(BIN)
        .args(["load", dir.to_str().unwrap(), "--name", name, "--window", &w[0], &w[1], &w[2], &w[3]])
        .args(["-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(status.status.success(), "load: {}", String::from_utf8_lossy(&status.stderr));
    match image::open(out).unwrap() {
        image::DynamicImage::ImageLuma8(g) => g.into_raw().into_iter().map(u16::from).collect(),
        image::DynamicImage::ImageLuma16(g) => g.into_raw(),
        other => panic!("{:?}", other.color()),
    }
}

#[test]
fn median_preloaded_is_the_serial_median_for_tiles_256_and_512_on_1_to_4_ranks_and_d_p_and_2p() {
    for ranks in 1..=4 {
        // Tiles of 256 with the default 8 tiles in flight per compute thread, 512 with the
        // thesis's 2.
        for (tiles, per_thread) in [(256, 8), (512, 2)] {
            for disks in [ranks, 2 * ranks] {
                let (t, d, k) = (tiles.to_string(), disks.to_string(), per_thread.to_string());
                let mut args = vec!["median", "--random", "600", "520", "--seed", "9", "--tiles", &t, "--disks", &d];
                if per_thread != 8 {
                    args.extend(["--in-flight", &k]);
                }
                let r = run(ranks, &[&args[..], &["--verify", "--json"]].concat());
                assert_eq!(r["verified"], true, "{r}");
                assert_eq!((r["ranks"].as_u64(), r["disks"].as_u64()), (Some(ranks as u64), Some(disks as u64)));
                let tile_count = 600usize.div_ceil(tiles) * 520usize.div_ceil(tiles);
                assert_eq!(r["tiles"], tile_count);
                let window = per_thread * ranks;
                assert_eq!(r["window"], window, "at most {per_thread}·P tiles in flight");
                let in_flight = r["max_in_flight"].as_u64().unwrap() as usize;
                // The window's tiles (or all of them, when fewer), and the one the runtime
                // pulls ahead (created, not sent).
                assert!((1..=window + 1).contains(&in_flight), "{in_flight} tiles in flight: {r}");
                assert_eq!(r["reads"], 0, "preloaded tiles are not read from files");
            }
        }
    }
}

#[test]
fn median_from_tile_files_reads_each_tile_about_once_with_the_cache_and_at_most_9_times_without() {
    for ranks in [1, 2, 4] {
        let n = ranks.to_string();
        let args = [
            "median",
            "--random",
            "700",
            "600",
            "--tiles",
            "64",
            "--disks",
            &n,
            "--storage",
            "disk",
            "--verify",
            "--json",
        ];
        let cached = run(ranks, &args);
        assert_eq!(cached["verified"], true, "{cached}");
        assert_eq!(cached["source"], "disk");
        let tiles = cached["tiles"].as_u64().unwrap();
        assert_eq!(tiles, 11 * 10);
        // The cache holds 4 rows of tiles and one more for each row the window spans: every
        // tile is read once (measured: exactly once;
        // a few more are allowed where the tiles in flight run ahead of the serpentine).
        let reads = cached["reads"].as_u64().unwrap();
        assert!(reads >= tiles && reads as f64 <= 1.05 * tiles as f64, "{reads} reads of {tiles} tiles: {cached}");
        let uncached = run(ranks, &[&args[..], &["--cache", "0"]].concat());
        assert_eq!(uncached["verified"], true);
        let (reads, requests) = (uncached["reads"].as_u64().unwrap(), uncached["requests"].as_u64().unwrap());
        assert_eq!(reads, requests, "without a cache every request reads its tile");
        assert!(reads <= 9 * tiles && reads > 8 * tiles - 4 * 11, "{reads} reads of {tiles} tiles");
    }
}

#[test]
fn median_of_a_stored_image_is_written_striped_like_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("in.png");
    let levels = random_png(&png, 300, 170, false, 4);
    store(dir.path(), &png, 64, 5);
    let r = run(2, &["median", "--dir", dir.path().to_str().unwrap(), "--verify", "--json"]);
    assert_eq!(r["verified"], true, "{r}");
    let outputs = tempfile::tempdir().unwrap(); // outside the store, as every output must be
    let got = load(dir.path(), "image-median", [0, 0, 300, 170], &outputs.path().join("out.png"));
    let pixels: Vec<u8> = levels.iter().map(|&v| v as u8).collect();
    let want: Vec<u16> = median_image(&pixels, 300, 170).into_iter().map(u16::from).collect();
    assert_eq!(got, want);
    let (input, output) = (open(dir.path(), "image").unwrap(), open(dir.path(), "image-median").unwrap());
    for d in 0..5 {
        let (input, output) =
            (input.tile_path(dir.path(), "image", d), output.tile_path(dir.path(), "image-median", d));
        let (a, b) = (std::fs::read(input).unwrap(), std::fs::read(output).unwrap());
        assert_eq!(a.len(), b.len(), "disk {d}: the output holds the same tiles as the input");
        assert_eq!(a[..24], b[..24], "disk {d}: same header (disk index, tile count, size)");
    }
}

#[test]
fn gather_equals_the_zero_padded_convolution_on_aligned_and_unaligned_windows() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("in16.png");
    random_png(&png, 600, 520, true, 2);
    store(dir.path(), &png, 256, 5);
    let d = dir.path().to_str().unwrap();
    let outputs = tempfile::tempdir().unwrap(); // outside the store, as every output must be
    let out = outputs.path().join("g.png");
    let cases = [
        (1, "box3", ["256", "0", "256", "256"]),
        (2, "gauss5", ["13", "7", "500", "400"]),
        (4, "box5", ["0", "0", "600", "520"]),
        (4, "gauss3", ["511", "255", "89", "265"]),
    ];
    for (ranks, filter, w) in cases {
        let args = ["gather", "--dir", d, "--filter", filter, "--window", w[0], w[1], w[2], w[3], "--verify", "--json"];
        let r = run(ranks, &[&args[..], &["-o", out.to_str().unwrap()]].concat());
        assert_eq!(r["verified"], true, "{ranks} ranks {filter} {w:?}: {r}");
        let written = image::open(&out).unwrap();
        assert_eq!((written.width(), written.height()), (w[2].parse().unwrap(), w[3].parse().unwrap()));
    }
}

#[test]
fn store_and_load_round_trip_windows_of_8_and_16_bit_images() {
    for (sixteen, disks) in [(false, 8), (true, 3)] {
        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("in.png");
        let levels = random_png(&png, 300, 200, sixteen, 6);
        store(dir.path(), &png, 64, disks);
        let outputs = tempfile::tempdir().unwrap(); // outside the store, as every output must be
        let whole = load(dir.path(), "image", [0, 0, 300, 200], &outputs.path().join("all.png"));
        assert_eq!(whole, levels);
        let part = load(dir.path(), "image", [70, 33, 150, 101], &outputs.path().join("part.png"));
        let want: Vec<u16> = (33..134).flat_map(|y| levels[y * 300 + 70..][..150].to_vec()).collect();
        assert_eq!(part, want);
    }
}

#[test]
fn median_with_a_mapping_of_three_compute_threads_on_two_ranks_and_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.json");
    let args = ["median", "--random", "600", "520", "--tiles", "128", "--map", "0*2 1", "--verify", "--json"];
    let r = run(2, &[&args[..], &["--trace", trace.to_str().unwrap()]].concat());
    assert_eq!(r["verified"], true, "{r}");
    assert_eq!((r["threads"].as_u64(), r["disks"].as_u64(), r["window"].as_u64()), (Some(3), Some(3), Some(24)));
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(text.contains("median_tile") && text.contains("read_part"), "the trace names the operations");
}

#[test]
fn emulated_slow_disks_show_in_the_measured_read_and_write_times() {
    let args = ["median", "--random", "300", "300", "--tiles", "64", "--storage", "disk", "--disk-latency-ms", "3"];
    let r = run(1, &[&args[..], &["--disk-mb-per-s", "100", "--verify", "--json"]].concat());
    assert_eq!(r["verified"], true, "{r}");
    // 3 ms plus 4096 bytes at 100 MB/s per tile read and written.
    for t in ["t_dr_s", "t_dw_s"] {
        let s = r[t].as_f64().unwrap();
        assert!((0.00304..0.1).contains(&s), "{t} = {s}: {r}");
    }
}
