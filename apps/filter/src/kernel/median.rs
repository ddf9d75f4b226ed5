//! The 5×5 median on 8-bit pixels: a vector kernel and its serial references.
//!
//! The kernel keeps the median's comparator networks in registers, on lane vectors of
//! consecutive output pixels (32 with AVX2, 64 with AVX-512, chosen at run time; one pixel
//! at a time for blocks narrower than a vector). For each output row and each block of up
//! to `BLOCK` (512) output columns it makes three passes over small buffers that stay in L1:
//! 1. sort the five values of every column of the window rows (9 comparators);
//! 2. merge every two neighbouring sorted columns into a sorted run of ten
//!    ([`Network::merge_columns`](super::network::Network::merge_columns), 15 comparators);
//! 3. the median of each output pixel from the two pairs and the one column its window
//!    holds (columns x−2, x−1 | x, x+1 | x+2;
//!    [`Network::median_of_pairs`](super::network::Network::median_of_pairs), 78 min/max).
//!
//! A column is sorted once and a pair merged once for all the windows that hold them.
//!
//! Boundary rule (the thesis does not give one, spec §5.5): **clamp to edge**, a pixel
//! outside the image takes the value of the nearest pixel inside it. The serial references
//! and the parallel tiles use it alike, so their outputs are bit-identical.

use super::lanes::{self, Lanes};
use super::select::{median_of_pairs, merge_columns, sort5};

/// The median window's radius: 5×5.
pub const RADIUS: usize = 2;

/// Output columns per pass: the pass's sorted columns and pairs (15 rows of this many
/// bytes) stay in L1.
const BLOCK: usize = 512;

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
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if w >= lanes::Avx512::N && has!("avx512f") && has!("avx512bw") && has!("avx2") {
            // SAFETY: the features `median5_avx512` enables were all detected just above.
            return unsafe { median5_avx512(src, stride, w, h, dst, dst_stride) };
        }
        if w >= lanes::Avx2::N && has!("avx2") {
            // SAFETY: AVX2, the one feature `median5_avx2` enables, was detected just above.
            return unsafe { median5_avx2(src, stride, w, h, dst, dst_stride) };
        }
    }
    median5_lanes::<u8>(src, stride, w, h, dst, dst_stride)
}

/// Blocks narrower than this (and taller than twice their width) are transposed first.
const NARROW: usize = 32;

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
#[target_feature(enable = "avx512f,avx512bw,avx2")]
fn median5_avx512(src: &[u8], stride: usize, w: usize, h: usize, dst: &mut [u8], dst_stride: usize) {
    median5_lanes::<lanes::Avx512>(src, stride, w, h, dst, dst_stride)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn median5_avx2(src: &[u8], stride: usize, w: usize, h: usize, dst: &mut [u8], dst_stride: usize) {
    median5_lanes::<lanes::Avx2>(src, stride, w, h, dst, dst_stride)
}

/// The starts of vectors of `lanes` lanes that cover `0..n` (`n ≥ lanes`): the last one
/// overlaps its predecessor when `n` is not a multiple of `lanes`, which recomputes some
/// lanes with the same result. (Loops, not a closure per vector: the vector code must be
/// inlined into the function that enables its instructions.)
#[inline(always)]
fn vector_starts(n: usize, lanes: usize) -> impl Iterator<Item = usize> {
    assert!(n >= lanes, "a pass shorter than a vector"); // the loads' bounds rely on it
    (0..n / lanes).map(move |k| k * lanes).chain((!n.is_multiple_of(lanes)).then_some(n - lanes))
}

/// The kernel on lane vectors of type `V`; the block must be at least `V::N` wide.
///
/// The networks' inputs are written out as array literals, not `std::array::from_fn`:
/// LLVM kept `from_fn` as a loop storing every input to the stack and the networks read
/// them back, which took 60 % of the kernel's time (1250 Mpix/s a core now, 450 before).
#[inline(always)]
fn median5_lanes<V: Lanes>(src: &[u8], stride: usize, w: usize, h: usize, dst: &mut [u8], dst_stride: usize) {
    assert!(w >= V::N);
    // Row `k` of `columns`: the k-th smallest of each column; row `j` of `pairs`: the j-th
    // smallest of columns (c, c + 1), at index c (padded columns, relative to the block).
    // Rows a multiple of 64 bytes apart, from a 64-byte boundary: the passes' stores are
    // aligned and never split across cache lines (rows 548 bytes apart split most of them,
    // and the stores were the kernel's bottleneck).
    let len = (BLOCK + V::N + 2 * RADIUS).next_multiple_of(64);
    let mut columns_buffer = vec![0u8; 5 * len + 64];
    let mut pairs_buffer = vec![0u8; 10 * len + 64];
    let columns = aligned_64(&mut columns_buffer, 5 * len);
    let pairs = aligned_64(&mut pairs_buffer, 10 * len);
    for y in 0..h {
        let rows: [&[u8]; 5] = std::array::from_fn(|k| &src[(y + k) * stride..][..w + 2 * RADIUS]);
        let out = &mut dst[y * dst_stride..][..w];
        let mut x0 = 0;
        while x0 < w {
            // The last block takes the rest when a block after it would be under a vector.
            let n = if w - x0 < BLOCK + V::N { w - x0 } else { BLOCK };
            // What makes every load and store below in bounds: a vector starting at `i`
            // ends at most at the length of its pass (`vector_starts`), which is at most
            // `n + 2·RADIUS`; the rows of `columns` and `pairs` are `len` long, the source
            // rows `w + 2·RADIUS` from `x0`, the output row `w`.
            assert!(x0 + n <= w && n + 2 * RADIUS <= len);
            for i in vector_starts(n + 2 * RADIUS, V::N) {
                // SAFETY: the ranges above: x0 + i + N <= x0 + n + 4 <= w + 4 (source rows),
                // k·len + i + N <= k·len + n + 4 <= (k + 1)·len (row k of `columns`).
                unsafe {
                    let at = x0 + i;
                    let sorted = sort5([
                        V::load(rows[0], at),
                        V::load(rows[1], at),
                        V::load(rows[2], at),
                        V::load(rows[3], at),
                        V::load(rows[4], at),
                    ]);
                    for (k, v) in sorted.into_iter().enumerate() {
                        v.store(columns, k * len + i);
                    }
                }
            }
            for i in vector_starts(n + 2 * RADIUS - 1, V::N) {
                // SAFETY: column c + 1 of the pair: k·len + i + 1 + N <= k·len + n + 4, in
                // row k of `columns`; row j of `pairs` as in the sort.
                unsafe {
                    let c = |k: usize, next: usize| V::load(columns, k * len + i + next);
                    #[rustfmt::skip]
                    let merged = merge_columns([
                        c(0, 0), c(1, 0), c(2, 0), c(3, 0), c(4, 0),
                        c(0, 1), c(1, 1), c(2, 1), c(3, 1), c(4, 1),
                    ]);
                    for (j, v) in merged.into_iter().enumerate() {
                        v.store(pairs, j * len + i);
                    }
                }
            }
            for i in vector_starts(n, V::N) {
                // SAFETY: i + N <= n: the pair at i + 2 and the column at i + 4 end within
                // n + 4 of their rows, the output at x0 + n <= w.
                unsafe {
                    let p = |j: usize, d: usize| V::load(pairs, j * len + i + d);
                    let c = |k: usize| V::load(columns, k * len + i + 4);
                    #[rustfmt::skip]
                    let [median] = median_of_pairs([
                        p(0, 0), p(1, 0), p(2, 0), p(3, 0), p(4, 0), p(5, 0), p(6, 0), p(7, 0), p(8, 0), p(9, 0),
                        p(0, 2), p(1, 2), p(2, 2), p(3, 2), p(4, 2), p(5, 2), p(6, 2), p(7, 2), p(8, 2), p(9, 2),
                        c(0), c(1), c(2), c(3), c(4),
                    ]);
                    median.store(out, x0 + i);
                }
            }
            x0 += n;
        }
    }
}

/// The `n` bytes of `buffer` (at least `n + 63` long) from its first 64-byte boundary.
fn aligned_64(buffer: &mut [u8], n: usize) -> &mut [u8] {
    let skip = buffer.as_ptr().align_offset(64);
    &mut buffer[skip..skip + n]
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
    let mut out = output_buffer(w * h);
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

/// A zeroed buffer for a whole output image. A large one is advised to the kernel as
/// huge-page memory, as numpy does for its arrays (and so OpenCV's outputs in Python):
/// otherwise the first write to each 4 KiB page faults, which on 8192² (131 000 faults a
/// run) took as long as the median itself.
fn output_buffer(n: usize) -> Vec<u8> {
    let v = vec![0u8; n];
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 1 << 21;
        let start = v.as_ptr() as usize;
        let (first, end) = (start.next_multiple_of(HUGE), (start + n) / HUGE * HUGE);
        if end > first {
            // SAFETY: [first, end) lies inside `v`'s allocation and is page aligned;
            // MADV_HUGEPAGE changes how its pages are backed, not their contents (zero). An
            // error (no transparent huge pages) leaves the buffer as it was.
            unsafe { libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE) };
        }
    }
    v
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
    fn the_kernel_equals_the_naive_median_with_clamped_edges() {
        // Sizes around the vector widths (32, 64) and the block (512, and the last block
        // taking the rest under BLOCK + a vector), and tiny images (the clamp reaches across).
        for (i, &(w, h)) in [
            (31, 3),
            (32, 4),
            (33, 2),
            (63, 2),
            (64, 3),
            (65, 2),
            (511, 2),
            (512, 2),
            (513, 2),
            (543, 2),
            (544, 2),
            (577, 2),
            (1025, 2),
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
    fn every_lane_width_the_cpu_has_gives_the_per_pixel_result() {
        // median5 picks one path per block; here each runs on the same wide and odd blocks.
        for (w, h) in [(64, 3), (97, 5), (600, 4), (1100, 2)] {
            let img = random(w, h, 256, w as u64);
            let padded = pad_clamped(&img, w, h, RADIUS);
            let want = median_naive(&img, w, h);
            let mut out = vec![0u8; w * h];
            median5_lanes::<u8>(&padded, w + 4, w, h, &mut out, w);
            assert_eq!(out, want, "{w}x{h} one lane");
            #[cfg(target_arch = "x86_64")]
            {
                use std::arch::is_x86_feature_detected as has;
                if has!("avx2") {
                    out.fill(0);
                    // SAFETY: AVX2 was detected.
                    unsafe { median5_avx2(&padded, w + 4, w, h, &mut out, w) };
                    assert_eq!(out, want, "{w}x{h} AVX2");
                }
                if has!("avx512f") && has!("avx512bw") && has!("avx2") {
                    out.fill(0);
                    // SAFETY: the features median5_avx512 enables were detected.
                    unsafe { median5_avx512(&padded, w + 4, w, h, &mut out, w) };
                    assert_eq!(out, want, "{w}x{h} AVX-512");
                }
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
    fn tile_part_times() {
        // The parts exchange.rs computes for a 512² tile: the interior, the 2-row top and
        // bottom frames, the 2-column left and right frames (transposed).
        for (w, h) in [(508, 508), (512, 2), (2, 508)] {
            let img = random(w, h, 256, 1);
            let padded = pad_clamped(&img, w, h, RADIUS);
            let mut out = vec![0u8; w * h];
            let reps = 2_000_000 / (w * h) + 10;
            let t = std::time::Instant::now();
            for _ in 0..reps {
                median5(&padded, w + 4, w, h, &mut out, w);
            }
            println!("{w}x{h}: {:.2} us", t.elapsed().as_secs_f64() * 1e6 / reps as f64);
        }
    }

    #[test]
    #[ignore = "a measurement: cargo test --release -p dps-filter -- --ignored --nocapture"]
    fn serial_throughput() {
        let (w, h) = (8192, 8192);
        let img = random(w, h, 256, 1);
        let padded = pad_clamped(&img, w, h, RADIUS);
        let mut out = vec![0u8; w * h];
        let cpu = || dps::cpu_time::thread().as_secs_f64();
        let px = (w * h) as f64 / 1e6;
        // The kernel on a padded image into a written buffer, then the whole-image median
        // (padding bands, a new output each time: what `median --variant serial` times).
        let runs: [(&str, &mut dyn FnMut()); 2] = [
            ("median5, padded input", &mut || median5(&padded, w + 4, w, h, &mut out, w)),
            ("median_image", &mut || drop(std::hint::black_box(median_image(&img, w, h)))),
        ];
        for (name, run) in runs {
            let (mut wall, mut cpus) = (Vec::new(), Vec::new());
            for _ in 0..5 {
                let (t, c) = (std::time::Instant::now(), cpu());
                run();
                wall.push(t.elapsed().as_secs_f64());
                cpus.push(cpu() - c);
            }
            println!(
                "{name}: {:.1} Mpix/s wall (median), {:.1} Mpix/s of thread CPU time (best)",
                px / dps_harness::median(&wall),
                px / cpus.iter().copied().fold(f64::INFINITY, f64::min)
            );
        }
    }
}
