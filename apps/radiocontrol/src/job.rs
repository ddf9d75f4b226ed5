//! One job, (hour, station): correlate the station's 60 minutes with the same minutes of
//! every watch (step 2b of §2.4). Used by the serial reference and by the farm's workers,
//! so both write the same bytes.

use serde::{Deserialize, Serialize};

use crate::data::{WatchRecord, MINUTES};
use crate::kernel::{correlate_minute, Match, Prepared, Watch, STATION_SAMPLES};
use crate::results::encode_payload;

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
