//! The exact Held-Karp dynamic program, `O(2^n n²)`: the serial reference for small instances.
//!
//! Every sum is checked: a path length that would overflow is an error, never a wrapped
//! number (the reference `--verify` trusts must not lie either).

use anyhow::{bail, Context, Result};

use super::instance::Instance;

/// Largest instance [`solve`] accepts (2^n n entries of memory).
pub const MAX_CITIES: usize = 16;

/// The optimal tour length and a tour achieving it (starting at city 0).
///
/// # Errors
/// If the instance has more than [`MAX_CITIES`] cities, or a path length overflows `i64`.
pub fn solve(inst: &Instance) -> Result<(i64, Vec<usize>)> {
    let n = inst.n;
    if n > MAX_CITIES {
        bail!("the dynamic program handles at most {MAX_CITIES} cities, not {n}");
    }
    if n == 1 {
        return Ok((0, vec![0]));
    }
    let overflow = || format!("a path length of {} overflows 64-bit integers", inst.name);
    // best[set][j]: shortest path from 0 through the cities of `set` (over 1..n, bit j-1),
    // ending at j (which is in `set`).
    let m = n - 1;
    let full = 1usize << m;
    let mut best = vec![i64::MAX; full * m];
    let mut from = vec![u8::MAX; full * m];
    for j in 0..m {
        best[(1 << j) * m + j] = inst.d(0, j + 1);
    }
    for set in 1..full {
        for j in 0..m {
            let here = best[set * m + j];
            if set & (1 << j) == 0 || here == i64::MAX {
                continue;
            }
            for k in 0..m {
                if set & (1 << k) != 0 {
                    continue;
                }
                let next = set | (1 << k);
                let cand = here.checked_add(inst.d(j + 1, k + 1)).with_context(overflow)?;
                if cand < best[next * m + k] {
                    best[next * m + k] = cand;
                    from[next * m + k] = j as u8;
                }
            }
        }
    }
    let last = full - 1;
    let (mut end, mut len) = (0, i64::MAX);
    for j in 0..m {
        let cand = best[last * m + j].checked_add(inst.d(j + 1, 0)).with_context(overflow)?;
        if cand < len {
            (end, len) = (j, cand);
        }
    }
    let mut tour = Vec::with_capacity(n);
    let mut set = last;
    let mut j = end;
    while set != 0 {
        tour.push(j + 1);
        let prev = from[set * m + j];
        set &= !(1 << j);
        j = prev as usize;
    }
    tour.push(0);
    tour.reverse();
    Ok((len, tour))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// All tours by brute force, for cross-checking.
    fn brute(inst: &Instance) -> i64 {
        fn rec(inst: &Instance, tour: &mut Vec<usize>, used: &mut [bool], best: &mut i64) {
            if tour.len() == inst.n {
                *best = (*best).min(inst.tour_length(tour));
                return;
            }
            for c in 1..inst.n {
                if !used[c] {
                    used[c] = true;
                    tour.push(c);
                    rec(inst, tour, used, best);
                    tour.pop();
                    used[c] = false;
                }
            }
        }
        let mut best = i64::MAX;
        rec(inst, &mut vec![0], &mut vec![false; inst.n], &mut best);
        best
    }

    #[test]
    fn matches_brute_force() {
        for n in 3..=8 {
            for seed in 0..5 {
                let inst = Instance::random(n, seed);
                let (len, tour) = solve(&inst).unwrap();
                assert_eq!(len, brute(&inst), "n {n} seed {seed}");
                assert_eq!(inst.tour_length(&tour), len);
                let mut sorted = tour.clone();
                sorted.sort();
                assert_eq!(sorted, (0..n).collect::<Vec<_>>());
            }
        }
    }

    /// Weights near 2^63 (which the instance constructors refuse) are an error, not the
    /// wrapped "optimum" the unchecked sums gave.
    #[test]
    fn overflowing_sums_are_an_error() {
        // Every path of three edges overflows: the unchecked sums wrapped to negative lengths.
        let big = i64::MAX / 2;
        let dist = (0..16).map(|k| if k % 5 == 0 { 0 } else { big }).collect();
        let e = solve(&Instance::unchecked_matrix(4, dist)).unwrap_err();
        assert!(e.to_string().contains("overflows"), "{e}");
        assert!(solve(&Instance::random(MAX_CITIES + 1, 1)).is_err());
    }
}
