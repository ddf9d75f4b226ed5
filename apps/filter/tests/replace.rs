//! Replacing a stored image is atomic: a write that fails mid-way (one disk's file cannot be
//! written, or cannot be renamed into place) leaves the old image loading byte for byte, and
//! ends the command with one line naming the file and the OS error: exit 1, no panic.
//!
//! The failures are the operating system's own, caused from outside the program (tests run
//! as root, so permission bits would not stop a write):
//! - `median`: each rank runs under a file-size limit (`ulimit -f`) that the largest disk's
//!   output file exceeds, so its write fails with EFBIG ("File too large"), on 2 ranks;
//! - `store`: `strace` makes the 4th rename fail with ENOSPC ("No space left on device"), or
//!   kills the process there: the commit of the 4th of 4 disks' files, after the first three
//!   were renamed into place.

use std::path::Path;
use std::process::Command;

use dps_launch::Job;

const BIN: &str = env!("CARGO_BIN_EXE_dps-filter");

fn grey_png(path: &Path, w: u32, h: u32, seed: u32) {
    image::GrayImage::from_fn(w, h, |x, y| image::Luma([((x * 7 + y * 13) * seed % 251) as u8])).save(path).unwrap();
}

fn ok(out: std::process::Output, what: &str) {
    assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
}

fn store(png: &Path, dir: &Path, tiles: &str, disks: &str) {
    let out = Command::new(BIN)
        .args(["store", png.to_str().unwrap(), "--tiles", tiles, "--disks", disks, "--dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    ok(out, "store");
}

/// The stored image `name` as PNG bytes (`load`, whole image).
fn load(dir: &Path, name: &str, scratch: &Path) -> Vec<u8> {
    let png = scratch.join(format!("{name}.png"));
    let out = Command::new(BIN)
        .args(["load", dir.to_str().unwrap(), "--name", name, "-o", png.to_str().unwrap()])
        .output()
        .unwrap();
    ok(out, "load");
    std::fs::read(png).unwrap()
}

/// Every file under the store, with its bytes.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(snapshot(&path));
        } else {
            files.push((path.display().to_string(), std::fs::read(&path).unwrap()));
        }
    }
    files.sort();
    files
}

/// The lines of the command's own error messages: exactly one, and no panic.
fn one_error_line(stderr: &str) -> String {
    assert!(!stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"), "a panic:\n{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("dps-filter")).collect();
    assert_eq!(lines.len(), 1, "one error line expected:\n{stderr}");
    lines[0].to_string()
}

#[test]
fn median_replacing_its_output_when_one_disk_s_write_fails_keeps_the_old_output_on_1_and_2_ranks() {
    let top = tempfile::tempdir().unwrap();
    let (dir, scratch) = (top.path().join("store"), top.path().join("scratch"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&scratch).unwrap();
    // 150×140 in tiles of 32 on 4 disks (s = 2): 8, 5, 7 and 5 tiles, so disk 0's file is the
    // largest, and the only one over the limit below.
    let png = scratch.join("in.png");
    grey_png(&png, 150, 140, 1);
    store(&png, &dir, "32", "4");
    let d = dir.to_str().unwrap();
    let first = Job::new(BIN).ranks(2).args(["median", "--dir", d]).output().unwrap();
    assert!(first.status.success(), "{}", first.stderr);
    let old = load(&dir, "image-median", &scratch);
    // A new input, whose median differs: the next median replaces image-median.
    grey_png(&png, 150, 140, 3);
    store(&png, &dir, "32", "4");
    let before = snapshot(&dir);
    // The input's tile files (the output's are the same sizes, disk by disk).
    let mut sizes: Vec<u64> = (0..4)
        .flat_map(|k| std::fs::read_dir(dir.join(format!("disk{k}"))).unwrap())
        .map(|f| f.unwrap())
        .filter(|f| f.file_name().to_string_lossy().starts_with("image."))
        .map(|f| f.metadata().unwrap().len())
        .collect();
    sizes.sort();
    let (largest, next) = (sizes[sizes.len() - 1], sizes[sizes.len() - 2]);
    let blocks = next.div_ceil(512); // `ulimit -f` counts 512-byte blocks
    assert!(blocks * 512 < largest, "the largest disk's file alone must be over the limit: {sizes:?}");
    // Each rank is a shell that sets the limit and ignores SIGXFSZ (so that the write fails
    // with EFBIG instead of killing the process), then becomes dps-filter.
    let limited = format!("ulimit -f {blocks} && trap '' XFSZ && exec \"$0\" \"$@\"");
    for ranks in [1, 2] {
        let failed = Job::new("/bin/sh")
            .ranks(ranks)
            .env("OMPI_MCA_btl", "self,tcp") // no shared-memory segment, sized over the limit
            .args(["-c", &limited, BIN, "median", "--dir", d])
            .timeout_s(120)
            .output()
            .unwrap();
        assert!(!failed.timed_out(), "{ranks} ranks: {}", failed.stderr);
        assert_eq!(failed.status.code(), Some(1), "{ranks} ranks: {}", failed.stderr);
        let line = one_error_line(&failed.stderr);
        assert!(line.contains("disk0/image-median.") && line.contains("File too large"), "{ranks} ranks: {line}");
        assert!(load(&dir, "image-median", &scratch) == old, "{ranks} ranks: not the old output, byte for byte");
        assert!(snapshot(&dir) == before, "{ranks} ranks: a file of the failed write is left, or an old one changed");
    }
}

/// A store on 4 disks holding an image (`old`, its bytes as `load` writes them), and a
/// second image (`new_png`) to replace it with; `top` holds them all.
struct Stored {
    top: tempfile::TempDir,
    dir: std::path::PathBuf,
    scratch: std::path::PathBuf,
    new_png: std::path::PathBuf,
    old: Vec<u8>,
}

fn stored_on_4_disks() -> Stored {
    let top = tempfile::tempdir().unwrap();
    let (dir, scratch) = (top.path().join("store"), top.path().join("scratch"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&scratch).unwrap();
    let (old_png, new_png) = (scratch.join("old.png"), scratch.join("new.png"));
    grey_png(&old_png, 100, 90, 1);
    grey_png(&new_png, 100, 90, 5);
    store(&old_png, &dir, "32", "4");
    let old = load(&dir, "image", &scratch);
    Stored { top, dir, scratch, new_png, old }
}

/// `store` of `png` into `dir` on 4 disks, with `strace` doing `what` (`error=...`,
/// `signal=KILL`) to its 4th rename. Every tile file and the metadata are renamed into place
/// once written: the 4th rename is disk 3's (the last disk's) tile file, after disks 0-2
/// were committed.
fn store_with_4th_rename(png: &Path, dir: &Path, what: &str) -> std::process::Output {
    let renames = "rename,renameat,renameat2";
    Command::new("timeout")
        .args(["-k", "5", "60", "strace", "-f", "-o", "/dev/null", "-e"])
        .arg(format!("trace={renames}"))
        .arg("-e")
        .arg(format!("inject={renames}:{what}:when=4"))
        .args([BIN, "store", png.to_str().unwrap(), "--tiles", "32", "--disks", "4", "--dir"])
        .arg(dir)
        .output()
        .expect("strace is needed (scripts/setup.sh installs it)")
}

#[test]
fn store_replacing_an_image_when_one_disk_s_commit_fails_keeps_the_old_image() {
    let Stored { top: _top, dir, scratch, new_png, old } = stored_on_4_disks();
    let before = snapshot(&dir);
    let failed = store_with_4th_rename(&new_png, &dir, "error=ENOSPC");
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(failed.status.code(), Some(1), "{stderr}");
    let line = one_error_line(&stderr);
    assert!(line.contains("disk3/image.") && line.contains("No space left on device"), "{line}");
    assert!(load(&dir, "image", &scratch) == old, "not the old image, byte for byte");
    assert!(snapshot(&dir) == before, "no file of the failed write is left, none of the old changed");
}

#[test]
fn store_killed_mid_commit_leaves_the_old_image_and_the_next_store_removes_its_files() {
    let Stored { top: _top, dir, scratch, new_png, old } = stored_on_4_disks();
    let killed = store_with_4th_rename(&new_png, &dir, "signal=KILL");
    assert!(!killed.status.success(), "the store was not killed");
    assert!(load(&dir, "image", &scratch) == old, "not the old image, byte for byte");
    // The next store of the name commits and removes the killed one's files and the old ones.
    store(&new_png, &dir, "32", "4");
    let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("image.json")).unwrap()).unwrap();
    let generation = meta["generation"].as_str().unwrap();
    for k in 0..4 {
        let files: Vec<String> = std::fs::read_dir(dir.join(format!("disk{k}")))
            .unwrap()
            .map(|f| f.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(files, [format!("image.{generation}.tiles")], "disk {k}");
    }
    let new = load(&dir, "image", &scratch);
    assert!(new != old);
}

/// A file system of 256 KiB (a tmpfs mounted for the test; root is needed, as for the other
/// tests of this file), unmounted when dropped.
struct SmallFileSystem(tempfile::TempDir);

impl SmallFileSystem {
    fn mount() -> SmallFileSystem {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount").args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"]).arg(dir.path()).status();
        assert!(status.is_ok_and(|s| s.success()), "mount -t tmpfs (as root) is needed for this test");
        SmallFileSystem(dir)
    }
}

impl Drop for SmallFileSystem {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

/// Issue 27: free space is checked before a store is written, with the figure: an image whose
/// tile files do not fit is refused (exit 2) before any file is written, and the image
/// already stored there stays whole.
#[test]
fn a_store_larger_than_its_file_system_is_refused_before_writing() {
    let small = SmallFileSystem::mount();
    let (dir, scratch) = (small.0.path(), tempfile::tempdir().unwrap());
    let (old_png, big_png) = (scratch.path().join("old.png"), scratch.path().join("big.png"));
    grey_png(&old_png, 100, 90, 1);
    grey_png(&big_png, 600, 600, 3); // 360 KB of tiles, on 4 disks of one 256 KiB tmpfs
    store(&old_png, dir, "32", "4");
    store(&old_png, dir, "32", "4"); // a second generation of the old one fits: the first goes after its commit
    let before = snapshot(dir);
    let old = load(dir, "image", scratch.path());
    let refused = Command::new(BIN)
        .args(["store", big_png.to_str().unwrap(), "--tiles", "32", "--disks", "4", "--dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    let line = one_error_line(&stderr);
    assert!(line.contains("needs") && line.contains("of disk space") && line.contains("free"), "{line}");
    assert!(snapshot(dir) == before, "nothing written");
    assert!(load(dir, "image", scratch.path()) == old);
}
