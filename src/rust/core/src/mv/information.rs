//! Standard errors of a multivariate Normal mixture (DESIGN §3): the
//! observed information of the mixture log-likelihood at a fit's
//! parameters, exact and in one pass over the data, and its inverse (by
//! linalg.rs), as information.rs does for univariate fits.
//!
//! The free parameters, in this order (`Layout`), are θ = (the free
//! weights α_1..α_{K−1}, or with a noise component α_1..α_K, its weight
//! being 1 − Σ α; the means μ_1 (d values), …, μ_K; the covariance
//! parameters: Full, each component's lower triangle column by column,
//! (1,1), (2,1)..(d,1), (2,2)..; Tied, the one shared matrix's; Diagonal,
//! each component's d variances; Spherical, each component's one variance
//! v, Σ = v I).
//!
//! With f = Σ_m α_m φ_m, responsibilities r_m and g_m the gradient of
//! log(α_m φ_m) in θ, one observation's Hessian is
//!
//!   ∇² log f = Σ_m r_m (H_m + g_m g_mᵀ) − g gᵀ,   g = Σ_m r_m g_m,
//!
//! and I = −Σ_i ∇² log f(x_i). α_m φ_m is linear in the weights, so the
//! weights' block of H_m + g_m g_mᵀ is zero, its weight–(μ_m, Σ_m) entries
//! are (∂α_m/∂α_j)/α_m · u_m (∂α_m/∂α_j = δ_jm, or −1 for the dependent
//! weight) and its (μ_m, Σ_m) block is h_m + u_m u_mᵀ, with u_m and h_m the
//! gradient and Hessian of log φ_m. With P = Σ⁻¹ and a = P(x − μ),
//!
//!   d log φ = aᵀ dμ + ½ tr[(a aᵀ − P) dΣ],
//!   d² log φ = −dμᵀ P dμ′ − aᵀ dΣ P dμ′ − aᵀ dΣ′ P dμ − aᵀ dΣ P dΣ′ a
//!              + ½ tr(P dΣ P dΣ′),
//!
//! where a covariance parameter moves Σ along a direction E (E_jj for a
//! variance; E_jl + E_lj for a covariance, which moves both Σ_jl and Σ_lj;
//! the identity for the spherical v). h_m is linear in the responsibilities
//! and at most quadratic in a, so Σ_i r_m h_m comes from the sums Σ r,
//! Σ r a and Σ r a aᵀ; u_m u_mᵀ, the score terms and g gᵀ are summed per
//! observation. A shared (tied) matrix collects every component's blocks.
//!
//! Everything is computed on the standardised data (MvData.z) with the
//! parameters in the same units, where the fit was made. The log-likelihood
//! in the data's units differs by a constant (Standardised::log_jacobian)
//! and θ_data is affine in θ_z with a diagonal Jacobian J (1 for a weight,
//! scale_j for μ_mj, scale_j scale_l for a covariance entry (j, l)), so the
//! covariance in the data's units is V = J V_z J and the standard errors
//! are √V_z,aa · J_aa.

use super::data::MvData;
use super::model::{cholesky, Model, MvParams, Structure};
use crate::linalg::invert;
use crate::params::{Covariance, Singular};
use crate::special::{digammas, ln_gamma};
use crate::student::LN_PI;

/// Where each free parameter sits in θ (module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Layout {
    pub k: usize,
    pub d: usize,
    pub structure: Structure,
    pub noise: bool,
    /// t components with ν estimated: ν_1..ν_K after the covariances.
    pub df: bool,
}

impl Layout {
    /// The free weights.
    pub fn weights(self) -> usize {
        self.k - 1 + self.noise as usize
    }
    pub fn mu(self, m: usize, j: usize) -> usize {
        self.weights() + m * self.d + j
    }
    /// Covariance parameters per matrix.
    pub fn per_matrix(self) -> usize {
        match self.structure {
            Structure::Full | Structure::Tied => self.d * (self.d + 1) / 2,
            Structure::Diagonal => self.d,
            Structure::Spherical => 1,
        }
    }
    /// Covariance parameter c of component m (the shared one's when tied).
    pub fn cov(self, m: usize, c: usize) -> usize {
        let matrix = if self.structure == Structure::Tied { 0 } else { m };
        self.weights() + self.k * self.d + matrix * self.per_matrix() + c
    }
    /// Component m's ν (with `df`).
    pub fn df(self, m: usize) -> usize {
        let matrices = if self.structure == Structure::Tied { 1 } else { self.k };
        self.weights() + self.k * self.d + matrices * self.per_matrix() + m
    }
    pub fn len(self) -> usize {
        self.structure.free_parameters(self.k, self.d) + self.noise as usize + if self.df { self.k } else { 0 }
    }
    /// The direction E of each covariance parameter of a matrix, as the
    /// unit entries (row, column) it moves.
    pub fn directions(self) -> Vec<Vec<(usize, usize)>> {
        let d = self.d;
        match self.structure {
            Structure::Full | Structure::Tied => (0..d)
                .flat_map(|l| (l..d).map(move |j| if j == l { vec![(j, j)] } else { vec![(j, l), (l, j)] }))
                .collect(),
            Structure::Diagonal => (0..d).map(|j| vec![(j, j)]).collect(),
            Structure::Spherical => vec![(0..d).map(|j| (j, j)).collect()],
        }
    }
    /// Component m's own parameters but its weight: its mean, then its
    /// covariance parameters (shared ones when tied), then its ν.
    fn own(self, m: usize) -> Vec<usize> {
        (0..self.d)
            .map(|j| self.mu(m, j))
            .chain((0..self.per_matrix()).map(|c| self.cov(m, c)))
            .chain(self.df.then(|| self.df(m)))
            .collect()
    }
}

/// The names of every parameter of a fit, in the order of its `se`: alpha1
/// .. alphaK, mu<m>.<variable> component by component, the covariance
/// parameters in the order of `Layout` (sigma<m>.<row>.<column>; tied,
/// sigma.<row>.<column>; spherical, sigma<m>, the variance v of Σ = v I),
/// t's estimated ν (df<m>), and `noise` with a noise component. `variables`
/// names the d variables (x1, x2, .. where it has fewer).
pub fn parameter_names(
    structure: Structure,
    k: usize,
    d: usize,
    noise: bool,
    df: bool,
    variables: &[String],
) -> Vec<String> {
    let var = |j: usize| variables.get(j).cloned().unwrap_or_else(|| format!("x{}", j + 1));
    let at = Layout { k, d, structure, noise, df };
    let mut names: Vec<String> = (1..=k).map(|m| format!("alpha{m}")).collect();
    for m in 1..=k {
        names.extend((0..d).map(|j| format!("mu{m}.{}", var(j))));
    }
    let matrices = if structure == Structure::Tied { 1 } else { k };
    for m in 1..=matrices {
        let prefix = if structure == Structure::Tied { "sigma".to_string() } else { format!("sigma{m}") };
        for e in at.directions() {
            names.push(match structure {
                Structure::Spherical => prefix.clone(),
                _ => format!("{prefix}.{}.{}", var(e[0].0), var(e[0].1)),
            });
        }
    }
    if df {
        names.extend((1..=k).map(|m| format!("df{m}")));
    }
    if noise {
        names.push("noise".into());
    }
    names
}

/// The names of the free parameters (vcov's rows): `parameter_names` but
/// the dependent weight's (alphaK, or `noise` with a noise component).
pub fn free_parameter_names(
    structure: Structure,
    k: usize,
    d: usize,
    noise: bool,
    df: bool,
    variables: &[String],
) -> Vec<String> {
    let all = parameter_names(structure, k, d, noise, df, variables);
    let dependent = if noise { all.len() - 1 } else { k - 1 };
    all.into_iter().enumerate().filter(|&(i, _)| i != dependent).map(|(_, n)| n).collect()
}

/// Why there are no standard errors, naming the parameter as
/// `free_parameter_names` does; reads after "no standard errors: ", in the
/// univariate fits' words (Singular::describe).
pub fn describe(why: Singular, free_names: &[String]) -> String {
    let name = |at: usize| free_names.get(at).cloned().unwrap_or_else(|| format!("parameter {}", at + 1));
    match why {
        Singular::NotFinite => "the observed information is not finite".into(),
        Singular::Collinear { at } => format!("the observed information is singular (first at {})", name(at)),
        Singular::Indefinite { at } => format!(
            "the observed information is not positive definite (first at {}): the fit is not at a local maximum",
            name(at)
        ),
    }
}

/// What one pass gives at a point θ.
pub(crate) struct MvInformation {
    /// −∇² ℓ(θ), full, column-major, in the order of `Layout`.
    pub observed: Vec<f64>,
    /// The diagonal of the complete-data information Σ_i Σ_m r_m g_m g_mᵀ:
    /// the yardstick invert() scales by.
    pub complete: Vec<f64>,
    /// ∇ ℓ(θ). It and `loglik` come free with the pass; only the tests
    /// read them (they check the pass against e_step's log-likelihood).
    #[cfg_attr(not(test), allow(dead_code))]
    pub score: Vec<f64>,
    /// ℓ(θ) on the standardised data (as e_step's).
    #[cfg_attr(not(test), allow(dead_code))]
    pub loglik: f64,
    pub layout: Layout,
}

/// The observed information of mixture `p` (standardised units, as
/// `data`) under `structure`; NotFinite where a covariance is not positive
/// definite or a weight not positive (no finite information there).
pub(crate) fn information(data: &MvData, p: &MvParams, model: Model) -> Result<MvInformation, Singular> {
    let (n, d, k) = (data.n, data.d, p.k);
    let structure = model.structure;
    let noise = data.log_noise.is_some();
    let t = !p.df.is_empty();
    let at = Layout { k, d, structure, noise, df: model.estimates_df() };
    let np = at.len();
    let dirs = at.directions();
    let per = at.per_matrix();
    // the mean's and covariance's own parameters, then ν's
    let cov_len = d + per;
    let own_len = cov_len + at.df as usize;
    let dd = d as f64;
    let own: Vec<Vec<usize>> = (0..k).map(|m| at.own(m)).collect();
    // per component: P = Σ⁻¹ and log α − d/2 log 2π − ½ log|Σ|
    let mut prec = vec![0.0; k * d * d];
    let mut log_const = vec![0.0; k];
    // t: ψ((ν+d)/2) − ψ(ν/2) and ½[ψ′((ν+d)/2) − ψ′(ν/2)] per component
    let mut psi = vec![[0.0; 2]; k];
    for m in 0..k {
        let l = cholesky(p.cov(m), d).ok_or(Singular::NotFinite)?;
        if !(p.alpha[m] > 0.0) {
            return Err(Singular::NotFinite);
        }
        let inv = lower_inverse(&l, d);
        for j in 0..d {
            for i in 0..d {
                let v: f64 = (i.max(j)..d).map(|c| inv[c + d * i] * inv[c + d * j]).sum();
                prec[m * d * d + i + d * j] = v;
            }
        }
        let log_det_half: f64 = (0..d).map(|j| l[j + d * j].ln()).sum();
        log_const[m] = match p.df.get(m) {
            None => p.alpha[m].ln() - 0.5 * dd * (2.0 * std::f64::consts::PI).ln() - log_det_half,
            Some(&nu) => {
                if !crate::student::df_ok(nu) {
                    return Err(Singular::NotFinite);
                }
                let (dh, th) = digammas((nu + dd) / 2.0);
                let (d0, t0) = digammas(nu / 2.0);
                psi[m] = [dh - d0, 0.5 * (th - t0)];
                p.alpha[m].ln() + ln_gamma((nu + dd) / 2.0)
                    - ln_gamma(nu / 2.0)
                    - 0.5 * dd * (nu.ln() + LN_PI)
                    - log_det_half
            }
        };
    }
    // the weights' rows: the components', then the noise's; the last is the
    // dependent weight
    let rows = k + noise as usize;
    let last = rows - 1;
    let weight: Vec<f64> = p.alpha[..k].iter().copied().chain(noise.then_some(p.noise)).collect();
    let log_noise = data.log_noise.map(|l| p.noise.ln() + l);
    // Σ g gᵀ (upper triangle), the score, the complete-data diagonal; per
    // component Σ r u uᵀ over its own parameters, Σ r u (for the weight
    // cross terms), and the moments Σ r, Σ r a, Σ r a aᵀ (for Σ r h)
    let mut gg = vec![0.0; np * np];
    let mut score = vec![0.0; np];
    let mut complete = vec![0.0; np];
    let mut uu = vec![0.0; k * own_len * own_len];
    let mut own_score = vec![0.0; k * own_len];
    // (t weighs a's moments by w = (ν+d)/(ν+δ), Σ r w beside Σ r; for
    // Normal components w is exactly 1)
    let mut r0 = vec![0.0; k];
    let mut rw0 = vec![0.0; k];
    let mut r1 = vec![0.0; k * d];
    let mut r2 = vec![0.0; k * d * d];
    let mut loglik = 0.0;
    let (mut x, mut e) = (vec![0.0; d], vec![0.0; d]);
    let mut a = vec![0.0; k * d];
    let mut l = vec![0.0; rows];
    let mut g = vec![0.0; np];
    let mut u = vec![0.0; own_len];
    let (mut delta, mut wt) = (vec![0.0; k], vec![1.0; k]);
    let mut v = vec![0.0; cov_len];
    for i in 0..n {
        for (j, xj) in x.iter_mut().enumerate() {
            *xj = data.at(i, j);
        }
        for m in 0..k {
            let pm = &prec[m * d * d..(m + 1) * d * d];
            for j in 0..d {
                e[j] = x[j] - p.mu[m * d + j];
            }
            let am = &mut a[m * d..(m + 1) * d];
            for (r, ar) in am.iter_mut().enumerate() {
                *ar = (0..d).map(|c| pm[r + d * c] * e[c]).sum();
            }
            let q: f64 = am.iter().zip(&e).map(|(x, y)| x * y).sum();
            delta[m] = q;
            l[m] = match p.df.get(m) {
                None => log_const[m] - 0.5 * q,
                Some(&nu) => {
                    wt[m] = (nu + dd) / (nu + q);
                    log_const[m] - 0.5 * (nu + dd) * (q / nu).ln_1p()
                }
            };
        }
        if let Some(t) = log_noise {
            l[k] = t;
        }
        let top = l.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut total = 0.0;
        for v in l.iter_mut() {
            *v = (*v - top).exp();
            total += *v;
        }
        // the observation's weight: every sum takes its terms times it (g,
        // the observation's own score, does not)
        let wi = data.weight(i);
        loglik += wi * (top + total.ln());
        l.iter_mut().for_each(|v| *v /= total);
        let r = &l;
        g.iter_mut().for_each(|v| *v = 0.0);
        // ∂ log f / ∂α_j = r_j/α_j − r_last/α_last
        let r_last = r[last] / weight[last];
        for j in 0..last {
            let r_j = r[j] / weight[j];
            g[j] = r_j - r_last;
            complete[j] += wi * (r_j / weight[j] + r_last / weight[last]);
        }
        for m in 0..k {
            let (rm, am, pm) = (r[m], &a[m * d..(m + 1) * d], &prec[m * d * d..(m + 1) * d * d]);
            let rmw = wi * rm;
            let w = wt[m];
            for (uj, aj) in u[..d].iter_mut().zip(am) {
                *uj = w * aj;
            }
            for (c, dir) in dirs.iter().enumerate() {
                u[d + c] = 0.5 * dir.iter().map(|&(j, l)| w * am[j] * am[l] - pm[j + d * l]).sum::<f64>();
            }
            if at.df {
                let (nu, q) = (p.df[m], delta[m]);
                u[cov_len] = 0.5 * (psi[m][0] - (q / nu).ln_1p() + (q - dd) / (nu + q));
            }
            for (s, &idx) in own[m].iter().enumerate() {
                let ru = rm * u[s];
                g[idx] += ru;
                let ru = wi * ru;
                complete[idx] += ru * u[s];
                own_score[m * own_len + s] += ru;
                // entry (s, t ≥ s) at s·own_len + t: contiguous in t
                let row = &mut uu[m * own_len * own_len + s * own_len + s..m * own_len * own_len + (s + 1) * own_len];
                for (v, ut) in row.iter_mut().zip(&u[s..]) {
                    *v += ru * ut;
                }
            }
            if t {
                // the t's Hessian beyond the Normal's weighted one:
                // w/(2(ν+δ)) ∂δ ∂δᵀ, and with ν its cross terms
                // −½(δ−d)/(ν+δ)² ∂δ and ½[½(ψ′((ν+d)/2) − ψ′(ν/2)) +
                // δ/(ν(ν+δ)) − (δ−d)/(ν+δ)²]
                let (nu, q) = (p.df[m], delta[m]);
                for j in 0..d {
                    v[j] = -2.0 * am[j];
                }
                for (c, dir) in dirs.iter().enumerate() {
                    v[d + c] = -dir.iter().map(|&(j, l)| am[j] * am[l]).sum::<f64>();
                }
                let block = &mut uu[m * own_len * own_len..(m + 1) * own_len * own_len];
                let coef = rmw * w / (2.0 * (nu + q));
                for s in 0..cov_len {
                    for t in s..cov_len {
                        block[s * own_len + t] += coef * v[s] * v[t];
                    }
                }
                if at.df {
                    let cross = -0.5 * rmw * (q - dd) / ((nu + q) * (nu + q));
                    for s in 0..cov_len {
                        block[s * own_len + cov_len] += cross * v[s];
                    }
                    block[cov_len * own_len + cov_len] +=
                        rmw * 0.5 * (psi[m][1] + q / (nu * (nu + q)) - (q - dd) / ((nu + q) * (nu + q)));
                }
            }
            r0[m] += rmw;
            let rw = rmw * w;
            rw0[m] += rw;
            for j in 0..d {
                let raj = rw * am[j];
                r1[m * d + j] += raj;
                for c in j..d {
                    r2[m * d * d + j + d * c] += raj * am[c];
                }
            }
        }
        for s in 0..np {
            score[s] += wi * g[s];
            let gs = wi * g[s];
            if gs != 0.0 {
                // entry (s, t ≥ s) at s·np + t: contiguous in t
                for (v, gt) in gg[s * np + s..(s + 1) * np].iter_mut().zip(&g[s..]) {
                    *v += gs * gt;
                }
            }
        }
    }
    // I = Σ g gᵀ − Σ_m Σ_i r_m (H_m + g_m g_mᵀ), full
    let mut info = vec![0.0; np * np];
    for t in 0..np {
        for s in 0..=t {
            info[s + np * t] = gg[s * np + t];
            info[t + np * s] = gg[s * np + t];
        }
    }
    for m in 0..k {
        let pm = &prec[m * d * d..(m + 1) * d * d];
        let m2 = |j: usize, c: usize| r2[m * d * d + j.min(c) + d * j.max(c)];
        let m1 = &r1[m * d..(m + 1) * d];
        // Σ r (h + u uᵀ) over the own parameters, full
        let mut block = vec![0.0; own_len * own_len];
        for t in 0..own_len {
            for s in 0..=t {
                let v = uu[m * own_len * own_len + s * own_len + t];
                block[s + own_len * t] = v;
                block[t + own_len * s] = v;
            }
        }
        for j in 0..d {
            for c in 0..d {
                block[j + own_len * c] -= rw0[m] * pm[j + d * c];
            }
        }
        for (cc, dir) in dirs.iter().enumerate() {
            // −P E Σ r a
            for row in 0..d {
                let v: f64 = dir.iter().map(|&(j, l)| pm[row + d * j] * m1[l]).sum();
                block[row + own_len * (d + cc)] -= v;
                block[d + cc + own_len * row] -= v;
            }
            for (cc2, dir2) in dirs.iter().enumerate() {
                let mut v = 0.0;
                for &(j, l) in dir {
                    for &(pp, q) in dir2 {
                        v += -pm[j + d * pp] * m2(l, q) + 0.5 * r0[m] * pm[q + d * j] * pm[l + d * pp];
                    }
                }
                block[d + cc + own_len * (d + cc2)] += v;
            }
        }
        let idx = &own[m];
        for t in 0..own_len {
            for s in 0..own_len {
                info[idx[s] + np * idx[t]] -= block[s + own_len * t];
            }
        }
        // weight j against component m's own: Σ r_m u_m (∂α_m/∂α_j)/α_m
        for j in 0..last {
            let da = if m == last {
                -1.0
            } else if m == j {
                1.0
            } else {
                continue;
            };
            for (s, &i) in idx.iter().enumerate() {
                let v = da * own_score[m * own_len + s] / weight[m];
                info[j + np * i] -= v;
                info[i + np * j] -= v;
            }
        }
    }
    Ok(MvInformation { observed: info, complete, score, loglik, layout: at })
}

/// The inverse of a lower-triangular L (column-major), lower-triangular.
fn lower_inverse(l: &[f64], d: usize) -> Vec<f64> {
    let mut inv = vec![0.0; d * d];
    for j in 0..d {
        inv[j + d * j] = 1.0 / l[j + d * j];
        for i in j + 1..d {
            let v: f64 = (j..i).map(|c| l[i + d * c] * inv[c + d * j]).sum();
            inv[i + d * j] = -v / l[i + d * i];
        }
    }
    inv
}

/// The covariance of a fit's parameters `params` (in the data's units) and
/// their standard errors, in the data's units, from the observed
/// information on `data`; or why there are none. `se` is in the order of
/// `parameter_names`, `vcov` of `free_parameter_names`.
pub(crate) fn covariance(data: &MvData, params: &MvParams, model: Model) -> Result<Covariance, Singular> {
    let info = information(data, &params.to_standardised(&data.scaling), model)?;
    let at = info.layout;
    let (k, d, np) = (at.k, at.d, at.len());
    let v = invert(&info.observed, &info.complete)?;
    // the Jacobian's diagonal, data units per standardised unit
    let scale = &data.scaling.scale;
    let mut unit = vec![1.0; np];
    for m in 0..k {
        for j in 0..d {
            unit[at.mu(m, j)] = scale[j];
        }
        for (c, dir) in at.directions().iter().enumerate() {
            let (j, l) = dir[0];
            unit[at.cov(m, c)] = scale[j] * scale[l];
        }
    }
    let mut vcov = vec![0.0; np * np];
    for b in 0..np {
        for a in 0..np {
            vcov[a + np * b] = v[a + np * b] * unit[a] * unit[b];
        }
    }
    // the dependent weight by the delta method: Var(1 − Σ α) = 1ᵀ V_αα 1
    // (0 for K = 1 without noise, where α_1 = 1 is not estimated)
    let weights = at.weights();
    let dependent: f64 = (0..weights).flat_map(|a| (0..weights).map(move |b| (a, b))).map(|(a, b)| v[a + np * b]).sum();
    let free_se = (0..np).map(|a| v[a * (np + 1)].sqrt() * unit[a]);
    let mut se: Vec<f64> = Vec::with_capacity(np + 1);
    if at.noise {
        se.extend(free_se);
        se.push(dependent.max(0.0).sqrt());
    } else {
        let mut free = free_se;
        se.extend(free.by_ref().take(k - 1));
        se.push(dependent.max(0.0).sqrt());
        se.extend(free);
    }
    Ok(Covariance { vcov, se })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mv::em::e_step;
    use rand::RngExt;
    use rand_pcg::Pcg64;

    /// A K-component mixture in d dimensions under `structure`, its data
    /// (n draws, a tenth of them uniform over a box with `noise`), and the
    /// parameters a little off the truth in standardised units (the
    /// identity holds anywhere, not only at a maximum).
    fn case(structure: Structure, k: usize, d: usize, noise: bool, seed: u64) -> (MvData, MvParams) {
        let mut rng = Pcg64::new(seed as u128, 0x5eed);
        let n = 250 * k;
        let alpha: Vec<f64> = (0..k).map(|m| (1.0 + m as f64) / (k * (k + 1) / 2) as f64).collect();
        let mut truth =
            MvParams { k, d, alpha, mu: vec![0.0; k * d], sigma: vec![0.0; k * d * d], noise: 0.0, df: Vec::new() };
        for m in 0..k {
            for j in 0..d {
                truth.mu[m * d + j] = 3.0 * m as f64 + 0.5 * j as f64;
                for l in 0..d {
                    let base = if j == l { 1.0 + 0.3 * (j + m) as f64 } else { 0.4 * (-1f64).powi((j + l + m) as i32) };
                    truth.sigma[m * d * d + j + d * l] = base;
                }
            }
        }
        let mut x = vec![0.0; n * d];
        for i in 0..n {
            let u: f64 = rng.random_range(0.0..1.0);
            if noise && u < 0.1 {
                for j in 0..d {
                    x[j * n + i] = rng.random_range(-4.0..10.0);
                }
                continue;
            }
            let mut m = 0;
            let mut acc = truth.alpha[0];
            while u > acc && m + 1 < k {
                m += 1;
                acc += truth.alpha[m];
            }
            let z: Vec<f64> = (0..d)
                .map(|_| {
                    let (u1, u2): (f64, f64) = (rng.random_range(f64::EPSILON..1.0), rng.random_range(0.0..1.0));
                    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
                })
                .collect();
            let l = cholesky(truth.cov(m), d).unwrap();
            for j in 0..d {
                x[j * n + i] = truth.mu[m * d + j] + (0..=j).map(|c| l[j + d * c] * z[c]).sum::<f64>();
            }
        }
        let data = MvData::prepare(&x, n, d, None, structure == Structure::Spherical, noise).unwrap();
        // the truth in standardised units, put in the structure's shape and
        // moved a little
        let mut p = truth.to_standardised(&data.scaling);
        if noise {
            p.alpha.iter_mut().for_each(|a| *a *= 0.9);
            p.noise = 0.1;
        }
        for m in 0..k {
            for j in 0..d {
                p.mu[m * d + j] += 0.02 * (j as f64 - m as f64);
            }
        }
        let first = p.cov(0).to_vec();
        for m in 0..k {
            let c: Vec<f64> = if structure == Structure::Tied { first.clone() } else { p.cov(m).to_vec() };
            let mean_var = (0..d).map(|j| c[j + d * j]).sum::<f64>() / d as f64;
            for j in 0..d {
                for l in 0..d {
                    p.sigma[m * d * d + j + d * l] = match structure {
                        Structure::Full | Structure::Tied => c[j + d * l] * 1.03,
                        Structure::Diagonal if j == l => c[j + d * l] * 1.03,
                        Structure::Spherical if j == l => mean_var,
                        _ => 0.0,
                    };
                }
            }
        }
        (data, p)
    }

    /// The free parameters θ of `p` (`Layout`'s order).
    fn theta_of(p: &MvParams, at: Layout) -> Vec<f64> {
        let mut t = vec![0.0; at.len()];
        let w: Vec<f64> = p.alpha.iter().copied().chain(std::iter::once(p.noise)).collect();
        t[..at.weights()].copy_from_slice(&w[..at.weights()]);
        for m in 0..at.k {
            for j in 0..at.d {
                t[at.mu(m, j)] = p.mu[m * at.d + j];
            }
            for (c, dir) in at.directions().iter().enumerate() {
                t[at.cov(m, c)] = p.cov(m)[dir[0].0 + at.d * dir[0].1];
            }
            if at.df {
                t[at.df(m)] = p.df[m];
            }
        }
        t
    }

    /// θ back into parameters: the dependent weight 1 − Σ, each direction's
    /// entries set (both of a covariance, every diagonal entry of v I).
    fn params_of(theta: &[f64], at: Layout) -> MvParams {
        params_of_t(theta, at, &[])
    }

    /// As `params_of`, a t mixture's: its ν from θ (Layout::df), or `fixed`.
    fn params_of_t(theta: &[f64], at: Layout, fixed: &[f64]) -> MvParams {
        let (k, d) = (at.k, at.d);
        let mut p = MvParams {
            k,
            d,
            alpha: vec![0.0; k],
            mu: vec![0.0; k * d],
            sigma: vec![0.0; k * d * d],
            noise: 0.0,
            df: if at.df { (0..k).map(|m| theta[at.df(m)]).collect() } else { fixed.to_vec() },
        };
        let free: f64 = theta[..at.weights()].iter().sum();
        if at.noise {
            p.alpha.copy_from_slice(&theta[..k]);
            p.noise = 1.0 - free;
        } else {
            p.alpha[..k - 1].copy_from_slice(&theta[..k - 1]);
            p.alpha[k - 1] = 1.0 - free;
        }
        for m in 0..k {
            for j in 0..d {
                p.mu[m * d + j] = theta[at.mu(m, j)];
            }
            for (c, dir) in at.directions().iter().enumerate() {
                for &(j, l) in dir {
                    p.sigma[m * d * d + j + d * l] = theta[at.cov(m, c)];
                }
            }
        }
        p
    }

    /// −∇² of e_step's log-likelihood by central differences (the four-point
    /// rule, steps relative to each parameter) with one Richardson
    /// extrapolation (steps h and 2h): plain steps small enough for 1e-6
    /// would drown the smallest entries in the rounding of a sum of n terms.
    fn numerical_information(data: &MvData, p: &MvParams, at: Layout) -> Vec<f64> {
        let theta = theta_of(p, at);
        let np = theta.len();
        let fixed = if at.df { Vec::new() } else { p.df.clone() };
        let ll = |t: &[f64]| e_step(data, &params_of_t(t, at, &fixed)).unwrap().loglik;
        let hessian = |rel: f64| {
            let h: Vec<f64> = theta.iter().map(|t| rel * t.abs().max(0.1)).collect();
            let mut out = vec![0.0; np * np];
            for a in 0..np {
                for b in a..np {
                    let f = |sa: f64, sb: f64| {
                        let mut t = theta.clone();
                        t[a] += sa;
                        t[b] += sb;
                        ll(&t)
                    };
                    let v = (f(h[a], h[b]) - f(h[a], -h[b]) - f(-h[a], h[b]) + f(-h[a], -h[b])) / (4.0 * h[a] * h[b]);
                    out[a + np * b] = -v;
                    out[b + np * a] = -v;
                }
            }
            out
        };
        let (fine, coarse) = (hessian(1e-3), hessian(2e-3));
        fine.iter().zip(&coarse).map(|(f, c)| (4.0 * f - c) / 3.0).collect()
    }

    /// The largest |A − B|_ab relative to √(|B_aa B_bb|).
    fn worst(a: &[f64], b: &[f64], np: usize) -> f64 {
        let mut w: f64 = 0.0;
        for i in 0..np {
            for j in 0..np {
                let scale = (b[i + np * i] * b[j + np * j]).abs().sqrt();
                w = w.max((a[i + np * j] - b[i + np * j]).abs() / scale);
            }
        }
        w
    }

    #[test]
    fn information_matches_a_numerical_hessian_of_the_e_steps_log_likelihood() {
        for structure in Structure::ALL {
            for noise in [false, true] {
                for (d, k) in [(2, 1), (2, 2), (3, 2), (2, 3)] {
                    let (data, p) = case(structure, k, d, noise, 3 + k as u64);
                    let info = information(&data, &p, Model::normal(structure)).unwrap();
                    let at = info.layout;
                    assert_eq!(at.len(), structure.free_parameters(k, d) + noise as usize);
                    let st = e_step(&data, &p).unwrap();
                    assert!((info.loglik - st.loglik).abs() < 1e-10 * st.loglik.abs());
                    let numeric = numerical_information(&data, &p, at);
                    let w = worst(&info.observed, &numeric, at.len());
                    eprintln!("{structure:?} noise {noise} d {d} K {k}: worst relative difference {w:.2e}");
                    assert!(w < 1e-6, "{structure:?} noise {noise} d {d} K {k}: worst relative difference {w:e}");
                }
            }
        }
    }

    #[test]
    fn a_t_mixtures_information_matches_a_numerical_hessian() {
        for (structure, noise, df_fixed) in [
            (Structure::Full, false, false),
            (Structure::Tied, true, false),
            (Structure::Diagonal, false, true),
            (Structure::Spherical, true, false),
        ] {
            for (k, d) in [(1, 2), (2, 2), (2, 3)] {
                let (data, mut p) = case(structure, k, d, noise, 40 + k as u64);
                p.df = (0..k).map(|m| 3.0 + 4.0 * m as f64).collect();
                let model = Model { structure, t: true, df_fixed };
                let info = information(&data, &p, model).unwrap();
                let at = info.layout;
                assert_eq!(at.df, !df_fixed);
                let numeric = numerical_information(&data, &p, at);
                let w = worst(&info.observed, &numeric, at.len());
                assert!(w < 1e-6, "{structure:?} noise {noise} fixed {df_fixed} K {k} d {d}: {w:e}");
                // the score too: the gradient of e_step's log-likelihood
                let theta = theta_of(&p, at);
                let fixed = if at.df { Vec::new() } else { p.df.clone() };
                for (a, &g) in info.score.iter().enumerate() {
                    let h = 1e-6 * theta[a].abs().max(0.1);
                    let mut up = theta.clone();
                    up[a] += h;
                    let mut down = theta.clone();
                    down[a] -= h;
                    let num = (e_step(&data, &params_of_t(&up, at, &fixed)).unwrap().loglik
                        - e_step(&data, &params_of_t(&down, at, &fixed)).unwrap().loglik)
                        / (2.0 * h);
                    assert!((g - num).abs() < 1e-4 * (1.0 + num.abs()), "{structure:?} {a}: {g} {num}");
                }
            }
        }
    }

    /// Integer weights are repeated rows: the weighted E-step's sums and
    /// log-likelihood, the M-step and the information (score, observed and
    /// complete) are the expanded data's, Normal and t, with noise.
    #[test]
    fn weighted_data_are_the_expanded_datas() {
        for (structure, t, noise) in [(Structure::Full, false, true), (Structure::Diagonal, true, false)] {
            let (data, mut p) = case(structure, 2, 3, noise, 23);
            if t {
                p.df = vec![4.0, 9.0];
            }
            let (n, d) = (data.n, data.d);
            let x: Vec<f64> = (0..d)
                .flat_map(|j| (0..n).map(move |i| (j, i)))
                .map(|(j, i)| data.scaling.center[j] + data.scaling.scale[j] * data.at(i, j))
                .collect();
            let w: Vec<f64> = (0..n).map(|i| (i % 4) as f64).collect();
            let rows: Vec<usize> = (0..n).flat_map(|i| std::iter::repeat_n(i, i % 4)).collect();
            let big: Vec<f64> = (0..d).flat_map(|j| rows.iter().map(|&i| x[j * n + i]).collect::<Vec<_>>()).collect();
            let weighted = MvData::prepare(&x, n, d, Some(&w), false, noise).unwrap();
            let expanded = MvData::prepare(&big, rows.len(), d, None, false, noise).unwrap();
            assert_eq!(weighted.total, rows.len() as f64);
            assert_eq!(weighted.positive, (0..n).filter(|i| i % 4 > 0).count());
            for (a, b) in weighted.scaling.center.iter().zip(&expanded.scaling.center) {
                assert!((a - b).abs() < 1e-12, "centre {a} {b}");
            }
            let in_data = p.to_data_units(&data.scaling);
            let (pw, pe) = (in_data.to_standardised(&weighted.scaling), in_data.to_standardised(&expanded.scaling));
            let close =
                |a: f64, b: f64, what: &str| assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "{what}: {a} {b}");
            let (sw, se) = (e_step(&weighted, &pw).unwrap(), e_step(&expanded, &pe).unwrap());
            close(sw.loglik, se.loglik, "loglik");
            close(sw.log_map, se.log_map, "log_map");
            close(sw.s_noise, se.s_noise, "noise");
            for (a, b) in sw.s0.iter().chain(&sw.su).chain(&sw.s_l1p).zip(se.s0.iter().chain(&se.su).chain(&se.s_l1p)) {
                close(*a, *b, "sums");
            }
            let model = Model { structure, t, df_fixed: false };
            let (mw, me) = (
                crate::mv::em::m_step(&sw, weighted.total, d, model).unwrap(),
                crate::mv::em::m_step(&se, expanded.total, d, model).unwrap(),
            );
            let (mw, me) = (mw.to_data_units(&weighted.scaling), me.to_data_units(&expanded.scaling));
            for (a, b) in
                mw.alpha.iter().chain(&mw.mu).chain(&mw.sigma).zip(me.alpha.iter().chain(&me.mu).chain(&me.sigma))
            {
                close(*a, *b, "M-step");
            }
            // the information in the data's units (the two standardisations
            // differ at rounding level), compared through the covariance
            let (cw, ce) =
                (covariance(&weighted, &in_data, model).unwrap(), covariance(&expanded, &in_data, model).unwrap());
            for (a, b) in cw.se.iter().zip(&ce.se) {
                close(*a, *b, "se");
            }
            let (iw, ie) = (information(&weighted, &pw, model).unwrap(), information(&expanded, &pe, model).unwrap());
            close(iw.loglik, ie.loglik, "information's loglik");
        }
    }

    #[test]
    fn the_score_is_the_gradient_of_the_e_steps_log_likelihood() {
        for structure in Structure::ALL {
            let (data, p) = case(structure, 2, 3, true, 17);
            let info = information(&data, &p, Model::normal(structure)).unwrap();
            let at = info.layout;
            let theta = theta_of(&p, at);
            let ll = |t: &[f64]| e_step(&data, &params_of(t, at)).unwrap().loglik;
            for a in 0..at.len() {
                let h = 1e-6 * theta[a].abs().max(0.1);
                let (mut up, mut down) = (theta.clone(), theta.clone());
                up[a] += h;
                down[a] -= h;
                let numeric = (ll(&up) - ll(&down)) / (2.0 * h);
                let scale = info.complete[a].sqrt();
                assert!((info.score[a] - numeric).abs() < 1e-5 * scale, "{structure:?} {a}");
            }
        }
    }

    /// EM from `p` until it stands still: a maximum.
    fn to_maximum(data: &MvData, mut p: MvParams, structure: Structure) -> MvParams {
        let mut previous = f64::NEG_INFINITY;
        for _ in 0..20_000 {
            let st = e_step(data, &p).unwrap();
            if st.loglik - previous < 1e-12 {
                break;
            }
            previous = st.loglik;
            p = crate::mv::em::m_step(&st, data.total, data.d, crate::mv::model::Model::normal(structure)).unwrap();
        }
        p
    }

    #[test]
    fn covariance_is_the_inverse_in_the_datas_units_with_delta_method_weights() {
        for structure in Structure::ALL {
            for noise in [false, true] {
                let (data, start) = case(structure, 2, 2, noise, 5);
                let p = to_maximum(&data, start, structure).to_data_units(&data.scaling);
                let cov = covariance(&data, &p, Model::normal(structure)).unwrap();
                let at = Layout { k: 2, d: 2, structure, noise, df: false };
                let np = at.len();
                // the information in the data's units by differences of the
                // log-likelihood mapped there (θ_z from θ_data)
                let theta = theta_of(&p, at);
                let ll = |t: &[f64]| e_step(&data, &params_of(t, at).to_standardised(&data.scaling)).unwrap().loglik;
                let h: Vec<f64> = theta.iter().map(|t| 1e-4 * t.abs().max(0.1)).collect();
                let mut numeric = vec![0.0; np * np];
                for a in 0..np {
                    for b in 0..np {
                        let f = |sa: f64, sb: f64| {
                            let mut t = theta.clone();
                            t[a] += sa;
                            t[b] += sb;
                            ll(&t)
                        };
                        numeric[a + np * b] =
                            -(f(h[a], h[b]) - f(h[a], -h[b]) - f(-h[a], h[b]) + f(-h[a], -h[b])) / (4.0 * h[a] * h[b]);
                    }
                }
                // V I = identity, relative to the entries' scales
                for a in 0..np {
                    for b in 0..np {
                        let vi: f64 = (0..np).map(|c| cov.vcov[a + np * c] * numeric[c + np * b]).sum();
                        let want = if a == b { 1.0 } else { 0.0 };
                        let scale = (cov.vcov[a + np * a] * numeric[b + np * b]).sqrt();
                        assert!((vi - want).abs() < 1e-4 * scale.max(1.0), "{structure:?} {noise} ({a},{b}): {vi}");
                    }
                }
                // se: the roots of the diagonal, the dependent weight's by
                // the delta method, in the order of parameter_names
                let w = at.weights();
                let dep: f64 =
                    (0..w).flat_map(|a| (0..w).map(move |b| (a, b))).map(|(a, b)| cov.vcov[a + np * b]).sum();
                let names = parameter_names(structure, 2, 2, noise, false, &[]);
                assert_eq!(cov.se.len(), names.len());
                let dependent = if noise { names.len() - 1 } else { 1 };
                assert!((cov.se[dependent] - dep.sqrt()).abs() <= 1e-12 * dep.sqrt());
                let free: Vec<f64> =
                    cov.se.iter().enumerate().filter(|&(i, _)| i != dependent).map(|(_, s)| *s).collect();
                for a in 0..np {
                    assert!((free[a] - cov.vcov[a * (np + 1)].sqrt()).abs() <= 1e-12 * free[a]);
                }
            }
        }
    }

    #[test]
    fn names_follow_the_layout() {
        let v = ["a".to_string(), "b".to_string()];
        assert_eq!(
            parameter_names(Structure::Full, 2, 2, false, false, &v),
            [
                "alpha1",
                "alpha2",
                "mu1.a",
                "mu1.b",
                "mu2.a",
                "mu2.b",
                "sigma1.a.a",
                "sigma1.b.a",
                "sigma1.b.b",
                "sigma2.a.a",
                "sigma2.b.a",
                "sigma2.b.b"
            ]
        );
        assert_eq!(
            free_parameter_names(Structure::Tied, 2, 2, true, false, &v)[4..],
            ["mu2.a", "mu2.b", "sigma.a.a", "sigma.b.a", "sigma.b.b"]
        );
        assert_eq!(parameter_names(Structure::Spherical, 1, 3, true, false, &[])[4..], ["sigma1", "noise"]);
        assert_eq!(
            parameter_names(Structure::Diagonal, 1, 2, false, false, &[])[3..],
            ["sigma1.x1.x1", "sigma1.x2.x2"]
        );
        for s in Structure::ALL {
            for noise in [false, true] {
                let at = Layout { k: 3, d: 3, structure: s, noise, df: false };
                assert_eq!(free_parameter_names(s, 3, 3, noise, false, &[]).len(), at.len());
            }
        }
    }

    #[test]
    fn identical_components_are_singular_and_say_where() {
        // two copies of one fitted component: the weights cannot be told
        // apart
        let (data, start) = case(Structure::Full, 1, 2, false, 9);
        let one = to_maximum(&data, start, Structure::Full).to_data_units(&data.scaling);
        let mut two = one.clone();
        two.k = 2;
        two.alpha = vec![0.4, 0.6];
        two.mu = [one.mu.clone(), one.mu.clone()].concat();
        two.sigma = [one.sigma.clone(), one.sigma.clone()].concat();
        let why = covariance(&data, &two, Model::normal(Structure::Full)).unwrap_err();
        let names = free_parameter_names(Structure::Full, 2, 2, false, false, &[]);
        assert_eq!(why, Singular::Collinear { at: 0 });
        assert_eq!(describe(why, &names), "the observed information is singular (first at alpha1)");
        assert!(covariance(&data, &one, Model::normal(Structure::Full)).is_ok());
        // a covariance that is not positive definite: no information
        let mut bad = one.clone();
        bad.sigma[1] = 10.0;
        bad.sigma[2] = 10.0;
        assert_eq!(covariance(&data, &bad, Model::normal(Structure::Full)).unwrap_err(), Singular::NotFinite);
        // far from the maximum (a variance 30 times too large) the
        // information is indefinite
        let mut wide = one;
        wide.sigma.iter_mut().for_each(|s| *s *= 30.0);
        assert!(matches!(
            covariance(&data, &wide, Model::normal(Structure::Full)).unwrap_err(),
            Singular::Indefinite { .. }
        ));
    }
}
