//! The thinning rule of the thesis's eq. (8-1) on bit-packed binary images, 64 pixels a
//! word, and the serial reference: the rule applied to the whole image until a pass
//! changes nothing.
//!
//! Neighbours of P1 (Fig. 8.2): P2 = N, P3 = NW, P4 = W, P5 = SW, P6 = S, P7 = SE, P8 = E,
//! P9 = NE. `TR(P)` counts the 0→1 transitions of the cyclic sequence P2, P3, ..., P9, P2
//! around P; `NZ(P)` its black neighbours. A black P1 is deleted when
//! `TR(P1) = 1`, `P2·P4·P8 = 0 or TR(P2) ≠ 1`, `P2·P4·P6 = 0 or TR(P4) ≠ 1` and
//! `2 ≤ NZ(P1) ≤ 6`. The update is synchronous (every pixel of pass k is computed from the
//! image of pass k−1) and pixels outside the image are white: the only semantics whose
//! result does not depend on how the image is cut into cells. Deletion is the only change,
//! so a pixel once white stays white.
//!
//! Bit-parallel: each of the conditions is a word-wide boolean expression of the shifted
//! neighbour rows; `TR = 1` is "exactly one of eight transition bits", `NZ` is a bit-sliced
//! adder. [`naive`] is the same rule pixel by pixel, which the tests compare against.

use std::ops::Range;

use dps::Bulk;
use serde::{Deserialize, Serialize};

/// A binary image, 1 = black (foreground), rows of `words` 64-bit words, pixel `x` of a row
/// in bit `x % 64` of word `x / 64`. Bits past `width` are always 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plane {
    /// Pixels per row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Words per row.
    pub words: usize,
    /// `height * words` words.
    pub bits: Bulk<u64>,
}

impl Plane {
    /// An all-white image.
    pub fn new(width: usize, height: usize) -> Plane {
        let words = width.div_ceil(64);
        Plane { width, height, words, bits: Bulk(vec![0; words * height]) }
    }

    /// Row `y`.
    pub fn row(&self, y: usize) -> &[u64] {
        &self.bits[y * self.words..(y + 1) * self.words]
    }

    /// Row `y`, to change.
    pub fn row_mut(&mut self, y: usize) -> &mut [u64] {
        &mut self.bits[y * self.words..(y + 1) * self.words]
    }

    /// Pixel (x, y); white outside the image.
    pub fn get(&self, x: isize, y: isize) -> bool {
        if x < 0 || y < 0 || x as usize >= self.width || y as usize >= self.height {
            return false;
        }
        let (x, y) = (x as usize, y as usize);
        self.row(y)[x / 64] >> (x % 64) & 1 == 1
    }

    /// Sets pixel (x, y), which must be inside the image.
    pub fn set(&mut self, x: usize, y: usize, black: bool) {
        let w = &mut self.row_mut(y)[x / 64];
        let bit = 1u64 << (x % 64);
        if black {
            *w |= bit;
        } else {
            *w &= !bit;
        }
    }

    /// Black pixels.
    pub fn count(&self) -> u64 {
        self.bits.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// The 64 pixels of row `y` from column `x` on (white outside the image).
    pub fn get64(&self, x: isize, y: isize) -> u64 {
        if y < 0 || y as usize >= self.height {
            return 0;
        }
        let row = self.row(y as usize);
        let word = |i: isize| if i < 0 || i as usize >= self.words { 0 } else { row[i as usize] };
        let (q, r) = (x.div_euclid(64), x.rem_euclid(64) as u32);
        if r == 0 {
            word(q)
        } else {
            (word(q) >> r) | (word(q + 1) << (64 - r))
        }
    }

    /// Writes `n` pixels of `bits` (pixel i in bit i % 64 of word i / 64) into row `y` from
    /// column `x`; the part outside the image is left out.
    pub fn put_bits(&mut self, x: isize, y: isize, n: usize, bits: &[u64]) {
        if y < 0 || y as usize >= self.height {
            return;
        }
        if x < 0 || x as usize + n > self.width {
            // Clipped: pixel by pixel (only frames that reach past the image's edge).
            for i in 0..n {
                let px = x + i as isize;
                if px >= 0 && (px as usize) < self.width {
                    self.set(px as usize, y as usize, bits[i / 64] >> (i % 64) & 1 == 1);
                }
            }
            return;
        }
        let row = self.row_mut(y as usize);
        for (i, &v) in bits.iter().enumerate().take(n.div_ceil(64)) {
            let len = (n - 64 * i).min(64);
            let mask = if len == 64 { u64::MAX } else { (1u64 << len) - 1 };
            let v = v & mask;
            let at = x as usize + 64 * i;
            let (q, r) = (at / 64, (at % 64) as u32);
            row[q] = (row[q] & !(mask << r)) | (v << r);
            if r as usize + len > 64 {
                row[q + 1] = (row[q + 1] & !(mask >> (64 - r))) | (v >> (64 - r));
            }
        }
    }

    /// `n` pixels of row `y` from column `x` (white outside the image), packed.
    pub fn get_bits(&self, x: isize, y: isize, n: usize) -> Vec<u64> {
        let mut out: Vec<u64> = (0..n.div_ceil(64)).map(|i| self.get64(x + 64 * i as isize, y)).collect();
        if !n.is_multiple_of(64) {
            *out.last_mut().unwrap() &= (1u64 << (n % 64)) - 1;
        }
        out
    }

    /// Copies `src` into this image with its top-left corner at (x, y), clipped, word by word.
    pub fn paste(&mut self, src: &Plane, x: isize, y: isize) {
        for sy in 0..src.height {
            let ty = y + sy as isize;
            if ty < 0 || ty as usize >= self.height {
                continue;
            }
            if x >= 0 && x % 64 == 0 && x as usize + src.width <= self.width {
                // Aligned and inside: whole words, the last one merged.
                let (w0, n) = (x as usize / 64, src.words);
                let tail = src.width % 64;
                let dst = &mut self.row_mut(ty as usize)[w0..w0 + n];
                dst[..n - usize::from(tail != 0)].copy_from_slice(&src.row(sy)[..n - usize::from(tail != 0)]);
                if tail != 0 {
                    let mask = (1u64 << tail) - 1;
                    dst[n - 1] = (dst[n - 1] & !mask) | (src.row(sy)[n - 1] & mask);
                }
            } else {
                self.put_bits(x, ty, src.width, src.row(sy));
            }
        }
    }

    /// The `width × height` part of this image whose top-left corner is (x, y), white
    /// outside.
    pub fn crop(&self, x: isize, y: isize, width: usize, height: usize) -> Plane {
        let mut out = Plane::new(width, height);
        for oy in 0..height {
            let bits = self.get_bits(x, y + oy as isize, width);
            out.row_mut(oy).copy_from_slice(&bits);
        }
        out
    }
}

/// West neighbour: bit c gets pixel c − 1.
#[inline(always)]
fn west(x: u64, prev: u64) -> u64 {
    (x << 1) | (prev >> 63)
}

/// East neighbour: bit c gets pixel c + 1.
#[inline(always)]
fn east(x: u64, next: u64) -> u64 {
    (x >> 1) | (next << 63)
}

/// The eight neighbours of the pixels of word `i` of row `mid`, in the order P2..P9.
#[inline(always)]
fn neighbours(up: &[u64], mid: &[u64], down: &[u64], i: usize) -> [u64; 8] {
    let at = |r: &[u64], j: usize| r.get(j).copied().unwrap_or(0);
    let prev = |r: &[u64]| if i == 0 { 0 } else { r[i - 1] };
    let next = |r: &[u64]| at(r, i + 1);
    let (u, m, d) = (up[i], mid[i], down[i]);
    [
        u,                   // P2 N
        west(u, prev(up)),   // P3 NW
        west(m, prev(mid)),  // P4 W
        west(d, prev(down)), // P5 SW
        d,                   // P6 S
        east(d, next(down)), // P7 SE
        east(m, next(mid)),  // P8 E
        east(u, next(up)),   // P9 NE
    ]
}

/// Bits where exactly one of the 0→1 transitions of P2, P3, ..., P9, P2 occurs: TR = 1.
#[inline(always)]
fn tr_is_one(p: &[u64; 8]) -> u64 {
    let (mut one, mut more) = (0u64, 0u64);
    for k in 0..8 {
        let t = !p[k] & p[(k + 1) % 8];
        more |= one & t;
        one |= t;
    }
    one & !more
}

/// Bits where 2 ≤ NZ ≤ 6, NZ the number of black neighbours (a bit-sliced sum).
#[inline(always)]
fn nz_2_to_6(p: &[u64; 8]) -> u64 {
    let full = |a: u64, b: u64, c: u64| (a ^ b ^ c, (a & b) | (c & (a ^ b)));
    let (s1, c1) = full(p[0], p[1], p[2]);
    let (s2, c2) = full(p[3], p[4], p[5]);
    let (s3, c3) = (p[6] ^ p[7], p[6] & p[7]);
    let (b0, c4) = full(s1, s2, s3);
    let (t0, d1) = full(c1, c2, c3);
    let (b1, d2) = (t0 ^ c4, t0 & c4);
    let (b2, b3) = (d1 ^ d2, d1 & d2);
    (b1 | b2 | b3) & !b3 & !(b0 & b1 & b2)
}

/// One pass of the rule over rows `rows` of `src`, into the same rows of `dst` (other rows
/// of `dst` are left alone). Pixels outside `src` are white. Returns whether a pixel of
/// those rows was deleted.
pub fn thin_rows(src: &Plane, dst: &mut Plane, rows: Range<usize>) -> bool {
    debug_assert_eq!((src.width, src.height), (dst.width, dst.height));
    let n = src.words;
    let zero = vec![0u64; n];
    let row = |y: isize| if y < 0 || y as usize >= src.height { &zero[..] } else { src.row(y as usize) };
    // TR = 1 of the row above (for TR(P2)) and of the current row (for TR(P4), one pixel
    // to the left: the previous word's is ready when a word needs it). Where a pixel is
    // white, its TR is never needed (the guard it enters is then true anyway): 0.
    let (mut tr_prev, mut tr_cur) = (vec![0u64; n], vec![0u64; n]);
    let mut changed = false;
    if rows.start > 0 {
        let y = rows.start as isize - 1;
        let (up, mid, down) = (row(y - 1), row(y), row(y + 1));
        for (i, tr) in tr_prev.iter_mut().enumerate() {
            *tr = if mid[i] == 0 { 0 } else { tr_is_one(&neighbours(up, mid, down, i)) };
        }
    }
    for y in rows {
        let yi = y as isize;
        let (up, mid, down) = (row(yi - 1), row(yi), row(yi + 1));
        let out = dst.row_mut(y);
        for i in 0..n {
            if mid[i] == 0 {
                // Deletion only: a white word stays white, and is cheap (sparse images,
                // skeletons, empty cells).
                (out[i], tr_cur[i]) = (0, 0);
                continue;
            }
            let p = neighbours(up, mid, down, i);
            let tr = tr_is_one(&p);
            tr_cur[i] = tr;
            let tr_p4 = west(tr, if i == 0 { 0 } else { tr_cur[i - 1] });
            let delete =
                mid[i] & tr & (!(p[0] & p[2] & p[6]) | !tr_prev[i]) & (!(p[0] & p[2] & p[4]) | !tr_p4) & nz_2_to_6(&p);
            out[i] = mid[i] & !delete;
            changed |= delete != 0;
        }
        std::mem::swap(&mut tr_prev, &mut tr_cur);
    }
    changed
}

/// One pass over the whole image; returns the new image and whether a pixel changed.
pub fn thin_once(src: &Plane) -> (Plane, bool) {
    let mut dst = src.clone();
    let changed = thin_rows(src, &mut dst, 0..src.height);
    (dst, changed)
}

/// The serial reference: passes over the whole image until one changes nothing. Returns
/// the skeleton and the number of passes, the last (unchanged) one included.
pub fn skeletonize(image: &Plane) -> (Plane, u64) {
    let mut current = image.clone();
    let mut next = image.clone();
    let mut passes = 0;
    loop {
        passes += 1;
        if !thin_rows(&current, &mut next, 0..current.height) {
            return (current, passes);
        }
        std::mem::swap(&mut current, &mut next);
    }
}

/// Eq. (8-1) pixel by pixel, one pass: the plain statement of the rule the tests compare
/// the bit-parallel pass against.
pub fn naive(src: &Plane) -> Plane {
    let p = |x: isize, y: isize| u8::from(src.get(x, y));
    // P2..P9 around (x, y).
    let ring = |x: isize, y: isize| {
        [
            p(x, y - 1),
            p(x - 1, y - 1),
            p(x - 1, y),
            p(x - 1, y + 1),
            p(x, y + 1),
            p(x + 1, y + 1),
            p(x + 1, y),
            p(x + 1, y - 1),
        ]
    };
    let tr = |x: isize, y: isize| {
        let r = ring(x, y);
        (0..8).filter(|&k| r[k] == 0 && r[(k + 1) % 8] == 1).count()
    };
    let mut out = src.clone();
    for y in 0..src.height as isize {
        for x in 0..src.width as isize {
            if p(x, y) == 0 {
                continue;
            }
            let r = ring(x, y);
            let nz: u8 = r.iter().sum();
            let (p2, p4, p6, p8) = (r[0], r[2], r[4], r[6]);
            let delete = tr(x, y) == 1
                && (p2 * p4 * p8 == 0 || tr(x, y - 1) != 1)
                && (p2 * p4 * p6 == 0 || tr(x - 1, y) != 1)
                && (2..=6).contains(&nz);
            if delete {
                out.set(x as usize, y as usize, false);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn from_rows(rows: &[&str]) -> Plane {
        let mut p = Plane::new(rows[0].len(), rows.len());
        for (y, r) in rows.iter().enumerate() {
            for (x, c) in r.chars().enumerate() {
                p.set(x, y, c == '#');
            }
        }
        p
    }

    fn rect(w: usize, h: usize, at: usize, margin: usize) -> Plane {
        let mut p = Plane::new(at + w + margin, at + h + margin);
        for y in at..at + h {
            for x in at..at + w {
                p.set(x, y, true);
            }
        }
        p
    }

    fn black(p: &Plane) -> Vec<(usize, usize)> {
        let mut v = Vec::new();
        for y in 0..p.height {
            for x in 0..p.width {
                if p.get(x as isize, y as isize) {
                    v.push((y, x));
                }
            }
        }
        v
    }

    // SK-1: the rule on single pixels.
    #[test]
    fn isolated_pixels_line_ends_and_interior_pixels_are_kept() {
        let isolated = from_rows(&[".....", ".....", "..#..", ".....", "....."]);
        assert_eq!(thin_once(&isolated).0, isolated);
        let end = from_rows(&[".....", ".....", "..##.", ".....", "....."]);
        assert!(thin_once(&end).0.get(2, 2), "a line end (NZ = 1) stays");
        let full = from_rows(&["#####", "#####", "#####", "#####", "#####"]);
        assert!(thin_once(&full).0.get(2, 2), "an interior pixel (NZ = 8) stays");
        let line = from_rows(&[".....", ".....", "#####", ".....", "....."]);
        assert!(thin_once(&line).0.get(2, 2), "the middle of a 1-px line has TR = 2 and stays");
    }

    // SK-1: the TR(P2) and TR(P4) guards, on hand-built patches.
    #[test]
    fn the_tr_guards_keep_two_pixel_lines() {
        // P1 at (2,2) with P2, P4, P8 black: TR(P2) = 1 keeps it, as the guard says.
        let patch = from_rows(&[".....", "..#..", ".###.", ".....", "....."]);
        assert_eq!(naive(&patch), thin_once(&patch).0);
        let a = thin_once(&patch).0;
        assert!(a.get(2, 2), "guarded by TR(P2) = 1");
        // Without the guard (P8 white), P1 has TR = 1 and 2 <= NZ <= 6: deleted.
        let patch = from_rows(&[".....", "..#..", ".##..", ".....", "....."]);
        assert_eq!(naive(&patch), thin_once(&patch).0);
        // P2, P4, P6 black: TR(P4) decides.
        let patch = from_rows(&[".....", "..#..", ".##..", "..#..", "....."]);
        assert_eq!(naive(&patch), thin_once(&patch).0);
    }

    // SK-2: shapes from the spec (synchronous update, white margin).
    #[test]
    fn rectangles_thin_to_the_published_skeletons() {
        let (s, _) = skeletonize(&rect(10, 2, 2, 2));
        assert_eq!(black(&s), (3..=10).map(|x| (3, x)).collect::<Vec<_>>());
        let (s, _) = skeletonize(&rect(10, 3, 2, 2));
        assert_eq!(black(&s), (3..=10).map(|x| (3, x)).collect::<Vec<_>>());
        let (s, _) = skeletonize(&rect(2, 10, 2, 2));
        assert_eq!(black(&s), (3..=10).map(|y| (y, 3)).collect::<Vec<_>>());
        let (s, _) = skeletonize(&rect(12, 8, 2, 2));
        assert_eq!(black(&s), (6..=9).map(|x| (6, x)).collect::<Vec<_>>());
        let (s, n) = skeletonize(&rect(9, 9, 2, 2));
        assert_eq!((black(&s), n), (vec![(6, 6)], 5));
        let (s, n) = skeletonize(&rect(5, 5, 2, 2));
        assert_eq!((black(&s), n), (vec![(4, 4)], 3));
    }

    #[test]
    fn all_white_and_all_black_images() {
        let white = Plane::new(70, 5);
        assert_eq!(skeletonize(&white), (white.clone(), 1));
        let mut blackp = Plane::new(70, 5);
        for y in 0..5 {
            for x in 0..70 {
                blackp.set(x, y, true);
            }
        }
        let (s, n) = skeletonize(&blackp);
        assert!(s.count() > 0 && s.count() < blackp.count() && n > 1);
    }

    #[test]
    fn crop_and_paste_round_trip_at_any_offset() {
        let mut p = Plane::new(150, 7);
        for k in 0..300 {
            p.set((k * 37) % 150, (k * 11) % 7, true);
        }
        for x in [-70isize, -3, 0, 5, 64, 100] {
            let c = p.crop(x, -1, 90, 9);
            let mut back = Plane::new(150, 7);
            back.paste(&c, x, -1);
            for y in 0..7 {
                for px in 0..150isize {
                    let inside = px >= x && px < x + 90;
                    assert_eq!(back.get(px, y), inside && p.get(px, y), "x {x}, pixel ({px}, {y})");
                }
            }
        }
    }

    fn plane_strategy() -> impl Strategy<Value = Plane> {
        (1usize..140, 1usize..24, any::<u64>(), 1u32..4).prop_map(|(w, h, seed, density)| {
            let mut p = Plane::new(w, h);
            let mut s = seed | 1;
            for y in 0..h {
                for x in 0..w {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    p.set(x, y, s % 4 < u64::from(density));
                }
            }
            p
        })
    }

    proptest! {
        #[test]
        fn the_bit_parallel_pass_is_the_rule(p in plane_strategy()) {
            prop_assert_eq!(thin_once(&p).0, naive(&p));
        }
    }
}
