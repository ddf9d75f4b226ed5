//! What the integration tests share: the binary, a generated data set, its serial results.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub const BIN: &str = env!("CARGO_BIN_EXE_dps-radiocontrol");

/// Generates a data set of `watches × stations × hours` with `seed` into `dir`.
pub fn generate(dir: &Path, watches: usize, stations: usize, hours: usize, seed: u64) {
    let (w, s, h, seed) = (watches.to_string(), stations.to_string(), hours.to_string(), seed.to_string());
    let args = ["generate", "--watches", &w, "--stations", &s, "--hours", &h, "--seed", &seed, "--dir"];
    let out = Command::new(BIN).args(args).arg(dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Runs the serial reference into `out` and returns its result file's bytes.
pub fn serial(data: &Path, out: &Path) -> Vec<u8> {
    let done = Command::new(BIN).arg("run").arg(data).arg("--out").arg(out).arg("--serial").output().unwrap();
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    std::fs::read(out.join("results.bin")).unwrap()
}

/// `DIR/results.bin`.
pub fn results(out: &Path) -> PathBuf {
    out.join("results.bin")
}
