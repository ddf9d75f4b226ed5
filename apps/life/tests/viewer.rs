//! The separately started viewer (issue 30; the DPS paper's Fig. 10 with two programs):
//! `dps-life --export-region` on 1 and 2 ranks, `dps-life view` under its own mpirun on 1 and
//! 2 ranks and as a plain process; every block it writes is the serial reference world's at
//! the generation its name gives (row by row, either of two for a block that straddles two);
//! the viewer ends cleanly when the served run ends, and fails with one line when nothing is
//! exported. `--view-process` (rank 0 spawns the viewer for the Table 2 measurement) gives
//! its record. Each test has a registry directory of its own (DPS_SERVICES).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use std::sync::Mutex;
use std::time::{Duration, Instant};

use dps_launch::{json_record, test_job, Background, Finished, Job, Launcher};
use dps_life::kernel;
use dps_life::world::{Source, World};

const BIN: &str = env!("CARGO_BIN_EXE_dps-life");

/// The served world: a random torus.
const WORLD: [&str; 9] = ["--random", "200", "120", "--wrap", "--density", "0.35", "--seed", "3", "--export-region"];

/// One test at a time: each runs two applications that must not compete with another
/// test's for the two cores.
static ONE_TEST: Mutex<()> = Mutex::new(());

/// A directory of a test's own (the registry, the outputs), removed at its end.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("dps-life-viewer-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `dps-life` running in the background (under its job's timeout), its outputs in files.
struct Served(Background);

impl Served {
    /// Starts `dps-life` on `ranks` exporting for `seconds`; returns once it is exported.
    fn start(dir: &Path, ranks: usize, seconds: u64) -> Served {
        let serve = seconds.to_string();
        let args = [&WORLD[..], &["--serve-seconds", &serve, "--generations", "8", "--verify", "--json"]].concat();
        let job = Job::new(BIN).ranks(ranks).args(args).env("DPS_SERVICES", dir).env("RUST_BACKTRACE", "0");
        let served = job.timeout_s(seconds + 90).spawn_logged(dir, &format!("life{ranks}"));
        let start = Instant::now();
        while !dir.join("life.region.service").exists() {
            assert!(start.elapsed() < Duration::from_secs(60), "dps-life did not export: {:?}", served.outputs());
            std::thread::sleep(Duration::from_millis(50));
        }
        Served(served)
    }

    /// Waits for its end; returns its record.
    fn wait(self) -> serde_json::Value {
        let (status, out, err) = self.0.wait();
        assert!(status.success(), "dps-life: {status}\n{out}\n{err}");
        json_record(&out)
    }
}

/// `dps-life view` on `ranks` ranks (0: a plain process), registry `dir`.
fn view(dir: &Path, ranks: usize, args: &[&str]) -> Finished {
    let job = Job::new(BIN).arg("view").args(args).env("DPS_SERVICES", dir).timeout_s(120);
    test_job(if ranks == 0 { job.launcher(Launcher::None) } else { job.ranks(ranks) })
}

/// A block a viewer wrote: where, which generations, its cells row by row.
struct Block {
    path: PathBuf,
    x: usize,
    y: usize,
    generations: (u64, u64),
    rows: Vec<Vec<bool>>,
}

/// Reads `block-NNNNN-xX-yY-genA[-B].png`.
fn block(path: &Path) -> Block {
    let name = path.file_stem().unwrap().to_str().unwrap();
    let field = |prefix: &str| name.split('-').find_map(|p| p.strip_prefix(prefix)).unwrap_or_else(|| panic!("{name}"));
    let (x, y) = (field("x").parse().unwrap(), field("y").parse().unwrap());
    let gen = name.split_once("-gen").unwrap().1;
    let generations = match gen.split_once('-') {
        Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
        None => (gen.parse().unwrap(), gen.parse().unwrap()),
    };
    let img = image::open(path).unwrap().to_luma8();
    let rows = (0..img.height()).map(|r| (0..img.width()).map(|c| img.get_pixel(c, r).0[0] == 0).collect()).collect();
    Block { path: path.to_path_buf(), x, y, generations, rows }
}

/// Checks every block in `dirs` against the serial reference: each row is the world's at
/// one of the generations the block names. Returns the blocks checked, their live cells,
/// and how many of them the world's next generation would not have matched (the check
/// tells generations apart).
fn check_blocks(dirs: &[PathBuf]) -> (usize, usize, usize) {
    let mut blocks: Vec<Block> =
        dirs.iter().flat_map(|d| std::fs::read_dir(d).unwrap()).map(|e| block(&e.unwrap().path())).collect();
    let mut by_generation: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, b) in blocks.iter().enumerate() {
        by_generation.entry(b.generations.0).or_default().push(i);
        by_generation.entry(b.generations.1).or_default().push(i);
        by_generation.entry(b.generations.1 + 1).or_default().push(i);
    }
    let source = Source::Random { width: 200, height: 120, density: 0.35, seed: 3 };
    let mut world = World::new(&source, true, 8);
    let mut at = 0;
    // Per block, per row: whether it matched the reference at one of its generations.
    let mut matched: Vec<Vec<bool>> = blocks.iter().map(|b| vec![false; b.rows.len()]).collect();
    let mut next_differs = vec![false; blocks.len()];
    for (&generation, users) in &by_generation {
        world.advance(generation - at);
        at = generation;
        for &i in users {
            let b = &blocks[i];
            for (r, row) in b.rows.iter().enumerate() {
                let want: Vec<bool> = (0..row.len()).map(|c| kernel::get(&world.slab.row(b.y + r), b.x + c)).collect();
                if generation > b.generations.1 {
                    next_differs[i] |= *row != want;
                } else {
                    matched[i][r] |= *row == want;
                }
            }
        }
    }
    let mut live = 0;
    for (b, m) in blocks.iter_mut().zip(&matched) {
        let wrong: Vec<usize> = (0..m.len()).filter(|&r| !m[r]).collect();
        assert!(wrong.is_empty(), "{}: rows {wrong:?} differ from generations {:?}", b.path.display(), b.generations);
        live += b.rows.iter().flatten().filter(|&&c| c).count();
    }
    (blocks.len(), live, next_differs.iter().filter(|&&d| d).count())
}

#[test]
fn viewers_started_separately_get_the_world_as_it_was_and_end_with_the_served_run() {
    let _one = ONE_TEST.lock().unwrap_or_else(|p| p.into_inner());
    let dir = TempDir::new("blocks");
    for life_ranks in [1, 2] {
        let life = Served::start(&dir.0, life_ranks, 20);
        let mut pngs = Vec::new();
        for ranks in [1, 2] {
            let png = dir.0.join(format!("png-{life_ranks}-{ranks}"));
            std::fs::create_dir(&png).unwrap();
            let args = ["--block", "37x23", "--calls", "24", "--fan", "4", "--seed", &ranks.to_string()];
            let v = view(&dir.0, ranks, &[&args[..], &["--png", png.to_str().unwrap(), "--json"]].concat());
            assert!(v.status.success(), "viewer on {ranks} ranks, life on {life_ranks}: {}", v.stderr);
            let r = json_record(&v.stdout);
            assert_eq!((r["view_calls"].as_u64(), r["stopped_by"].as_str()), (Some(24), Some("calls")), "{r}");
            assert_eq!(
                (r["width"].as_u64(), r["height"].as_u64(), r["ranks"].as_u64()),
                (Some(200), Some(120), Some(ranks as u64))
            );
            assert!(r["view_call_median_s"].as_f64().unwrap() > r["view_read_median_s"].as_f64().unwrap(), "{r}");
            pngs.push(png);
        }
        // A block larger than the served world: one line, exit 2.
        let v = view(&dir.0, 1, &["--block", "201x10", "--calls", "1"]);
        assert_eq!(v.status.code(), Some(2), "{}", v.stderr);
        assert!(v.stderr.contains("--block 201x10: the world life.region serves is 200x120"), "{}", v.stderr);
        // A plain process watching until the served run ends: it says so and exits 0.
        let v = view(&dir.0, 0, &["--block", "8x8", "--fan", "2", "--period-ms", "5", "--duration", "100"]);
        assert!(v.status.success(), "{}", v.stderr);
        assert!(v.stderr.contains("dps-life view: life.region ended after"), "{}", v.stderr);
        assert!(v.stdout.contains("stopped by service ended"), "{}", v.stdout);
        let record = life.wait();
        assert_eq!(record["verified"], true, "{record}");
        assert!(record["served_calls"].as_u64().unwrap() >= 48, "{record}");
        assert!(!dir.0.join("life.region.service").exists() && !dir.0.join("life.world.service").exists());
        let (checked, live, discriminating) = check_blocks(&pngs);
        assert_eq!(checked, 48);
        // The check must tell generations apart: most blocks differ from the next one.
        assert!(
            live > 0 && discriminating >= checked / 2,
            "{live} live cells, {discriminating} blocks of {checked} change"
        );
        eprintln!("life on {life_ranks} ranks: {checked} blocks checked, {live} live cells, {discriminating} change the next generation");
    }
}

#[test]
fn the_viewer_fails_with_one_line_when_nothing_is_exported() {
    let _one = ONE_TEST.lock().unwrap_or_else(|p| p.into_inner());
    let dir = TempDir::new("nothing");
    for ranks in [0, 1, 2] {
        let v = view(&dir.0, ranks, &["--block", "8x8", "--calls", "3"]);
        assert_eq!(v.status.code(), Some(1), "{ranks} ranks: {}", v.stderr);
        let expect = "service \"life.region\" is not running: nobody exports it";
        assert!(v.stderr.contains(expect) && !v.stderr.contains("panicked"), "{ranks} ranks: {}", v.stderr);
    }
}

#[test]
fn view_process_measures_iterations_with_and_without_a_separately_started_viewer() {
    let _one = ONE_TEST.lock().unwrap_or_else(|p| p.into_inner());
    let dir = TempDir::new("process");
    for ranks in [1, 2] {
        let args = ["--random", "256", "256", "--depth", "1", "--steps-per-call", "1", "--generations", "60"];
        let more =
            ["--view", "32x32", "--view-process", "--view-fan", "2", "--view-period-ms", "1", "--verify", "--json"];
        let job = Job::new(BIN).ranks(ranks).args([&args[..], &more[..]].concat()).env("DPS_SERVICES", &dir.0);
        let done = test_job(job.timeout_s(120));
        assert!(done.status.success(), "{ranks} ranks: {}", done.stderr);
        let r = json_record(&done.stdout);
        assert_eq!((r["verified"].as_bool(), r["threads"].as_u64()), (Some(true), Some(ranks as u64)), "{r}");
        assert!(r["view_calls"].as_u64().unwrap() >= 1, "{r}");
        for field in ["view_calls_per_s", "view_comm_median_s", "iteration_with_calls_s", "iteration_without_calls_s"] {
            assert!(r[field].as_f64().is_some_and(|v| v > 0.0), "{field}: {r}");
        }
        assert_eq!(r["served_calls"], r["view_calls"], "{r}");
        let (with, without) =
            (r["iteration_with_calls_s"].as_f64().unwrap(), r["iteration_without_calls_s"].as_f64().unwrap());
        let overhead = r["iteration_overhead"].as_f64().expect("the record has the overhead");
        assert!((overhead - (with / without - 1.0)).abs() < 1e-9, "{r}");
        assert!(!dir.0.join("life.region.service").exists());
    }
}

/// A viewer's input: `p` pauses its calls (it answers `paused N` once none is in flight) and
/// `r` resumes them; while paused it makes none, and its end stops the viewer.
#[test]
fn a_paused_viewer_makes_no_calls_until_resumed() {
    use std::io::{BufRead, Write};
    let _one = ONE_TEST.lock().unwrap_or_else(|p| p.into_inner());
    let dir = TempDir::new("pause");
    let served = Served::start(&dir.0, 1, 20);
    let mut child = std::process::Command::new(BIN)
        .args(["view", "--block", "16x16", "--fan", "1", "--until-eof", "--json"])
        .env("DPS_SERVICES", &dir.0)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    /// Kills the viewer if the test fails before it ends.
    struct Kill(u32);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = std::process::Command::new("kill").args(["-9", &self.0.to_string()]).status();
        }
    }
    let _kill = Kill(child.id());
    let (tx, lines) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut input = child.stdin.take().unwrap();
    // Sends `bytes` (ending in a pause) and reads the pause's answer: the calls made.
    let pause = |input: &mut std::process::ChildStdin, bytes: &[u8]| -> u64 {
        input.write_all(bytes).unwrap();
        input.flush().unwrap();
        let line = lines.recv_timeout(Duration::from_secs(30)).expect("the viewer did not pause");
        line.strip_prefix("paused ").and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{line:?}"))
    };
    std::thread::sleep(Duration::from_millis(300));
    let first = pause(&mut input, b"p");
    std::thread::sleep(Duration::from_millis(500));
    input.write_all(b"r").unwrap();
    input.flush().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let second = pause(&mut input, b"p");
    assert!(second > first, "resumed, it calls again: {first} then {second} calls");
    // A resume and the next pause together: the pause still gets its answer.
    let third = pause(&mut input, b"rp");
    assert!(third >= second, "{second} then {third} calls");
    std::thread::sleep(Duration::from_millis(300));
    drop(input);
    let status = child.wait().unwrap();
    let rest: Vec<String> = lines.iter().collect();
    assert!(status.success(), "{status}: {rest:?}");
    let record: serde_json::Value =
        serde_json::from_str(rest.iter().rev().find(|l| l.starts_with('{')).unwrap()).unwrap();
    assert_eq!(record["view_calls"].as_u64(), Some(third), "no call while paused, none after its input ended");
    assert_eq!(record["stopped_by"], "stdin", "{record}");
    assert!(served.wait()["served_calls"].as_u64().unwrap() >= third);
}
