//! tune-farm's record (one JSON object with `--json`) and its table: per grid point the
//! model's, the simulator's and the measured service time per item, and the items each
//! worker ran, simulated and measured (the load-balanced route and the window at work).

use std::fmt::Write as _;
use std::path::Path;

use dps_model::p3l::{self, Bsp, Case, Farm, Plan};
use serde::Serialize;

use super::graph::Call;
use super::{Inputs, Launch, Measured};

/// One grid point.
#[derive(Clone, Debug, Serialize)]
pub(super) struct Point {
    n: u64,
    k: u64,
    items: u64,
    /// The model's service time per item, µs: max of (3) and (4).
    model_us: f64,
    /// The simulator's, µs: its call's time over its items.
    sim_us: f64,
    /// Measured: a call's median time over its items, µs.
    real_us: f64,
    /// (model − real) / real.
    model_error: f64,
    /// (sim − real) / real.
    sim_error: f64,
    /// Items each worker ran, measured (summed over the calls) and simulated.
    real_per_worker: Vec<u64>,
    sim_per_worker: Vec<u64>,
}

impl Point {
    /// Worker 0's share of the items (the worker away from the emitter), measured and simulated.
    fn first_share(&self) -> (f64, f64) {
        let share = |w: &[u64]| w.first().map_or(0.0, |&i| i as f64 / w.iter().sum::<u64>().max(1) as f64);
        (share(&self.real_per_worker), share(&self.sim_per_worker))
    }
}

/// The whole run.
#[derive(Clone, Debug, Serialize)]
pub(super) struct Record {
    bench: &'static str,
    item_us: f64,
    payload: u64,
    ranks: usize,
    prec: f64,
    /// The simulator's mode: `pdexec` (busy loops charged exactly) or `de`.
    sim_mode: &'static str,
    platform: String,
    /// The platform file's own warnings about its measurements.
    pub(super) platform_warnings: Vec<String>,
    /// Wall-clock seconds the simulator took for the whole grid.
    pub(super) sim_wall_s: f64,
    model: Inputs,
    case: &'static str,
    /// The closed-form rule's (n, k).
    rule_n: u64,
    rule_k: u64,
    /// The verified proposal (n̂, k̂), and whether it meets the case's condition within the processors.
    n_hat: u64,
    k_hat: u64,
    satisfied: bool,
    model_at_hat_us: f64,
    /// The exhaustive search's smallest (n, k) satisfying (5), if any within the processors.
    exhaustive: Option<(u64, u64)>,
    grid: Vec<Point>,
    /// The measured best (n*, k*): the smallest measured service time.
    best_n: u64,
    best_k: u64,
    best_real_us: f64,
    /// Measured at (n̂, k̂), and its ratio to the best (1 = the proposal is the best).
    real_at_hat_us: Option<f64>,
    hat_over_best: Option<f64>,
    /// The fewest workers whose best measured grain keeps up with T_e (service < T_e), if any.
    measured_min_n: Option<u64>,
    /// The target the measured (n̂, k̂) must meet (spec §5.3): T_e in case A, 2g∞d_0(1 + 1/prec)
    /// in case B, µs; and whether it did.
    target_us: f64,
    meets_target: Option<bool>,
    /// The median of |model error| over the grid.
    median_abs_model_error: f64,
    /// The simulator's best (n, k) (its smallest service time), and the measured time there
    /// over the measured best (1 = the simulator picks the measured best).
    best_sim_n: u64,
    best_sim_k: u64,
    best_sim_us: f64,
    real_at_sim_best_over_best: f64,
    /// The fewest workers whose best simulated grain keeps up with T_e, if any (beside n̂
    /// and `measured_min_n`).
    sim_min_n: Option<u64>,
    /// The median of |simulator error| over the grid.
    median_abs_sim_error: f64,
}

impl Record {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        args: &Launch,
        platform: &Path,
        model: Inputs,
        bsp: &Bsp,
        farm: &Farm,
        plan: &Plan,
        exhaustive: Option<(u64, u64)>,
        measured: &[Measured],
        simulated: &[Call],
    ) -> Record {
        let grid: Vec<Point> = measured
            .iter()
            .zip(simulated)
            .map(|(m, s)| {
                let model_us = p3l::farm_service(bsp, farm, m.n, m.k);
                let real_us = m.seconds / m.items as f64 * 1e6;
                let sim_us = s.seconds / m.items as f64 * 1e6;
                Point {
                    n: m.n,
                    k: m.k,
                    items: m.items,
                    model_us,
                    sim_us,
                    real_us,
                    model_error: (model_us - real_us) / real_us,
                    sim_error: (sim_us - real_us) / real_us,
                    real_per_worker: m.per_worker.clone(),
                    sim_per_worker: s.per_worker.clone(),
                }
            })
            .collect();
        let best = grid.iter().min_by(|a, b| a.real_us.total_cmp(&b.real_us)).expect("a measured grid");
        let (n_hat, k_hat) = plan.chosen;
        let at_hat = grid.iter().find(|p| (p.n, p.k) == (n_hat, k_hat)).map(|p| p.real_us);
        let measured_min_n = grid.iter().filter(|p| p.real_us < farm.t_e).map(|p| p.n).min();
        let errors: Vec<f64> = grid.iter().map(|p| p.model_error.abs()).collect();
        let sim_best = grid.iter().min_by(|a, b| a.sim_us.total_cmp(&b.sim_us)).expect("a simulated grid");
        let sim_errors: Vec<f64> = grid.iter().map(|p| p.sim_error.abs()).collect();
        let target_us = match plan.case {
            Case::A => farm.t_e,
            Case::B => 2.0 * bsp.g_inf * farm.d0 * (1.0 + 1.0 / args.prec),
        };
        Record {
            bench: "tune-farm",
            item_us: args.item_us,
            payload: args.payload,
            ranks: args.ranks,
            prec: args.prec,
            sim_mode: dps::SimMode::from(args.sim_mode).name(),
            platform: platform.display().to_string(),
            platform_warnings: Vec::new(),
            sim_wall_s: 0.0,
            case: if plan.case == Case::A { "A" } else { "B" },
            rule_n: plan.rule.0,
            rule_k: plan.rule.1,
            n_hat,
            k_hat,
            satisfied: plan.satisfied,
            model_at_hat_us: plan.service,
            exhaustive,
            best_n: best.n,
            best_k: best.k,
            best_real_us: best.real_us,
            real_at_hat_us: at_hat,
            hat_over_best: at_hat.map(|t| t / best.real_us),
            measured_min_n,
            target_us,
            meets_target: at_hat.map(|t| t <= target_us),
            median_abs_model_error: dps_harness::median(&errors),
            best_sim_n: sim_best.n,
            best_sim_k: sim_best.k,
            best_sim_us: sim_best.sim_us,
            real_at_sim_best_over_best: sim_best.real_us / best.real_us,
            sim_min_n: grid.iter().filter(|p| p.sim_us < farm.t_e).map(|p| p.n).min(),
            median_abs_sim_error: dps_harness::median(&sim_errors),
            grid,
            model,
        }
    }

    /// The human report: the model's inputs and plan, the grid, the verdict.
    pub(super) fn text(&self) -> String {
        let m = &self.model;
        let mut s = String::new();
        for w in &self.platform_warnings {
            let _ = writeln!(s, "WARNING (platform file): {w}");
        }
        let _ = writeln!(
            s,
            "farm: t_f = {} µs per item, d_0 = {} per item, {} ranks, {} processors for workers",
            self.item_us,
            dps_harness::format_bytes(self.payload),
            self.ranks,
            m.processors
        );
        let _ = writeln!(
            s,
            "model ({}, {} link): g∞ = {:.3e} µs/B, N½ = {:.0} B (start-up {:.2} µs), l = {:.2} µs per token (DPS over MPI); \
             T_e = {:.2} µs ({}); case {}",
            self.platform,
            m.link,
            m.g_inf,
            m.n_half,
            m.g_inf * m.n_half,
            m.l,
            m.te_us,
            if m.te_given { "--te-us" } else { "batch: the best service time on the processors + 1/prec" },
            self.case
        );
        let exhaustive = self.exhaustive.map_or("none within the processors".into(), |(n, k)| format!("({n}, {k})"));
        let _ = writeln!(
            s,
            "proposal: rule (n, k) = ({}, {}), verified (n̂, k̂) = ({}, {}){}, model {:.2} µs per item; exhaustive (5): {exhaustive}\n",
            self.rule_n,
            self.rule_k,
            self.n_hat,
            self.k_hat,
            if self.satisfied { "" } else { " (condition not met within the processors: best grain for all of them)" },
            self.model_at_hat_us
        );
        let _ = writeln!(
            s,
            "| n | k | items | model µs/item | simulator ({}) µs/item | measured µs/item | model error | simulator error | worker 0's share of the items, measured / simulated |",
            self.sim_mode
        );
        s.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for p in &self.grid {
            let mark = match ((p.n, p.k) == (self.n_hat, self.k_hat), (p.n, p.k) == (self.best_n, self.best_k)) {
                (true, true) => " (n̂,k̂ = n*,k*)",
                (true, false) => " (n̂,k̂)",
                (false, true) => " (n*,k*)",
                _ => "",
            };
            let (real_share, sim_share) = p.first_share();
            let _ = writeln!(
                s,
                "| {}{mark} | {} | {} | {:.2} | {:.2} | {:.2} | {:+.0}% | {:+.0}% | {:.0}% / {:.0}% |",
                p.n,
                p.k,
                p.items,
                p.model_us,
                p.sim_us,
                p.real_us,
                p.model_error * 100.0,
                p.sim_error * 100.0,
                real_share * 100.0,
                sim_share * 100.0
            );
        }
        let hat = match (self.real_at_hat_us, self.hat_over_best, self.meets_target) {
            (Some(t), Some(r), Some(meets)) => format!(
                "measured {t:.2} µs per item at (n̂, k̂), {r:.2}× the best, which {} the target {:.2} µs",
                if meets { "meets" } else { "misses" },
                self.target_us
            ),
            _ => format!("(n̂, k̂) is outside the measured grid (target {:.2} µs)", self.target_us),
        };
        let min_n = self.measured_min_n.map_or("no n keeps up".into(), |n| format!("fewest workers keeping up: {n}"));
        let _ = writeln!(
            s,
            "\nmeasured best (n*, k*) = ({}, {}) at {:.2} µs per item; {hat}; {min_n} (n̂ = {}); \
             median |model error| {:.0}%",
            self.best_n,
            self.best_k,
            self.best_real_us,
            self.n_hat,
            self.median_abs_model_error * 100.0
        );
        let _ = writeln!(s, "{}", self.simulator_verdict());
        s
    }

    /// The simulator's best against the measured best and the model's proposal.
    fn simulator_verdict(&self) -> String {
        let (sim, real, hat) =
            ((self.best_sim_n, self.best_sim_k), (self.best_n, self.best_k), (self.n_hat, self.k_hat));
        let against_real = if sim == real {
            "the measured best".to_string()
        } else {
            format!("not the measured best; measured there {:.2}× the best", self.real_at_sim_best_over_best)
        };
        let against_model = if sim == hat { "the model's (n̂, k̂)" } else { "not the model's (n̂, k̂)" };
        let min_n = |n: Option<u64>| n.map_or("none".to_string(), |n| n.to_string());
        format!(
            "simulator ({}): best (n, k) = ({}, {}) at {:.2} µs per item, {against_real}, {against_model}; \
             fewest workers keeping up: simulated {}, measured {}, model n̂ = {}; median |simulator error| {:.0}%; \
             the simulator took {:.2} s for the grid",
            self.sim_mode,
            sim.0,
            sim.1,
            self.best_sim_us,
            min_n(self.sim_min_n),
            min_n(self.measured_min_n),
            self.n_hat,
            self.median_abs_sim_error * 100.0,
            self.sim_wall_s
        )
    }
}
