//! How a stored image is replaced atomically, on one disk or many: the tile files of each
//! write have names unique to it (its *generation*, `NAME.<16 hex digits>.tiles`), the
//! metadata file `NAME.json` names the generation, and replacing the metadata (one rename)
//! is the commit. A reader trusts only the generation the metadata names, so it sees the old
//! image or the new one, never a mix, whatever fails or is killed; the files of any other
//! generation (the old image's, or a killed writer's) are removed after the next commit.

use std::path::Path;

use super::format::{disk_dirs_in, meta_path, tile_file_name, Generation};

/// Whether `file` (a file name in a disk directory of `dir`) holds tiles of image `name`
/// of a generation other than `keep`: `NAME.<g>.tiles` with g ≠ keep, or the version-1
/// `NAME.tiles`. A name that is also read as another image's file (whose metadata is in
/// `dir`: `A.<g>.tiles` is also the version-1 file of an image called `A.<g>`) is left alone.
fn is_stale(dir: &Path, name: &str, file: &str, keep: Option<Generation>) -> bool {
    let Some(stem) = file.strip_suffix(".tiles") else { return false };
    // Read as a version-1 file, `stem` is its image; read as a generation's file, the image
    // is what precedes the last dot, if 16 hex digits follow it.
    let versioned = stem.rsplit_once('.').and_then(|(image, g)| Some((image, Generation::parse(g)?)));
    let owners: Vec<(&str, Option<Generation>)> =
        std::iter::once((stem, None)).chain(versioned.map(|(image, g)| (image, Some(g)))).collect();
    let ours = owners.iter().find(|(image, _)| *image == name);
    let another_claims = owners.iter().any(|(image, _)| *image != name && meta_path(dir, image).exists());
    matches!(ours, Some((_, g)) if *g != keep) && !another_claims
}

/// The tile file a temporary file of `dps::OutputFile` stands for: `.FILE.XXXXXX.partial`
/// is FILE linked but not yet renamed (left by a writer killed in between).
fn partial_of(file: &str) -> Option<&str> {
    let inner = file.strip_prefix('.')?.strip_suffix(".partial")?;
    Some(inner.rsplit_once('.')?.0)
}

/// Removes every tile file of image `name` in `dir` (on any disk directory) that is not of
/// generation `keep` (the one just committed): the old image's and killed writers' files,
/// and the temporary files a writer killed mid-commit left.
///
/// # Errors
/// The files that could not be removed, with the OS error (the image itself is whole).
pub fn remove_others(dir: &Path, name: &str, keep: Option<Generation>) -> Result<(), String> {
    remove_where(dir, |file| is_stale(dir, name, partial_of(file).unwrap_or(file), keep))
}

/// Removes generation `failed`'s tile files of image `name` (a write that did not commit).
///
/// # Errors
/// As [`remove_others`].
pub fn remove_generation(dir: &Path, name: &str, failed: Generation) -> Result<(), String> {
    let file_name = tile_file_name(name, Some(failed));
    remove_where(dir, |file| file == file_name)
}

fn remove_where(dir: &Path, doomed: impl Fn(&str) -> bool) -> Result<(), String> {
    let mut failures = Vec::new();
    for disk in disk_dirs_in(dir) {
        let Ok(entries) = std::fs::read_dir(&disk) else { continue };
        for entry in entries.flatten() {
            let Ok(file) = entry.file_name().into_string() else { continue };
            if doomed(&file) {
                if let Err(e) = std::fs::remove_file(entry.path()) {
                    failures.push(format!("cannot remove {}: {e}", entry.path().display()));
                }
            }
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_image_s_other_generations_are_stale() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (keep, old) = (Generation(1), Generation(2));
        let stale = |file: &str| is_stale(d, "img", file, Some(keep));
        assert!(!stale(&tile_file_name("img", Some(keep))));
        assert!(stale(&tile_file_name("img", Some(old))));
        assert!(stale("img.tiles"), "the version-1 file");
        assert!(!stale("other.tiles") && !stale(&tile_file_name("other", Some(old))));
        assert!(!stale(&tile_file_name("img.x", Some(old))) && !stale("img.json"));
        let killed = format!(".{}.qeJHX7.partial", tile_file_name("img", Some(old)));
        assert_eq!(partial_of(&killed), Some(tile_file_name("img", Some(old)).as_str()));
        assert_eq!(partial_of("img.tiles"), None);
        // `img.0000000000000002.tiles` is also the version-1 file of an image named
        // `img.0000000000000002`: left alone once that image exists.
        std::fs::write(meta_path(d, &format!("img.{old}")), "{}").unwrap();
        assert!(!stale(&tile_file_name("img", Some(old))));
    }
}
