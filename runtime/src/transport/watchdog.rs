//! The stall watchdog: a rank that stops answering (stopped with SIGSTOP, its progress thread
//! wedged, its node gone quiet) is reported by name and the job ends, instead of every other
//! rank waiting for it forever.
//!
//! The ranks form a ring: each progress thread sends a tiny heartbeat to the next rank,
//! `(r+1) mod P`, every quarter of the timeout, and watches the previous one, `(r-1+P) mod P`:
//! O(P) messages in all, whatever P. Any message from the watched rank counts as a sign of
//! life, and a heartbeat is skipped when a packet went to the next rank within the period.
//! The progress thread runs whatever the workers do (it waits at most a few milliseconds at
//! a time), so a rank busy computing for minutes still sends its heartbeats.
//!
//! No false alarms: the clock starts when the progress thread starts, just after the
//! collective calls of `Runtime::init`, so start-up skew is milliseconds. A rank that was not
//! running itself for a while (stopped, swapped out, its laptop suspended) cannot judge its
//! neighbour: it gives it a fresh timeout instead. Watching ends when this rank posts its
//! shutdown barrier, since from then on its neighbour may leave (it can only leave once every
//! rank has entered the barrier); heartbeats go on until the barrier completes. The barrier
//! comes after `Runtime::shutdown`'s own protocol (rank 0 collects every rank's `Done`), so
//! ranks waiting in `shutdown` for a rank still computing keep watching: only the last
//! moment of the job, when every rank has finished its work, goes unwatched.
//!
//! This module is the clock logic only; `transport::mpi` sends and receives the heartbeats.

use std::time::{Duration, Instant};

use crate::{Error, ErrorKind};

/// The environment variable that sets the timeout, in seconds (`0` disables the watchdog).
const STALL_TIMEOUT_VAR: &str = "DPS_STALL_TIMEOUT";
/// Long enough for 4 ranks oversubscribed on 2 cores under heavy compute, where a progress
/// thread may wait for a core for a while, yet short enough that a hung job ends well before
/// anyone would give up on it.
const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Reads `text` (seconds) as a stall timeout; `None` means disabled (0). The error says
/// what is wrong, without the value (the caller names its source and value).
pub(crate) fn parse_stall_timeout(text: &str) -> Result<Option<Duration>, String> {
    let bad = |why: &str| format!("{why}; expected seconds, such as 60 or 2.5 (0 disables the stall watchdog)");
    let secs: f64 = text.trim().parse().map_err(|_| bad("not a number"))?;
    if secs == 0.0 {
        return Ok(None);
    }
    if secs.is_nan() || secs < 0.0 {
        return Err(bad("not a positive time"));
    }
    // Far beyond any job, but the periods computed from it must still fit a `Duration`.
    if secs > 1e9 {
        return Err(bad("too large"));
    }
    Ok(Some(Duration::from_secs_f64(secs)))
}

/// The timeout from `DPS_STALL_TIMEOUT`, else the default.
pub(crate) fn stall_timeout_from_env() -> Result<Option<Duration>, Error> {
    match std::env::var(STALL_TIMEOUT_VAR) {
        Ok(text) => parse_stall_timeout(&text)
            .map_err(|e| Error::new(ErrorKind::Usage, format!("{STALL_TIMEOUT_VAR}=\"{text}\": {e}"))),
        Err(std::env::VarError::NotPresent) => Ok(Some(DEFAULT_STALL_TIMEOUT)),
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(Error::new(ErrorKind::Usage, format!("{STALL_TIMEOUT_VAR} is not valid Unicode")))
        }
    }
}

/// What the progress thread must do after a check.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Nothing.
    Fine,
    /// Send a heartbeat to `Watchdog::next`.
    Beat,
    /// The watched rank said nothing for too long: this line explains it; end the job.
    Stalled(String),
}

#[derive(Debug)]
pub(super) struct Watchdog {
    rank: usize,
    timeout: Duration,
    /// How often a heartbeat goes to `next`.
    period: Duration,
    pub(super) next: usize,
    /// The rank watched; `None` once this rank stopped watching.
    prev: Option<usize>,
    /// Set on any message from `prev`; turned into `heard_at` at the next check (cheaper
    /// than reading the clock for every message).
    heard: bool,
    heard_at: Instant,
    /// Set when a packet goes to `next`; turned into `sent_at` at the next check.
    sent: bool,
    /// When something last went to `next`.
    sent_at: Instant,
    checked_at: Instant,
}

impl Watchdog {
    /// A watchdog for `rank` of `ranks` (at least 2), starting its clock at `now`. The caller
    /// sends a first heartbeat at once.
    pub(super) fn new(rank: usize, ranks: usize, timeout: Duration, now: Instant) -> Self {
        Watchdog {
            rank,
            timeout,
            period: timeout / 4,
            next: (rank + 1) % ranks,
            prev: Some((rank + ranks - 1) % ranks),
            heard: false,
            heard_at: now,
            sent: false,
            sent_at: now,
            checked_at: now,
        }
    }

    /// Records a message received from `src`.
    pub(super) fn heard_from(&mut self, src: usize) {
        if self.prev == Some(src) {
            self.heard = true;
        }
    }

    /// Records that a message went to `dest`.
    pub(super) fn sent_to(&mut self, dest: usize) {
        if dest == self.next {
            self.sent = true;
        }
    }

    /// This rank entered its shutdown barrier: its neighbour may now leave at any time.
    pub(super) fn stop_watching(&mut self) {
        self.prev = None;
    }

    /// Checks the clock; call it at least every few milliseconds.
    pub(super) fn check(&mut self, now: Instant) -> Verdict {
        // This thread itself did not run for a while: the silence may be its own.
        if now.saturating_duration_since(self.checked_at) > self.period {
            self.heard = true;
        }
        self.checked_at = now;
        if std::mem::take(&mut self.heard) {
            self.heard_at = now;
        }
        if std::mem::take(&mut self.sent) {
            self.sent_at = now;
        }
        if let Some(prev) = self.prev {
            let silent = now.saturating_duration_since(self.heard_at);
            if silent > self.timeout {
                return Verdict::Stalled(format!(
                    "dps: rank {}: no message from rank {prev} for {:.1} s: it is stopped or hung \
                     ({STALL_TIMEOUT_VAR}={}); ending the job",
                    self.rank,
                    silent.as_secs_f64(),
                    self.timeout.as_secs_f64()
                ));
            }
        }
        if now.saturating_duration_since(self.sent_at) >= self.period {
            self.sent_at = now;
            return Verdict::Beat;
        }
        Verdict::Fine
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(4);

    /// Checks every millisecond from `from` for `span`, returning the first non-`Fine` verdicts.
    fn run(w: &mut Watchdog, from: Instant, span: Duration) -> Vec<(Duration, Verdict)> {
        let mut out = Vec::new();
        let mut t = Duration::ZERO;
        while t <= span {
            match w.check(from + t) {
                Verdict::Fine => {}
                v => out.push((t, v)),
            }
            t += Duration::from_millis(1);
        }
        out
    }

    #[test]
    fn a_ring_of_neighbours() {
        let w = Watchdog::new(0, 3, T, Instant::now());
        assert_eq!((w.next, w.prev), (1, Some(2)));
        let w = Watchdog::new(2, 3, T, Instant::now());
        assert_eq!((w.next, w.prev), (0, Some(1)));
    }

    #[test]
    fn beats_every_quarter_and_reports_a_silent_neighbour_by_name() {
        let start = Instant::now();
        let mut w = Watchdog::new(1, 2, T, start);
        let verdicts = run(&mut w, start, Duration::from_millis(4100));
        let beats: Vec<_> = verdicts.iter().filter(|(_, v)| *v == Verdict::Beat).map(|(t, _)| t.as_millis()).collect();
        assert_eq!(beats, [1000, 2000, 3000, 4000]);
        let Some((t, Verdict::Stalled(msg))) = verdicts.iter().find(|(_, v)| *v != Verdict::Beat) else {
            panic!("{verdicts:?}")
        };
        assert_eq!(t.as_millis(), 4001);
        assert!(msg.starts_with("dps: rank 1: no message from rank 0 for 4.0 s"), "{msg}");
    }

    #[test]
    fn any_message_from_the_neighbour_keeps_it_alive() {
        let start = Instant::now();
        let mut w = Watchdog::new(0, 2, T, start);
        for s in 1..20 {
            let now = start + Duration::from_secs(s);
            w.heard_from(0); // not the watched rank
            w.heard_from(1);
            assert!(!matches!(w.check(now), Verdict::Stalled(_)));
        }
    }

    #[test]
    fn a_packet_to_the_next_rank_replaces_a_heartbeat() {
        let start = Instant::now();
        let mut w = Watchdog::new(0, 2, T, start);
        assert_eq!(w.check(start + Duration::from_millis(900)), Verdict::Fine);
        w.sent_to(1);
        assert_eq!(w.check(start + Duration::from_millis(1000)), Verdict::Fine);
        assert_eq!(w.check(start + Duration::from_millis(1900)), Verdict::Fine);
        assert_eq!(w.check(start + Duration::from_millis(2000)), Verdict::Beat);
    }

    #[test]
    fn a_rank_that_did_not_run_itself_gives_a_fresh_timeout() {
        let start = Instant::now();
        let mut w = Watchdog::new(0, 2, T, start);
        assert_eq!(w.check(start + Duration::from_millis(999)), Verdict::Fine);
        // Stopped for 10 s: no judgement right after waking, but a full timeout from then.
        let woke = start + Duration::from_secs(11);
        let verdicts = run(&mut w, woke, Duration::from_millis(4100));
        assert_eq!(verdicts[0], (Duration::ZERO, Verdict::Beat));
        let stalled = verdicts.iter().find(|(_, v)| matches!(v, Verdict::Stalled(_))).unwrap();
        assert_eq!(stalled.0.as_millis(), 4001);
    }

    #[test]
    fn no_judgement_after_the_barrier() {
        let start = Instant::now();
        let mut w = Watchdog::new(0, 2, T, start);
        w.stop_watching();
        assert!(run(&mut w, start, Duration::from_secs(10)).iter().all(|(_, v)| *v == Verdict::Beat));
    }

    #[test]
    fn timeouts_parse_with_clear_errors() {
        assert_eq!(parse_stall_timeout("2.5").unwrap(), Some(Duration::from_millis(2500)));
        assert_eq!(parse_stall_timeout("0").unwrap(), None);
        for (bad, why) in [("abc", "not a number"), ("-1", "not a positive time"), ("NaN", "not a positive time")] {
            assert!(parse_stall_timeout(bad).unwrap_err().starts_with(why), "{bad}");
        }
        for bad in ["inf", "1e300"] {
            assert!(parse_stall_timeout(bad).unwrap_err().starts_with("too large"), "{bad}");
        }
    }
}
