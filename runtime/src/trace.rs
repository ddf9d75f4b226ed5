//! Optional tracing: operation spans and messages as Chrome trace events (open the file in
//! Perfetto or chrome://tracing). One process per rank, one track per DPS thread, and a
//! "messages" track per rank with one instant event per message sent to another rank.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Default)]
pub(crate) struct Tracer {
    enabled: AtomicBool,
    inner: Mutex<TraceData>,
}

#[derive(Default)]
struct TraceData {
    rank: usize,
    events: String,
    tracks: HashMap<String, usize>,
}

fn now_us() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64() * 1e6).unwrap_or(0.0)
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

impl TraceData {
    fn track(&mut self, name: &str) -> usize {
        if let Some(&t) = self.tracks.get(name) {
            return t;
        }
        let t = self.tracks.len() + 1;
        self.tracks.insert(name.to_string(), t);
        let _ = write!(
            self.events,
            "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{t},\"args\":{{\"name\":\"{}\"}}}},",
            self.rank,
            escape(name)
        );
        t
    }
}

impl Tracer {
    pub(crate) fn enable(&self, rank: usize) {
        let mut d = self.inner.lock().unwrap();
        d.rank = rank;
        let _ = write!(
            d.events,
            "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{rank},\"args\":{{\"name\":\"rank {rank}\"}}}},"
        );
        self.enabled.store(true, Ordering::SeqCst);
    }

    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Runs `f` as a span named `op` on the track of `thread`.
    pub(crate) fn span<R>(&self, thread: &str, op: &str, f: impl FnOnce() -> R) -> R {
        if !self.is_enabled() {
            return f();
        }
        let start = now_us();
        let r = f();
        let end = now_us();
        let mut d = self.inner.lock().unwrap();
        let (tid, pid) = (d.track(thread), d.rank);
        let _ = write!(
            d.events,
            "{{\"ph\":\"X\",\"name\":\"{}\",\"pid\":{pid},\"tid\":{tid},\"ts\":{start:.1},\"dur\":{:.1}}},",
            escape(op),
            end - start
        );
        r
    }

    /// Records a message of `bytes` bytes sent to rank `to`.
    pub(crate) fn message(&self, to: usize, bytes: usize) {
        if !self.is_enabled() {
            return;
        }
        let ts = now_us();
        let mut d = self.inner.lock().unwrap();
        let (tid, pid) = (d.track("messages"), d.rank);
        let _ = write!(
            d.events,
            "{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"to rank {to}\",\"pid\":{pid},\"tid\":{tid},\"ts\":{ts:.1},\"args\":{{\"bytes\":{bytes}}}}},"
        );
    }

    /// Takes the events recorded so far (comma-terminated JSON objects).
    pub(crate) fn take(&self) -> String {
        std::mem::take(&mut self.inner.lock().unwrap().events)
    }
}

/// Writes the events of all ranks as one Chrome trace file.
pub(crate) fn write_file(path: &std::path::Path, events: &[String]) -> std::io::Result<()> {
    let mut all: String = events.concat();
    if all.ends_with(',') {
        all.pop();
    }
    std::fs::write(path, format!("{{\"displayTimeUnit\":\"ms\",\"traceEvents\":[{all}]}}\n"))
}
