//! The default block sizes of `dps-matmul` and `dps-lu`, chosen by a cost model so that a user
//! who never passes `--block` gets the fast setting.
//!
//! The models are in the style of the P3L farm and pipe models (the P3L paper, §3-4): a run's time is predicted from the work per job, the number
//! of workers and the bytes moved, for each candidate block, and the fastest candidate whose
//! memory fits wins. The machine enters through a few constants ([`Machine`]), measured on
//! the development VM (2 cores, AVX-512 OpenBLAS, Open MPI over shared memory); only their
//! ratios steer the choice, and they were checked against measured runs (`bench/linalg.sh`):
//! matmul n = 4096 on 2 ranks makes 0.75 of two-thread dgemm with blocks of 256 and 0.88 with
//! 2048, LU n = 8192 about 62 GFLOP/s with blocks of 128 and 114 with 512; the models rank
//! those the same way. For matmul the model also ranks non-square tilings of C
//! ([`matmul_tiling`]): at n = 2048 on 2 ranks square blocks of 1024 made 0.86 (quiet) and
//! strips of 1024 whole rows more (docs/measurements/2026-11-24-matmul-tiling.md), the order
//! the model gives them.

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

/// Predicted seconds of `dps-matmul --variant pipelined` with blocks of C of `bh` rows and
/// `bw` columns on `ranks` ranks with one worker each: the jobs in waves over the workers,
/// plus the CPU time of shipping the remote jobs' strips and results, plus the master's
/// cutting of B's column strips (A's row strips are its storage, and a whole B is shared, not
/// cut), plus the wait of the last worker for its first job's strips. With `lent` (the
/// strips are node-shared memory the other ranks map, `dps::Shared`), shipping a strip costs
/// nothing; the results are still copied.
pub fn matmul_seconds(m: &Machine, n: usize, bh: usize, bw: usize, ranks: usize, lent: bool) -> f64 {
    let (pr, pc) = (n.div_ceil(bh), n.div_ceil(bw));
    let jobs = pr * pc;
    let workers = ranks.max(1);
    let job = 2.0 * (bh * bw) as f64 * n as f64 / rate(m, bh.min(bw), m.half_rate_at.0);
    let waves = jobs.div_ceil(workers) as f64;
    let strips = if lent { 0.0 } else { (bh + bw) as f64 * n as f64 * 8.0 };
    let result = (bh * bw) as f64 * 8.0;
    // Job k goes to worker k mod workers; worker 0 is the master's rank.
    let remote = (jobs - jobs.div_ceil(workers)) as f64;
    let shipping = remote * (strips + result) / m.copy_bytes_per_s;
    let cutting = if pc > 1 { (n * n) as f64 * 8.0 / m.copy_bytes_per_s } else { 0.0 };
    let fill = if workers > 1 { strips / m.copy_bytes_per_s } else { 0.0 };
    waves * job + shipping + cutting + fill
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

/// How `dps-matmul` cuts C: blocks of `rows` × `cols` (the last of a dimension may be
/// smaller), and why, for the run's record.
#[derive(Clone, Debug, PartialEq)]
pub struct Tiling {
    /// Rows of a block of C (and of A's row strips), but for the first row strip.
    pub rows: usize,
    /// Rows of the first row strip, whose jobs go to the worker on the master's rank: more
    /// than `rows` when that worker, which receives nothing, gets the others' transfer time
    /// in extra rows (see [`master_strip_rows`]).
    pub first_rows: usize,
    /// Columns of a block of C (and of B's column strips).
    pub cols: usize,
    /// Depth chunks of a job (see [`Tiling::depth_span`]): 1, or more when a job's product
    /// is sent in pieces, C_ij = Σ_k A_i[:, k]·B_j[k, :], so that a worker that receives its
    /// strips starts on the first piece instead of waiting for all of them.
    pub depth_chunks: usize,
    /// One line: the model's prediction for the chosen tiling and the next best ones.
    pub reason: String,
}

impl Tiling {
    /// Blocks of `rows` × `cols`, all rows alike.
    pub fn even(rows: usize, cols: usize, reason: impl Into<String>) -> Tiling {
        Tiling { rows, first_rows: rows, cols, depth_chunks: 1, reason: reason.into() }
    }

    /// The inner indices of depth chunk `k` of an order-n product (n split evenly: none empty
    /// while there are at most n chunks).
    pub fn depth_span(&self, n: usize, k: usize) -> std::ops::Range<usize> {
        let chunks = self.depth_pieces(n);
        n * k / chunks..n * (k + 1) / chunks
    }

    /// The depth chunks of an order-n product: `depth_chunks`, at most n, at least 1.
    pub fn depth_pieces(&self, n: usize) -> usize {
        self.depth_chunks.clamp(1, n.max(1))
    }

    /// Rows of the tallest row strip.
    pub fn tallest(&self) -> usize {
        self.rows.max(self.first_rows)
    }

    /// The row strips of an n×n matrix.
    pub fn row_strips(&self, n: usize) -> usize {
        1 + n.saturating_sub(self.first_rows).div_ceil(self.rows)
    }

    /// The rows of row strip `i` (the last may be shorter).
    pub fn row_span(&self, n: usize, i: usize) -> std::ops::Range<usize> {
        let start = if i == 0 { 0 } else { self.first_rows + (i - 1) * self.rows };
        let end = if i == 0 { self.first_rows } else { start + self.rows };
        start.min(n)..end.min(n)
    }
}

/// Rows of the master's strip when C is cut into one strip of whole rows per worker (one
/// worker per rank, worker 0 on the master's rank), and of each other strip: the master's
/// worker starts at once, while every other waits for its strip of A and the whole of B and
/// spends its CPU receiving them, so the master's strip is taller by that transfer's time
/// in rows (rounded to 8). Measured at n = 2048 on 2 ranks (medians of 4 alternating
/// rounds): this model's 72 more rows made 0.855 of MKL's two-thread dgemm, 48 more 0.837,
/// even strips 0.826 (docs/measurements/2026-11-28-matmul-master-strip-lu-first.md). With
/// `lent` strips (mapped, not received), even strips: taller master strips for the others'
/// mapping and their 4 KiB pages (1056 of 2048, 2104 of 4096) did no better (faster in 5 of
/// 8 rounds at 2048, slower in 6 of 8 at 4096; docs/measurements/2026-11-29-matmul-node-shared-strips.md).
pub fn master_strip_rows(m: &Machine, n: usize, workers: usize, lent: bool) -> (usize, usize) {
    let even = n.div_ceil(workers.max(1));
    if workers < 2 || even < 16 || lent {
        return (even, even);
    }
    let row_s = 2.0 * (n * n) as f64 / rate(m, even.min(n), m.half_rate_at.0);
    let fill_s = ((even + n) * n * 8) as f64 / m.copy_bytes_per_s;
    let p = workers as f64;
    let first = (n as f64 + (p - 1.0) * fill_s / row_s) / p;
    let first = ((first / 8.0).round() as usize * 8).clamp(even, n - (workers - 1) * 8);
    (first, (n - first).div_ceil(workers - 1))
}

/// Depth chunks of a job of whole rows of order n when jobs travel in pieces: up to n = 2048,
/// 8, none shallower than 256 (a piece's dgemm then runs at the whole product's rate); above,
/// whole jobs. Measured on 2 ranks (6 alternating rounds against MKL's two-thread dgemm,
/// docs/measurements/2026-11-29-matmul-2048-depth-pieces.md): at n = 2048, 8 pieces 0.869
/// against whole jobs 0.832 (4 pieces did worse); at n = 4096, where the wait for the first
/// job is a smaller share of the run and each piece sweeps a 66 MiB block of C, 8 pieces 0.870
/// against 0.900.
pub fn matmul_depth_chunks(n: usize) -> usize {
    if n > 2048 {
        return 1;
    }
    (n / 256).clamp(1, 8)
}

/// Block edges n/p for p in 1..=64 (at least 32 elements, or n if smaller), ascending.
fn matmul_edges(n: usize) -> Vec<usize> {
    let parts = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64];
    let mut edges: Vec<usize> = parts.iter().map(|&p| n.div_ceil(p)).filter(|&b| b >= 32.min(n)).collect();
    edges.sort_unstable();
    edges.dedup();
    edges
}

/// The default square block of `dps-matmul` (the farm's jobs are square) for order `n` on
/// `ranks` ranks: the edges of [`matmul_edges`], judged by [`matmul_seconds`]; `fits` says
/// whether a block's memory fits.
pub fn matmul_block(m: &Machine, n: usize, ranks: usize, fits: impl Fn(usize) -> bool) -> Choice {
    let candidates = matmul_edges(n);
    // The farm's blocks are cut from the strips: copies, never lent.
    best(&candidates, |b| matmul_seconds(m, n, b, b, ranks, false), fits, &format!("cost model, {ranks} workers"))
}

/// The default tiling of C for `dps-matmul`'s pipelined and phased variants, order `n` on
/// `ranks` ranks: every pair of block heights and widths from [`matmul_edges`], judged by
/// [`matmul_seconds`]. Strips of whole rows (one product of depth n per worker, B shared
/// whole) usually win: nothing is cut and each worker gets one large dgemm. `fits(rows,
/// cols)` says whether a tiling's memory fits; if none does, the smallest blocks. With
/// `pieces` (the pipelined variant), one strip per rank sends each job in depth pieces
/// ([`matmul_depth_chunks`]), so the other ranks start on their first piece. With `lent`
/// (every rank on the master's node, operands in node-shared memory), whole rows cost no
/// transfer: even strips, whole jobs (a worker maps its strips at once).
pub fn matmul_tiling(
    m: &Machine,
    n: usize,
    ranks: usize,
    pieces: bool,
    lent: bool,
    fits: impl Fn(usize, usize) -> bool,
) -> Tiling {
    let edges = matmul_edges(n);
    let mut scored: Vec<(f64, usize, usize)> = edges
        .iter()
        .flat_map(|&bh| edges.iter().map(move |&bw| (bh, bw)))
        .map(|(bh, bw)| (matmul_seconds(m, n, bh, bw, ranks, lent && bw == n), bh, bw))
        .collect();
    // Ties go to fewer, larger jobs (the candidates' order), then to whole rows.
    scored.sort_by(|x, y| x.0.total_cmp(&y.0).then(y.1.cmp(&x.1)).then(y.2.cmp(&x.2)));
    let chosen = scored.iter().find(|(_, bh, bw)| fits(*bh, *bw)).map_or((edges[0], edges[0]), |&(_, bh, bw)| (bh, bw));
    let mut reason = format!("cost model, {ranks} workers: predicted");
    let shown = scored
        .iter()
        .filter(|(_, bh, bw)| (*bh, *bw) == chosen)
        .chain(scored.iter().filter(|(_, bh, bw)| (*bh, *bw) != chosen).take(2));
    for (k, (s, bh, bw)) in shown.enumerate() {
        let sep = if k == 0 { " " } else { ", " };
        let mark = if (*bh, *bw) == chosen { " (chosen)" } else { "" };
        let too_big = if fits(*bh, *bw) { "" } else { " (too big)" };
        let _ = write!(reason, "{sep}{s:.3} s at {bh}x{bw}{mark}{too_big}");
    }
    if chosen.1 == n && chosen.0 < n {
        reason.push_str("; strips of whole rows: one dgemm of depth n per job, B shared whole");
    }
    if chosen.1 == n && n.div_ceil(chosen.0) == ranks && ranks > 1 {
        let (first, rest) = master_strip_rows(m, n, ranks, lent);
        if lent {
            reason.push_str("; A's and B's strips lent to the other ranks of this node (mapped, not copied)");
        } else {
            let _ = write!(reason, "; the master's strip {first} rows, the others {rest}: its worker receives nothing");
        }
        let depth_chunks = if pieces && !lent { matmul_depth_chunks(n) } else { 1 };
        if depth_chunks > 1 {
            let _ = write!(reason, "; jobs in {depth_chunks} depth pieces: a worker starts on its first");
        }
        return Tiling { rows: rest, first_rows: first, cols: n, depth_chunks, reason };
    }
    Tiling::even(chosen.0, chosen.1, reason)
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
    fn matmul_tiling_prefers_one_strip_of_whole_rows_per_worker() {
        // Measured on 2 ranks at n = 2048: square blocks of 1024 made 0.86 of two-thread
        // dgemm; strips of 1024 whole rows (one dgemm of depth n each, B shared whole) more.
        for (n, ranks) in [(2048, 2), (4096, 2), (1024, 2)] {
            let t = matmul_tiling(&DEV_VM, n, ranks, true, false, |_, _| true);
            assert_eq!((t.row_strips(n), t.cols), (ranks, n), "n {n} ranks {ranks}: {t:?}");
            assert!(t.reason.contains("(chosen)") && t.reason.contains("whole rows"), "{t:?}");
            // The master's worker, which receives nothing, gets a taller strip.
            assert!(t.first_rows > t.rows && t.first_rows % 8 == 0, "{t:?}");
            assert_eq!(t.first_rows + t.rows, n, "{t:?}");
            assert!(t.reason.contains(&format!("the master's strip {} rows", t.first_rows)), "{t:?}");
            // Pipelined: up to n = 2048, jobs in pieces of depth 256 or more, 8 at most; above,
            // whole; phased: whole.
            let d = t.depth_chunks;
            if n <= 2048 {
                assert!((2..=8).contains(&d) && n / d >= 256 && t.reason.contains("depth pieces"), "{t:?}");
            } else {
                assert!(d == 1 && !t.reason.contains("depth pieces"), "{t:?}");
            }
            let phased = matmul_tiling(&DEV_VM, n, ranks, false, false, |_, _| true);
            assert_eq!(phased, Tiling { depth_chunks: 1, reason: phased.reason.clone(), ..t.clone() });
            assert!(!phased.reason.contains("depth pieces"), "{phased:?}");
        }
        // One rank: one dgemm of the whole matrix, nothing to ship.
        let t = matmul_tiling(&DEV_VM, 2048, 1, true, false, |_, _| true);
        assert_eq!((t.rows, t.cols), (2048, 2048), "{t:?}");
        // Whole rows cost more than square blocks once B no longer pays for itself: the model
        // charges a whole B per remote job.
        assert!(
            matmul_seconds(&DEV_VM, 2048, 1024, 2048, 2, false) < matmul_seconds(&DEV_VM, 2048, 1024, 1024, 2, false)
        );
        // Memory: the best tiling that fits, flagged in the reason when a better one does not.
        let t = matmul_tiling(&DEV_VM, 4096, 2, true, false, |r, c| r * c <= 1024 * 1024);
        assert!(t.rows * t.cols <= 1024 * 1024 && t.reason.contains("(too big)"), "{t:?}");
        let t = matmul_tiling(&DEV_VM, 4096, 2, true, false, |_, _| false);
        assert_eq!((t.rows, t.cols), (64, 64), "the smallest edge, 4096/64");
        // Strips lent on one node: even strips of whole rows, whole jobs.
        for n in [2048, 4096] {
            let t = matmul_tiling(&DEV_VM, n, 2, true, true, |_, _| true);
            assert_eq!((t.first_rows, t.rows, t.cols, t.depth_chunks), (n / 2, n / 2, n, 1), "{t:?}");
            assert!(t.reason.contains("lent"), "{t:?}");
        }
    }

    #[test]
    fn the_master_strip_balances_the_others_transfers() {
        // 2 ranks at n = 2048: about the rows the others' transfer takes (72 with DEV_VM).
        let (first, rest) = master_strip_rows(&DEV_VM, 2048, 2, false);
        assert!((1040..=1120).contains(&first) && first + rest == 2048, "{first} {rest}");
        // More workers: every other strip shares the master's extra rows.
        let (first, rest) = master_strip_rows(&DEV_VM, 4096, 4, false);
        assert!(first > 1024 && first + 3 * rest >= 4096 && first + 3 * (rest - 1) < 4096, "{first} {rest}");
        // Slower transfers, taller master strip.
        let slow = Machine { copy_bytes_per_s: DEV_VM.copy_bytes_per_s / 4.0, ..DEV_VM };
        assert!(master_strip_rows(&slow, 2048, 2, false).0 > master_strip_rows(&DEV_VM, 2048, 2, false).0);
        // One worker, or strips too thin to share: even.
        assert_eq!(master_strip_rows(&DEV_VM, 2048, 1, false), (2048, 2048));
        assert_eq!(master_strip_rows(&DEV_VM, 2048, 2, true), (1024, 1024), "lent strips: even");
        assert_eq!(master_strip_rows(&DEV_VM, 24, 2, false), (12, 12));
        // The spans of a taller first strip cover n once.
        let t = Tiling { rows: 952, first_rows: 1096, cols: 2048, depth_chunks: 8, reason: String::new() };
        assert_eq!((t.row_strips(2048), t.row_span(2048, 0), t.row_span(2048, 1)), (2, 0..1096, 1096..2048));
        assert_eq!(t.tallest(), 1096);
        // Depth chunks split n evenly, none empty, at most n of them.
        assert_eq!((t.depth_pieces(2048), t.depth_span(2048, 0), t.depth_span(2048, 7)), (8, 0..256, 1792..2048));
        let t = Tiling { depth_chunks: 4, ..Tiling::even(3, 3, "") };
        assert_eq!((t.depth_pieces(3), t.depth_span(3, 0), t.depth_span(3, 2)), (3, 0..1, 2..3));
        assert_eq!(Tiling::even(3, 3, "").depth_span(3, 0), 0..3);
        let even = Tiling::even(300, 300, "");
        assert_eq!((even.row_strips(1000), even.row_span(1000, 3)), (4, 900..1000));
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
                let t = matmul_tiling(&DEV_VM, n, ranks, true, false, |_, _| true);
                assert!((1..=t.depth_pieces(n)).all(|k| !t.depth_span(n, k - 1).is_empty()), "{t:?}");
                assert!((1..=n).contains(&t.rows) && (1..=n).contains(&t.cols), "tiling n={n} ranks={ranks}: {t:?}");
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
