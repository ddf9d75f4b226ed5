//! Norms and residuals used by `--verify`.
//!
//! A verification must never pass on a wrong result, so every function here propagates NaN
//! (any NaN in, NaN out; `f64::max` would drop it) and is NaN when a norm overflows to
//! infinity (a residual divided by an infinite norm would otherwise read as 0). Callers
//! accept a value only with `x.is_finite() && x <= bound`.

/// The larger of `a` and `b`, NaN if either is.
fn max_nan(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// Largest absolute value; NaN if any entry is NaN; 0 for no entries.
pub fn max_abs(a: &[f64]) -> f64 {
    a.iter().fold(0.0, |m, x| max_nan(m, x.abs()))
}

/// Frobenius norm, scaled so that squares of large entries do not overflow; NaN if any entry
/// is NaN, infinite if one is infinite.
pub fn frobenius(a: &[f64]) -> f64 {
    scaled_norm(a.iter().copied())
}

/// The 2-norm of `values`, computed as max·sqrt(Σ (x/max)²) (LAPACK's dnrm2 scaling).
fn scaled_norm(values: impl Iterator<Item = f64> + Clone) -> f64 {
    let scale = values.clone().fold(0.0, |m, x| max_nan(m, x.abs()));
    if !scale.is_finite() || scale == 0.0 {
        return scale;
    }
    scale * values.map(|x| (x / scale) * (x / scale)).sum::<f64>().sqrt()
}

/// ‖C − R‖_F / (‖X‖_F·‖Y‖_F): the relative error of a product C = X·Y against a reference
/// R. NaN when any input holds a NaN or infinity, or a norm overflows.
pub fn product_error(c: &[f64], reference: &[f64], x: &[f64], y: &[f64]) -> f64 {
    assert_eq!(c.len(), reference.len(), "product_error: C and the reference differ in size");
    let diff = scaled_norm(c.iter().zip(reference).map(|(a, b)| a - b));
    let scale = frobenius(x) * frobenius(y);
    if !(diff.is_finite() && scale.is_finite()) {
        return f64::NAN;
    }
    diff / scale.max(f64::MIN_POSITIVE)
}

/// Infinity norm (largest absolute row sum) of the n×n column-major matrix `a`; NaN if any
/// entry is NaN, infinite if a row sum overflows.
pub fn inf_norm_col(n: usize, a: &[f64]) -> f64 {
    let mut rows = vec![0.0f64; n];
    for j in 0..n {
        for i in 0..n {
            rows[i] += a[j * n + i].abs();
        }
    }
    max_abs(&rows)
}

/// The HPL scaled residual ‖A·x - b‖∞ / (ε·(‖A‖∞·‖x‖∞ + ‖b‖∞)·n), A n×n column-major.
/// NaN when any input holds a NaN or infinity or a norm overflows: it cannot be judged.
pub fn hpl_residual(n: usize, a: &[f64], x: &[f64], b: &[f64]) -> f64 {
    let mut r = b.to_vec();
    crate::blas::gemm_col(n, 1, n, 1.0, a, n, x, n, -1.0, &mut r, n);
    let r_inf = max_abs(&r);
    let scale = f64::EPSILON * (inf_norm_col(n, a) * max_abs(x) + max_abs(b)) * n as f64;
    if !(r_inf.is_finite() && scale.is_finite()) {
        return f64::NAN;
    }
    r_inf / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAN: f64 = f64::NAN;
    const INF: f64 = f64::INFINITY;

    #[test]
    fn any_nan_in_gives_nan_out() {
        assert!(max_abs(&[1.0, NAN, 2.0]).is_nan());
        assert!(max_abs(&[NAN, 1.0]).is_nan(), "a NaN first must not be dropped either");
        assert!(frobenius(&[3.0, NAN]).is_nan());
        assert!(inf_norm_col(2, &[1.0, 2.0, NAN, 4.0]).is_nan());
        let ok = [1.0, 0.0, 0.0, 1.0];
        assert!(product_error(&[1.0, NAN, 0.0, 1.0], &ok, &ok, &ok).is_nan());
        assert!(product_error(&ok, &ok, &[NAN, 0.0, 0.0, 1.0], &ok).is_nan());
        assert!(hpl_residual(2, &[1.0, 0.0, 0.0, NAN], &[1.0, 1.0], &[1.0, 1.0]).is_nan());
        assert!(hpl_residual(2, &ok, &[1.0, NAN], &[1.0, 1.0]).is_nan());
    }

    #[test]
    fn infinities_and_overflow_are_not_small() {
        let ok = [1.0, 0.0, 0.0, 1.0];
        assert!(product_error(&[INF, 0.0, 0.0, 1.0], &ok, &ok, &ok).is_nan());
        // Every entry finite, but the row sums of A overflow: the residual would read as 0.
        let big = [f64::MAX, 0.0, f64::MAX, 1.0];
        assert!(hpl_residual(2, &big, &[0.0, 0.0], &[0.0, 0.0]).is_nan());
        assert_eq!(frobenius(&[1e300, 1e300]), 1e300 * 2f64.sqrt(), "squares of 1e300 overflow unscaled");
    }

    #[test]
    fn exact_results_pass() {
        let ok = [1.0, 0.0, 0.0, 1.0];
        assert_eq!(product_error(&ok, &ok, &ok, &ok), 0.0);
        assert_eq!(frobenius(&[3.0, 4.0]), 5.0);
        assert_eq!(inf_norm_col(2, &[1.0, -2.0, 3.0, 4.0]), 6.0);
        assert_eq!(hpl_residual(2, &ok, &[1.0, 2.0], &[1.0, 2.0]), 0.0);
    }
}
