//! The data set on disk (§2.10), its checks, and its ground truth (`truth.csv`) as `--verify` reads it.
//!
//! ```text
//! DATA/radio.json              manifest: sizes, seed, data-set id, truth.csv's and
//!                              stations.sums' hashes, and a checksum over them (written
//!                              last by `generate`)
//! DATA/stations.sums           every station file's hash (crate::station_sums)
//! DATA/stations/S{sss}_H{hh}.bin   60 station minute records of 60,000 B (30,000 i16 LE at 3 kHz)
//! DATA/watches/W{wwww}.bin     1440 watch minute records of 95 B, in minute-of-day order
//! DATA/truth.csv               the generator's ground truth, one line per watch minute
//! ```
//!
//! Watch record (95 B): `u16` minute of day, `u8` flags (bit 0 = worn), `i8` temperature,
//! `f32` scale, 7 reserved bytes, 80 `u8` log energies (one per 50 ms). The fields that
//! change what the record means are checked on every read: the minute, the flags (no bit
//! but bit 0), the scale (1.0: the log energies are used as stored) and the reserved bytes
//! (0). The temperature is carried but not used (no drift correction).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::kernel::{STATION_SAMPLES, WATCH_BLOCKS};

/// Bytes of a station minute record (eq. 9-1: 10 s × 3 kHz × 2 B).
pub const STATION_RECORD: usize = STATION_SAMPLES * 2;
/// Minutes per hour.
pub const MINUTES: usize = 60;
/// Bytes of an hourly station file (eq. 9-2).
pub const STATION_FILE: u64 = (STATION_RECORD * MINUTES) as u64;
/// Bytes of a watch minute record (eq. 9-4).
pub const WATCH_RECORD: usize = 95;
/// Watch minute records per day.
pub const DAY_MINUTES: usize = 24 * MINUTES;
/// Bytes of a daily watch file (eq. 9-5).
pub const WATCH_FILE: u64 = (WATCH_RECORD * DAY_MINUTES) as u64;
/// Byte offset of the log energies in a watch record.
const ENVELOPE_AT: usize = 15;
/// The manifest's format tag written: version 3, sealed by its `checksum`, with every
/// station file's hash in `stations.sums`.
pub const FORMAT: &str = "dps-radiocontrol data 3";
/// Version 2 (sealed, no `stations_hash`), still read.
pub const FORMAT_2: &str = "dps-radiocontrol data 2";
/// The first version's tag (no `truth_hash`, no `checksum`), still read.
pub const FORMAT_1: &str = "dps-radiocontrol data 1";
/// Largest sizes accepted (the watch file names have 4 digits, the station names 3).
pub const MAX_WATCHES: usize = 10_000;
/// See [`MAX_WATCHES`].
pub const MAX_STATIONS: usize = 1_000;

/// `DATA/radio.json`. Unknown fields are refused; from format 2 `checksum` seals every
/// other field, and `truth_hash` binds `truth.csv` to them; from format 3 `stations_hash`
/// binds `stations.sums`, which holds every station file's hash.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// [`FORMAT`].
    pub format: String,
    /// Watches (files `W0000.bin` …).
    pub watches: usize,
    /// Radio stations.
    pub stations: usize,
    /// Hours of the day that have station files and results (0..hours).
    pub hours: usize,
    /// Generator seed (0 for recorded data).
    pub seed: u64,
    /// Identifies the data set: a result file records it and refuses another.
    pub dataset_id: u64,
    /// `fnv1a64:` and 16 hex digits: FNV-1a of `truth.csv`'s bytes (format 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truth_hash: Option<String>,
    /// `fnv1a64:` and 16 hex digits: FNV-1a of `stations.sums` (format 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stations_hash: Option<String>,
    /// `fnv1a64:` and 16 hex digits: FNV-1a of every field above (from format 2; see
    /// [`Manifest::seal`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
}

pub use crate::hash::fnv1a64;

impl Manifest {
    /// The manifest of a data set about to be generated (format 2, not sealed yet: see
    /// [`sealed`](Self::sealed)).
    pub fn new(watches: usize, stations: usize, hours: usize, seed: u64, dataset_id: u64) -> Manifest {
        let format = FORMAT.into();
        Manifest {
            format,
            watches,
            stations,
            hours,
            seed,
            dataset_id,
            truth_hash: None,
            stations_hash: None,
            checksum: None,
        }
    }

    /// The text the checksum is FNV-1a of: `FORMAT: watches W stations S hours H seed N
    /// dataset_id I truth T`, and ` stations H` in format 3.
    pub fn seal(&self) -> String {
        let truth = self.truth_hash.as_deref().unwrap_or_default();
        let mut text = format!(
            "{}: watches {} stations {} hours {} seed {} dataset_id {} truth {truth}",
            self.format, self.watches, self.stations, self.hours, self.seed, self.dataset_id
        );
        if let Some(stations) = &self.stations_hash {
            text += &format!(" stations {stations}");
        }
        fnv1a64(text.as_bytes())
    }

    /// The same manifest in the current format, sealed, with `truth.csv`'s and
    /// `stations.sums`' hashes.
    pub fn sealed(&self, truth_hash: String, stations_hash: String) -> Manifest {
        let mut m = Manifest {
            format: FORMAT.into(),
            truth_hash: Some(truth_hash),
            stations_hash: Some(stations_hash),
            ..self.clone()
        };
        m.checksum = Some(m.seal());
        m
    }

    /// Reads and checks the manifest of the data set in `dir` (its files unchecked: see
    /// [`DataSet::open`]).
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`] naming the file: missing, unreadable, or as [`Manifest::parse`].
    pub fn read(dir: &Path) -> Result<Manifest> {
        let bad = |m: String| anyhow::Error::new(dps_harness::BadInput::new(m));
        let path = manifest_path(dir);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            bad(format!("{}: {e} (not a data set written by `dps-radiocontrol generate`?)", path.display()))
        })?;
        Manifest::parse(&text).map_err(|e| bad(format!("{}: {e}", path.display())))
    }

    /// Parses and checks `radio.json`'s text: fields, format, sizes, checksum.
    ///
    /// # Errors
    /// What is wrong, naming the field.
    pub fn parse(text: &str) -> Result<Manifest, String> {
        let m: Manifest = serde_json::from_str(text).map_err(|e| e.to_string())?;
        m.check()?;
        let format = m.format.as_str();
        match (&m.truth_hash, &m.stations_hash, &m.checksum) {
            (None, None, None) if format == FORMAT_1 => {}
            _ if format == FORMAT_1 => {
                return Err(format!(
                    "format {FORMAT_1:?} has no \"truth_hash\", \"stations_hash\" or \"checksum\" field"
                ))
            }
            (_, Some(_), _) if format == FORMAT_2 => {
                return Err(format!("format {FORMAT_2:?} has no \"stations_hash\" field"))
            }
            (None, _, _) => return Err(format!("missing field `truth_hash` (format {format:?})")),
            (_, None, _) if format == FORMAT => {
                return Err(format!("missing field `stations_hash` (format {FORMAT:?})"))
            }
            (_, _, None) => return Err(format!("missing field `checksum` (format {format:?})")),
            (_, _, Some(sum)) if *sum != m.seal() => {
                return Err(format!(
                    "field `checksum` {sum:?} does not match the fields it seals (watches, stations, hours, \
                     seed, dataset_id, truth_hash, stations_hash: one was edited or damaged)"
                ))
            }
            _ => {}
        }
        Ok(m)
    }

    /// Jobs of the run: one per (hour, station).
    pub fn jobs(&self) -> usize {
        self.hours * self.stations
    }

    /// The (hour, station) of job `j`: hour-major (§2.6).
    pub fn job(&self, j: usize) -> (usize, usize) {
        (j / self.stations, j % self.stations)
    }

    /// Checks the sizes.
    ///
    /// # Errors
    /// A message naming the field out of range.
    pub fn check(&self) -> Result<(), String> {
        if ![FORMAT, FORMAT_2, FORMAT_1].contains(&self.format.as_str()) {
            return Err(format!("format {:?} is not {FORMAT:?}, {FORMAT_2:?} or {FORMAT_1:?}", self.format));
        }
        if !(1..=MAX_WATCHES).contains(&self.watches) {
            return Err(format!("watches {} must be between 1 and {MAX_WATCHES}", self.watches));
        }
        if !(1..=MAX_STATIONS).contains(&self.stations) {
            return Err(format!("stations {} must be between 1 and {MAX_STATIONS}", self.stations));
        }
        if !(1..=24).contains(&self.hours) {
            return Err(format!("hours {} must be between 1 and 24", self.hours));
        }
        Ok(())
    }
}

/// A watch minute record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WatchRecord {
    /// Minute of the day, 0..1440.
    pub minute: u16,
    /// Bit 0: the watch was worn (the record is valid).
    pub flags: u8,
    /// Temperature (°C), for the drift correction.
    pub temperature: i8,
    /// The 80 log energies.
    pub envelope: [u8; WATCH_BLOCKS],
}

impl WatchRecord {
    /// True if the watch was worn.
    pub fn valid(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The record's 95 bytes.
    pub fn encode(&self) -> [u8; WATCH_RECORD] {
        let mut b = [0u8; WATCH_RECORD];
        b[0..2].copy_from_slice(&self.minute.to_le_bytes());
        b[2] = self.flags;
        b[3] = self.temperature as u8;
        b[4..8].copy_from_slice(&1.0f32.to_le_bytes());
        b[ENVELOPE_AT..].copy_from_slice(&self.envelope);
        b
    }

    /// Reads a record, which must be minute `minute` of the day.
    ///
    /// # Errors
    /// A message naming the field if the record's minute is not `minute` (a file out of order
    /// or not a watch file), or its flags, scale or reserved bytes are not what this
    /// implementation reads.
    pub fn decode(b: &[u8; WATCH_RECORD], minute: usize) -> Result<WatchRecord, String> {
        let m = u16::from_le_bytes([b[0], b[1]]);
        if usize::from(m) != minute {
            return Err(format!("record {minute} says it is minute {m}"));
        }
        if b[2] > 1 {
            return Err(format!("record {minute}: flags {:#04x} has bits other than bit 0 (worn)", b[2]));
        }
        let scale = f32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        if scale != 1.0 {
            return Err(format!("record {minute}: scale {scale} is not 1 (the log energies are read as stored)"));
        }
        if b[8..ENVELOPE_AT].iter().any(|&r| r != 0) {
            return Err(format!("record {minute}: reserved bytes 8..15 are not 0"));
        }
        let envelope: [u8; WATCH_BLOCKS] = b[ENVELOPE_AT..].try_into().expect("80 bytes");
        Ok(WatchRecord { minute: m, flags: b[2], temperature: b[3] as i8, envelope })
    }
}

pub use crate::station_sums::station_path;

/// Path of a watch's daily file.
pub fn watch_path(dir: &Path, watch: usize) -> PathBuf {
    dir.join("watches").join(format!("W{watch:04}.bin"))
}

/// Path of the manifest.
pub fn manifest_path(dir: &Path) -> PathBuf {
    dir.join("radio.json")
}

/// Path of the ground truth.
pub fn truth_path(dir: &Path) -> PathBuf {
    dir.join("truth.csv")
}

/// What a watch minute heard.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Truth {
    /// Not worn.
    Off,
    /// Ambient noise only.
    Noise,
    /// Station `station` at offset `lag` ms.
    Listen {
        /// The station.
        station: usize,
        /// τ0 in ms.
        lag: usize,
    },
}

/// An opened data set whose files were all checked.
#[derive(Clone, Debug)]
pub struct DataSet {
    /// Its directory.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
}

impl DataSet {
    /// Opens `dir`: reads the manifest and checks that every station and watch file exists
    /// with its exact size, every watch record's minute, and (format 3) every station
    /// file's hash, before any work.
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`] naming the file: missing, unreadable, wrong size, or a
    /// manifest that does not parse or is out of range.
    pub fn open(dir: &Path) -> Result<DataSet> {
        let bad = |m: String| anyhow::Error::new(dps_harness::BadInput::new(m));
        let manifest = Manifest::read(dir)?;
        let check = |path: PathBuf, size: u64, what: &str| -> Result<()> {
            let meta = std::fs::metadata(&path).map_err(|e| bad(format!("{what} {}: {e}", path.display())))?;
            if meta.len() != size {
                return Err(bad(format!(
                    "{what} {} has {} bytes, not {size}: truncated or not a {what}",
                    path.display(),
                    meta.len()
                )));
            }
            File::open(&path).map_err(|e| bad(format!("{what} {}: {e}", path.display())))?;
            Ok(())
        };
        for w in 0..manifest.watches {
            let path = watch_path(dir, w);
            check(path.clone(), WATCH_FILE, "watch file")?;
            // Every record's key field too (1.4 GB at the paper's scale, read in seconds): a
            // record of the wrong minute is bad input now, not a failure hours into the run.
            let bytes = std::fs::read(&path).map_err(|e| bad(format!("watch file {}: {e}", path.display())))?;
            for (minute, record) in bytes.chunks_exact(WATCH_RECORD).enumerate() {
                let record: &[u8; WATCH_RECORD] = record.try_into().expect("chunks of a record");
                WatchRecord::decode(record, minute).map_err(|e| bad(format!("watch file {}: {e}", path.display())))?;
            }
        }
        for h in 0..manifest.hours {
            for s in 0..manifest.stations {
                check(station_path(dir, s, h), STATION_FILE, "station file")?;
            }
        }
        if let Some(want) = &manifest.stations_hash {
            crate::station_sums::check(dir, manifest.stations, manifest.hours, want)?;
        }
        Ok(DataSet { dir: dir.to_path_buf(), manifest })
    }

    /// Reads a station's hourly file: 60 × 30,000 samples.
    ///
    /// # Errors
    /// An I/O error naming the file (it was checked at the start; it changed since).
    pub fn read_station_hour(&self, station: usize, hour: usize) -> Result<Vec<i16>> {
        let path = station_path(&self.dir, station, hour);
        let bytes = std::fs::read(&path).with_context(|| format!("cannot read station file {}", path.display()))?;
        if bytes.len() as u64 != STATION_FILE {
            anyhow::bail!("station file {} has {} bytes, not {STATION_FILE}", path.display(), bytes.len());
        }
        Ok(bytes.chunks_exact(2).map(|p| i16::from_le_bytes([p[0], p[1]])).collect())
    }

    /// Reads the hour's 60 records of every watch (step 1 of §2.4: one seek and one
    /// 5,700 B read per watch), minute-major: index `minute * watches + watch`.
    ///
    /// # Errors
    /// An I/O error or a record out of order, naming the file.
    pub fn read_watch_hour(&self, hour: usize) -> Result<Vec<WatchRecord>> {
        let n = self.manifest.watches;
        let mut out =
            vec![WatchRecord { minute: 0, flags: 0, temperature: 0, envelope: [0; WATCH_BLOCKS] }; n * MINUTES];
        let mut block = vec![0u8; WATCH_RECORD * MINUTES];
        for w in 0..n {
            let path = watch_path(&self.dir, w);
            let mut read = || -> std::io::Result<()> {
                let mut f = File::open(&path)?;
                f.seek(SeekFrom::Start((hour * MINUTES * WATCH_RECORD) as u64))?;
                f.read_exact(&mut block)
            };
            read().with_context(|| format!("cannot read watch file {}", path.display()))?;
            for m in 0..MINUTES {
                let rec: &[u8; WATCH_RECORD] = block[m * WATCH_RECORD..][..WATCH_RECORD].try_into().expect("95 B");
                out[m * n + w] = WatchRecord::decode(rec, hour * MINUTES + m)
                    .map_err(|e| anyhow::anyhow!("watch file {}: {e}", path.display()))?;
            }
        }
        Ok(out)
    }
}

/// The first line of `truth.csv`.
pub const TRUTH_HEADER: &str = "watch,minute,kind,station,lag";

/// Reads `truth.csv` of `data`: (watch, minute of day, truth) per line, each checked against
/// the data set: its hash against the manifest's `truth_hash` (format 2), the header, every
/// line's fields in range, and every worn or generated watch minute of the data set's hours
/// exactly once.
///
/// # Errors
/// A message naming the file (and the line or field).
pub fn read_truth(data: &DataSet) -> Result<Vec<(usize, usize, Truth)>> {
    let (m, path) = (&data.manifest, truth_path(&data.dir));
    let bytes = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    if let Some(want) = &m.truth_hash {
        let have = fnv1a64(&bytes);
        if have != *want {
            anyhow::bail!(
                "{}: its hash {have} is not the manifest's truth_hash {want} (edited, or another data set's)",
                path.display()
            );
        }
    }
    let text = String::from_utf8(bytes).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, TRUTH_HEADER)) => {}
        other => anyhow::bail!(
            "{}:1: header {:?}, expected {TRUTH_HEADER:?}",
            path.display(),
            other.map(|(_, l)| l).unwrap_or_default()
        ),
    }
    let mut seen = vec![false; m.watches * m.hours * MINUTES];
    let truth = lines
        .map(|(i, line)| {
            let at = || format!("{}:{}", path.display(), i + 1);
            let (w, minute, t) = parse_truth_line(line).with_context(at)?;
            let station_ok = |s: usize, lag: usize| s < m.stations && lag < crate::kernel::LAGS;
            if w >= m.watches || minute >= m.hours * MINUTES {
                anyhow::bail!("{}: watch {w} minute {minute} is outside the data set", at());
            }
            if let Truth::Listen { station, lag } = t {
                if !station_ok(station, lag) {
                    anyhow::bail!("{}: station {station} lag {lag} is outside the data set", at());
                }
            }
            if std::mem::replace(&mut seen[minute * m.watches + w], true) {
                anyhow::bail!("{}: watch {w} minute {minute} appears twice", at());
            }
            Ok((w, minute, t))
        })
        .collect::<Result<Vec<_>>>()?;
    if let Some(i) = seen.iter().position(|s| !s) {
        anyhow::bail!("{}: no line for watch {} minute {}", path.display(), i % m.watches, i / m.watches);
    }
    Ok(truth)
}

/// Parses one line of `truth.csv`.
///
/// # Errors
/// A message saying what is wrong.
pub fn parse_truth_line(line: &str) -> Result<(usize, usize, Truth)> {
    let f: Vec<&str> = line.split(',').collect();
    let [w, minute, kind, station, lag] = f[..] else { anyhow::bail!("expected 5 fields, found {}", f.len()) };
    let (w, minute) = (w.parse()?, minute.parse()?);
    let t = match kind {
        "off" | "noise" if !station.is_empty() || !lag.is_empty() => {
            anyhow::bail!("kind {kind} has a station or lag ({station:?}, {lag:?}): they must be empty")
        }
        "off" => Truth::Off,
        "noise" => Truth::Noise,
        "listen" => Truth::Listen { station: station.parse()?, lag: lag.parse()? },
        other => anyhow::bail!("unknown kind {other:?}"),
    };
    Ok((w, minute, t))
}
