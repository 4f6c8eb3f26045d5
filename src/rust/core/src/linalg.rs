//! The small dense linear algebra of the standard errors (information.rs)
//! and of the way out of a saddle point (saddle.rs): sums and dot products
//! in a fixed order (the same bits on every machine), the inverse of a
//! symmetric matrix through its Cholesky factorisation, and the eigenpairs
//! of a symmetric matrix by Jacobi rotations. Matrices are column-major.

use crate::limits::MIN_INFORMATION_LEFT;
use crate::params::Singular;

/// Σ a_i b_i in four independent lanes (the order is fixed, so the result
/// does not depend on the machine).
#[inline(always)]
pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut lanes = [0.0; 4];
    let (a4, b4) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (a4.remainder(), b4.remainder());
    for (x, y) in a4.zip(b4) {
        for l in 0..4 {
            lanes[l] += x[l] * y[l];
        }
    }
    for (x, y) in ra.iter().zip(rb) {
        lanes[0] += x * y;
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])
}

/// Σ a_i in four independent lanes.
#[inline(always)]
pub(crate) fn sum(a: &[f64]) -> f64 {
    let mut lanes = [0.0; 4];
    let a4 = a.chunks_exact(4);
    let ra = a4.remainder();
    for x in a4 {
        for l in 0..4 {
            lanes[l] += x[l];
        }
    }
    for x in ra {
        lanes[0] += x;
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])
}

/// The inverse of the information `info` (np × np, column-major), by the
/// Cholesky factorisation of the information scaled by the complete-data
/// information `complete`, whose pivots say how much information each
/// parameter has left given those before it.
pub(crate) fn invert(info: &[f64], complete: &[f64]) -> Result<Vec<f64>, Singular> {
    let np = complete.len();
    if info.iter().chain(complete).any(|v| !v.is_finite()) {
        return Err(Singular::NotFinite);
    }
    if let Some(at) = complete.iter().position(|&c| c <= 0.0) {
        return Err(Singular::Collinear { at });
    }
    let root: Vec<f64> = complete.iter().map(|c| c.sqrt()).collect();
    // lower-triangular L with C = L Lᵀ, C = D^{-1/2} I D^{-1/2}
    let mut chol = vec![0.0; np * np];
    for j in 0..np {
        let mut left = info[j + np * j] / complete[j];
        for c in 0..j {
            left -= chol[j + np * c] * chol[j + np * c];
        }
        if left <= -MIN_INFORMATION_LEFT {
            return Err(Singular::Indefinite { at: j });
        }
        if left < MIN_INFORMATION_LEFT {
            return Err(Singular::Collinear { at: j });
        }
        let pivot = left.sqrt();
        chol[j + np * j] = pivot;
        for i in j + 1..np {
            let mut v = info[i + np * j] / (root[i] * root[j]);
            for c in 0..j {
                v -= chol[i + np * c] * chol[j + np * c];
            }
            chol[i + np * j] = v / pivot;
        }
    }
    // L⁻¹ (lower triangular), then C⁻¹ = L⁻ᵀ L⁻¹
    let mut linv = vec![0.0; np * np];
    for j in 0..np {
        linv[j + np * j] = 1.0 / chol[j + np * j];
        for i in j + 1..np {
            let mut v = 0.0;
            for c in j..i {
                v -= chol[i + np * c] * linv[c + np * j];
            }
            linv[i + np * j] = v / chol[i + np * i];
        }
    }
    let mut inv = vec![0.0; np * np];
    for a in 0..np {
        for b in a..np {
            let v: f64 = (b..np).map(|c| linv[c + np * a] * linv[c + np * b]).sum();
            let v = v / (root[a] * root[b]);
            inv[a + np * b] = v;
            inv[b + np * a] = v;
        }
    }
    if inv.iter().any(|v| !v.is_finite()) {
        return Err(Singular::NotFinite);
    }
    Ok(inv)
}

/// The eigenvalues and eigenvectors (columns, column-major) of the symmetric
/// n × n matrix `a` (column-major), by cyclic Jacobi rotations: exact to
/// rounding and short for the at most 3 MAX_COMPONENTS − 1 parameters here.
pub(crate) fn symmetric_eigen(mut a: Vec<f64>, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i + n * i] = 1.0;
    }
    let scale: f64 = a.iter().map(|x| x * x).sum();
    for _sweep in 0..100 {
        let off: f64 = (1..n).flat_map(|q| (0..q).map(move |p| (p, q))).map(|(p, q)| a[p + n * q] * a[p + n * q]).sum();
        if off <= 1e-32 * scale {
            break;
        }
        for q in 1..n {
            for p in 0..q {
                let apq = a[p + n * q];
                if apq == 0.0 {
                    continue;
                }
                // the rotation J (J_pp = J_qq = c, J_pq = s, J_qp = −s) that
                // zeroes a_pq in Jᵀ A J
                let theta = (a[q + n * q] - a[p + n * p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (akp, akq) = (a[k + n * p], a[k + n * q]);
                    a[k + n * p] = c * akp - s * akq;
                    a[k + n * q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p + n * k], a[q + n * k]);
                    a[p + n * k] = c * apk - s * aqk;
                    a[q + n * k] = s * apk + c * aqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[k + n * p], v[k + n * q]);
                    v[k + n * p] = c * vkp - s * vkq;
                    v[k + n * q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..n).map(|i| a[i + n * i]).collect(), v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jacobi_gives_the_eigenpairs_of_a_symmetric_matrix() {
        let n = 5;
        let mut a = vec![0.0; n * n];
        for q in 0..n {
            for p in 0..=q {
                let x = ((p * 7 + q * 3) as f64 * 0.37).sin() + if p == q { 2.0 } else { 0.0 };
                a[p + n * q] = x;
                a[q + n * p] = x;
            }
        }
        let (values, vectors) = symmetric_eigen(a.clone(), n);
        for j in 0..n {
            for i in 0..n {
                let av: f64 = (0..n).map(|c| a[i + n * c] * vectors[c + n * j]).sum();
                assert!((av - values[j] * vectors[i + n * j]).abs() < 1e-12, "column {j}");
            }
            let norm: f64 = (0..n).map(|i| vectors[i + n * j].powi(2)).sum();
            assert!((norm - 1.0).abs() < 1e-12);
        }
        // the trace is the sum of the eigenvalues
        let trace: f64 = (0..n).map(|i| a[i + n * i]).sum();
        assert!((values.iter().sum::<f64>() - trace).abs() < 1e-12);
    }
}
