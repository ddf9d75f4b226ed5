//! Norms and residuals used by `--verify`.

/// Frobenius norm.
pub fn frobenius(a: &[f64]) -> f64 {
    a.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// ‖A - B‖_F / (‖X‖_F·‖Y‖_F): the relative error of a product C = X·Y against a reference.
pub fn product_error(c: &[f64], reference: &[f64], x: &[f64], y: &[f64]) -> f64 {
    let diff: f64 = c.iter().zip(reference).map(|(a, b)| (a - b) * (a - b)).sum::<f64>().sqrt();
    diff / (frobenius(x) * frobenius(y)).max(f64::MIN_POSITIVE)
}

/// Infinity norm (largest absolute row sum) of the n×n column-major matrix `a`.
pub fn inf_norm_col(n: usize, a: &[f64]) -> f64 {
    let mut rows = vec![0.0f64; n];
    for j in 0..n {
        for i in 0..n {
            rows[i] += a[j * n + i].abs();
        }
    }
    rows.into_iter().fold(0.0, f64::max)
}

/// The HPL scaled residual ‖A·x - b‖∞ / (ε·(‖A‖∞·‖x‖∞ + ‖b‖∞)·n), A n×n column-major.
pub fn hpl_residual(n: usize, a: &[f64], x: &[f64], b: &[f64]) -> f64 {
    let mut r = b.to_vec();
    crate::blas::gemm_col(n, 1, n, 1.0, a, n, x, n, -1.0, &mut r, n);
    let r_inf = r.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let x_inf = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let b_inf = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    r_inf / (f64::EPSILON * (inf_norm_col(n, a) * x_inf + b_inf) * n as f64)
}
