//! The result file `OUT/results.bin`: a header naming the data set, then one self-checking
//! record per job, in job order (hour-major), appended as jobs complete.
//!
//! ```text
//! header (64 B):  "DPSRADIO" | u32 version = 1 | u32 header bytes = 64 | u64 data-set id
//!                 | u32 watches | u32 stations | u32 hours | u32 jobs | 20 B zero | u32 CRC-32 of bytes 0..60
//! record j:       u32 magic "RCJB" | u32 job j | u16 hour | u16 station | u32 payload bytes = 60·W·8
//!                 | payload | u32 CRC-32 of the record's bytes before it
//! payload:        60·W result records of 8 B (§2.10), minute-major (index minute·W + watch):
//!                 f32 max r | u16 lag (ms) | u16 flags (1 = watch not worn, 2 = flat signal)
//! ```
//! All numbers little-endian. A run opening an existing file checks the header (another
//! data set is refused), reads the records in order and cuts the file after the last one
//! that is complete, in order and whose checksum holds (a torn record from a killed run),
//! then resumes with the next job.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::data::{Manifest, MINUTES};
use crate::kernel::Match;

/// Bytes of the header.
pub const HEADER: usize = 64;
const MAGIC: &[u8; 8] = b"DPSRADIO";
const VERSION: u32 = 1;
const RECORD_MAGIC: u32 = u32::from_le_bytes(*b"RCJB");
/// Bytes of a record before its payload.
const RECORD_HEAD: usize = 16;
/// Bytes of one result (eq. 9-7).
pub const RESULT: usize = 8;

/// The header's contents.
pub fn header(m: &Manifest) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[0..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&(HEADER as u32).to_le_bytes());
    h[16..24].copy_from_slice(&m.dataset_id.to_le_bytes());
    for (i, v) in [m.watches, m.stations, m.hours, m.jobs()].into_iter().enumerate() {
        h[24 + 4 * i..28 + 4 * i].copy_from_slice(&(v as u32).to_le_bytes());
    }
    let crc = crc32fast::hash(&h[..60]);
    h[60..64].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Payload bytes of a job's record.
pub fn payload_len(watches: usize) -> usize {
    MINUTES * watches * RESULT
}

/// Bytes of a whole record.
pub fn record_len(watches: usize) -> usize {
    RECORD_HEAD + payload_len(watches) + 4
}

/// Encodes a job's matches (minute-major) as its payload.
pub fn encode_payload(matches: &[Match]) -> Vec<u8> {
    let mut out = Vec::with_capacity(matches.len() * RESULT);
    for m in matches {
        out.extend_from_slice(&m.r.to_le_bytes());
        out.extend_from_slice(&m.lag.to_le_bytes());
        out.extend_from_slice(&m.flags.to_le_bytes());
    }
    out
}

/// Decodes a payload.
pub fn decode_payload(bytes: &[u8]) -> Vec<Match> {
    bytes
        .chunks_exact(RESULT)
        .map(|b| Match {
            r: f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            lag: u16::from_le_bytes([b[4], b[5]]),
            flags: u16::from_le_bytes([b[6], b[7]]),
        })
        .collect()
}

/// A whole record: head, payload and checksum.
pub fn encode_record(m: &Manifest, job: usize, payload: &[u8]) -> Vec<u8> {
    let (hour, station) = m.job(job);
    let mut out = Vec::with_capacity(record_len(m.watches));
    out.extend_from_slice(&RECORD_MAGIC.to_le_bytes());
    out.extend_from_slice(&(job as u32).to_le_bytes());
    out.extend_from_slice(&(hour as u16).to_le_bytes());
    out.extend_from_slice(&(station as u16).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Checks that `rec` is record `job` of a data set with manifest `m`; returns its payload.
pub fn check_record<'a>(m: &Manifest, job: usize, rec: &'a [u8]) -> Option<&'a [u8]> {
    let n = record_len(m.watches);
    if rec.len() != n {
        return None;
    }
    let word = |at: usize| u32::from_le_bytes(rec[at..at + 4].try_into().expect("4 B"));
    let half = |at: usize| usize::from(u16::from_le_bytes([rec[at], rec[at + 1]]));
    let (hour, station) = m.job(job);
    let crc = crc32fast::hash(&rec[..n - 4]);
    let ok = word(0) == RECORD_MAGIC
        && word(4) as usize == job
        && half(8) == hour
        && half(10) == station
        && word(12) as usize == payload_len(m.watches)
        && word(n - 4) == crc;
    ok.then(|| &rec[RECORD_HEAD..n - 4])
}

/// Why a header is refused, or `None` if it is this data set's.
pub fn check_header(m: &Manifest, h: &[u8]) -> Option<String> {
    if h.len() < HEADER || &h[0..8] != MAGIC {
        return Some("is not a dps-radiocontrol result file".into());
    }
    let want = header(m);
    if h[..HEADER] == want {
        return None;
    }
    let id = u64::from_le_bytes(h[16..24].try_into().expect("8 B"));
    if id != m.dataset_id || h[24..40] != want[24..40] {
        return Some(format!(
            "holds results of another data set (id {id:016x}, this one is {:016x}): refusing to resume it; \
             move it away or choose another --out",
            m.dataset_id
        ));
    }
    Some("has a damaged header".into())
}

/// The result file, open for appending.
#[derive(Debug)]
pub struct ResultFile {
    path: PathBuf,
    file: File,
    manifest: Manifest,
    /// Jobs whose records are in the file (the next job to append).
    pub done: usize,
    /// Bytes cut from a torn or inconsistent tail when the file was opened.
    pub cut: u64,
}

/// `OUT/results.bin`.
pub fn path_in(out: &Path) -> PathBuf {
    out.join("results.bin")
}

impl ResultFile {
    /// Opens (or creates) the result file for data set `m`: checks the header, keeps the
    /// records that are consistent, cuts the rest.
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`] for a file of another data set or not a result file; an
    /// I/O error naming the file.
    pub fn open(path: &Path, m: &Manifest) -> Result<ResultFile> {
        let ctx = || format!("cannot open the result file {}", path.display());
        let mut file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).with_context(ctx)?;
        let len = file.metadata().with_context(ctx)?.len();
        if len == 0 {
            file.write_all(&header(m)).with_context(ctx)?;
            file.sync_data().with_context(ctx)?;
            return Ok(ResultFile { path: path.into(), file, manifest: m.clone(), done: 0, cut: 0 });
        }
        let mut head = vec![0u8; HEADER.min(len as usize)];
        file.read_exact(&mut head).with_context(ctx)?;
        if let Some(why) = check_header(m, &head) {
            anyhow::bail!(dps_harness::BadInput::new(format!("--out: {} {why}", path.display())));
        }
        let n = record_len(m.watches);
        let mut rec = vec![0u8; n];
        let mut done = 0;
        while done < m.jobs() && HEADER as u64 + ((done + 1) * n) as u64 <= len {
            file.read_exact(&mut rec).with_context(ctx)?;
            if check_record(m, done, &rec).is_none() {
                break;
            }
            done += 1;
        }
        let keep = HEADER as u64 + (done * n) as u64;
        if keep < len {
            file.set_len(keep).with_context(ctx)?;
            file.sync_data().with_context(ctx)?;
        }
        file.seek(SeekFrom::Start(keep)).with_context(ctx)?;
        Ok(ResultFile { path: path.into(), file, manifest: m.clone(), done, cut: len - keep })
    }

    /// Appends the record of job [`done`](Self::done) and syncs it to disk.
    ///
    /// # Errors
    /// A failed write (a full disk), naming the file; what was written before stays valid.
    pub fn append(&mut self, payload: &[u8]) -> Result<()> {
        let rec = encode_record(&self.manifest, self.done, payload);
        self.append_encoded(&rec)
    }

    /// Appends an already encoded record (see [`encode_record`]) of job [`done`](Self::done).
    ///
    /// # Errors
    /// As [`append`](Self::append).
    pub fn append_encoded(&mut self, rec: &[u8]) -> Result<()> {
        debug_assert!(check_record(&self.manifest, self.done, rec).is_some());
        let ctx = || format!("cannot append job {} to {}", self.done, self.path.display());
        self.file.write_all(rec).with_context(ctx)?;
        self.file.sync_data().with_context(ctx)?;
        self.done += 1;
        Ok(())
    }
}

/// Reads every record's payload of a complete result file.
///
/// # Errors
/// If the file is incomplete or inconsistent, naming it.
pub fn read_all(path: &Path, m: &Manifest) -> Result<Vec<Vec<u8>>> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if let Some(why) = check_header(m, &bytes) {
        anyhow::bail!("{} {why}", path.display());
    }
    let n = record_len(m.watches);
    if bytes.len() != HEADER + m.jobs() * n {
        anyhow::bail!("{} has {} bytes, a complete result file {}", path.display(), bytes.len(), HEADER + m.jobs() * n);
    }
    (0..m.jobs())
        .map(|j| {
            check_record(m, j, &bytes[HEADER + j * n..][..n])
                .map(<[u8]>::to_vec)
                .with_context(|| format!("{}: record {j} is inconsistent", path.display()))
        })
        .collect()
}
