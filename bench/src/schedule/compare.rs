//! `--compare`: makespan / lower bound of the layered, CPA, MCPA and static schedules on graphs
//! generated from fixed seeds (random layered, random series-parallel) and on block LU
//! n = 2592, r = 324 (the simulator paper's configuration), as a markdown table.

use std::fmt::Write;

use dps_model::schedule::comm::Comm;
use dps_model::schedule::generate::{self, LuCosts};
use dps_model::schedule::graph::{Family, Graph};

/// The seeds of the generated graphs.
const SEEDS: std::ops::RangeInclusive<u64> = 1..=5;

/// The table on `p` processors.
pub(super) fn table(p: usize, comm: Comm, link: &str, lu: LuCosts) -> String {
    let mut graphs: Vec<(&str, Graph)> = Vec::new();
    for seed in SEEDS {
        graphs.push(("layered", generate::random_layered(seed, 8, 6, p)));
    }
    for seed in SEEDS {
        graphs.push(("series-parallel", generate::random_series_parallel(seed, 30, p)));
    }
    graphs.push(("LU", generate::lu(2592, 324, lu)));
    let mut t = String::new();
    let _ = writeln!(
        t,
        "makespan / lower bound on P = {p} (lower bound: max(critical path at τ(P), W/P)); τ_comm: {link}\n"
    );
    let _ = writeln!(t, "| graph | tasks | lower bound (s) | layered | δ | CPA | MCPA | static |");
    let _ = writeln!(t, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut sums: Vec<(&str, [f64; 4], usize)> = Vec::new();
    for (kind, graph) in graphs {
        let name = graph.name.clone();
        let tasks = graph.tasks.len();
        let family = Family::new(vec![graph], 0).expect("generated graphs are valid");
        let o = super::report::schedule(&family, p, comm);
        let ratios = [o.layered.schedule.makespan, o.cpa.makespan, o.mcpa.makespan, o.static_all.makespan]
            .map(|m| m / o.lower_bound);
        let _ = writeln!(
            t,
            "| {name} | {tasks} | {:.4} | {:.3} | {} | {:.3} | {:.3} | {:.3} |",
            o.lower_bound,
            ratios[0],
            super::report::delta(&o.layered),
            ratios[1],
            ratios[2],
            ratios[3]
        );
        match sums.iter_mut().find(|s| s.0 == kind) {
            Some(s) => {
                (0..4).for_each(|i| s.1[i] += ratios[i].ln());
                s.2 += 1;
            }
            None => sums.push((kind, ratios.map(f64::ln), 1)),
        }
    }
    for (kind, logs, n) in sums.iter().filter(|s| s.2 > 1) {
        let g = logs.map(|l| (l / *n as f64).exp());
        let _ = writeln!(
            t,
            "| {kind}: geometric mean of {n} | | | {:.3} | | {:.3} | {:.3} | {:.3} |",
            g[0], g[1], g[2], g[3]
        );
    }
    t.push('\n');
    t
}
