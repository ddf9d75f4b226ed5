//! Bad input never panics, hangs or leaves a partial file: each row runs `dps-filter` with
//! files, stores, windows or sizes a user may get wrong and states the exit code (2: refused
//! before any work) and words of the message (which must name the file or option at fault).

use std::path::{Path, PathBuf};
use std::process::Command;

use dps_launch::bad_input::{case, case_on, check_table};

const BIN: &str = env!("CARGO_BIN_EXE_dps-filter");

struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn p(&self, name: &str) -> String {
        self.path(name).to_str().unwrap().to_string()
    }

    fn new() -> Files {
        let files = Files { dir: tempfile::tempdir().unwrap() };
        image::GrayImage::from_fn(100, 80, |x, y| image::Luma([(x * 3 + y) as u8]))
            .save(files.path("grey.png"))
            .unwrap();
        image::ImageBuffer::<image::Luma<u16>, _>::from_fn(100, 80, |x, y| image::Luma([(x * 300 + y) as u16]))
            .save(files.path("grey16.png"))
            .unwrap();
        image::RgbImage::from_fn(100, 80, |x, y| image::Rgb([x as u8, y as u8, 7]))
            .save(files.path("rgb.png"))
            .unwrap();
        let png = std::fs::read(files.path("grey.png")).unwrap();
        std::fs::write(files.path("truncated.png"), &png[..png.len() / 2]).unwrap();
        std::fs::write(files.path("text.png"), "not an image at all").unwrap();
        for (store, png, disks) in [
            ("s8", "grey.png", 5),
            ("s16", "grey16.png", 5),
            ("srgb", "rgb.png", 5),
            ("nodisk", "grey.png", 5),
            ("short", "grey.png", 5),
            ("garbage", "grey.png", 5),
            ("badmeta", "grey.png", 5),
            ("restrided", "grey.png", 5),
            ("widened", "grey.png", 5),
            ("onebit", "grey.png", 5),
            ("unsealed", "grey.png", 5),
            ("resealed", "grey.png", 5),
        ] {
            std::fs::create_dir(files.path(store)).unwrap();
            let out = Command::new(BIN)
                .args([
                    "store",
                    &files.p(png),
                    "--tiles",
                    "32",
                    "--disks",
                    &disks.to_string(),
                    "--dir",
                    &files.p(store),
                ])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
        std::fs::remove_dir_all(files.path("nodisk/disk3")).unwrap();
        let tiles = tile_file(&files.path("short"), 2);
        let len = std::fs::metadata(&tiles).unwrap().len();
        std::fs::OpenOptions::new().write(true).open(&tiles).unwrap().set_len(len - 100).unwrap();
        let tiles = tile_file(&files.path("garbage"), 1);
        let len = std::fs::metadata(&tiles).unwrap().len() as usize;
        std::fs::write(&tiles, vec![0x5a; len]).unwrap();
        std::fs::write(files.path("badmeta/image.json"), "{\"format\": \"dps-filter tiled image\", \"width\": 3}")
            .unwrap();
        // Metadata edits that leave every tile file's size and its other header fields right
        // (100x80 in tiles of 32: 4x3 tiles; 1 and 8 bits are both a byte a pixel).
        let edit = |store: &str, from: &str, to: &str| {
            let path = files.path(store).join("image.json");
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(text.contains(from), "{text}");
            std::fs::write(&path, text.replace(from, to)).unwrap();
        };
        edit("restrided", "\"stride\": 3", "\"stride\": 2");
        edit("widened", "\"width\": 100", "\"width\": 97");
        edit("onebit", "\"bits\": 8", "\"bits\": 1");
        edit("unsealed", "\"checksum\"", "\"checksum_\"");
        // Re-sealed after the edit (a checksum computed for it): the tile headers still tell.
        let path = files.path("resealed/image.json");
        let mut meta: dps_filter::store::Meta = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        meta.width = 97;
        let meta = meta.with_generation(meta.generation.unwrap());
        std::fs::write(&path, serde_json::to_string_pretty(&meta).unwrap()).unwrap();
        std::fs::write(files.path("a_file"), "not a directory").unwrap();
        std::os::unix::fs::symlink(files.path("s8/disk1"), files.path("link-to-disk1")).unwrap();
        files
    }
}

/// The tile file of the store's only image on disk `disk`.
fn tile_file(store: &Path, disk: usize) -> PathBuf {
    let files: Vec<PathBuf> =
        std::fs::read_dir(store.join(format!("disk{disk}"))).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

/// Files a failed row may have left: partial outputs or outputs that should not exist.
fn leftovers(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in walk(dir) {
        let name = entry.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".partial") || name.starts_with("out") || name.contains("median") {
            found.push(entry.display().to_string());
        }
    }
    found
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// `path` (absolute) spelled relative to the working directory, through `..`.
fn relative_to_working_directory(path: &Path) -> String {
    let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
    let ups = vec![".."; cwd.components().count() - 1].join("/");
    format!("{ups}{}", path.display())
}

#[test]
fn bad_input_is_refused_with_one_line_naming_it() {
    let f = Files::new();
    let (grey, s8, s16, srgb) = (f.p("grey.png"), f.p("s8"), f.p("s16"), f.p("srgb"));
    let (nodisk, short, garbage, badmeta) = (f.p("nodisk"), f.p("short"), f.p("garbage"), f.p("badmeta"));
    let (missing, truncated, text, a_file) = (f.p("missing.png"), f.p("truncated.png"), f.p("text.png"), f.p("a_file"));
    let new_store = f.p("new");
    std::fs::create_dir(&new_store).unwrap();
    let out = f.p("out.png");
    let out_in_missing_dir = f.p("no/such/dir/out.png");
    // Into the store s8: its metadata, a tile file, through `..`, relative, through a symlink.
    let s8_meta = f.p("s8/image.json");
    let s8_disk0_tiles = tile_file(&f.path("s8"), 0).to_str().unwrap().to_string();
    let s8_meta_via_dots = f.p("s8/disk3/../image.json");
    let s8_meta_relative = relative_to_working_directory(&f.path("s8/image.json"));
    let via_link = f.p("link-to-disk1/out.png");
    let s8_before = contents(&f.path("s8"));
    check_table(
        BIN.as_ref(),
        &[
            // Input images.
            case(&["store", &missing, "--dir", &new_store], 2, &["missing.png", "No such file"]),
            case(&["store", &truncated, "--dir", &new_store], 2, &["truncated.png", "not a readable image"]),
            case(&["store", &text, "--dir", &new_store], 2, &["text.png"]),
            // Tile sizes, disks, strides.
            case(&["store", &grey, "--tiles", "0", "--dir", &new_store], 2, &["--tiles", "tile size 0"]),
            case(
                &["store", &grey, "--tiles", "101", "--dir", &new_store],
                2,
                &["--tiles", "larger than the 100x80 image"],
            ),
            case(&["store", &grey, "--disks", "0", "--dir", &new_store], 2, &["--disks 0"]),
            case(
                &["store", &grey, "--disks", "8", "--stride", "1", "--dir", &new_store],
                2,
                &["--stride 1", "coprime", "for example 5"],
            ),
            case(&["store", &grey, "--disks", "8", "--stride", "4", "--dir", &new_store], 2, &["--stride 4"]),
            case(
                &["store", &grey, "--disks", "6", "--stride", "5", "--dir", &new_store],
                2,
                &["none exists for D = 6", "s = 2"],
            ),
            // Store directories: missing, a file, unwritable.
            case(&["store", &grey, "--dir", &f.p("nowhere")], 2, &["--dir", "nowhere", "no such directory"]),
            case(&["store", &grey, "--dir", &a_file], 2, &["a_file", "no such directory"]),
            case(&["store", &grey, "--dir", "/proc"], 2, &["/proc/disk0"]),
            case(&["store", &grey, "--name", "../x", "--dir", &new_store], 2, &["--name", "plain file name"]),
            // Reading a store: missing metadata, a missing disk, a tile file of the wrong size
            // or contents, metadata that is not the format's.
            case(&["load", &new_store, "--name", "nothing", "-o", &out], 2, &["nothing.json"]),
            case(&["load", &nodisk, "-o", &out], 2, &["disk3", "is missing"]),
            case(&["load", &short, "-o", &out], 2, &["disk2/image.", ".tiles", "truncated"]),
            case(&["load", &garbage, "-o", &out], 2, &["disk1/image.", ".tiles", "wrong magic"]),
            case(&["load", &badmeta, "-o", &out], 2, &["image.json", "missing field"]),
            // Fields that change the image's meaning without changing the tile files' sizes:
            // sealed by the metadata's checksum, whose low bits are in every tile header.
            case(&["load", &f.p("restrided"), "-o", &out], 2, &["restrided/image.json", "field `checksum`", "stride"]),
            case(&["load", &f.p("widened"), "-o", &out], 2, &["widened/image.json", "field `checksum`", "width"]),
            case(&["gather", "--dir", &f.p("onebit")], 2, &["onebit/image.json", "field `checksum`", "bits"]),
            case(&["median", "--dir", &f.p("onebit")], 2, &["onebit/image.json", "field `checksum`"]),
            case(&["load", &f.p("unsealed"), "-o", &out], 2, &["unsealed/image.json", "unknown field `checksum_`"]),
            case(
                &["load", &f.p("resealed"), "-o", &out],
                2,
                &["resealed/disk0/image.", ".tiles", "header field `seal`", "another image's"],
            ),
            case_on(2, &["median", "--dir", &f.p("resealed")], 2, &["resealed/disk0/image.", "header field `seal`"]),
            // Windows.
            case(
                &["load", &s8, "--window", "90", "0", "20", "10", "-o", &out],
                2,
                &["--window 90 0 20 10", "outside the 100x80 image"],
            ),
            case(&["load", &s8, "--window", "0", "0", "0", "10", "-o", &out], 2, &["--window", "empty"]),
            case(&["load", &s8, "-o", &out_in_missing_dir], 2, &["--out", "does not exist"]),
            // Outputs inside the input store (its directory or a disk directory), however
            // spelled: they could overwrite the store's own files.
            case(&["load", &s8, "-o", &s8_disk0_tiles], 2, &["--out", &s8_disk0_tiles, "inside the store"]),
            case(&["load", &s8, "-o", &s8_meta], 2, &["--out", &s8_meta, "inside the store"]),
            case(&["load", &s8, "-o", &s8_meta_via_dots], 2, &["--out", &s8_meta_via_dots, "inside the store"]),
            case(&["load", &s8, "-o", &s8_meta_relative], 2, &["--out", &s8_meta_relative, "inside the store"]),
            case(&["load", &s8, "-o", &via_link], 2, &["--out", &via_link, "inside the store"]),
            case(&["gather", "--dir", &s8, "-o", &s8_meta], 2, &["--out", &s8_meta, "inside the store"]),
            case_on(2, &["gather", "--dir", &s8, "-o", &s8_disk0_tiles], 2, &["--out", "inside the store"]),
            case(&["gather", "--dir", &s8, "--trace", &s8_meta], 2, &["--trace", &s8_meta, "inside the store"]),
            case(&["median", "--dir", &s8, "--trace", &s8_meta], 2, &["--trace", &s8_meta, "inside the store"]),
            case(&["gather", "--dir", &s8, "--window", "0", "70", "10", "11"], 2, &["--window", "outside"]),
            case(&["gather", "--dir", &srgb], 2, &["gather needs", "24 bits"]),
            // The median: 8-bit only, sizes, a store with a missing disk, no input.
            case(&["median", "--dir", &s16], 2, &["median needs 8-bit", "16 bits"]),
            case(&["median", "--random", "100", "80", "--tiles", "0"], 2, &["--tiles", "tile size 0"]),
            case(&["median", "--random", "100", "80", "--tiles", "300"], 2, &["--tiles", "larger than"]),
            case(&["median", "--random", "0", "80"], 2, &["--random 0 80"]),
            case(&["median", "--random", "100", "80", "--in-flight", "0"], 2, &["--in-flight 0", "1 to 1024"]),
            case(&["median", "--random", "100", "80", "--in-flight", "5000"], 2, &["--in-flight 5000"]),
            case(&["median"], 2, &["--dir", "--random"]),
            // Issue 27: the pixels alone fit; the tiles' own cost does not.
            case(
                &["median", "--random", "65536", "65536", "--tiles", "2"],
                2,
                &["a 65536x65536 image in 1073741824 tiles of 2x2 needs", "of memory", "available"],
            ),
            case_on(2, &["median", "--random", "65536", "65536", "--tiles", "2"], 2, &["1073741824 tiles", "needs"]),
            case(&["median", "--dir", &s8, "--out-name", "image"], 2, &["--out-name", "overwritten"]),
            case(
                &["median", "--random", "100", "80", "--storage", "disk", "--scratch", &f.p("nowhere")],
                2,
                &["--scratch", "no such directory"],
            ),
            case(&["median", "--random", "100", "80", "--map", "0 7"], 2, &["rank"]),
            case(&["median", "--random", "100", "80", "--disk-latency-ms", "-1"], 2, &["--disk-latency-ms -1"]),
            case(&["median", "--random", "100", "80", "--disk-mb-per-s", "NaN"], 2, &["--disk-mb-per-s NaN"]),
            // Issue 27: a rate under a byte a second (once a panic in Duration, or past the
            // simulated clock) is refused with its floor.
            case(
                &["median", "--random", "100", "80", "--disk-mb-per-s", "1e-9"],
                2,
                &["--disk-mb-per-s 0.000000001", "10^-6"],
            ),
            case_on(2, &["median", "--dir", &nodisk], 2, &["disk3", "is missing"]),
            case_on(2, &["median", "--random", "100", "80", "--tiles", "0"], 2, &["tile size 0"]),
            // D = 4 has no stride coprime to it and ∉ {1, 3}: the closest rule, said clearly.
            case(
                &["store", &grey, "--disks", "4", "--tiles", "16", "--dir", &new_store],
                0,
                &["note", "s = 2", "all 8 neighbours"],
            ),
        ],
    );
    let left = leftovers(f.dir.path());
    assert!(left.is_empty(), "files left behind: {left:?}");
    assert!(contents(&f.path("s8")) == s8_before, "the store the refused outputs pointed into has changed");
}

/// Every file under `dir`, with its bytes.
fn contents(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = walk(dir).into_iter().map(|p| (p.clone(), std::fs::read(&p).unwrap())).collect();
    files.sort();
    files
}

/// `--simulate` refusals: each one line, exit 2, before any work.
#[test]
fn bad_simulations_are_refused_once_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let [good, old, elsewhere, missing] = dps_harness::simulate::test_platforms(dir.path());
    let (good, old, elsewhere, missing) = (good.as_str(), old.as_str(), elsewhere.as_str(), missing.as_str());
    let median = ["median", "--random", "64", "64", "--simulate"];
    let no_median = dir.path().join("no-median.toml").to_str().unwrap().to_string();
    let mut p = dps_harness::simulate::made_up_platform();
    p.kernels.retain(|k| k.name != "median");
    p.seal();
    std::fs::write(&no_median, p.to_toml()).unwrap();
    let gather = ["gather", "--random", "64", "64", "--simulate"];
    check_table(
        Path::new(BIN),
        &[
            case(&[&median[..], &["0", "--platform", good]].concat(), 2, &["--simulate 0", "at least one rank"]),
            case(&[&gather[..], &["0", "--platform", good]].concat(), 2, &["--simulate 0"]),
            case(
                &[&median[..], &["2", "--platform", missing]].concat(),
                2,
                &["platform file", "not found", "dps-bench calibrate --out"],
            ),
            case(&[&median[..], &["2", "--platform", old]].concat(), 2, &["made by dps 0.0.0", "dps-bench calibrate"]),
            case(&[&gather[..], &["2", "--platform", elsewhere]].concat(), 2, &["not on this host"]),
            case(
                &[&gather[..], &["2", "--sim-mode", "pdexec", "--platform", good]].concat(),
                2,
                &["--sim-mode pdexec", "dps-filter gather", "linear filters", "--sim-mode de"],
            ),
            case(
                &[&median[..], &["2", "--sim-mode", "noalloc", "--verify", "--platform", good]].concat(),
                2,
                &["--verify", "noalloc", "--sim-mode de"],
            ),
            case(
                &["median", "--dir", dir.path().to_str().unwrap(), "--simulate", "2", "--sim-mode", "noalloc"],
                2,
                &["--dir", "noalloc"],
            ),
            case(
                &[&median[..], &["2", "--sim-mode", "pdexec", "--verify", "--platform", good]].concat(),
                2,
                &["--verify", "pdexec", "--sim-mode de"],
            ),
            case(
                &["median", "--dir", dir.path().to_str().unwrap(), "--simulate", "2", "--sim-mode", "pdexec"],
                2,
                &["--dir", "pdexec", "unfiltered"],
            ),
            case(
                &[&median[..], &["2", "--sim-mode", "pdexec", "--platform", &no_median]].concat(),
                2,
                &["no cost table for kernel 'median'", "dps-bench calibrate"],
            ),
            case(
                &[&gather[..], &["2", "--sim-mode", "noalloc", "--platform", good]].concat(),
                2,
                &["--sim-mode noalloc"],
            ),
            case(&[&median[..], &["2", "--variant", "serial", "--platform", good]].concat(), 2, &["serial"]),
            case(&[&median[..], &["2", "--compare-serial", "--platform", good]].concat(), 2, &["--compare-serial"]),
            case(&["median", "--random", "64", "64", "--sim-mode", "de"], 2, &["--simulate"]),
            case_on(2, &[&gather[..], &["2", "--platform", good]].concat(), 2, &["without mpirun"]),
        ],
    );
}

/// Issue 27: an output rank 0 cannot write ended a 2-rank job only after 10 s (the runtime
/// waited for the other ranks' shutdown); it is now found before the runtime starts.
#[test]
fn an_output_rank_0_cannot_write_ends_a_2_rank_job_within_seconds() {
    let f = Files::new();
    let s8 = f.p("s8");
    std::fs::create_dir(f.path("s8/image-median.json")).unwrap();
    let nowhere = f.p("no/such/dir/x.png");
    for (args, words) in [
        (vec!["gather", "--dir", &s8, "-o", &nowhere], "does not exist"),
        (vec!["median", "--dir", &s8], "is a directory"),
    ] {
        let job = dps_launch::mpirun(2, BIN.as_ref(), &args);
        assert_eq!(job.status.code(), Some(2), "{args:?}: {}", job.stderr);
        assert!(job.stderr.contains(words), "{args:?}: {}", job.stderr);
        assert!(job.elapsed.as_secs_f64() < 5.0, "{args:?} took {:?}", job.elapsed);
    }
}
