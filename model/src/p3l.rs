//! The P3L cost models of the `Pipe` and `Farm` skeletons on a BSP machine (the P3L paper,
//! §3-4), and the rules that choose a farm's worker
//! count `n` and grain `k` (items per task) from them.
//!
//! Units: times in µs, sizes in bytes, `g∞` in µs per byte. The paper's formulas lost their
//! rounding brackets in extraction, so the closed-form rules (6)-(9) are only a starting
//! point: [`plan_farm`] verifies the predicate (5) numerically and bumps `k`, then `n`, until
//! it holds (spec §5.7), and [`smallest_feasible`] searches the grid exhaustively as a
//! cross-check.
//!
//! In DPS terms (spec §4) a farm is `split (emitter) → leaf (n workers) → merge (collector)`,
//! `k` the items per token; for DPS's asynchronous farm the BSP barrier `l` stands for the
//! runtime's per-token dispatch overhead.

/// The BSP machine parameters the models use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bsp {
    /// `g∞`: the asymptotic cost of one byte, µs (`1/b`).
    pub g_inf: f64,
    /// `N_{1/2}`: the message size at half the asymptotic bandwidth, bytes (`l·b` of a fitted
    /// `t(s) = l + s/b`), so that `g∞·N_{1/2}` is the per-message start-up cost.
    pub n_half: f64,
    /// `l`: the barrier (or per-token dispatch) time, µs.
    pub l: f64,
}

impl Bsp {
    /// The BSP parameters of a link with latency `latency_us` (µs) and bandwidth
    /// `bytes_per_us` (bytes per µs, i.e. MB/s), and a synchronisation cost `l`.
    pub fn from_link(latency_us: f64, bytes_per_us: f64, l: f64) -> Bsp {
        Bsp { g_inf: 1.0 / bytes_per_us, n_half: latency_us * bytes_per_us, l }
    }

    /// `g∞·N_{1/2}`: one message's start-up cost, µs.
    pub fn startup(&self) -> f64 {
        self.g_inf * self.n_half
    }
}

/// A farm's workload: the per-item compute time, the item size, the stream's inter-arrival
/// time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Farm {
    /// `t_f`: the time to compute one item, µs.
    pub t_f: f64,
    /// `d_0`: the size of an item (and of its result), bytes.
    pub d0: f64,
    /// `T_e`: the time between items arriving (for a batch job, the target per-item time), µs.
    pub t_e: f64,
}

/// (3): the emitter's (and collector's) service time per item with `n` workers and grain `k`.
pub fn emitter_service(m: &Bsp, f: &Farm, n: u64, k: u64) -> f64 {
    let (n, k) = (n as f64, k as f64);
    2.0 * m.g_inf * f.d0 + m.startup() / k + (m.startup() + m.l) / (n * k)
}

/// (4): the workers' service time per item with `n` workers and grain `k`.
pub fn worker_service(m: &Bsp, f: &Farm, n: u64, k: u64) -> f64 {
    let (n, k) = (n as f64, k as f64);
    (2.0 * m.g_inf * f.d0 + f.t_f) / n + (2.0 * m.startup() + m.l) / (n * k)
}

/// The farm's service time per item: its slower side, emitter/collector or workers.
pub fn farm_service(m: &Bsp, f: &Farm, n: u64, k: u64) -> f64 {
    emitter_service(m, f, n, k).max(worker_service(m, f, n, k))
}

/// (5): both sides keep up with the arrivals.
pub fn keeps_up(m: &Bsp, f: &Farm, n: u64, k: u64) -> bool {
    emitter_service(m, f, n, k) < f.t_e && worker_service(m, f, n, k) < f.t_e
}

/// Which regime the farm is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// `2g∞d_0 ≤ T_e`: enough workers and a large enough grain keep up with the stream.
    A,
    /// `2g∞d_0 > T_e`: the emitter/collector is the bottleneck for every `(n, k)`.
    B,
}

/// The regime of farm `f` on machine `m`.
pub fn case(m: &Bsp, f: &Farm) -> Case {
    if 2.0 * m.g_inf * f.d0 <= f.t_e {
        Case::A
    } else {
        Case::B
    }
}

/// (6), (7): Case A's closed-form rule, as printed (floors), before verification.
pub fn rule_case_a(m: &Bsp, f: &Farm) -> (u64, u64) {
    let two_gd = 2.0 * m.g_inf * f.d0;
    let first = (m.startup() / ((f.t_e - two_gd) + m.startup())).floor();
    let second = ((two_gd + f.t_f) / f.t_e).floor() + 1.0;
    let k = ((2.0 * m.startup() + m.l) / f.t_e).floor().max(1.0);
    (to_count(first.max(second)), to_count(k))
}

/// (8), (9): Case B's rule with precision `prec` (the emitter within `1 + 1/prec` of its
/// bound), the exact form of (9), both rounded up, before verification.
pub fn rule_case_b(m: &Bsp, f: &Farm, prec: f64) -> (u64, u64) {
    let two_gd = 2.0 * m.g_inf * f.d0;
    let k = prec * (m.startup() + m.l) / two_gd;
    let n = prec * (two_gd + f.t_f + two_gd) / ((prec + 1.0) * two_gd);
    (to_count(n.ceil()), to_count(k.ceil()))
}

/// (9)'s approximate form `1 + ⌊(4g∞d_0 + t_f)/(2g∞d_0)⌋`, the large-`prec` limit plus one.
pub fn rule_case_b_approx(m: &Bsp, f: &Farm) -> u64 {
    let two_gd = 2.0 * m.g_inf * f.d0;
    to_count(1.0 + ((2.0 * two_gd + f.t_f) / two_gd).floor())
}

/// A rounded, non-negative count (NaN and negatives give 1, infinities saturate).
fn to_count(x: f64) -> u64 {
    if x.is_nan() {
        1
    } else {
        (x as u64).max(1)
    }
}

/// The largest grain the verification tries before it adds a worker.
pub const MAX_GRAIN: u64 = 1 << 16;

/// A farm's plan: the closed-form rule, and the verified `(n, k)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Case A or B.
    pub case: Case,
    /// `(n, k)` from the closed-form rule, (6)-(7) or (8)-(9).
    pub rule: (u64, u64),
    /// `(n, k)` after verification and clamping to `n_max`.
    pub chosen: (u64, u64),
    /// Whether `chosen` satisfies the case's condition: (5) in case A; in case B the emitter
    /// within `1 + 1/prec` of its bound and the workers no slower than it.
    pub satisfied: bool,
    /// The model's service time per item at `chosen`, µs.
    pub service: f64,
}

/// Chooses `(n, k)` for farm `f` on machine `m` with at most `n_max` workers: the case's
/// closed-form rule, then (spec §5.3) the smallest `k ≥ k_rule` that satisfies the case's
/// condition with `n = n_rule`, or else with `n + 1`, … up to `n_max`. If no `n ≤ n_max`
/// does, the plan is not satisfied and `chosen` is `n_max` workers with the smallest grain
/// within `1 + 1/prec` of their best service time ([`best_grain`]).
///
/// Case A's condition (5) only gets easier as `k` grows (both service times fall), so the
/// smallest grain is found by bisection. In case B the emitter's bound gets easier and
/// "workers no slower than the emitter" harder as `k` grows (their difference grows as
/// `g∞N_{1/2}(1/n − 1)/k`), so the only candidate is the smallest grain from `k̂` up that meets
/// the bound. As in the paper, `k̂` (8) is kept and `n` chosen for it; (8) is what one worker
/// needs, and with more workers a smaller grain may meet the bound with fewer of them (with
/// `t_f = 400`, `d_0 = 60 000`, `prec = 2`: 31 workers at grain 1 against the plan's 32 at
/// grain 2), at a service time closer to the bound.
///
/// # Panics
/// If `n_max` is 0 or `prec` is not positive.
pub fn plan_farm(m: &Bsp, f: &Farm, prec: f64, n_max: u64) -> Plan {
    assert!(n_max >= 1 && prec > 0.0, "plan_farm: n_max {n_max}, prec {prec}");
    let case = case(m, f);
    let bound = 2.0 * m.g_inf * f.d0 * (1.0 + 1.0 / prec);
    let rule = match case {
        Case::A => rule_case_a(m, f),
        Case::B => rule_case_b(m, f, prec),
    };
    let grain_for = |n: u64| match case {
        Case::A => smallest_grain(rule.1, |k| keeps_up(m, f, n, k)),
        Case::B => smallest_grain(rule.1, |k| emitter_service(m, f, n, k) < bound)
            .filter(|&k| worker_service(m, f, n, k) <= emitter_service(m, f, n, k)),
    };
    let found = (rule.0.min(n_max)..=n_max).find_map(|n| grain_for(n).map(|k| (n, k)));
    let (chosen, satisfied) = match found {
        Some(nk) => (nk, true),
        None => ((n_max, best_grain(m, f, n_max, 1.0 / prec)), false),
    };
    Plan { case, rule, chosen, satisfied, service: farm_service(m, f, chosen.0, chosen.1) }
}

/// The smallest `k` in `from..=MAX_GRAIN` for which `holds`, a condition that once true
/// stays true as `k` grows; `None` if it does not hold at [`MAX_GRAIN`].
fn smallest_grain(from: u64, holds: impl Fn(u64) -> bool) -> Option<u64> {
    let (mut low, mut high) = (from.max(1), MAX_GRAIN.max(from));
    if !holds(high) {
        return None;
    }
    while low < high {
        let mid = low + (high - low) / 2;
        if holds(mid) {
            high = mid;
        } else {
            low = mid + 1;
        }
    }
    Some(low)
}

/// `from`, `from + 1`, … up to [`MAX_GRAIN`].
fn grains(from: u64) -> impl Iterator<Item = u64> {
    from.max(1)..=MAX_GRAIN.max(from)
}

/// The smallest grain with which `n` workers come within a factor `1 + tolerance` of the
/// service time an unbounded grain gives, `max((2g∞d_0 + t_f)/n, 2g∞d_0)` (the service time
/// only falls as `k` grows); [`MAX_GRAIN`] if none below it does.
pub fn best_grain(m: &Bsp, f: &Farm, n: u64, tolerance: f64) -> u64 {
    let two_gd = 2.0 * m.g_inf * f.d0;
    let limit = ((two_gd + f.t_f) / n as f64).max(two_gd);
    grains(1).find(|&k| farm_service(m, f, n, k) <= limit * (1.0 + tolerance)).unwrap_or(MAX_GRAIN)
}

/// The exhaustive cross-check: the smallest `n ≤ n_max`, then the smallest `k ≤ k_max`,
/// that satisfy (5), if any.
pub fn smallest_feasible(m: &Bsp, f: &Farm, n_max: u64, k_max: u64) -> Option<(u64, u64)> {
    (1..=n_max).find_map(|n| (1..=k_max).find(|&k| keeps_up(m, f, n, k)).map(|k| (n, k)))
}

/// A pipe's stages: per-item compute time `t[i]` of stage `i` and the sizes `d[i]` of the
/// items entering stage `i` (`d` has one more entry than `t`: the last stage's output).
#[derive(Clone, Debug, PartialEq)]
pub struct Pipe {
    /// Per-item compute time of each stage, µs.
    pub t: Vec<f64>,
    /// Item sizes between stages, bytes (`t.len() + 1` entries).
    pub d: Vec<f64>,
}

impl Pipe {
    /// `S(i) = t_i + g∞(d_i + d_{i+1})`: stage `i`'s per-item cost without start-ups.
    pub fn stage_cost(&self, m: &Bsp, i: usize) -> f64 {
        self.t[i] + m.g_inf * (self.d[i] + self.d[i + 1])
    }

    /// `T = max_i S(i)`: the slowest stage's per-item cost.
    pub fn slowest(&self, m: &Bsp) -> f64 {
        (0..self.t.len()).map(|i| self.stage_cost(m, i)).fold(0.0, f64::max)
    }

    /// (2): stage `i`'s service time per task of `k` items.
    pub fn stage_service(&self, m: &Bsp, i: usize, k: u64) -> f64 {
        let k = k as f64;
        self.t[i] * k + m.l + m.g_inf * k * (self.d[i] + self.d[i + 1]) + 2.0 * m.startup()
    }

    /// (1): the pipe's service time per task of `k` items, with items arriving every `t_e`.
    pub fn service(&self, m: &Bsp, t_e: f64, k: u64) -> f64 {
        let stages = (0..self.t.len()).map(|i| self.stage_service(m, i, k)).fold(0.0, f64::max);
        (k as f64 * t_e).max(stages)
    }

    /// Optimisation rule 1: the grain that lets the pipe keep up with arrivals every `t_e`,
    /// `⌈(l + 2g∞N_{1/2})/(T_e − T)⌉`, or 1 if no grain can (`T ≥ T_e`: farm the slowest
    /// stage instead).
    pub fn grain(&self, m: &Bsp, t_e: f64) -> u64 {
        let slack = t_e - self.slowest(m);
        if slack <= 0.0 {
            return 1;
        }
        to_count(((m.l + 2.0 * m.startup()) / slack).ceil())
    }

    /// Optimisation rule 2: the stages `j` such that merging `j` and `j + 1` into one stage
    /// does not make the pipe slower (`S(j) + S(j+1) < max S`).
    pub fn mergeable(&self, m: &Bsp) -> Vec<usize> {
        let slowest = self.slowest(m);
        (0..self.t.len().saturating_sub(1))
            .filter(|&j| self.stage_cost(m, j) + self.stage_cost(m, j + 1) < slowest)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    //! Worked examples of the models: g∞ = 1e-4 µs/B
    //! (10 GB/s), N_{1/2} = 20 000 B (a 2 µs start-up), l = 10 µs.
    use super::*;

    const M: Bsp = Bsp { g_inf: 1e-4, n_half: 20_000.0, l: 10.0 };

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn from_link_gives_the_worked_examples_machine() {
        // 2 µs latency, 10 GB/s = 10 000 bytes per µs.
        let m = Bsp::from_link(2.0, 10_000.0, 10.0);
        assert!(close(m.g_inf, 1e-4, 1e-15) && close(m.n_half, 20_000.0, 1e-9) && close(m.startup(), 2.0, 1e-12));
    }

    #[test]
    fn farm_case_a() {
        let f = Farm { t_f: 100.0, d0: 8000.0, t_e: 10.0 };
        assert_eq!(case(&M, &f), Case::A);
        // (6): first term 0.19, second ⌊10.16⌋ + 1 = 11; (7) with floor gives 1.
        assert!(close(M.startup() / ((f.t_e - 1.6) + M.startup()), 0.19, 0.005));
        assert_eq!(rule_case_a(&M, &f), (11, 1));
        // ...which violates (5): the workers need 10.51 > T_e.
        assert!(close(worker_service(&M, &f, 11, 1), 10.51, 0.005));
        assert!(!keeps_up(&M, &f, 11, 1));
        // k = 2 satisfies it.
        assert!(close(worker_service(&M, &f, 11, 2), 9.87, 0.005));
        assert!(close(emitter_service(&M, &f, 11, 2), 3.15, 0.005));
        assert!(keeps_up(&M, &f, 11, 2));
        // Verification bumps k to 2; the exhaustive search agrees; 10 workers never keep up.
        let plan = plan_farm(&M, &f, 10.0, 64);
        assert_eq!((plan.rule, plan.chosen, plan.satisfied), ((11, 1), (11, 2), true));
        assert_eq!(smallest_feasible(&M, &f, 64, 1024), Some((11, 2)));
        assert!(close((1.6 + f.t_f) / 10.0, 10.16, 1e-9));
        assert!((1..=1024).all(|k| !keeps_up(&M, &f, 10, k)));
    }

    #[test]
    fn farm_case_a_clamped_to_the_machine() {
        let f = Farm { t_f: 100.0, d0: 8000.0, t_e: 10.0 };
        let plan = plan_farm(&M, &f, 10.0, 4);
        assert!(!plan.satisfied);
        assert_eq!(plan.chosen.0, 4);
        // 4 workers at best give (1.6 + 100)/4 = 25.4 µs per item; the grain comes within 10 %
        // of it (prec = 10), and one item less would not.
        let (limit, k) = ((1.6 + 100.0) / 4.0, plan.chosen.1);
        assert!(plan.service >= limit && plan.service <= limit * 1.1, "{plan:?}");
        assert!(k == 1 || farm_service(&M, &f, 4, k - 1) > limit * 1.1, "{plan:?}");
    }

    #[test]
    fn farm_case_b() {
        let f = Farm { t_f: 100.0, d0: 80_000.0, t_e: 10.0 };
        assert_eq!(case(&M, &f), Case::B);
        // (8): 7.5 → 8; (9) exact: 7.5 → 8; the ≈ form: 9.
        assert_eq!(rule_case_b(&M, &f, 10.0), (8, 8));
        assert_eq!(rule_case_b_approx(&M, &f), 9);
        assert!(close(emitter_service(&M, &f, 8, 8), 16.44, 0.005));
        assert!(close(worker_service(&M, &f, 8, 8), 14.72, 0.005));
        assert!(emitter_service(&M, &f, 8, 8) < 16.0 * 1.1);
        // 7 workers would be slower than the emitter.
        assert!(close(worker_service(&M, &f, 7, 8), 16.82, 0.005));
        assert!(worker_service(&M, &f, 7, 8) > emitter_service(&M, &f, 7, 8));
        let plan = plan_farm(&M, &f, 10.0, 64);
        assert_eq!((plan.chosen, plan.satisfied), ((8, 8), true));
        // No (n, k) keeps up with T_e in case B.
        assert_eq!(smallest_feasible(&M, &f, 64, 1024), None);
    }

    #[test]
    fn the_verified_plan_is_the_exhaustive_minimum_over_a_grid() {
        // Predicate (5) checked numerically: the plan's n is the smallest feasible one.
        for t_f in [1.0, 7.0, 30.0, 100.0, 333.0] {
            for d0 in [8.0, 800.0, 8000.0, 40_000.0] {
                for t_e in [2.0, 5.0, 10.0, 50.0] {
                    let f = Farm { t_f, d0, t_e };
                    if case(&M, &f) != Case::A {
                        continue;
                    }
                    let plan = plan_farm(&M, &f, 10.0, 512);
                    let exhaustive = smallest_feasible(&M, &f, 512, 1024);
                    assert_eq!(exhaustive.map(|nk| nk.0), Some(plan.chosen.0), "{f:?}: {plan:?}");
                    assert!(keeps_up(&M, &f, plan.chosen.0, plan.chosen.1), "{f:?}");
                }
            }
        }
    }

    #[test]
    fn case_b_plans_meet_the_emitter_bound_and_fewer_workers_would_not_keep_up() {
        for t_f in [10.0, 100.0, 400.0] {
            for d0 in [60_000.0, 80_000.0, 200_000.0] {
                for prec in [2.0, 10.0, 50.0] {
                    let f = Farm { t_f, d0, t_e: 10.0 };
                    assert_eq!(case(&M, &f), Case::B);
                    let plan = plan_farm(&M, &f, prec, 1024);
                    let (n, k) = plan.chosen;
                    assert!(plan.satisfied && k >= plan.rule.1, "{f:?} prec {prec}: {plan:?}");
                    let bound = 2.0 * M.g_inf * d0 * (1.0 + 1.0 / prec);
                    assert!(emitter_service(&M, &f, n, k) < bound, "{f:?}: {plan:?}");
                    assert!(worker_service(&M, &f, n, k) <= emitter_service(&M, &f, n, k), "{f:?}: {plan:?}");
                    // With the grain kept at k̂ or above (the paper's rule), one worker fewer is
                    // slower than the emitter at every grain that meets the bound.
                    if n > plan.rule.0 {
                        let fewer = n - 1;
                        let meets = (plan.rule.1..=4096).filter(|&k| emitter_service(&M, &f, fewer, k) < bound);
                        let keeps_up = meets
                            .into_iter()
                            .any(|k| worker_service(&M, &f, fewer, k) <= emitter_service(&M, &f, fewer, k));
                        assert!(!keeps_up, "{f:?} prec {prec}: {fewer} workers would do: {plan:?}");
                    }
                }
            }
        }
        // With a smaller grain than k̂, fewer workers may do (documented on `plan_farm`).
        let f = Farm { t_f: 400.0, d0: 60_000.0, t_e: 10.0 };
        let plan = plan_farm(&M, &f, 2.0, 1024);
        assert_eq!(plan.chosen, (32, 2));
        assert!(worker_service(&M, &f, 31, 1) <= emitter_service(&M, &f, 31, 1));
        assert!(emitter_service(&M, &f, 31, 1) < 18.0);
    }

    #[test]
    fn pipe_worked_example() {
        let p = Pipe { t: vec![5.0, 20.0, 3.0, 4.0], d: vec![8000.0, 8000.0, 800.0, 800.0, 800.0] };
        let s: Vec<f64> = (0..4).map(|i| p.stage_cost(&M, i)).collect();
        for (got, want) in s.iter().zip([6.6, 20.88, 3.16, 4.16]) {
            assert!(close(*got, want, 1e-9), "{s:?}");
        }
        assert!(close(p.slowest(&M), 20.88, 1e-9));
        // T_e = 25: k = 14/4.12 = 3.40 → 4, and the slowest stage keeps up with 4 arrivals.
        assert_eq!(p.grain(&M, 25.0), 4);
        assert!(close(p.stage_service(&M, 1, 4), 97.52, 1e-9));
        assert!(p.service(&M, 25.0, 4) <= 100.0);
        assert!(p.service(&M, 25.0, 3) > 3.0 * 25.0, "k = 3 does not keep up");
        // Merge rule: stages 2 and 3 only.
        assert_eq!(p.mergeable(&M), vec![2]);
        // T ≥ T_e: no grain helps.
        assert_eq!(p.grain(&M, 20.0), 1);
    }
}
