//! The scaling part of `sim-accuracy`: the papers' speedup experiments predicted at more
//! virtual ranks than this machine has.

use std::path::Path;

use anyhow::Result;
use dps_harness::launch::Launcher;

use super::{seconds, Point};

/// The thesis's speedup experiments predicted at more ranks than this machine has: the
/// matmul farm (Fig. 6.6, N = 1000, n = 125) in PDEXEC and pipelined LU (Fig. 6.7,
/// N = 2000, n = 125) in DE, one core per virtual rank; S(P) = T(1)/T(P).
pub(super) fn scaling(bin: &Path, platform: &str, reps: usize) -> Result<String> {
    let mut out = String::from(
        "\n### Predicted speedups at more ranks (one core per virtual rank)\n\n\
         | app | P | predicted (s) | predicted S(P) | published |\n|---|---:|---:|---:|---|\n",
    );
    let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let cases = [
        (
            "dps-matmul",
            "farm",
            "--n 1000 --block 125",
            "pdexec",
            &[1usize, 2, 4, 8, 16, 20][..],
            20,
            "S(20) = 18.8 (SPARC 20 + FDDI)",
        ),
        ("dps-lu", "stream", "--n 2000 --block 125", "de", &[1, 2, 4, 8, 10][..], 10, "S(10) = 8.38 (SPARC 20 + FDDI)"),
    ];
    for (app, variant, size, mode, ps, at, published) in cases {
        let point = Point { app, variant, size: words(size), label: size.into(), pdexec: mode == "pdexec" };
        let mut one = None;
        for &p in ps {
            let extra = ["--simulate", &p.to_string(), "--sim-mode", mode, "--sim-cores", "1", "--platform", platform]
                .map(String::from);
            let t = seconds(bin, &point, Launcher::None, 1, &extra, reps)?.seconds;
            let t1 = *one.get_or_insert(t);
            let shown = if p == at { published } else { "" };
            out += &format!("| {app} {variant} {size} ({mode}) | {p} | {t:.4} | {:.2} | {shown} |\n", t1 / t);
        }
    }
    Ok(out)
}
