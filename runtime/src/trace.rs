//! Optional tracing: operation spans and messages as Chrome trace events (open the file in
//! Perfetto or chrome://tracing). One process per rank, one track per DPS thread, and a
//! "messages" track per rank with one instant event per message sent to another rank.
//!
//! Rank 0 writes the file. Its place is checked before any work ([`TraceFile::prepare`]
//! opens it as an [`OutputFile`]), so a bad path fails at once rather than after a long
//! computation, and a failed write leaves no partial trace.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::OutputFile;

#[derive(Default)]
pub(crate) struct Tracer {
    enabled: AtomicBool,
    inner: Mutex<TraceData>,
}

#[derive(Default)]
struct TraceData {
    rank: usize,
    events: Vec<Event>,
    tracks: HashMap<String, usize>,
}

/// One Chrome trace event; absent fields are left out of the JSON.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Event {
    ph: char,
    name: String,
    pid: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tid: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    /// Scope of an instant event ('t': its thread).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    s: Option<char>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    args: Option<Args>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Args {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bytes: Option<usize>,
}

impl Event {
    fn new(ph: char, name: impl Into<String>, pid: usize) -> Self {
        Event { ph, name: name.into(), pid, tid: None, ts: None, dur: None, s: None, args: None }
    }
}

/// Now, µs: the simulated time on the thread that runs a simulation (`simclock`), else the
/// wall clock since the epoch.
fn now_us() -> f64 {
    if let Some(ns) = crate::simclock::now_ns() {
        return ns as f64 / 1e3;
    }
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64() * 1e6).unwrap_or(0.0)
}

impl TraceData {
    fn track(&mut self, name: &str) -> usize {
        if let Some(&t) = self.tracks.get(name) {
            return t;
        }
        let t = self.tracks.len() + 1;
        self.tracks.insert(name.to_string(), t);
        let mut e = Event::new('M', "thread_name", self.rank);
        e.tid = Some(t);
        e.args = Some(Args { name: Some(name.to_string()), bytes: None });
        self.events.push(e);
        t
    }
}

impl Tracer {
    pub(crate) fn enable(&self, rank: usize) {
        let mut d = self.inner.lock().unwrap();
        d.rank = rank;
        let mut e = Event::new('M', "process_name", rank);
        e.args = Some(Args { name: Some(format!("rank {rank}")), bytes: None });
        d.events.push(e);
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
        let mut e = Event::new('X', op, pid);
        (e.tid, e.ts, e.dur) = (Some(tid), Some(start), Some(end - start));
        d.events.push(e);
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
        let mut e = Event::new('i', format!("to rank {to}"), pid);
        (e.tid, e.ts, e.s) = (Some(tid), Some(ts), Some('t'));
        e.args = Some(Args { name: None, bytes: Some(bytes) });
        d.events.push(e);
    }

    /// Takes the events recorded so far, as a JSON array (to send to rank 0).
    pub(crate) fn take(&self) -> String {
        let events = std::mem::take(&mut self.inner.lock().unwrap().events);
        serde_json::to_string(&events).unwrap_or_else(|_| "[]".into())
    }
}

/// The file as Chrome and Perfetto read it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TraceJson<'a> {
    display_time_unit: &'a str,
    trace_events: Vec<Event>,
}

/// Where rank 0 writes the trace, made ready before any work.
#[derive(Debug)]
pub(crate) struct TraceFile(OutputFile);

impl TraceFile {
    /// Checks that the trace can be written to `path`.
    ///
    /// # Errors
    /// What is wrong with the path, for a message that names it.
    pub(crate) fn prepare(path: &Path) -> Result<TraceFile, String> {
        OutputFile::create(path).map(TraceFile)
    }

    /// Writes the events of all ranks (one JSON array per rank) as one Chrome trace.
    ///
    /// # Errors
    /// If an array is malformed or the file cannot be written; then no partial file is left.
    pub(crate) fn write(self, per_rank: &[String]) -> Result<(), String> {
        let mut trace_events = Vec::new();
        for (i, events) in per_rank.iter().enumerate() {
            let events: Vec<Event> = serde_json::from_str(events)
                .map_err(|e| format!("the events of rank #{i} to arrive are malformed: {e}"))?;
            trace_events.extend(events);
        }
        let trace = TraceJson { display_time_unit: "ms", trace_events };
        let mut out = self.0;
        let path = out.path().display().to_string();
        write_json(out.file(), &trace).and_then(|()| out.commit()).map_err(|e| format!("cannot write {path}: {e}"))
    }
}

fn write_json(file: &mut File, trace: &TraceJson) -> io::Result<()> {
    let mut w = BufWriter::new(file);
    serde_json::to_writer(&mut w, trace)?;
    w.write_all(b"\n")?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events_of(tracer: &Tracer) -> Vec<serde_json::Value> {
        serde_json::from_str(&tracer.take()).unwrap()
    }

    #[test]
    fn names_are_escaped_properly() {
        let t = Tracer::default();
        t.enable(3);
        let odd = "quote \" backslash \\ newline \n tab \t bell \u{7} ünïcode";
        t.span(odd, odd, || ());
        let events = events_of(&t);
        assert_eq!(events[1]["args"]["name"], odd, "thread name");
        assert_eq!(events[2]["name"], odd, "span name");
        assert_eq!(events[2]["pid"], 3);
    }

    #[test]
    fn writes_the_trace_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        std::fs::write(&path, "old").unwrap();
        let t = Tracer::default();
        t.enable(0);
        t.message(1, 42);
        TraceFile::prepare(&path).unwrap().write(&[t.take(), "[]".into()]).unwrap();
        let trace: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(trace["traceEvents"][2]["args"]["bytes"], 42);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["t.json"]);
    }

    #[test]
    fn a_full_device_is_an_error() {
        let e = TraceFile::prepare(Path::new("/dev/full")).unwrap().write(&["[]".into()]).unwrap_err();
        assert!(e.starts_with("cannot write /dev/full: "), "{e}");
    }
}
