//! Checking a complete result file against the generator's ground truth (RC-3), and the
//! listening summary an operator reads.

use std::fmt::Write as _;

use anyhow::{bail, Result};

use crate::data::{Manifest, Truth, MINUTES};
use crate::kernel::{Match, FLAG_INVALID};
use crate::results::decode_payload;

/// A listening minute: the best station's r at least this. Measured on `generate --watches
/// 200 --stations 20 --hours 2 --seed 7` (16,230 listening minutes): true matches ≥ 0.998,
/// noise minutes ≤ 0.58 on every station; a wrong station reached 0.79 in a listening
/// minute, where it loses to the true one.
pub const LISTEN_R: f32 = 0.7;
/// Noise: every station's r below this.
pub const NOISE_R: f32 = 0.7;
/// Largest |lag − τ0| accepted, in ms: half a block. A watch value is the energy of a 50 ms
/// block; at a lag within 25 ms of τ0 each value is paired with a window that overlaps its
/// own block more than a neighbour, beyond it the alignment is nearer to one shifted by a
/// whole block, i.e. wrong. (The generator's lag is exact: the watch hears the station's
/// samples from 3·τ0 on, 3 per ms, no drift.) Measured: at most 2 ms on the data set above;
/// 28–33 ms before the station energies had the watch's noise added (issue 27, `kernel`).
pub const LAG_TOLERANCE: usize = 25;

/// The matches of every job, decoded: `matches[job][minute * watches + watch]`.
pub fn decode_all(payloads: &[Vec<u8>]) -> Vec<Vec<Match>> {
    payloads.iter().map(|p| decode_payload(p)).collect()
}

/// The best station of a watch minute: (station, its match), first station on ties.
/// `None` if a result is not finite (fails closed).
fn best_station(m: &Manifest, all: &[Vec<Match>], watch: usize, minute_of_day: usize) -> Option<(usize, Match)> {
    let (hour, minute) = (minute_of_day / MINUTES, minute_of_day % MINUTES);
    let mut best: Option<(usize, Match)> = None;
    for s in 0..m.stations {
        let r = all[hour * m.stations + s][minute * m.watches + watch];
        if !r.r.is_finite() {
            return None;
        }
        if best.is_none_or(|(_, b)| r.r > b.r) {
            best = Some((s, r));
        }
    }
    best
}

/// Checks every watch minute of the generated hours against the truth. Returns the
/// number of minutes checked.
///
/// # Errors
/// The first minutes that disagree (up to 5), or missing truth lines.
pub fn check_truth(m: &Manifest, all: &[Vec<Match>], truth: &[(usize, usize, Truth)]) -> Result<usize> {
    let expected = m.watches * m.hours * MINUTES;
    if truth.len() != expected {
        bail!("the ground truth has {} watch minutes, the data set {expected}", truth.len());
    }
    let mut wrong = Vec::new();
    for &(w, minute, t) in truth {
        if w >= m.watches || minute >= m.hours * MINUTES {
            bail!("ground truth line for watch {w} minute {minute} is outside the data set");
        }
        let Some((s, b)) = best_station(m, all, w, minute) else {
            wrong.push(format!("watch {w} minute {minute}: a result is not finite"));
            continue;
        };
        let ok = match t {
            Truth::Off => b.flags == FLAG_INVALID,
            Truth::Noise => b.flags == 0 && b.r < NOISE_R,
            Truth::Listen { station, lag } => {
                b.flags == 0 && s == station && b.r >= LISTEN_R && usize::from(b.lag).abs_diff(lag) <= LAG_TOLERANCE
            }
        };
        if !ok {
            wrong.push(format!("watch {w} minute {minute}: truth {t:?}, best station {s} with {b:?}"));
        }
    }
    if !wrong.is_empty() {
        bail!(
            "{} of {expected} watch minutes disagree with the ground truth: {}",
            wrong.len(),
            wrong[..wrong.len().min(5)].join("; ")
        );
    }
    Ok(expected)
}

/// The listening summary as CSV: per (hour, station), the watch minutes whose best station
/// it is with r ≥ [`LISTEN_R`], the worn watch minutes of the hour, and their ratio.
pub fn summary_csv(m: &Manifest, all: &[Vec<Match>]) -> String {
    let mut out = String::from("hour,station,listening_minutes,worn_minutes,rate\n");
    for h in 0..m.hours {
        let mut listening = vec![0usize; m.stations];
        let mut worn = 0usize;
        for minute in 0..MINUTES {
            for w in 0..m.watches {
                if let Some((s, b)) = best_station(m, all, w, h * MINUTES + minute) {
                    if b.flags & FLAG_INVALID == 0 {
                        worn += 1;
                    }
                    if b.flags == 0 && b.r >= LISTEN_R {
                        listening[s] += 1;
                    }
                }
            }
        }
        for (s, n) in listening.iter().enumerate() {
            let rate = if worn == 0 { 0.0 } else { *n as f64 / worn as f64 };
            let _ = writeln!(out, "{h},{s},{n},{worn},{rate:.4}");
        }
    }
    out
}
