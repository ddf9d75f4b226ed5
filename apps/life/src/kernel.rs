//! The leaf kernel: one generation of Conway's B3/S23 on rows of packed bits.
//!
//! A row of `width` cells is `words = ceil(width / 64)` words; cell `x` is bit `x % 64` of
//! word `x / 64`, and the bits past `width` in the last word are always zero. A row's next
//! state depends on the row above and the row below:
//!
//! 1. *vertical sums*: for every column, the number of live cells among above, row and below
//!    (0..=3) as two bit-planes `s0` (weight 1) and `s1` (weight 2), by a full adder per word;
//! 2. *horizontal sums*: the 3×3 total (0..=9, the cell itself included) is the sum of the
//!    vertical sums of the columns x-1, x and x+1. The neighbouring columns are the planes
//!    shifted by one bit, with the bit carried in from the adjacent word;
//! 3. the cell lives next if the total is 3, or 4 and it is alive now.
//!
//! Both passes are plain loops over slices, so LLVM vectorises them; [`advance`] runs them
//! compiled for AVX-512 (or AVX2) when the CPU has it, chosen once per call, and can compute
//! several generations in one pass over memory. The vertical
//! planes carry one ghost word at each end (and, under `--wrap`, the column beyond the last
//! cell) so the horizontal pass needs no special case at the edges.

use std::ops::Range;

/// The shape of a row of packed cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Cells per row.
    pub width: usize,
    /// 64-bit words per row.
    pub words: usize,
    /// Whether the left and right edges wrap around (a torus); otherwise cells beyond the
    /// edges are dead.
    pub wrap: bool,
}

impl Geometry {
    /// The geometry of rows of `width` cells (at least 1).
    pub fn new(width: usize, wrap: bool) -> Geometry {
        assert!(width > 0, "a row holds at least one cell");
        Geometry { width, words: width.div_ceil(64), wrap }
    }

    /// The bits of the last word that hold cells.
    pub fn last_mask(&self) -> u64 {
        match self.width % 64 {
            0 => u64::MAX,
            r => (1u64 << r) - 1,
        }
    }
}

/// Reusable buffers: the vertical sums of one row (two bit-planes with a ghost word at each
/// end) and, for [`advance`] over several generations, three rows per intermediate
/// generation.
#[derive(Debug, Default)]
pub struct Scratch {
    s0: Vec<u64>,
    s1: Vec<u64>,
    levels: Vec<u64>,
}

/// What one call of [`advance`] computes, in rows of the source buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sweep {
    /// The rows computed, `depth` generations ahead of the source.
    pub rows: Range<usize>,
    /// Generations computed in one pass.
    pub depth: usize,
    /// The rows inside the world; rows outside it are dead in every generation (the dead
    /// edge above the first row and below the last of a world that does not wrap).
    pub live: Range<usize>,
}

/// Computes rows `sweep.rows` of `src`, `sweep.depth` generations ahead, into the same rows
/// of `dst`; both hold whole rows of `g.words` words. Depth `d` reads `d` rows above and
/// below `sweep.rows`.
///
/// The generations are computed as a wavefront in one pass over `src`: each row of an
/// intermediate generation is computed as soon as the three rows below it in the previous
/// generation are, and lives in a ring of three rows (a few KiB, in L1), so memory traffic
/// is one read of `src` and one write of `dst` per `d` generations instead of per
/// generation. Two cores stepping a large world one generation at a time saturate the
/// memory bus; this is what lets two bands run as fast as one. Each intermediate generation
/// is computed over `d - j` extra rows at each end (generation `j`), redundant work of
/// about `d²` rows per call. `pause` is called after each step of the wavefront with the
/// rows it computed, so a long call can yield its core.
///
/// # Panics
/// If `sweep.rows` does not leave `depth` rows above and below it in `src`, or `dst` is
/// shorter than `src`.
pub fn advance(
    g: &Geometry,
    src: &[u64],
    dst: &mut [u64],
    sweep: &Sweep,
    scratch: &mut Scratch,
    pause: &mut dyn FnMut(usize),
) {
    advance_on(Isa::best(), g, src, dst, sweep, scratch, pause)
}

/// [`advance`] compiled for `isa` (tests run every variant the CPU has).
///
/// # Panics
/// As [`advance`], and if this CPU cannot run `isa`.
pub fn advance_on(
    isa: Isa,
    g: &Geometry,
    src: &[u64],
    dst: &mut [u64],
    sweep: &Sweep,
    scratch: &mut Scratch,
    pause: &mut dyn FnMut(usize),
) {
    let Sweep { rows, depth, .. } = sweep;
    if rows.is_empty() || *depth == 0 {
        return;
    }
    assert!(
        rows.start >= *depth && (rows.end + depth) * g.words <= src.len(),
        "rows {rows:?} need {depth} rows above and below"
    );
    assert!(dst.len() >= src.len(), "the destination is shorter than the source");
    scratch.s0.resize(g.words + 2, 0);
    scratch.s1.resize(g.words + 2, 0);
    scratch.levels.resize((depth - 1) * 3 * g.words, 0);
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            assert!(isa.is_available(), "this CPU lacks a feature of the AVX-512 kernel");
            // SAFETY: the assertion above checked every feature `advance_avx512` enables.
            unsafe { advance_avx512(g, src, dst, sweep, scratch, pause) }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => {
            assert!(isa.is_available(), "this CPU lacks a feature of the AVX2 kernel");
            // SAFETY: the assertion above checked every feature `advance_avx2` enables.
            unsafe { advance_avx2(g, src, dst, sweep, scratch, pause) }
        }
        _ => advance_portable(g, src, dst, sweep, scratch, pause),
    }
}

/// The instruction sets the kernel is compiled for. The code is the same portable Rust in
/// each; compiled with wider vectors enabled, the compiler vectorises the word loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// AVX-512 (F, VL, BW, DQ) with AVX2 and BMI2.
    Avx512,
    /// AVX2 with BMI2.
    Avx2,
    /// Whatever the target is compiled for by default.
    Portable,
}

impl Isa {
    /// Every variant, best first.
    pub const ALL: [Isa; 3] = [Isa::Avx512, Isa::Avx2, Isa::Portable];

    /// Whether this CPU has every feature the variant is compiled with (each one that its
    /// `target_feature` attribute enables, not only the first).
    pub fn is_available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            match self {
                Isa::Avx512 => {
                    has!("avx512f")
                        && has!("avx512vl")
                        && has!("avx512bw")
                        && has!("avx512dq")
                        && has!("avx2")
                        && has!("bmi2")
                }
                Isa::Avx2 => has!("avx2") && has!("bmi2"),
                Isa::Portable => true,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Isa::Portable
        }
    }

    /// The best variant this CPU can run.
    pub fn best() -> Isa {
        Isa::ALL.into_iter().find(|isa| isa.is_available()).unwrap_or(Isa::Portable)
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,bmi2")]
fn advance_avx512(
    g: &Geometry,
    src: &[u64],
    dst: &mut [u64],
    sweep: &Sweep,
    scratch: &mut Scratch,
    pause: &mut dyn FnMut(usize),
) {
    advance_portable(g, src, dst, sweep, scratch, pause)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi2")]
fn advance_avx2(
    g: &Geometry,
    src: &[u64],
    dst: &mut [u64],
    sweep: &Sweep,
    scratch: &mut Scratch,
    pause: &mut dyn FnMut(usize),
) {
    advance_portable(g, src, dst, sweep, scratch, pause)
}

#[inline(always)]
fn advance_portable(
    g: &Geometry,
    src: &[u64],
    dst: &mut [u64],
    sweep: &Sweep,
    scratch: &mut Scratch,
    pause: &mut dyn FnMut(usize),
) {
    let (n, depth) = (g.words, sweep.depth);
    // Generation j (0 = src) is needed over rows lo + j..hi - j.
    let (lo, hi) = (sweep.rows.start - depth, sweep.rows.end + depth);
    let Scratch { s0, s1, levels } = scratch;
    // Row s of intermediate generation j is slot s % 3 of that generation's ring.
    let slot = |s: usize| (s % 3) * n..(s % 3 + 1) * n;
    for t in lo + 1..hi - 1 {
        let mut computed = 0;
        // Generation j computes row t + 1 - j: generation j - 1 has just computed the row
        // below it.
        for j in 1..=depth {
            let s = t + 1 - j;
            if s < lo + j {
                break;
            }
            let (before, after) = levels.split_at_mut((j - 1) * 3 * n);
            let (above, row, below) = if j == 1 {
                (&src[(s - 1) * n..s * n], &src[s * n..(s + 1) * n], &src[(s + 1) * n..(s + 2) * n])
            } else {
                let prev = &before[(j - 2) * 3 * n..];
                (&prev[slot(s - 1)], &prev[slot(s)], &prev[slot(s + 1)])
            };
            let out = if j == depth { &mut dst[s * n..(s + 1) * n] } else { &mut after[slot(s)] };
            if sweep.live.contains(&s) {
                step_row(g, above, row, below, out, s0, s1);
            } else {
                out.fill(0);
            }
            computed += 1;
        }
        pause(computed);
    }
}

/// One row: vertical sums into the scratch planes, then the horizontal sums and the rule.
#[inline(always)]
fn step_row(g: &Geometry, above: &[u64], row: &[u64], below: &[u64], out: &mut [u64], s0: &mut [u64], s1: &mut [u64]) {
    let n = g.words;
    let (above, row, below, out) = (&above[..n], &row[..n], &below[..n], &mut out[..n]);
    let (s0, s1) = (&mut s0[..n + 2], &mut s1[..n + 2]);
    for i in 0..n {
        let (a, c, b) = (above[i], row[i], below[i]);
        s0[i + 1] = a ^ c ^ b;
        s1[i + 1] = (a & c) | (b & (a ^ c));
    }
    edge_columns(g, s0);
    edge_columns(g, s1);
    for i in 0..n {
        // West (x-1) and east (x+1) neighbours of each bit, carried across words.
        let (w0, e0) = ((s0[i + 1] << 1) | (s0[i] >> 63), (s0[i + 1] >> 1) | (s0[i + 2] << 63));
        let (w1, e1) = ((s1[i + 1] << 1) | (s1[i] >> 63), (s1[i + 1] >> 1) | (s1[i + 2] << 63));
        let (m0, m1) = (s0[i + 1], s1[i + 1]);
        // Weight-1 planes: l0 (weight 1) + l1 (weight 2).
        let l0 = w0 ^ m0 ^ e0;
        let l1 = (w0 & m0) | (e0 & (w0 ^ m0));
        // Weight-2 planes: h0 (weight 2) + h1 (weight 4).
        let h0 = w1 ^ m1 ^ e1;
        let h1 = (w1 & m1) | (e1 & (w1 ^ m1));
        // l1 + h0: t0 (weight 2) + t1 (weight 4). Total = l0 + 2·t0 + 4·(t1 + h1).
        let t0 = l1 ^ h0;
        let t1 = l1 & h0;
        let three = l0 & t0 & !(t1 | h1);
        let four = !l0 & !t0 & (t1 ^ h1);
        out[i] = three | (four & row[i]);
    }
    out[n - 1] &= g.last_mask();
}

/// Fills the ghost words of a vertical-sum plane (`plane[0]` before the first word,
/// `plane[n + 1]` after the last): dead columns, or under wrap the other edge's column.
#[inline(always)]
fn edge_columns(g: &Geometry, plane: &mut [u64]) {
    let n = g.words;
    if !g.wrap {
        plane[0] = 0;
        plane[n + 1] = 0;
        return;
    }
    let first = plane[1] & 1;
    let last = (plane[n] >> ((g.width - 1) % 64)) & 1;
    plane[0] = last << 63;
    match g.width % 64 {
        0 => plane[n + 1] = first,
        r => {
            plane[n + 1] = 0;
            plane[n] |= first << r;
        }
    }
}

/// Live cells in a slice of packed rows.
pub fn population(words: &[u64]) -> u64 {
    words.iter().map(|w| u64::from(w.count_ones())).sum()
}

/// Whether cell `x` of a packed row is alive.
pub fn get(row: &[u64], x: usize) -> bool {
    row[x / 64] >> (x % 64) & 1 == 1
}

/// Sets cell `x` of a packed row.
pub fn set(row: &mut [u64], x: usize, alive: bool) {
    let bit = 1u64 << (x % 64);
    if alive {
        row[x / 64] |= bit;
    } else {
        row[x / 64] &= !bit;
    }
}

/// Copies cells `x0..x0 + out_width` of a packed row into `out` (packed from bit 0, bits
/// past `out_width` cleared).
pub fn extract(row: &[u64], x0: usize, out_width: usize, out: &mut [u64]) {
    let words = out_width.div_ceil(64);
    let (q, s) = (x0 / 64, x0 % 64);
    for (k, o) in out[..words].iter_mut().enumerate() {
        let lo = row.get(q + k).copied().unwrap_or(0) >> s;
        let hi = if s == 0 { 0 } else { row.get(q + k + 1).copied().unwrap_or(0) << (64 - s) };
        *o = lo | hi;
    }
    if !out_width.is_multiple_of(64) {
        out[words - 1] &= (1u64 << (out_width % 64)) - 1;
    }
}

/// The byte-per-cell reference: one generation of a `width × height` world (`cells[y *
/// width + x]` is 0 or 1), dead beyond the edges or wrapped around.
pub fn naive_step(width: usize, height: usize, wrap: bool, cells: &[u8]) -> Vec<u8> {
    let at = |x: isize, y: isize| -> u8 {
        let (w, h) = (width as isize, height as isize);
        if wrap {
            cells[(y.rem_euclid(h) * w + x.rem_euclid(w)) as usize]
        } else if (0..w).contains(&x) && (0..h).contains(&y) {
            cells[(y * w + x) as usize]
        } else {
            0
        }
    };
    let mut next = vec![0u8; width * height];
    for y in 0..height as isize {
        for x in 0..width as isize {
            let mut n = 0;
            for dy in -1..=1 {
                for dx in -1..=1 {
                    if (dx, dy) != (0, 0) {
                        n += at(x + dx, y + dy);
                    }
                }
            }
            let alive = at(x, y) == 1;
            next[(y * width as isize + x) as usize] = u8::from(n == 3 || (alive && n == 2));
        }
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Packs a byte-per-cell world into rows with a ghost row above and below.
    fn pack(g: &Geometry, height: usize, cells: &[u8]) -> Vec<u64> {
        let mut packed = vec![0u64; (height + 2) * g.words];
        for y in 0..height {
            for x in 0..g.width {
                set(&mut packed[(y + 1) * g.words..(y + 2) * g.words], x, cells[y * g.width + x] == 1);
            }
        }
        packed
    }

    fn unpack(g: &Geometry, height: usize, packed: &[u64]) -> Vec<u8> {
        let mut cells = vec![0u8; g.width * height];
        for y in 0..height {
            for x in 0..g.width {
                cells[y * g.width + x] = u8::from(get(&packed[(y + 1) * g.words..], x));
            }
        }
        cells
    }

    /// `depth` generations of a packed world of `height` rows, by one call of [`advance_on`]
    /// with `isa`, on a buffer with `depth` ghost rows above and below.
    fn bit_steps_on(isa: Isa, g: &Geometry, height: usize, cur: &mut [u64], depth: usize) {
        let n = g.words;
        let mut src = vec![0u64; (height + 2 * depth) * n];
        src[depth * n..(depth + height) * n].copy_from_slice(&cur[n..(height + 1) * n]);
        if g.wrap {
            for k in 0..depth {
                // Ghost row depth - 1 - k above is world row height - 1 - k; below, row k.
                let (above, below) = (height - 1 - k % height, k % height);
                src.copy_within((depth + above) * n..(depth + above + 1) * n, (depth - 1 - k) * n);
                src.copy_within((depth + below) * n..(depth + below + 1) * n, (depth + height + k) * n);
            }
        }
        let mut dst = vec![0u64; src.len()];
        let live = if g.wrap { 0..src.len() / n } else { depth..depth + height };
        let sweep = Sweep { rows: depth..depth + height, depth, live };
        let mut computed = 0;
        advance_on(isa, g, &src, &mut dst, &sweep, &mut Scratch::default(), &mut |rows| computed += rows);
        assert_eq!(computed, (1..=depth).map(|j| height + 2 * (depth - j)).sum::<usize>());
        cur[n..(height + 1) * n].copy_from_slice(&dst[depth * n..(depth + height) * n]);
    }

    fn bit_steps(g: &Geometry, height: usize, cur: &mut [u64], depth: usize) {
        bit_steps_on(Isa::best(), g, height, cur, depth)
    }

    fn bit_step(g: &Geometry, height: usize, cur: &mut [u64]) {
        bit_steps(g, height, cur, 1)
    }

    /// Every variant this CPU can run (the portable fallback always) computes the same
    /// generations as the naive reference, so a machine without AVX-512 gets a tested path.
    #[test]
    fn every_instruction_set_variant_matches_the_naive_reference() {
        let available: Vec<Isa> = Isa::ALL.into_iter().filter(|isa| isa.is_available()).collect();
        assert!(available.contains(&Isa::Portable) && available.contains(&Isa::best()));
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for isa in available {
            for &(width, height, depth) in &[(1, 5, 1), (65, 12, 3), (200, 31, 4)] {
                for wrap in [false, true] {
                    let g = Geometry::new(width, wrap);
                    let mut cells: Vec<u8> = (0..width * height).map(|_| u8::from(rng.gen_bool(0.4))).collect();
                    let mut packed = pack(&g, height, &cells);
                    for _ in 0..depth {
                        cells = naive_step(width, height, wrap, &cells);
                    }
                    bit_steps_on(isa, &g, height, &mut packed, depth);
                    assert_eq!(
                        unpack(&g, height, &packed),
                        cells,
                        "{isa:?} {width}x{height} wrap={wrap} depth {depth}"
                    );
                }
            }
        }
    }

    #[test]
    fn several_generations_in_one_pass_match_the_naive_reference() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for &(width, height) in &[(1, 6), (5, 4), (64, 9), (65, 12), (130, 17)] {
            for wrap in [false, true] {
                for depth in 2..=4.min(height) {
                    let g = Geometry::new(width, wrap);
                    let mut cells: Vec<u8> = (0..width * height).map(|_| u8::from(rng.gen_bool(0.4))).collect();
                    let mut packed = pack(&g, height, &cells);
                    for call in 0..3 {
                        for _ in 0..depth {
                            cells = naive_step(width, height, wrap, &cells);
                        }
                        bit_steps(&g, height, &mut packed, depth);
                        assert_eq!(
                            unpack(&g, height, &packed),
                            cells,
                            "{width}x{height} wrap={wrap} depth {depth} call {call}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn matches_the_naive_reference_on_random_worlds() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for &(width, height) in
            &[(1, 1), (1, 5), (2, 3), (5, 4), (63, 7), (64, 5), (65, 9), (100, 13), (128, 3), (200, 31)]
        {
            for wrap in [false, true] {
                for density in [0.2, 0.5] {
                    let g = Geometry::new(width, wrap);
                    let mut cells: Vec<u8> = (0..width * height).map(|_| u8::from(rng.gen_bool(density))).collect();
                    let mut packed = pack(&g, height, &cells);
                    for generation in 0..6 {
                        cells = naive_step(width, height, wrap, &cells);
                        bit_step(&g, height, &mut packed);
                        assert_eq!(
                            unpack(&g, height, &packed),
                            cells,
                            "{width}x{height} wrap={wrap} density {density} generation {generation}"
                        );
                        let last = packed[(height + 1) * g.words - 1];
                        assert_eq!(last & !g.last_mask(), 0, "bits past the width must stay clear");
                    }
                }
            }
        }
    }

    #[test]
    fn blinker_oscillates() {
        let g = Geometry::new(5, false);
        let mut cells = vec![0u8; 25];
        cells[2 * 5 + 1..2 * 5 + 4].fill(1);
        let start = pack(&g, 5, &cells);
        let mut packed = start.clone();
        bit_step(&g, 5, &mut packed);
        assert_ne!(packed, start);
        assert_eq!(population(&packed), 3);
        bit_step(&g, 5, &mut packed);
        assert_eq!(packed, start);
    }

    #[test]
    fn extract_takes_any_bit_range() {
        let mut row = vec![0u64; 3];
        for x in (0..150).filter(|x| x % 3 == 0 || x % 7 == 0) {
            set(&mut row, x, true);
        }
        for (x0, w) in [(0usize, 150usize), (1, 64), (63, 65), (64, 10), (100, 50), (149, 1)] {
            let mut out = vec![u64::MAX; w.div_ceil(64)];
            extract(&row, x0, w, &mut out);
            for x in 0..w {
                assert_eq!(get(&out, x), get(&row, x0 + x), "x0 {x0} w {w} x {x}");
            }
            assert_eq!(population(&out), (x0..x0 + w).filter(|&x| get(&row, x)).count() as u64);
        }
    }
}
