//! What a run reports: the human-readable line or JSON record, the check against the serial
//! reference, and progress on a terminal.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::kernel;
use crate::world::{Source, World};

/// Compares `cells` (the whole world, packed) with the serial reference after
/// `generations`: the byte-per-cell one for small runs, else the bit kernel on one thread.
pub(crate) fn verify(source: &Source, wrap: bool, generations: u64, cells: &[u64]) -> (bool, &'static str) {
    let (w, h) = (source.width(), source.height());
    let words = w.div_ceil(64);
    if (w * h) as f64 * generations as f64 <= 2e7 {
        let start = World::new(source, wrap, 1);
        let mut bytes: Vec<u8> = (0..h * w).map(|i| u8::from(kernel::get(start.slab.row(i / w), i % w))).collect();
        for _ in 0..generations {
            bytes = kernel::naive_step(w, h, wrap, &bytes);
        }
        let same = (0..h).all(|y| (0..w).all(|x| kernel::get(&cells[y * words..], x) == (bytes[y * w + x] == 1)));
        return (same, "naive");
    }
    let mut world = World::new(source, wrap, 1);
    world.advance(generations);
    (world.slab.rows() == cells, "bit-serial")
}

/// Prints the record: JSON, or one line.
pub(crate) fn print_record(json: bool, r: &Value) {
    if json {
        println!("{r}");
        return;
    }
    let f = |k: &str| r.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
    let mut line = format!(
        "life {} {}x{} ranks={} bands={}: {} generations in {:.3} s, {:.3e} cell updates/s, population {}",
        r["variant"].as_str().unwrap_or("?"),
        r["width"],
        r["height"],
        r["ranks"],
        r["threads"],
        r["generations"],
        f("seconds"),
        f("cups"),
        r["population"]
    );
    if r.get("speedup").is_some() {
        line += &format!("; overlap/simple speedup {:.3}", f("speedup"));
    }
    if r.get("efficiency").is_some() {
        line += &format!("; serial {:.3e} cups, efficiency {:.3}", f("serial_cups"), f("efficiency"));
    }
    if r.get("view_block").is_some() {
        line += &format!(
            "; view {} blocks: {} calls, median {:.3} ms, iteration {:.3} ms without calls, {:.3} ms with",
            r["view_block"].as_str().unwrap_or("?"),
            r["view_calls"],
            f("view_call_median_s") * 1e3,
            f("iteration_without_calls_s") * 1e3,
            f("iteration_with_calls_s") * 1e3
        );
    }
    match r["verified"].as_bool() {
        Some(true) => line += "; verified against the serial reference",
        Some(false) => line += "; DIFFERS from the serial reference",
        None => {}
    }
    println!("{line}");
}

/// Progress on stderr, only on a terminal, at most once a second.
pub(crate) struct Progress {
    total: u64,
    on: bool,
    last: Instant,
}

impl Progress {
    pub(crate) fn new(total: u64) -> Progress {
        Progress { total, on: std::io::stderr().is_terminal(), last: Instant::now() }
    }

    pub(crate) fn tick(&mut self, done: u64) {
        if self.on && self.last.elapsed() > Duration::from_secs(1) {
            eprint!("\rgeneration {done} (of {} per phase)", self.total);
            self.last = Instant::now();
        }
    }

    pub(crate) fn clear(&self) {
        if self.on {
            eprint!("\r\x1b[K");
        }
    }
}
