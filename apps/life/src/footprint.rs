//! The memory a run needs, from its options alone, so that a world too large for the
//! machine is refused before anything is allocated. Every figure saturates: a size that
//! overflows `u64` needs more memory than any machine has, and is refused as such.

/// Bytes of `rows` packed rows of `width` cells.
pub fn packed(width: usize, rows: u64) -> u64 {
    (width.div_ceil(64) as u64).saturating_mul(rows).saturating_mul(8)
}

/// `a × b` bytes (one per cell or pixel).
pub fn bytes(a: usize, b: usize) -> u64 {
    (a as u64).saturating_mul(b as u64)
}

/// A sum of byte counts that saturates.
pub fn sum(parts: &[u64]) -> u64 {
    parts.iter().fold(0, |s, &p| s.saturating_add(p))
}

/// The working rows of a step of `depth` generations beyond the band's own, per band: the
/// ghost rows of both buffers (`4 × depth`), the kernel's wavefront rings (`3 × depth`) and
/// vertical sums (2), and the border rows in flight to and from the neighbours, sent and
/// received, one step ahead at most (`8 × depth`).
fn rows_per_band(depth: usize) -> u64 {
    (depth as u64).saturating_mul(15).saturating_add(2)
}

/// The bands of a `width × height` world cut into `bands`, double-buffered.
pub fn bands(width: usize, height: usize, bands: usize, depth: usize) -> u64 {
    let rows = (height as u64).saturating_mul(2).saturating_add((bands as u64).saturating_mul(rows_per_band(depth)));
    packed(width, rows)
}

/// The serial world ([`crate::world::World`]) stepping `depth` generations at a time.
pub fn serial_world(width: usize, height: usize, depth: usize) -> u64 {
    bands(width, height, 1, depth)
}

/// A `width × height` rectangle gathered from the bands by the region service: the parts as
/// they arrive (received bytes, then decoded) and the assembled copy.
pub fn gathered(width: usize, height: usize) -> u64 {
    packed(width, height as u64).saturating_mul(3)
}

/// Writing a `width × height` rectangle as PNG: its pixels and the compressed image, which
/// the encoder holds before writing.
pub fn png(width: usize, height: usize) -> u64 {
    bytes(width, height).saturating_mul(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_saturate_instead_of_wrapping() {
        assert_eq!(packed(64, 2), 16);
        assert_eq!(packed(65, 1), 16);
        assert_eq!(bands(10_000_000, 10_000_000, 1, 8), 2 * 156_250 * 8 * 10_000_000 + 156_250 * 8 * 122);
        assert_eq!(bands(usize::MAX, usize::MAX, usize::MAX, usize::MAX), u64::MAX);
        assert_eq!(png(usize::MAX, 2), u64::MAX);
        assert_eq!(sum(&[u64::MAX, 1]), u64::MAX);
    }
}
