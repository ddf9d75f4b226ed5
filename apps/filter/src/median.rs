//! The 5×5 median on 8-bit pixels: a vector kernel and its serial references.
//!
//! The kernel works on whole rows with per-lane `u8` min/max, which the compiler turns into
//! AVX-512/AVX2 instructions (one function body compiled per instruction set, chosen at run
//! time). For each output row it sorts the five values of every column of the window rows
//! once (a 9-comparator network on five row vectors), then runs the pruned selection network
//! of [`crate::network`] on the 25 sorted-column vectors of a chunk of output pixels: no
//! sort per pixel.
//!
//! Boundary rule (the thesis does not give one, spec §5.5): **clamp to edge**, a pixel
//! outside the image takes the value of the nearest pixel inside it. The serial references
//! and the parallel tiles use it alike, so their outputs are bit-identical.

use std::sync::OnceLock;

use crate::network::{Network, Op, INPUTS};

/// The median window's radius: 5×5.
pub const RADIUS: usize = 2;

/// Output pixels per pass of the selection network: long enough that the dispatch of an
/// operation is small beside its vector work, short enough that the 25 slots stay in L1.
const CHUNK: usize = 1024;

fn network() -> &'static Network {
    static NETWORK: OnceLock<Network> = OnceLock::new();
    NETWORK.get_or_init(Network::median_of_sorted_columns)
}

/// The 5×5 median of a `w × h` block, read from `src`, which holds the block with a border
/// of [`RADIUS`] pixels on every side (`(w + 4) × (h + 4)` pixels, rows `stride` apart),
/// written to `dst` (rows `dst_stride` apart).
///
/// # Panics
/// If a buffer is too short for the sizes given.
pub fn median5(src: &[u8], stride: usize, w: usize, h: usize, dst: &mut [u8], dst_stride: usize) {
    if w == 0 || h == 0 {
        return;
    }
    let padded_w = w + 2 * RADIUS;
    assert!(stride >= padded_w && src.len() >= (h + 2 * RADIUS - 1) * stride + padded_w, "source too short");
    assert!(dst_stride >= w && dst.len() >= (h - 1) * dst_stride + w, "destination too short");
    if w < NARROW && h > 2 * w {
        return median5_transposed(src, stride, w, h, dst, dst_stride);
    }
    let net = network();
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f") && has!("avx512bw") && has!("avx512vl") && has!("avx2") {
            // SAFETY: the features `median5_avx512` enables were all detected just above.
            return unsafe { median5_avx512(net, src, stride, w, h, dst, dst_stride) };
        }
        if has!("avx2") {
            // SAFETY: AVX2, the one feature `median5_avx2` enables, was detected just above.
            return unsafe { median5_avx2(net, src, stride, w, h, dst, dst_stride) };
        }
    }
    median5_portable(net, src, stride, w, h, dst, dst_stride)
}

/// Blocks narrower than this (and taller than twice their width) are transposed first.
const NARROW: usize = 16;

/// A narrow, tall block (the left and right frames of a tile) as its transpose: the median
/// of a window does not change when the window is transposed, and the transposed block's
/// rows are long, so the chunks are not cut into a few pixels per row.
fn median5_transposed(src: &[u8], stride: usize, w: usize, h: usize, dst: &mut [u8], dst_stride: usize) {
    let (pw, ph) = (w + 2 * RADIUS, h + 2 * RADIUS);
    let mut t = vec![0u8; pw * ph];
    for y in 0..ph {
        for x in 0..pw {
            t[x * ph + y] = src[y * stride + x];
        }
    }
    let mut out = vec![0u8; w * h];
    median5(&t, ph, h, w, &mut out, h);
    for y in 0..h {
        for x in 0..w {
            dst[y * dst_stride + x] = out[x * h + y];
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
fn median5_avx512(net: &Network, src: &[u8], stride: usize, w: usize, h: usize, dst: &mut [u8], dst_stride: usize) {
    median5_portable(net, src, stride, w, h, dst, dst_stride)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn median5_avx2(net: &Network, src: &[u8], stride: usize, w: usize, h: usize, dst: &mut [u8], dst_stride: usize) {
    median5_portable(net, src, stride, w, h, dst, dst_stride)
}

#[inline(always)]
fn min_max<const N: usize>(a: &mut [u8; N], b: &mut [u8; N]) {
    for k in 0..N {
        let (x, y) = (a[k], b[k]);
        a[k] = x.min(y);
        b[k] = x.max(y);
    }
}

#[inline(always)]
fn min_max_slices(a: &mut [u8], b: &mut [u8]) {
    for (x, y) in a.iter_mut().zip(b.iter_mut()) {
        let (lo, hi) = ((*x).min(*y), (*x).max(*y));
        *x = lo;
        *y = hi;
    }
}

/// Sorts the five values of every column: the 9-comparator network of five.
#[inline(always)]
fn sort_columns(columns: &mut [Vec<u8>; 5]) {
    let [c0, c1, c2, c3, c4] = columns;
    min_max_slices(c0, c1);
    min_max_slices(c3, c4);
    min_max_slices(c2, c4);
    min_max_slices(c2, c3);
    min_max_slices(c1, c4);
    min_max_slices(c0, c3);
    min_max_slices(c0, c2);
    min_max_slices(c1, c3);
    min_max_slices(c1, c2);
}

/// A run of output pixels in one row, placed at `lane` in the chunk.
#[derive(Clone, Copy)]
struct Segment {
    y: usize,
    x0: usize,
    n: usize,
    lane: usize,
}

#[inline(always)]
fn median5_portable(net: &Network, src: &[u8], stride: usize, w: usize, h: usize, dst: &mut [u8], dst_stride: usize) {
    // The lanes of a chunk are consecutive output pixels in row order, across rows if the
    // block is narrower than a chunk (a 256-wide tile fills a chunk with four rows).
    let mut columns: [Vec<u8>; 5] = std::array::from_fn(|_| vec![0u8; CHUNK + 2 * RADIUS]);
    let mut slots = vec![[0u8; CHUNK]; INPUTS];
    let slots: &mut [[u8; CHUNK]; INPUTS] = slots.as_mut_slice().try_into().expect("25 slots");
    let mut segments: Vec<Segment> = Vec::with_capacity(CHUNK);
    let (mut y, mut x) = (0, 0);
    while y < h {
        segments.clear();
        let mut lane = 0;
        while lane < CHUNK && y < h {
            let n = (w - x).min(CHUNK - lane);
            segments.push(Segment { y, x0: x, n, lane });
            lane += n;
            x += n;
            if x == w {
                (x, y) = (0, y + 1);
            }
        }
        for seg in &segments {
            let len = seg.n + 2 * RADIUS;
            for (k, column) in columns.iter_mut().enumerate() {
                column.resize(len, 0);
                column.copy_from_slice(&src[(seg.y + k) * stride + seg.x0..][..len]);
            }
            sort_columns(&mut columns);
            for dx in 0..5 {
                for (k, column) in columns.iter().enumerate() {
                    slots[5 * dx + k][seg.lane..seg.lane + seg.n].copy_from_slice(&column[dx..][..seg.n]);
                }
            }
        }
        run_network(net, slots);
        for seg in &segments {
            dst[seg.y * dst_stride + seg.x0..][..seg.n].copy_from_slice(&slots[net.median][seg.lane..][..seg.n]);
        }
    }
}

/// Two distinct slots, mutably.
#[inline(always)]
fn pair(slots: &mut [[u8; CHUNK]; INPUTS], a: u8, b: u8) -> (&mut [u8; CHUNK], &mut [u8; CHUNK]) {
    let (a, b) = (a as usize, b as usize);
    assert!(a != b, "an operation on one slot");
    if a < b {
        let (lo, hi) = slots.split_at_mut(b);
        (&mut lo[a], &mut hi[0])
    } else {
        let (lo, hi) = slots.split_at_mut(a);
        (&mut hi[0], &mut lo[b])
    }
}

#[inline(always)]
fn run_network(net: &Network, slots: &mut [[u8; CHUNK]; INPUTS]) {
    for &op in &net.ops {
        match op {
            Op::Min(a, b) => {
                let (x, y) = pair(slots, a, b);
                for k in 0..CHUNK {
                    x[k] = x[k].min(y[k]);
                }
            }
            Op::Max(a, b) => {
                let (x, y) = pair(slots, a, b);
                for k in 0..CHUNK {
                    y[k] = x[k].max(y[k]);
                }
            }
            Op::MinMax(a, b) => {
                let (x, y) = pair(slots, a, b);
                min_max(x, y);
            }
        }
    }
}

/// `w × h` pixels with a border of `r` on every side, each border pixel a copy of the
/// nearest image pixel (clamp to edge).
pub fn pad_clamped(pixels: &[u8], w: usize, h: usize, r: usize) -> Vec<u8> {
    let pw = w + 2 * r;
    let mut out = vec![0u8; pw * (h + 2 * r)];
    for (py, row) in out.chunks_mut(pw).enumerate() {
        let y = py.saturating_sub(r).min(h - 1);
        let src = &pixels[y * w..][..w];
        row[r..r + w].copy_from_slice(src);
        row[..r].fill(src[0]);
        row[r + w..].fill(src[w - 1]);
    }
    out
}

/// The serial whole-image median (clamp to edge), with the vector kernel on one core. The
/// image is padded a band of rows at a time (a small buffer that stays in cache), not whole.
pub fn median_image(pixels: &[u8], w: usize, h: usize) -> Vec<u8> {
    const BAND: usize = 32;
    let mut out = vec![0u8; w * h];
    if w == 0 || h == 0 {
        return out;
    }
    let pw = w + 2 * RADIUS;
    let mut band = vec![0u8; pw * (BAND + 2 * RADIUS)];
    for y0 in (0..h).step_by(BAND) {
        let rows = BAND.min(h - y0);
        for (py, row) in band.chunks_mut(pw).take(rows + 2 * RADIUS).enumerate() {
            let y = (y0 + py).saturating_sub(RADIUS).min(h - 1);
            let src = &pixels[y * w..][..w];
            row[RADIUS..RADIUS + w].copy_from_slice(src);
            row[..RADIUS].fill(src[0]);
            row[RADIUS + w..].fill(src[w - 1]);
        }
        median5(&band, pw, w, rows, &mut out[y0 * w..], w);
    }
    out
}

/// The naive reference: for each pixel, sort its 25 clamped neighbours and take the 13th.
pub fn median_naive(pixels: &[u8], w: usize, h: usize) -> Vec<u8> {
    let r = RADIUS as isize;
    let at = |x: isize, y: isize| pixels[y.clamp(0, h as isize - 1) as usize * w + x.clamp(0, w as isize - 1) as usize];
    let mut out = Vec::with_capacity(w * h);
    let mut window = Vec::with_capacity(25);
    for y in 0..h as isize {
        for x in 0..w as isize {
            window.clear();
            for dy in -r..=r {
                for dx in -r..=r {
                    window.push(at(x + dx, y + dy));
                }
            }
            window.sort_unstable();
            out.push(window[12]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    use super::*;

    fn random(w: usize, h: usize, levels: u32, seed: u64) -> Vec<u8> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..w * h).map(|_| rng.gen_range(0..levels) as u8).collect()
    }

    #[test]
    fn the_column_sort_sorts_every_zero_one_column() {
        for bits in 0..32u8 {
            let mut c: [Vec<u8>; 5] = std::array::from_fn(|k| vec![(bits >> k) & 1]);
            sort_columns(&mut c);
            let v: Vec<u8> = c.iter().map(|x| x[0]).collect();
            assert!(v.windows(2).all(|p| p[0] <= p[1]), "{bits:05b} -> {v:?}");
        }
    }

    #[test]
    fn the_kernel_equals_the_naive_median_with_clamped_edges() {
        // Sizes around the chunk length and tiny images (the clamp reaches across them).
        for (i, &(w, h)) in [
            (1, 1),
            (2, 3),
            (5, 5),
            (7, 2),
            (37, 11),
            (255, 6),
            (256, 5),
            (300, 9),
            (1100, 3),
            (45, 70),
            (2, 300),
            (3, 50),
            (15, 31),
        ]
        .iter()
        .enumerate()
        {
            for levels in [2, 5, 256] {
                let img = random(w, h, levels, i as u64 * 31 + u64::from(levels));
                assert_eq!(median_image(&img, w, h), median_naive(&img, w, h), "{w}x{h}, {levels} levels");
            }
        }
    }

    #[test]
    fn strides_larger_than_the_rows_are_respected() {
        // A wide block, and a narrow tall one (the transposed path).
        for (w, h) in [(40, 7), (3, 40)] {
            let img = random(w, h, 256, 3);
            let padded = pad_clamped(&img, w, h, RADIUS);
            let (stride, dst_stride) = (w + 4 + 9, w + 5);
            let mut wide = vec![0u8; stride * (h + 4)];
            for (y, row) in padded.chunks(w + 4).enumerate() {
                wide[y * stride..][..w + 4].copy_from_slice(row);
            }
            let mut out = vec![0xAAu8; dst_stride * h];
            median5(&wide, stride, w, h, &mut out, dst_stride);
            let want = median_naive(&img, w, h);
            for y in 0..h {
                assert_eq!(&out[y * dst_stride..][..w], &want[y * w..][..w], "{w}x{h} row {y}");
                assert!(out[y * dst_stride + w..][..dst_stride - w].iter().all(|&b| b == 0xAA), "wrote past the row");
            }
        }
    }

    #[test]
    #[ignore = "a measurement: cargo test --release -p dps-filter -- --ignored --nocapture"]
    fn serial_throughput() {
        let (w, h) = (8192, 8192);
        let img = random(w, h, 256, 1);
        let padded = pad_clamped(&img, w, h, RADIUS);
        let mut out = vec![0u8; w * h];
        let cpu = || {
            let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: `ts` is a valid timespec for clock_gettime to fill.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
        };
        let (mut wall, mut cpus) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            let (t, c) = (std::time::Instant::now(), cpu());
            median5(&padded, w + 4, w, h, &mut out, w);
            wall.push(t.elapsed().as_secs_f64());
            cpus.push(cpu() - c);
        }
        let px = (w * h) as f64 / 1e6;
        println!(
            "ops {} serial median {:.1} Mpix/s wall (median), {:.1} Mpix/s of thread CPU time (best)",
            network().ops.len(),
            px / dps_harness::median(&wall),
            px / cpus.iter().copied().fold(f64::INFINITY, f64::min)
        );
    }
}
