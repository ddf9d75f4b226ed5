//! The striped file service (the DPS paper, Fig. 5): `dps-filter serve` on 1 and 2 ranks
//! exports the window-reading graph of a stored image; two `dps-filter client`s (1 and 2
//! ranks) started separately at the same time read windows through it, and each window's
//! pixels are the source image's. A client with no service, a refused window, a tile the
//! service cannot read, bad options,
//! and a serve stopped by SIGTERM. Each test has a registry directory of its own
//! (`DPS_SERVICES`), and every job runs under a timeout.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use dps_launch::bad_input::{case, check_table};
use dps_launch::{test_job, Background, Finished, Job, Launcher};
use rand::{Rng, SeedableRng};

const BIN: &str = env!("CARGO_BIN_EXE_dps-filter");

/// The test image: 8-bit grey, not a multiple of the tile side.
const WIDTH: usize = 300;
const HEIGHT: usize = 260;

/// Windows to read: inside one tile, across tiles and disks, the whole image, a corner.
const WINDOWS: [[usize; 4]; 4] = [[5, 6, 20, 10], [50, 40, 150, 100], [0, 0, WIDTH, HEIGHT], [290, 250, 10, 10]];

/// A job of `dps-filter` on `ranks` ranks (0: a plain process) with the registry `registry`.
fn job(ranks: usize, registry: &Path, args: &[&str]) -> Job {
    let job = Job::new(BIN).env("DPS_SERVICES", registry).env("RUST_BACKTRACE", "0").args(args).timeout_s(120);
    match ranks {
        0 => job.launcher(Launcher::None),
        n => job.ranks(n),
    }
}

/// The test image as a PNG, a store of it (tiles of 64 on 3 disks), and its pixels.
fn stored_image(dir: &Path) -> (PathBuf, Vec<u8>) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(30);
    let pixels: Vec<u8> = (0..WIDTH * HEIGHT).map(|_| rng.gen()).collect();
    let png = dir.join("source.png");
    image::GrayImage::from_raw(WIDTH as u32, HEIGHT as u32, pixels.clone()).unwrap().save(&png).unwrap();
    let store = dir.join("store");
    std::fs::create_dir(&store).unwrap();
    let out = Command::new(BIN)
        .args(["store", png.to_str().unwrap(), "--tiles", "64", "--disks", "3", "--dir", store.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "store: {}", String::from_utf8_lossy(&out.stderr));
    (store, pixels)
}

/// `serve` of the store on `ranks` ranks as `name`, until the file `stop` exists; returns
/// once the service is in the registry.
fn serve(ranks: usize, registry: &Path, store: &Path, name: &str, stop: &Path) -> Background {
    let args = ["serve", "--dir", store.to_str().unwrap(), "--service", name, "--until", stop.to_str().unwrap()];
    let server = job(ranks, registry, &args).spawn_logged(registry, &format!("serve-{name}"));
    let entry = registry.join(format!("{name}.service"));
    let start = Instant::now();
    while !entry.exists() {
        assert!(start.elapsed() < Duration::from_secs(60), "{name} was never exported: {:?}", server.outputs());
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// The arguments of a client reading every window of [`WINDOWS`] `repeat` times.
fn client_args(name: &str, out_dir: &Path, repeat: usize) -> Vec<String> {
    let mut args = vec!["client".to_string(), "--service".into(), name.into()];
    for w in WINDOWS {
        args.push("--window".into());
        args.extend(w.iter().map(usize::to_string));
    }
    args.extend(["--repeat".into(), repeat.to_string(), "--out-dir".into(), out_dir.to_str().unwrap().into()]);
    args
}

/// Every window a client wrote is the source image's window, pixel for pixel.
fn assert_windows_are_the_source(out_dir: &Path, source: &[u8], who: &str) {
    for (i, [x, y, w, h]) in WINDOWS.into_iter().enumerate() {
        let got = image::open(out_dir.join(format!("window{i}.png"))).unwrap().into_luma8();
        assert_eq!((got.width() as usize, got.height() as usize), (w, h), "{who}: window {i}");
        let want: Vec<u8> = (y..y + h).flat_map(|row| source[row * WIDTH + x..][..w].to_vec()).collect();
        assert!(got.into_raw() == want, "{who}: window {i} ({x} {y} {w} {h}) differs from the source image's");
    }
}

#[test]
fn two_clients_at_once_read_the_source_windows_through_a_service_on_1_and_2_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("registry");
    std::fs::create_dir(&registry).unwrap();
    let (store, source) = stored_image(dir.path());
    for server_ranks in [1, 2] {
        let name = format!("filter.store{server_ranks}");
        let stop = dir.path().join(format!("stop{server_ranks}"));
        let server = serve(server_ranks, &registry, &store, &name, &stop);
        // Both clients start before either ends: 4 windows × 25 requests each.
        let clients: Vec<(usize, PathBuf, Background)> = [1, 2]
            .into_iter()
            .map(|ranks| {
                let out_dir = dir.path().join(format!("out-{server_ranks}-{ranks}"));
                std::fs::create_dir(&out_dir).unwrap();
                let args = client_args(&name, &out_dir, 25);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let label = format!("client-{server_ranks}-{ranks}");
                (ranks, out_dir, job(ranks, &registry, &args).spawn_logged(&registry, &label))
            })
            .collect();
        for (ranks, out_dir, client) in clients {
            let who = format!("client on {ranks} ranks, service on {server_ranks}");
            let (status, out, err) = client.wait();
            assert!(status.success(), "{who}: {out}\n{err}");
            assert!(out.contains("read 4 windows (100 requests, "), "{who}: {out}");
            assert_windows_are_the_source(&out_dir, &source, &who);
        }
        // A window outside the image: the service refuses it, and goes on serving.
        let refused = test_job(job(1, &registry, &["client", "--service", &name, "--window", "0", "0", "301", "1"]));
        assert_eq!(refused.status.code(), Some(2), "{}", refused.stderr);
        assert!(
            refused.stderr.contains(&format!("service \"{name}\" refused window 0 0 301 1: outside the 300x260 image")),
            "{}",
            refused.stderr
        );
        std::fs::write(&stop, b"").unwrap();
        let (status, out, err) = server.wait();
        assert!(status.success(), "serve on {server_ranks} ranks: {out}\n{err}");
        assert!(out.contains(&format!("served 201 windows as \"{name}\"; stopped by --until")), "{out}\n{err}");
        assert!(!err.contains("panicked") && !err.contains("dropped"), "{err}");
        assert!(!registry.join(format!("{name}.service")).exists(), "the export is withdrawn at the end");
    }
}

/// Issue 27: a tile file the service cannot read (truncated after `serve` checked it) is the
/// client's error, exit 1, one line naming the file and the OS error; the service goes on.
#[test]
fn a_tile_the_service_cannot_read_ends_the_client_with_exit_1_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("registry");
    std::fs::create_dir(&registry).unwrap();
    let (store, _) = stored_image(dir.path());
    let (name, stop) = ("filter.broken", dir.path().join("stop"));
    let server = serve(1, &registry, &store, name, &stop);
    let victim = std::fs::read_dir(store.join("disk0")).unwrap().next().unwrap().unwrap().path();
    std::fs::OpenOptions::new().write(true).open(&victim).unwrap().set_len(100).unwrap();
    let whole = ["client", "--service", name, "--window", "0", "0", "300", "260"];
    let failed = test_job(job(1, &registry, &whole));
    assert_eq!(failed.status.code(), Some(1), "{}", failed.stderr);
    let lines: Vec<&str> = failed.stderr.lines().filter(|l| l.contains("dps-filter")).collect();
    assert_eq!(lines.len(), 1, "one line expected: {}", failed.stderr);
    let victim = victim.display().to_string();
    for words in [&victim[..], "could not read the window", "cannot read tile", "failed to fill whole buffer"] {
        assert!(lines[0].contains(words), "{words:?} not in {}", failed.stderr);
    }
    std::fs::write(&stop, b"").unwrap();
    let (status, out, err) = server.wait();
    assert!(status.success(), "serve: {out}\n{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_client_with_no_service_running_gets_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    for ranks in [1, 2] {
        let c: Finished = test_job(job(ranks, dir.path(), &["client", "--window", "0", "0", "8", "8"]));
        assert!(!c.status.success());
        assert!(c.stderr.contains("service \"filter.store\" is not running: nobody exports it"), "{}", c.stderr);
        assert!(!c.stderr.contains("panicked"), "{}", c.stderr);
    }
}

#[test]
fn sigterm_stops_a_plain_serve_process_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("registry");
    std::fs::create_dir(&registry).unwrap();
    let (store, _) = stored_image(dir.path());
    let args = ["serve", "--dir", store.to_str().unwrap(), "--service", "filter.signal", "--serve-seconds", "100"];
    let server = job(0, &registry, &args).spawn_logged(&registry, "serve");
    let entry = registry.join("filter.signal.service");
    let start = Instant::now();
    while !entry.exists() {
        assert!(start.elapsed() < Duration::from_secs(60), "never exported: {:?}", server.outputs());
        std::thread::sleep(Duration::from_millis(50));
    }
    // The child is `timeout`, which passes TERM on to dps-filter.
    let (status, out, err) = server.terminate();
    assert!(status.success(), "{out}\n{err}");
    assert!(out.contains("served 0 windows as \"filter.signal\"; stopped by a signal"), "{out}");
    assert!(!entry.exists(), "the export is withdrawn");
}

#[test]
fn bad_serve_and_client_options_are_refused_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let nowhere = dir.path().join("nowhere");
    let nowhere = nowhere.to_str().unwrap();
    check_table(
        BIN.as_ref(),
        &[
            case(&["serve"], 2, &["give --dir DIR (a stored image) or --random W H"]),
            case(&["serve", "--random", "64", "64", "--service", "a/b"], 2, &["--service \"a/b\"", "A-Za-z0-9._-"]),
            case(&["serve", "--random", "64", "64", "--serve-seconds", "0"], 2, &["--serve-seconds 0"]),
            case(&["client"], 2, &["--window"]),
            case(&["client", "--window", "0", "0", "0", "5"], 2, &["--window 0 0 0 5: the window is empty"]),
            case(&["client", "--window", "0", "0", "5", "5", "--in-flight", "0"], 2, &["--in-flight 0"]),
            case(&["client", "--window", "0", "0", "5", "5", "--repeat", "0"], 2, &["--repeat 0"]),
            case(
                &["client", "--window", "0", "0", "5", "5", "--out-dir", nowhere],
                2,
                &["--out-dir", "no such directory"],
            ),
        ],
    );
}
