//! Reproducible random matrices: entry (i, j) is a hash of (seed, i, j), so any rank can
//! generate any part of a matrix without communication, and the result does not depend on
//! how the matrix is distributed.

/// Entry (i, j) of the random matrix `seed`, uniform in [-1, 1).
pub fn entry(seed: u64, i: usize, j: usize) -> f64 {
    let mut z = seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (j as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    // splitmix64 finaliser
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

/// Rows `rows` × columns `cols` of matrix `seed`, row-major. Allocated at its size, not grown
/// (see the test `a_matrix_is_allocated_once_at_its_size`).
pub fn rows_major(seed: u64, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>) -> Vec<f64> {
    let mut m = Vec::with_capacity(rows.len() * cols.len());
    m.extend(rows.flat_map(|i| cols.clone().map(move |j| entry(seed, i, j))));
    m
}

/// Rows `rows` × columns `cols` of matrix `seed`, column-major.
pub fn cols_major(seed: u64, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>) -> Vec<f64> {
    let mut m = Vec::with_capacity(rows.len() * cols.len());
    m.extend(cols.flat_map(|j| rows.clone().map(move |i| entry(seed, i, j))));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_agree_and_values_spread() {
        let r = rows_major(7, 0..3, 0..4);
        let c = cols_major(7, 0..3, 0..4);
        for i in 0..3 {
            for j in 0..4 {
                assert_eq!(r[i * 4 + j], c[j * 3 + i]);
            }
        }
        let all = rows_major(1, 0..100, 0..100);
        assert!(all.iter().all(|x| (-1.0..1.0).contains(x)));
        let mean = all.iter().sum::<f64>() / all.len() as f64;
        assert!(mean.abs() < 0.05, "mean {mean}");
    }

    #[test]
    fn a_matrix_is_allocated_once_at_its_size() {
        // Grown by doubling, a large matrix's early pages were moved (mremap) and lost their
        // huge pages; allocated at its size, the allocator's advice covers all of it.
        for m in [rows_major(3, 0..300, 0..301), cols_major(3, 0..300, 0..301)] {
            assert_eq!((m.len(), m.capacity()), (300 * 301, 300 * 301));
        }
    }
}
