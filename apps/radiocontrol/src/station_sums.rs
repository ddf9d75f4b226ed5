//! `DATA/stations.sums` (data format 3): the FNV-1a hash of every station file, one line
//! `S{sss}_H{hh}.bin fnv1a64:…` per file, hour-major; the manifest's `stations_hash` is the
//! hash of this file, and its checksum seals that. A station file's samples carry no header,
//! so its name is its only identity: the sums find a file edited, damaged, or swapped with
//! another station's or hour's, before any work (reading every station file once: 1.7 GB
//! at the paper's scale, as the watch files' records already are).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::hash::fnv1a64;

/// Path of the sums file.
pub fn path(dir: &Path) -> PathBuf {
    dir.join("stations.sums")
}

/// The (station, hour) of every line, in order: hour-major.
fn order(stations: usize, hours: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..hours).flat_map(move |h| (0..stations).map(move |s| (s, h)))
}

/// A station file's name, as its line gives it.
fn name(station: usize, hour: usize) -> String {
    format!("S{station:03}_H{hour:02}.bin")
}

/// Path of a station's hourly file.
pub fn station_path(dir: &Path, station: usize, hour: usize) -> PathBuf {
    dir.join("stations").join(name(station, hour))
}

/// Writes the sums of the station files of `stations` stations and `hours` hours, whose
/// hashes `hash(station, hour)` gives, and returns the file's own hash (the manifest's
/// `stations_hash`).
///
/// # Errors
/// A failed write, naming the file.
pub fn write(dir: &Path, stations: usize, hours: usize, hash: impl Fn(usize, usize) -> String) -> Result<String> {
    let text: String = order(stations, hours).map(|(s, h)| format!("{} {}\n", name(s, h), hash(s, h))).collect();
    let p = path(dir);
    std::fs::write(&p, &text).with_context(|| format!("cannot write {}", p.display()))?;
    Ok(fnv1a64(text.as_bytes()))
}

/// Checks the sums file against `want` (the manifest's `stations_hash`) and every station
/// file of `stations` stations and `hours` hours against its line.
///
/// # Errors
/// A [`dps_harness::BadInput`] naming the file: the sums file missing, edited or not the
/// manifest's, or a station file whose samples are not the ones it lists.
pub fn check(dir: &Path, stations: usize, hours: usize, want: &str) -> Result<()> {
    let bad = |msg: String| anyhow::Error::new(dps_harness::BadInput::new(msg));
    let p = path(dir);
    let text = std::fs::read_to_string(&p).map_err(|e| bad(format!("{}: {e}", p.display())))?;
    let have = fnv1a64(text.as_bytes());
    if have != want {
        return Err(bad(format!(
            "{}: its hash {have} is not the manifest's stations_hash {want} (edited, or another data set's)",
            p.display()
        )));
    }
    let mut lines = text.lines();
    for (s, h) in order(stations, hours) {
        let expected = name(s, h);
        let line = lines.next().unwrap_or_default();
        let Some(sum) = line.strip_prefix(&expected).and_then(|rest| rest.strip_prefix(' ')) else {
            return Err(bad(format!("{}: line {line:?}, expected {expected} and its hash", p.display())));
        };
        let file = station_path(dir, s, h);
        let bytes = std::fs::read(&file).map_err(|e| bad(format!("station file {}: {e}", file.display())))?;
        let actual = fnv1a64(&bytes);
        if actual != sum {
            return Err(bad(format!(
                "station file {}: its samples hash to {actual}, not {sum} as {} says (edited, damaged, or another \
                 station's or hour's file)",
                file.display(),
                p.display()
            )));
        }
    }
    Ok(())
}
