//! One job, (hour, station): correlate the station's 60 minutes with the same minutes of
//! every watch (step 2b of §2.4); and the serial reference, every job in order ([`serial`]).
//! Used by the serial reference and by the farm's workers, so both write the same bytes.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::data::{DataSet, WatchRecord, MINUTES};
use crate::kernel::{correlate_minute, Match, Prepared, Watch, STATION_SAMPLES};
use crate::results::{encode_payload, ResultFile};

/// An hour of every watch's records, as read (step 1), minute-major.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WatchHour {
    /// The hour.
    pub hour: usize,
    /// Watches.
    pub watches: usize,
    /// Per record (minute-major): worn flag.
    pub valid: Vec<bool>,
    /// Per record: the 80 log energies, back to back.
    pub envelopes: Vec<u8>,
}

impl WatchHour {
    /// From the records of [`crate::data::DataSet::read_watch_hour`].
    pub fn new(hour: usize, watches: usize, records: &[WatchRecord]) -> WatchHour {
        WatchHour {
            hour,
            watches,
            valid: records.iter().map(WatchRecord::valid).collect(),
            envelopes: records.iter().flat_map(|r| r.envelope).collect(),
        }
    }

    /// The records prepared for correlation, minute-major.
    pub fn prepare(&self) -> Vec<Watch> {
        self.valid
            .iter()
            .zip(self.envelopes.chunks_exact(crate::kernel::WATCH_BLOCKS))
            .map(|(&v, e)| Watch::new(e.try_into().expect("80 B"), v))
            .collect()
    }
}

/// The payload of a job: the station's hour (60 × 30,000 samples) against the prepared
/// watches of the same hour (minute-major).
pub fn correlate_job(station: &[i16], watches: &[Watch], n_watches: usize) -> Vec<u8> {
    assert_eq!(station.len(), STATION_SAMPLES * MINUTES);
    assert_eq!(watches.len(), n_watches * MINUTES);
    let mut out = vec![Match { r: 0.0, lag: 0, flags: 0 }; watches.len()];
    for m in 0..MINUTES {
        let prepared = Prepared::new(&station[m * STATION_SAMPLES..][..STATION_SAMPLES]);
        let range = m * n_watches..(m + 1) * n_watches;
        correlate_minute(&prepared, &watches[range.clone()], &mut out[range]);
    }
    encode_payload(&out)
}

/// The serial reference: the jobs in order, one process (§2.4), appended to `file` (from
/// the first job it does not hold yet), each job also sleeping `throttle_ms` (test pacing).
///
/// # Errors
/// A failed read or append, naming the file.
pub fn serial(data: &DataSet, file: &mut ResultFile, throttle_ms: u64) -> Result<()> {
    let m = &data.manifest;
    let mut hour: Option<(usize, Vec<Watch>)> = None;
    for j in file.done..m.jobs() {
        let (h, s) = m.job(j);
        if hour.as_ref().map(|x| x.0) != Some(h) {
            let recs = data.read_watch_hour(h)?;
            hour = Some((h, WatchHour::new(h, m.watches, &recs).prepare()));
        }
        let station = data.read_station_hour(s, h)?;
        let payload = correlate_job(&station, &hour.as_ref().expect("read above").1, m.watches);
        std::thread::sleep(std::time::Duration::from_millis(throttle_ms));
        file.append(&payload)?;
    }
    Ok(())
}
