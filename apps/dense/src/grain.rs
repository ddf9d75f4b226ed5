//! The default block sizes of `dps-matmul` and `dps-lu`, chosen by a cost model so that a user
//! who never passes `--block` gets the fast setting.
//!
//! The models are in the style of the P3L farm and pipe models (shared/spec/
//! simulation-scheduling.md §2): a run's time is predicted from the work per job, the number
//! of workers and the bytes moved, for each candidate block, and the fastest candidate whose
//! memory fits wins. The machine enters through a few constants ([`Machine`]), measured on
//! the development VM (2 cores, AVX-512 OpenBLAS, Open MPI over shared memory); only their
//! ratios steer the choice, and they were checked against measured runs (`bench/linalg.sh`):
//! matmul n = 4096 on 2 ranks makes 0.75 of two-thread dgemm with blocks of 256 and 0.88 with
//! 2048, LU n = 8192 about 62 GFLOP/s with blocks of 128 and 114 with 512; the models rank
//! those the same way.

use std::fmt::Write as _;

/// What the cost models know of the machine.
#[derive(Clone, Copy, Debug)]
pub struct Machine {
    /// One core's dgemm rate on large blocks, flop/s.
    pub core_flops: f64,
    /// The block edge at which dgemm reaches half that rate (rate × b / (b + half_rate_at)),
    /// for the matmul jobs (square-ish products) and the LU updates (rank-r updates).
    pub half_rate_at: (f64, f64),
    /// One core's rate on an LU panel (dgetrf of a tall, narrow block), flop/s.
    pub panel_flops: f64,
    /// Bytes per second a rank moves to another, counting the CPU time of both copies: what
    /// shipping a byte takes from the computation.
    pub copy_bytes_per_s: f64,
    /// Fixed cost of an LU stage (messages, the stream's bookkeeping), seconds.
    pub stage_s: f64,
}

/// The development VM (see the module doc).
pub const DEV_VM: Machine = Machine {
    core_flops: 60e9,
    half_rate_at: (16.0, 48.0),
    panel_flops: 15e9,
    copy_bytes_per_s: 2.5e9,
    stage_s: 200e-6,
};

/// A block size and why it was chosen, for the run's record.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The block size.
    pub block: usize,
    /// One line: the model's prediction for the chosen block and for the others it tried.
    pub reason: String,
}

/// Whether a run that needs `rank0` bytes on rank 0 and `other` on every other rank fits in
/// half of this node's memory (`MemTotal`, with `ranks_on_node` ranks here): the budget of a
/// default block. The total, not the memory available now, so that every rank of a node
/// makes the same choice (they must agree on the block); true where it cannot be read.
pub fn fits_in_half_the_node(rank0: u64, other: u64, ranks_on_node: u64) -> bool {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
        let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok()
    });
    let need = rank0.saturating_add(other.saturating_mul(ranks_on_node.max(1) - 1));
    total.is_none_or(|kib| need <= kib.saturating_mul(1024) / 2)
}

fn rate(m: &Machine, edge: usize, half: f64) -> f64 {
    m.core_flops * edge as f64 / (edge as f64 + half)
}

/// Predicted seconds of `dps-matmul --variant pipelined` with blocks of `bs` on `ranks` ranks
/// with one worker each: the jobs in waves over the workers, plus the CPU time of shipping
/// the strips of the remote jobs, plus the wait of the last worker for its first job.
pub fn matmul_seconds(m: &Machine, n: usize, bs: usize, ranks: usize) -> f64 {
    let p = n.div_ceil(bs);
    let jobs = (p * p) as f64;
    let workers = ranks.max(1) as f64;
    let job = 2.0 * (bs * bs) as f64 * n as f64 / rate(m, bs, m.half_rate_at.0);
    let waves = (jobs / workers).ceil();
    let strips = 2.0 * bs as f64 * n as f64 * 8.0;
    let remote = (workers - 1.0) / workers;
    let shipping = remote * jobs * strips / m.copy_bytes_per_s;
    let fill = if ranks > 1 { strips / m.copy_bytes_per_s } else { 0.0 };
    waves * job + shipping + fill
}

/// Predicted seconds of `dps-lu --variant stream` with panels of width `r` on `ranks` ranks
/// (column blocks dealt cyclically): at each stage, the rank with the most blocks to update,
/// or the update and factorisation of the next panel, whichever is longer, plus a fixed cost.
pub fn lu_seconds(m: &Machine, n: usize, r: usize, ranks: usize) -> f64 {
    let (nb, ranks) = (n.div_ceil(r), ranks.max(1));
    let g = rate(m, r, m.half_rate_at.1);
    let rr = (r * r) as f64;
    (0..nb)
        .map(|k| {
            let rows = (n - k * r) as f64;
            let update = 2.0 * rows * rr / g;
            let later = nb - k - 1;
            let most = later.div_ceil(ranks) as f64;
            let panel = if later > 0 { (rows - r as f64).max(0.0) * rr / m.panel_flops } else { 0.0 };
            (most * update).max(update + panel) + m.stage_s
        })
        .sum()
}

/// The candidate whose predicted time is least, among those `fits` accepts (the smallest
/// candidate if none fits: the memory check then says why). `candidates` ascending.
fn best(candidates: &[usize], seconds: impl Fn(usize) -> f64, fits: impl Fn(usize) -> bool, what: &str) -> Choice {
    let scored: Vec<(usize, f64)> = candidates.iter().map(|&b| (b, seconds(b))).collect();
    let chosen =
        scored.iter().filter(|(b, _)| fits(*b)).min_by(|x, y| x.1.total_cmp(&y.1)).map_or(candidates[0], |&(b, _)| b);
    // The reason names the chosen candidate and its neighbours, with their predictions.
    let at = candidates.iter().position(|&b| b == chosen).unwrap_or(0);
    let mut reason = format!("{what}: predicted");
    for (i, (b, s)) in scored.iter().enumerate().filter(|(i, _)| i.abs_diff(at) <= 1) {
        let sep = if i == at.saturating_sub(1) { " " } else { ", " };
        let mark = if *b == chosen { " (chosen)" } else { "" };
        let too_big = if fits(*b) { "" } else { " (too big)" };
        let _ = write!(reason, "{sep}{s:.3} s at {b}{mark}{too_big}");
    }
    Choice { block: chosen, reason }
}

/// The default block of `dps-matmul` for order `n` on `ranks` ranks: block edges n/p for p
/// from 1 to 64 (at least 32 elements), judged by [`matmul_seconds`]; `fits` says whether a
/// block's memory fits.
pub fn matmul_block(m: &Machine, n: usize, ranks: usize, fits: impl Fn(usize) -> bool) -> Choice {
    let parts = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64];
    let mut candidates: Vec<usize> = parts.iter().map(|&p| n.div_ceil(p)).filter(|&b| b >= 32.min(n)).collect();
    candidates.sort_unstable();
    candidates.dedup();
    best(&candidates, |b| matmul_seconds(m, n, b, ranks), fits, &format!("cost model, {ranks} workers"))
}

/// The default panel width of `dps-lu` for order `n` on `ranks` ranks: 32 to 2048 in powers
/// of 2 (at most n), judged by [`lu_seconds`]; `fits` as for [`matmul_block`].
pub fn lu_block(m: &Machine, n: usize, ranks: usize, fits: impl Fn(usize) -> bool) -> Choice {
    let candidates: Vec<usize> = (5..=11).map(|e| 1usize << e).filter(|&r| r <= n).collect();
    if candidates.is_empty() {
        return Choice { block: n, reason: format!("n = {n} is below the smallest candidate: one panel") };
    }
    best(&candidates, |r| lu_seconds(m, n, r, ranks), fits, &format!("cost model, {ranks} ranks"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmul_prefers_one_wave_of_large_blocks_per_worker() {
        // The measured ranking on 2 ranks: 2048 beats 256 at n = 4096.
        assert_eq!(matmul_block(&DEV_VM, 4096, 2, |_| true).block, 2048);
        assert_eq!(matmul_block(&DEV_VM, 2048, 2, |_| true).block, 1024);
        // With 4 workers, 4 jobs are one wave.
        assert_eq!(matmul_block(&DEV_VM, 4096, 4, |_| true).block, 2048);
    }

    #[test]
    fn lu_prefers_wide_panels_on_large_matrices() {
        // Measured: 512 makes about twice the rate of 128 at n = 8192 on 2 ranks.
        let r = lu_block(&DEV_VM, 8192, 2, |_| true).block;
        assert!((256..=1024).contains(&r), "{r}");
        assert!(lu_seconds(&DEV_VM, 8192, 512, 2) < lu_seconds(&DEV_VM, 8192, 128, 2));
        // Small matrices keep narrow panels: wide ones would leave a rank idle.
        assert!(lu_block(&DEV_VM, 1024, 2, |_| true).block <= 256);
    }

    #[test]
    fn choices_stay_within_n_and_respect_memory() {
        for n in [1, 2, 31, 32, 33, 100, 1000, 5000] {
            for ranks in [1, 2, 3, 4] {
                let c = matmul_block(&DEV_VM, n, ranks, |_| true);
                assert!((1..=n).contains(&c.block), "matmul n={n} ranks={ranks}: {c:?}");
                let c = lu_block(&DEV_VM, n, ranks, |_| true);
                assert!((1..=n).contains(&c.block), "lu n={n} ranks={ranks}: {c:?}");
            }
        }
        let small = matmul_block(&DEV_VM, 4096, 2, |b| b <= 512);
        assert!(small.block <= 512 && small.reason.contains("(too big)"), "{small:?}");
        let small = lu_block(&DEV_VM, 8192, 2, |r| r <= 128);
        assert_eq!(small.block, 128);
        // Nothing fits: the smallest candidate, which the memory check then refuses.
        assert_eq!(lu_block(&DEV_VM, 8192, 2, |_| false).block, 32);
    }
}
