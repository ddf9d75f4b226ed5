//! The schedule of one graph and its text: the table per task, the analysis, the comparison;
//! and the lookahead set with its timings.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::time::Instant;

use anyhow::Result;
use dps_model::schedule::comm::Comm;
use dps_model::schedule::graph::Family;
use dps_model::schedule::layered::{Layered, Scheduler};
use dps_model::schedule::lookahead::{Config, Event, Lookahead};
use dps_model::schedule::{cpa, lower_bound, Schedule};

/// A graph's schedules.
pub(super) struct Outcome {
    pub(super) layered: Layered,
    pub(super) lower_bound: f64,
    pub(super) cpa: Schedule,
    pub(super) mcpa: Schedule,
    pub(super) static_all: Schedule,
}

/// The layer factor δ that holds, as printed: `√3` (every layer monotonic: Mounié–Rapine–
/// Trystram), `2` (some layer is not), or Graham's `2−1/P` for an all-atomic graph.
pub(super) fn delta(l: &Layered) -> String {
    if l.level == 0 {
        "2−1/P".to_string()
    } else if l.factor < 2.0 {
        "√3".to_string()
    } else {
        "2".to_string()
    }
}

/// The layered, CPA, MCPA and static schedules of `family`'s root on `p` processors.
pub(super) fn schedule(family: &Family, p: usize, comm: Comm) -> Outcome {
    let mut scheduler = Scheduler::new(comm);
    let tables = scheduler.tables(family, family.root_id(), p);
    let layered = scheduler.schedule(family, family.root_id(), p);
    let graph = family.root();
    if let Err(e) = dps_model::schedule::check(graph, &tables, &layered.schedule) {
        panic!("the layered schedule is wrong: {e}");
    }
    Outcome {
        lower_bound: lower_bound(graph, &tables, p),
        cpa: cpa::cpa(graph, &tables, p, &comm),
        mcpa: cpa::mcpa(graph, &tables, p, &comm),
        static_all: cpa::static_all(graph, &tables, p, &comm),
        layered,
    }
}

/// Processors as ranges: `0-3,6`.
fn ranges(procs: &[usize]) -> String {
    let mut sorted = procs.to_vec();
    sorted.sort_unstable();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        out.push(if i == j { sorted[i].to_string() } else { format!("{}-{}", sorted[i], sorted[j]) });
        i = j + 1;
    }
    out.join(",")
}

/// The report of one schedule.
pub(super) fn text(family: &Family, o: &Outcome, link: &str) -> String {
    let graph = family.root();
    let l = &o.layered;
    let s = &l.schedule;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "graph {:?}: {} tasks, {} edges, P = {}; τ_comm: {link}",
        graph.name,
        graph.tasks.len(),
        graph.edges.len(),
        s.procs
    );
    let _ =
        writeln!(t, "{:<12} {:>5} {:>5} {:>12} {:>12}  processors", "task", "layer", "procs", "start (s)", "end (s)");
    let mut layer_of = vec![0; graph.tasks.len()];
    for (i, layer) in l.layers.iter().enumerate() {
        for &v in &layer.tasks {
            layer_of[v] = i;
        }
    }
    let mut order: Vec<usize> = (0..graph.tasks.len()).collect();
    order.sort_by(|&a, &b| s.placements[a].start.total_cmp(&s.placements[b].start).then(a.cmp(&b)));
    for v in order {
        let pl = &s.placements[v];
        let _ = writeln!(
            t,
            "{:<12} {:>5} {:>5} {:>12.6} {:>12.6}  {}",
            graph.tasks[v].name,
            if l.layers.is_empty() { "-".to_string() } else { layer_of[v].to_string() },
            pl.procs.len(),
            pl.start,
            pl.finish,
            ranges(&pl.procs)
        );
    }
    let comm: f64 = s.phases.iter().map(|p| p.time).sum();
    let _ = writeln!(t, "TIME {:.6} s ({} layers, {:.6} s of redistribution)", s.makespan, l.layers.len(), comm);
    let monotonic = l.layers.iter().filter(|x| x.factor < 2.0).count();
    let how = if l.level == 0 {
        "Graham's list, c = 2 − 1/P".to_string()
    } else {
        format!(
            "per layer, δ = {}: {monotonic} of {} layers monotonic (√3, Mounié–Rapine–Trystram), the others 2",
            delta(l),
            l.layers.len()
        )
    };
    let _ = writeln!(t, "k {}  µ {:.4}  factor {:.4} ({how})", l.level, l.mu, l.factor);
    let bound_how = if l.level == 0 {
        "W/P + (1 − 1/P)·CP"
    } else {
        "Σ δ_i·LB(Λ_i)/µ, the proof's bound with LB(Λ_i) ≤ T_opt(Λ_i)"
    };
    let _ = writeln!(t, "bound {:.6} s ({bound_how}); TIME/bound {:.3}", l.bound, s.makespan / l.bound);
    let _ = writeln!(
        t,
        "lower bound {:.6} s (max(critical path at τ(P), W/P)); TIME/LB {:.3}",
        o.lower_bound,
        s.makespan / o.lower_bound
    );
    let _ = writeln!(
        t,
        "CPA {:.6} s (/LB {:.3}); MCPA {:.6} s (/LB {:.3}); static, every task on all P: {:.6} s (/LB {:.3})",
        o.cpa.makespan,
        o.cpa.makespan / o.lower_bound,
        o.mcpa.makespan,
        o.mcpa.makespan / o.lower_bound,
        o.static_all.makespan,
        o.static_all.makespan / o.lower_bound
    );
    t
}

/// Seconds per call of `f`, over about 20 ms of calls.
fn time_per_call(mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut calls = 0u64;
    while calls < 10 || start.elapsed().as_secs_f64() < 0.02 {
        f();
        calls += 1;
    }
    start.elapsed().as_secs_f64() / calls as f64
}

/// The lookahead set's report: per event, the configuration, its TIME, the time it took
/// (with the shared memo), the switch (a lookup) and a reschedule from scratch.
pub(super) fn lookahead(family: &Family, p: usize, comm: Comm, events: &[Event]) -> Result<String> {
    let base = Config { procs: p, dropped: BTreeSet::new() };
    let mut scheduler = Scheduler::new(comm);
    let ahead = Lookahead::compute(&mut scheduler, family, base.clone(), events)
        .map_err(|e| dps_harness::BadInput::new(format!("--lookahead: {e}")))?;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "lookahead: the current schedule and {} alternatives computed in {:.3} ms ({} nested-graph schedules); tolerable event rate {:.0}/s",
        ahead.alternatives.len(),
        ahead.compute_s * 1e3,
        scheduler.computed(),
        1.0 / ahead.compute_s
    );
    let _ = writeln!(
        t,
        "{:<14} {:>5} {:>6} {:>12} {:>13} {:>12} {:>16}",
        "event", "P", "tasks", "TIME (s)", "computed (ms)", "switch (µs)", "reschedule (ms)"
    );
    for alt in &ahead.alternatives {
        let switch_s = time_per_call(|| {
            std::hint::black_box(ahead.switch(std::hint::black_box(&alt.event)));
        });
        let fresh_family = alt.config.family(family)?;
        let reschedule_s = time_per_call(|| {
            std::hint::black_box(Scheduler::new(comm).schedule(
                &fresh_family,
                fresh_family.root_id(),
                alt.config.procs,
            ));
        });
        let _ = writeln!(
            t,
            "{:<14} {:>5} {:>6} {:>12.6} {:>13.3} {:>12.3} {:>16.3}",
            alt.event.to_string(),
            alt.config.procs,
            fresh_family.root().tasks.len(),
            alt.layered.schedule.makespan,
            alt.compute_s * 1e3,
            switch_s * 1e6,
            reschedule_s * 1e3
        );
    }
    Ok(t)
}
