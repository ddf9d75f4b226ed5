//! The scaling part of `sim-accuracy`: the papers' speedup experiments predicted at P = 1 …
//! 64 virtual ranks (one core each), far beyond this machine, with the published speedups
//! and efficiencies beside at every P the sources give:
//!
//! - the thesis's master/worker matmul (Fig. 6.6, N = 1000, n = 125), PDEXEC;
//! - the thesis's pipelined LU (Fig. 6.7, N = 2000, n = 125), DE (dps-lu's PDEXEC is not on
//!   this branch);
//! - the DPS paper's Game of Life (Fig. 9: the improved graph against the simple one, for two
//!   world sizes), DE, one generation per step and per call as in the paper.
//!
//! S(P) = T(1)/T(P), both predicted: T(1) is the same program simulated on one rank, not the
//! serial reference (the thesis divides by a serial dgemm or dgetrf). E(P) = S(P)/P.

use std::path::Path;

use anyhow::{Context, Result};
use dps_launch::{Job, Launcher};

/// Published numbers at one P: what the source measured, and its model.
#[derive(Clone, Copy)]
struct Published {
    p: usize,
    measured: Option<f64>,
    model: Option<f64>,
}

const fn at(p: usize, measured: Option<f64>, model: Option<f64>) -> Published {
    Published { p, measured, model }
}

/// One of the thesis's speedup experiments.
struct Case {
    app: &'static str,
    variant: &'static str,
    size: &'static str,
    mode: &'static str,
    ps: &'static [usize],
    /// The source, named, with its hardware and what the columns hold.
    source: &'static str,
    published: &'static [Published],
}

const CASES: [Case; 2] = [
    Case {
        app: "dps-matmul",
        variant: "farm",
        size: "--n 1000 --block 125",
        mode: "pdexec",
        ps: &[1, 2, 4, 8, 10, 16, 20, 32, 64],
        source: "Thesis Fig. 6.6 (SPARC 20 + FDDI, P workers + 1 master): measured 875 s serial, 46.6 s on 20 \
                 (S(20) = 18.8); model (6-13) with the thesis's constants, recomputed \
                 here (the thesis says 19.50 at 20).",
        published: &[
            at(1, None, Some(1.00)),
            at(2, None, Some(2.00)),
            at(4, None, Some(4.00)),
            at(8, None, Some(7.97)),
            at(10, None, Some(9.94)),
            at(16, None, Some(15.76)),
            at(20, Some(18.8), Some(19.53)),
        ],
    },
    Case {
        app: "dps-lu",
        variant: "stream",
        size: "--n 2000 --block 125",
        mode: "de",
        ps: &[1, 2, 4, 8, 10, 16, 32, 64],
        source: "Thesis Fig. 6.7 (SPARC 20 + FDDI, P workers + 1 master): measured 2095 s serial, 250 s on 10 \
                 (S(10) = 8.38); model (6-30) with the thesis's constants, recomputed \
                 here (the thesis says up to 8.75).",
        published: &[
            at(1, None, Some(1.00)),
            at(2, None, Some(2.00)),
            at(4, None, Some(3.99)),
            at(8, None, Some(7.94)),
            at(10, Some(8.38), Some(9.90)),
        ],
    },
];

/// The Life experiment: worlds (a small one, the DPS paper's Table 2 world, 5620², and one
/// where a generation's computation is long against its messages, as the paper's 1000 ms
/// generations were) and P.
const LIFE_WORLDS: [usize; 3] = [1024, 5620, 16384];
const LIFE_PS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];
const LIFE_SOURCE: &str = "DPS paper Fig. 9 (8 bi-processor Pentium III 733 MHz, Gigabit Ethernet): the improved \
                           (overlapped) graph is faster than the simple one at every world size, most at the \
                           smallest; a figure without numbers, so only that shape is compared. Predicted here: \
                           `--variant compare --depth 1 --steps-per-call 1` (one generation per step and per \
                           call, as in the paper), 20 timed generations after 2; gain = simple/overlap median \
                           generation time.";

/// Runs `app` simulated and returns its JSON record.
fn record(bin: &Path, app: &str, args: &[String]) -> Result<serde_json::Value> {
    let job = Job::new(bin.join(app)).launcher(Launcher::None).ranks(1).args(args).arg("--json").timeout_s(300);
    Ok(super::json_record(&job)?.0)
}

/// The predicted `seconds` of a record, positive and finite.
fn seconds(r: &serde_json::Value) -> Result<f64> {
    r["seconds"].as_f64().filter(|s| s.is_finite() && *s > 0.0).with_context(|| format!("no positive seconds in {r}"))
}

fn simulate_args(p: usize, mode: &str, platform: &str) -> Vec<String> {
    ["--simulate", &p.to_string(), "--sim-mode", mode, "--sim-cores", "1", "--platform", platform]
        .map(String::from)
        .to_vec()
}

/// "S (E)" of a published speedup at P, or empty.
fn speedup_cell(s: Option<f64>, p: usize) -> String {
    s.map_or_else(String::new, |s| format!("{s:.2} ({:.2})", s / p as f64))
}

/// The table of one case from its predicted times per P.
fn case_table(case: &Case, times: &[(usize, f64)]) -> String {
    let mut out = format!(
        "\n**{} {} {} ({})**. {}\n\n| P | predicted (s) | predicted S(P) | predicted E(P) | published S (E), measured | \
         published S (E), model |\n|---:|---:|---:|---:|---:|---:|\n",
        case.app, case.variant, case.size, case.mode, case.source
    );
    let t1 = times.first().map_or(f64::NAN, |&(_, t)| t);
    for &(p, t) in times {
        let published = case.published.iter().find(|x| x.p == p);
        out += &format!(
            "| {p} | {t:.4} | {:.2} | {:.2} | {} | {} |\n",
            t1 / t,
            t1 / t / p as f64,
            speedup_cell(published.and_then(|x| x.measured), p),
            speedup_cell(published.and_then(|x| x.model), p)
        );
    }
    out
}

/// One Life point: world side, P, predicted overlap time, gain of overlap over simple.
struct LifePoint {
    side: usize,
    p: usize,
    seconds: f64,
    gain: f64,
}

/// The Life table and whether the paper's shape holds: a gain above 1 everywhere, and
/// larger at the smaller world at every P.
fn life_table(points: &[LifePoint]) -> String {
    let mut out = format!(
        "\n**dps-life compare (de)**. {LIFE_SOURCE}\n\n| world | P | predicted overlap (s) | predicted S(P) | \
         predicted E(P) | predicted gain, overlap over simple |\n|---|---:|---:|---:|---:|---:|\n"
    );
    for x in points {
        let t1 = points.iter().find(|y| y.side == x.side && y.p == 1).map_or(f64::NAN, |y| y.seconds);
        out += &format!(
            "| {}² | {} | {:.5} | {:.2} | {:.2} | {:.2} |\n",
            x.side,
            x.p,
            x.seconds,
            t1 / x.seconds,
            t1 / x.seconds / x.p as f64,
            x.gain
        );
    }
    // One rank exchanges no borders: the two graphs then do the same work.
    let several: Vec<&LifePoint> = points.iter().filter(|x| x.p > 1).collect();
    let above = several.iter().filter(|x| x.gain > 1.0).count();
    let ps: std::collections::BTreeSet<usize> = points.iter().map(|x| x.p).collect();
    let gain = |side, p| points.iter().find(|x| x.side == side && x.p == p).map(|x| x.gain);
    // At each P, the gains from the smallest world to the largest must decrease.
    let decreasing = ps
        .iter()
        .filter(|&&p| {
            let gains: Option<Vec<f64>> = LIFE_WORLDS.iter().map(|&side| gain(side, p)).collect();
            gains.is_some_and(|g| g.windows(2).all(|w| w[0] > w[1]))
        })
        .count();
    let worlds: Vec<String> = LIFE_WORLDS.iter().map(|s| format!("{s}²")).collect();
    out += &format!(
        "\nPaper's shape: improved faster than simple at {above} of {} points with P > 1; the gain decreasing with \
         the world size ({}) at {decreasing} of {} rank counts.\n",
        several.len(),
        worlds.join(", "),
        ps.len()
    );
    out
}

/// The speedup experiments predicted at P = 1 … 64, as markdown.
///
/// # Errors
/// A simulated run that failed or reported no time.
pub(super) fn scaling(bin: &Path, platform: &str, reps: usize) -> Result<String> {
    let mut out = String::from("\n### Predicted speedups at P = 1 … 64 (one core per virtual rank)\n");
    let reps = ["--warmup".to_string(), "1".into(), "--reps".into(), reps.to_string()];
    for case in &CASES {
        let mut times = Vec::new();
        for &p in case.ps {
            let mut args: Vec<String> = case.size.split_whitespace().map(String::from).collect();
            args.extend(["--variant".into(), case.variant.into()]);
            args.extend(reps.iter().cloned());
            args.extend(simulate_args(p, case.mode, platform));
            times.push((p, seconds(&record(bin, case.app, &args)?)?));
        }
        out += &case_table(case, &times);
    }
    let mut life = Vec::new();
    for side in LIFE_WORLDS {
        for p in LIFE_PS {
            let world = format!("--random {side} {side} --generations 20 --warmup 2 --depth 1 --steps-per-call 1");
            let mut args: Vec<String> = world.split_whitespace().map(String::from).collect();
            args.extend(["--variant".into(), "compare".into()]);
            args.extend(simulate_args(p, "de", platform));
            let r = record(bin, "dps-life", &args)?;
            let gain = r["speedup"].as_f64().with_context(|| format!("dps-life compare: no speedup in {r}"))?;
            life.push(LifePoint { side, p, seconds: seconds(&r)?, gain });
        }
    }
    out += &life_table(&life);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_case_table_divides_by_the_one_rank_time_and_shows_the_published_row() {
        let t = case_table(&CASES[1], &[(1, 2.0), (10, 0.25), (64, 0.2)]);
        assert!(t.contains("| 1 | 2.0000 | 1.00 | 1.00 |  | 1.00 (1.00) |"), "{t}");
        assert!(t.contains("| 10 | 0.2500 | 8.00 | 0.80 | 8.38 (0.84) | 9.90 (0.99) |"), "{t}");
        assert!(t.contains("| 64 | 0.2000 | 10.00 | 0.16 |  |  |"), "{t}");
        assert!(t.contains("Fig. 6.7"), "the source is named: {t}");
    }

    #[test]
    fn every_published_p_is_simulated() {
        for case in &CASES {
            assert!(case.published.iter().all(|x| case.ps.contains(&x.p)), "{}", case.app);
            assert_eq!((case.ps.first(), case.ps.last()), (Some(&1), Some(&64)), "{}", case.app);
        }
    }

    #[test]
    fn the_life_shape_counts_gains_and_their_order() {
        let pt = |side, p, seconds, gain| LifePoint { side, p, seconds, gain };
        let points = [
            pt(1024, 1, 1.0, 1.3),
            pt(1024, 2, 0.5, 1.2),
            pt(5620, 1, 4.0, 1.1),
            pt(5620, 2, 1.0, 1.25),
            pt(16384, 1, 9.0, 1.05),
            pt(16384, 2, 5.0, 1.01),
        ];
        let t = life_table(&points);
        assert!(t.contains("| 5620² | 2 | 1.00000 | 4.00 | 2.00 | 1.25 |"), "{t}");
        assert!(t.contains("at 3 of 3 points with P > 1") && t.contains("at 1 of 2 rank counts"), "{t}");
        let t = life_table(&[pt(1024, 2, 1.0, 0.9), pt(5620, 2, 1.0, 1.0), pt(16384, 2, 1.0, 0.8)]);
        assert!(t.contains("at 0 of 3 points") && t.contains("at 0 of 1 rank counts"), "{t}");
        // A missing world counts as not decreasing.
        assert!(life_table(&[pt(1024, 1, 1.0, 2.0)]).contains("at 0 of 1 rank counts"));
    }
}

/// The whole section on this machine, timed: needs the release binaries and a platform file
/// (`dps-bench calibrate --out results/platform.toml`).
#[cfg(test)]
mod measure {
    #[test]
    #[ignore = "a measurement: cargo test --release -p dps-bench --bin dps-bench -- --ignored predicted_speedups --nocapture"]
    fn predicted_speedups() {
        let bin = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release");
        let platform = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/platform.toml");
        let start = std::time::Instant::now();
        let text = super::scaling(&bin, platform.to_str().unwrap(), 3).unwrap();
        println!("{text}\n(the section took {:.1} s)", start.elapsed().as_secs_f64());
    }
}
