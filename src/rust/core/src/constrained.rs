//! The free parameters of a constrained univariate fit: one shape shared by
//! the components (`equal.scale`) and values fixed (`fixed`, fixed.rs). θ,
//! the parameters of the unconstrained layout (Layout, here),
//! is θ0 + Jφ with φ the parameters left free and J a sparse matrix: a
//! free coordinate is its own φ, the K shapes of `equal.scale` are one, a
//! fixed one is none, and where the weight the others determine (α_K
//! without a noise component) is fixed, the last free weight is minus the
//! sum of the other free ones. The log-likelihood ℓ(θ0 + Jφ) has
//! information Jᵀ I J and score Jᵀ ∇ℓ; φ's covariance V gives θ's as
//! J V Jᵀ (zero for a fixed value), and φ's Newton step θ's as Jδ.

use crate::fixed::Fixed;
use crate::limits::free_parameters;
use crate::linalg::invert;
use crate::params::Singular;

/// Where each free parameter sits in θ: the free weights (α_1..α_{K−1};
/// with a noise component α_1..α_K, its weight π_0 = 1 − Σ α being the one
/// the others determine), the means, the shapes, and Student's t's
/// estimated ν (`df`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Layout {
    pub k: usize,
    pub noise: bool,
    pub df: bool,
}

impl Layout {
    /// The free weights.
    pub fn weights(self) -> usize {
        self.k - 1 + self.noise as usize
    }
    pub fn alpha(self, j: usize) -> usize {
        j
    }
    pub fn mu(self, m: usize) -> usize {
        self.weights() + m
    }
    pub fn shape(self, m: usize) -> usize {
        self.weights() + self.k + m
    }
    pub fn df(self, m: usize) -> usize {
        self.weights() + 2 * self.k + m
    }
    pub fn len(self) -> usize {
        free_parameters(self.k, self.noise, self.df)
    }
    /// The free parameters of component m but its weight: μ, the shape,
    /// and ν when estimated; how many.
    pub fn own(self, m: usize) -> ([usize; 3], usize) {
        ([self.mu(m), self.shape(m), self.df(m)], 2 + self.df as usize)
    }
}

/// φ's observed information, complete-data diagonal and score.
pub(crate) type Parts = (Vec<f64>, Vec<f64>, Vec<f64>);

/// J by rows: for each θ coordinate, its (φ coordinate, coefficient)s.
pub(crate) struct Constraint {
    rows: Vec<Vec<(usize, f64)>>,
    free: usize,
}

impl Constraint {
    /// The constraint of a fit of layout `at` with `equal_scale` and
    /// `fixed`; `None` when there is none (φ = θ).
    pub fn of(at: Layout, equal_scale: bool, fixed: Option<&Fixed>) -> Option<Constraint> {
        if !equal_scale && fixed.is_none() {
            return None;
        }
        let none = Fixed::none(at.k);
        let f = fixed.unwrap_or(&none);
        let mut rows: Vec<Vec<(usize, f64)>> = vec![Vec::new(); at.len()];
        let mut free = 0;
        let mut next = || {
            free += 1;
            free - 1
        };
        // the weights: θ's are α_1..α_{K−1}, or with noise α_1..α_K
        let weights: Vec<usize> = (0..at.weights()).filter(|&j| f.alpha(j).is_none()).collect();
        let determined = !at.noise && f.alpha(at.k - 1).is_some();
        let (last, own) = match weights.split_last() {
            Some((&last, rest)) if determined => (Some(last), rest),
            _ => (None, &weights[..]),
        };
        for &j in own {
            rows[at.alpha(j)] = vec![(next(), 1.0)];
        }
        if let Some(last) = last {
            rows[at.alpha(last)] = own.iter().map(|&j| (rows[at.alpha(j)][0].0, -1.0)).collect();
        }
        for m in 0..at.k {
            if f.mu(m).is_none() {
                rows[at.mu(m)] = vec![(next(), 1.0)];
            }
        }
        let shared = equal_scale.then(&mut next);
        for m in 0..at.k {
            if f.shape(m).is_none() {
                rows[at.shape(m)] = vec![(shared.unwrap_or_else(&mut next), 1.0)];
            }
        }
        if at.df {
            for m in 0..at.k {
                rows[at.df(m)] = vec![(next(), 1.0)];
            }
        }
        Some(Constraint { rows, free })
    }

    /// θ's observed information, complete-data diagonal and score as φ's:
    /// Jᵀ I J, the diagonal likewise, Jᵀ ∇ℓ.
    pub fn contract(&self, observed_theta: &[f64], complete_theta: &[f64], score_theta: &[f64]) -> Parts {
        let (np, nc) = (complete_theta.len(), self.free);
        let mut observed = vec![0.0; nc * nc];
        let (mut complete, mut score) = (vec![0.0; nc], vec![0.0; nc]);
        for b in 0..np {
            for &(d, jd) in &self.rows[b] {
                complete[d] += jd * jd * complete_theta[b];
                score[d] += jd * score_theta[b];
                for a in 0..np {
                    for &(c, jc) in &self.rows[a] {
                        observed[c + nc * d] += jc * jd * observed_theta[a + np * b];
                    }
                }
            }
        }
        (observed, complete, score)
    }

    /// The free parameter θ coordinate `a` is, where it is one by itself
    /// (as every ν is).
    pub fn column(&self, a: usize) -> usize {
        match self.rows.get(a).map(|r| &r[..]) {
            Some(&[(c, _)]) => c,
            _ => usize::MAX,
        }
    }

    /// φ's step δ as θ's, Jδ.
    pub fn expand(&self, delta: &[f64]) -> Vec<f64> {
        self.rows.iter().map(|row| row.iter().map(|&(c, j)| j * delta[c]).sum()).collect()
    }

    /// The inverse of the information `observed` (θ's, with its
    /// complete-data diagonal `complete`) of the constrained fit, in θ's
    /// layout: J (Jᵀ I J)⁻¹ Jᵀ.
    pub fn invert(&self, observed: &[f64], complete: &[f64]) -> Result<Vec<f64>, Singular> {
        let np = complete.len();
        let (small, small_complete, _) = self.contract(observed, complete, &vec![0.0; np]);
        let nc = self.free;
        let vc = invert(&small, &small_complete)?;
        let mut v = vec![0.0; np * np];
        for b in 0..np {
            for a in 0..np {
                for &(c, jc) in &self.rows[a] {
                    for &(d, jd) in &self.rows[b] {
                        v[a + np * b] += jc * jd * vc[c + nc * d];
                    }
                }
            }
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(k: usize, noise: bool, df: bool) -> Layout {
        Layout { k, noise, df }
    }

    /// J as a dense np × nc matrix, from `expand` of φ's unit vectors.
    fn dense(c: &Constraint, np: usize) -> Vec<Vec<f64>> {
        (0..c.free)
            .map(|j| {
                let mut e = vec![0.0; c.free];
                e[j] = 1.0;
                let col = c.expand(&e);
                assert_eq!(col.len(), np);
                col
            })
            .collect()
    }

    #[test]
    fn the_free_parameters_are_those_fixed_removed_counts() {
        let nan = f64::NAN;
        for (noise, df) in [(false, false), (true, false), (false, true), (true, true)] {
            for alpha in [[nan, nan, nan], [0.2, nan, nan], [nan, nan, 0.3], [0.2, 0.3, nan], [0.2, 0.3, 0.5]] {
                let mut f = Fixed::none(3);
                f.0.alpha[..3].copy_from_slice(&alpha);
                f.0.mu[1] = 2.0;
                f.0.shape[2] = 1.0;
                if noise && alpha == [0.2, 0.3, 0.5] {
                    continue;
                }
                let at = layout(3, noise, df);
                let c = Constraint::of(at, false, Some(&f)).expect("a constraint");
                assert_eq!(c.free, at.len() - f.removed(noise), "{alpha:?} noise {noise}");
                // every column of J keeps the free weights' sum where the
                // determined weight is fixed, and moves nothing fixed
                for col in dense(&c, at.len()) {
                    assert_eq!(col[at.mu(1)], 0.0);
                    assert_eq!(col[at.shape(2)], 0.0);
                    if !noise && !alpha[2].is_nan() {
                        let s: f64 = (0..at.weights()).map(|j| col[at.alpha(j)]).sum();
                        assert_eq!(s, 0.0);
                    }
                }
            }
        }
        // one shape shared: K shapes are one parameter
        let at = layout(3, true, false);
        assert_eq!(Constraint::of(at, true, None).expect("a constraint").free, at.len() - 2);
        assert!(Constraint::of(at, false, None).is_none());
    }

    #[test]
    fn contract_and_invert_are_j_transpose_i_j_and_its_inverse_mapped_back() {
        let nan = f64::NAN;
        let at = layout(2, false, false);
        let mut f = Fixed::none(2);
        f.0.alpha[..2].copy_from_slice(&[nan, 0.4]);
        f.0.mu[0] = 1.0;
        let c = Constraint::of(at, false, Some(&f)).expect("a constraint");
        let np = at.len();
        // a positive definite I
        let mut observed = vec![0.0; np * np];
        for a in 0..np {
            for b in 0..np {
                observed[a + np * b] = if a == b { 4.0 + a as f64 } else { 0.3 / (1.0 + (a + b) as f64) };
            }
        }
        let complete = vec![5.0; np];
        let score: Vec<f64> = (0..np).map(|a| a as f64 - 1.5).collect();
        let j = dense(&c, np);
        let (small, _, small_score) = c.contract(&observed, &complete, &score);
        for (p, jp) in j.iter().enumerate() {
            let s: f64 = (0..np).map(|a| jp[a] * score[a]).sum();
            assert!((small_score[p] - s).abs() < 1e-14);
            for (q, jq) in j.iter().enumerate() {
                let e: f64 = (0..np)
                    .flat_map(|a| (0..np).map(move |b| (a, b)))
                    .map(|(a, b)| jp[a] * observed[a + np * b] * jq[b])
                    .sum();
                assert!((small[p + c.free * q] - e).abs() < 1e-13);
            }
        }
        // J V Jᵀ: zero rows for the fixed, and I·(J V Jᵀ) acts as the
        // identity on J's columns
        let v = c.invert(&observed, &complete).expect("invertible");
        assert!((0..np).all(|b| v[at.mu(0) + np * b] == 0.0));
        for jq in &j {
            let ivj: Vec<f64> = (0..np)
                .map(|a| {
                    (0..np).map(|b| v[a + np * b] * (0..np).map(|e| observed[b + np * e] * jq[e]).sum::<f64>()).sum()
                })
                .collect();
            for a in 0..np {
                assert!((ivj[a] - jq[a]).abs() < 1e-12, "{a}: {} vs {}", ivj[a], jq[a]);
            }
        }
    }
}
