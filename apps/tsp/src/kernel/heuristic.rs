//! The first tour: nearest neighbour, improved by 2-opt and Or-opt, then by iterated local
//! search (random double-bridge kicks, each followed by 2-opt and Or-opt, kept when not
//! worse). A tour close to the optimum from the start is what lets the branch and bound
//! prune from its first node; the search then only has to prove it (or improve it).

use rand::{Rng, SeedableRng};

use super::deadline::Deadline;
use super::instance::Instance;

/// The nearest-neighbour tour from city 0.
pub fn nearest_neighbour(inst: &Instance) -> Vec<usize> {
    let n = inst.n;
    let mut used = vec![false; n];
    let mut tour = vec![0];
    used[0] = true;
    while tour.len() < n {
        let last = *tour.last().unwrap();
        let next = (0..n).filter(|&c| !used[c]).min_by_key(|&c| inst.d(last, c)).unwrap();
        used[next] = true;
        tour.push(next);
    }
    tour
}

/// Improves `tour` by 2-opt moves (reversing a segment) until none helps or the `deadline`
/// passes.
pub fn two_opt(inst: &Instance, tour: &mut [usize], deadline: Deadline) -> bool {
    let n = tour.len();
    let mut any = false;
    let mut improved = true;
    while improved {
        improved = false;
        for i in 0..n - 1 {
            if deadline.passed() {
                return any;
            }
            let (a, b) = (tour[i], tour[i + 1]);
            let dab = inst.d(a, b);
            for j in i + 2..n {
                if i == 0 && j == n - 1 {
                    continue;
                }
                let (c, d) = (tour[j], tour[(j + 1) % n]);
                if inst.d(a, c) + inst.d(b, d) < dab + inst.d(c, d) {
                    tour[i + 1..=j].reverse();
                    improved = true;
                    any = true;
                    break;
                }
            }
        }
    }
    any
}

/// Improves `tour` by Or-opt moves (moving a segment of 1 to 3 cities elsewhere, possibly
/// reversed) until none helps or the `deadline` passes.
pub fn or_opt(inst: &Instance, tour: &mut Vec<usize>, deadline: Deadline) -> bool {
    let n = tour.len();
    let mut any = false;
    let mut improved = true;
    while improved {
        improved = false;
        'search: for len in 1..=3.min(n - 3) {
            for i in 1..n - len {
                if deadline.passed() {
                    return any;
                }
                let (p, s0, sl, nx) = (tour[i - 1], tour[i], tour[i + len - 1], tour[(i + len) % n]);
                let gain = inst.d(p, s0) + inst.d(sl, nx) - inst.d(p, nx);
                if gain <= 0 {
                    continue;
                }
                // Insert between tour[k] and tour[k + 1], for each edge not touching the segment.
                for k in (0..i - 1).chain(i + len..n) {
                    let (c, c2) = (tour[k], tour[(k + 1) % n]);
                    let base = inst.d(c, c2);
                    let forward = inst.d(c, s0) + inst.d(sl, c2) - base;
                    let backward = inst.d(c, sl) + inst.d(s0, c2) - base;
                    if forward.min(backward) < gain {
                        let mut seg: Vec<usize> = tour[i..i + len].to_vec();
                        if backward < forward {
                            seg.reverse();
                        }
                        let mut rest: Vec<usize> = tour[..i].iter().chain(&tour[i + len..]).copied().collect();
                        let after = if k < i { k } else { k - len };
                        rest.splice(after + 1..after + 1, seg);
                        *tour = rest;
                        improved = true;
                        any = true;
                        continue 'search;
                    }
                }
            }
        }
    }
    any
}

/// 2-opt and Or-opt alternately until neither improves or the `deadline` passes.
pub fn local_search(inst: &Instance, tour: &mut Vec<usize>, deadline: Deadline) {
    if tour.len() < 5 {
        return;
    }
    two_opt(inst, tour, deadline);
    while or_opt(inst, tour, deadline) && two_opt(inst, tour, deadline) {}
}

/// The double-bridge kick: cuts the tour in four segments A B C D and joins them A C B D.
fn double_bridge(tour: &[usize], rng: &mut impl Rng) -> Vec<usize> {
    let n = tour.len();
    let mut cuts = [rng.gen_range(1..n), rng.gen_range(1..n), rng.gen_range(1..n)];
    cuts.sort_unstable();
    let [a, b, c] = cuts;
    let mut out = Vec::with_capacity(n);
    out.extend_from_slice(&tour[..a]);
    out.extend_from_slice(&tour[b..c]);
    out.extend_from_slice(&tour[a..b]);
    out.extend_from_slice(&tour[c..]);
    out
}

/// Nearest neighbour, local search, then `kicks` rounds of iterated local search (seeded,
/// so every run gives the same tour), all cut short when the `deadline` passes. Returns the
/// length and the tour, starting at city 0.
pub fn initial_tour(inst: &Instance, kicks: usize, seed: u64, deadline: Deadline) -> (i64, Vec<usize>) {
    let mut best = nearest_neighbour(inst);
    local_search(inst, &mut best, deadline);
    let mut best_len = inst.tour_length(&best);
    if inst.n >= 8 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        for _ in 0..kicks {
            if deadline.passed() {
                break;
            }
            let mut cand = double_bridge(&best, &mut rng);
            local_search(inst, &mut cand, deadline);
            let len = inst.tour_length(&cand);
            if len <= best_len {
                (best, best_len) = (cand, len);
            }
        }
    }
    let zero = best.iter().position(|&c| c == 0).unwrap();
    best.rotate_left(zero);
    (best_len, best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_search_keeps_a_permutation_and_never_worsens() {
        for seed in 0..10 {
            let inst = Instance::random(30, seed);
            let nn = nearest_neighbour(&inst);
            let (len, tour) = initial_tour(&inst, 50, seed, Deadline::NONE);
            assert!(len <= inst.tour_length(&nn));
            assert_eq!(inst.tour_length(&tour), len);
            let mut sorted = tour.clone();
            sorted.sort();
            assert_eq!(sorted, (0..30).collect::<Vec<_>>());
            assert_eq!(tour[0], 0);
        }
    }

    #[test]
    fn a_passed_deadline_stops_the_kicks_with_a_valid_tour() {
        let inst = Instance::random(200, 1);
        let start = std::time::Instant::now();
        let (len, tour) = initial_tour(&inst, 1_000_000, 1, Deadline::after(Some(0.0)));
        assert!(start.elapsed().as_secs_f64() < 5.0, "the kicks ignored the deadline");
        assert_eq!(inst.tour_length(&tour), len);
        assert_eq!(tour.len(), 200);
    }
}
