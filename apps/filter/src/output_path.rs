//! Output paths kept out of the input store: an output written into the store's directory
//! or one of its disk directories could replace the store's own files (`load -o
//! DIR/image.json`), so every output option is checked against the store before any work.
//! Paths are compared once resolved: relative paths, `..` and symlinks (to the store, to a
//! disk directory, or a disk directory that is itself a symlink elsewhere).

use std::path::{Path, PathBuf};

use anyhow::Result;
use dps_harness::bad_input;

use crate::store::disk_dirs_in;

/// Refuses `path` (the value of `option`) if it lands inside the store `dir` or any of its
/// disk directories (every `disk<k>` in it, wherever it points: what an image of any disk
/// count could use).
///
/// # Errors
/// A [`dps_harness::BadInput`] naming the option, the path and the store.
pub fn check_outside_store(option: &str, path: &Path, dir: &Path) -> Result<()> {
    let places = where_written(path);
    let roots = std::iter::once(dir.to_path_buf()).chain(disk_dirs_in(dir));
    for (i, root) in roots.enumerate() {
        let Ok(resolved) = root.canonicalize() else { continue };
        if places.iter().any(|p| p.starts_with(&resolved)) {
            let place = match i {
                0 => format!("the store {}", dir.display()),
                _ => format!("the disk directory {} of the store {}", root.display(), dir.display()),
            };
            bad_input!(
                "{option} {}: is inside {place}, whose files it could overwrite; write it outside the store",
                path.display()
            );
        }
    }
    Ok(())
}

/// [`check_outside_store`] for each output option given (`outputs`: the option and its
/// path, if any), when the input is a store (`dir`).
///
/// # Errors
/// As [`check_outside_store`], for the first output inside the store.
pub fn check_outputs_outside_store(dir: Option<&Path>, outputs: &[(&str, Option<&Path>)]) -> Result<()> {
    let Some(dir) = dir else { return Ok(()) };
    for (option, path) in outputs {
        if let Some(path) = path {
            check_outside_store(option, path, dir)?;
        }
    }
    Ok(())
}

/// Where writing `path` may land, resolved: the file in its directory (the directory's
/// path resolved, `..` and symlinks included) and, if the path exists, what it resolves to
/// (a symlink's target, a directory named `..`). Nothing for a path whose directory does not
/// exist: the output's own check reports that.
fn where_written(path: &Path) -> Vec<PathBuf> {
    let mut places = Vec::new();
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if let (Ok(dir), Some(name)) = (parent.canonicalize(), path.file_name()) {
        places.push(dir.join(name));
    }
    if let Ok(target) = path.canonicalize() {
        places.push(target);
    }
    places
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_into_the_store_are_refused_however_spelled() {
        let top = tempfile::tempdir().unwrap();
        let store = top.path().join("store");
        let elsewhere = top.path().join("elsewhere");
        std::fs::create_dir_all(store.join("disk0")).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        // Disk 1 is a symlink to a directory outside the store.
        std::os::unix::fs::symlink(&elsewhere, store.join("disk1")).unwrap();
        std::os::unix::fs::symlink(store.join("disk0"), top.path().join("link-to-disk0")).unwrap();
        let refused = |p: PathBuf| check_outside_store("-o", &p, &store).unwrap_err().to_string();
        assert!(refused(store.join("image.json")).contains("-o"));
        assert!(refused(store.join("disk0/image.tiles")).contains("inside the store"));
        assert!(refused(top.path().join("elsewhere/../store/disk0/../image.json")).contains("image.json"));
        assert!(refused(top.path().join("link-to-disk0/image.tiles")).contains("inside the store"));
        assert!(refused(elsewhere.join("x.tiles")).contains("the disk directory"), "disk 1 is where its link points");
        assert!(refused(store.join("disk0/..")).contains("inside the store"));
        check_outside_store("-o", &top.path().join("out.png"), &store).unwrap();
        check_outside_store("-o", &top.path().join("no/such/dir/out.png"), &store).unwrap();
        // Relative to the working directory.
        let relative = pathdiff(&store.join("image.json"));
        assert!(relative.is_relative());
        assert!(check_outside_store("-o", &relative, &store).is_err());
    }

    /// `path` relative to the working directory (through `..` from it).
    fn pathdiff(path: &Path) -> PathBuf {
        let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
        let ups = cwd.components().count() - 1;
        let mut rel = PathBuf::new();
        for _ in 0..ups {
            rel.push("..");
        }
        rel.join(path.canonicalize().unwrap_or(path.to_path_buf()).strip_prefix("/").unwrap())
    }
}
