//! Ex-Gaussian components (issue 34): a Normal of mean μ and standard
//! deviation σ plus an independent exponential of mean τ,
//!
//!   log p(x) = −log τ + (μ − x)/τ + σ²/(2τ²) + log Φ(u),
//!   u = (x − μ)/σ − σ/τ.
//!
//! EM treats the exponential part Z of each observation as missing data
//! too: given x (and the component), Z is a Normal of mean σu and standard
//! deviation σ truncated to [0, ∞), so with ρ = φ(u)/Φ(u)
//!
//!   E[Z | x] = σ(u + ρ),   Var[Z | x] = σ²(1 − ρ(u + ρ)),
//!
//! and the complete-data likelihood (Normal in x − Z, exponential in Z) has
//! the closed-form M-step
//!
//!   μ = Σr·y / S0,  σ² = Σr·(y² + Var[Z | x]) / S0 − μ²,  τ = Σr·E[Z | x] / S0,
//!
//! y = x − E[Z | x] (the Normal part's expectation). The E-step gathers
//! S0 = Σr, S1 = Σr·y, S2 = Σr·(y² + Var) and Su = Σr·E[Z] (params.rs's
//! Stats); it is exact EM, so the likelihood rises at every pass.
//!
//! τ is the component's third parameter (Params::df holds it, as it holds
//! the t's ν). Everything else is the Normal's (family/mod.rs's
//! `with_family!` names the Normal for the ex-Gaussian): the data are
//! standardised (τ scales as σ does), starts are the Normal's made
//! ex-Gaussian by `start` (the same mean and variance), the screen and the
//! collapse guard read σ.

use rand::RngExt;
use rand_pcg::Pcg64;

use crate::family::component::standard_normal;
use crate::family::component::LN_2PI;
use crate::limits::{ESTEP_BLOCK as BLOCK, MAX_COMPONENTS};
use crate::mathx::normalise;
use crate::params::{Params, Stats, SumRow};
use crate::special::{ln_normal_lower, ln_normal_lower_all};

/// The share of a start's variance the exponential part takes: a start of
/// mean m and standard deviation s is μ = m − τ, τ = s·√TAU_SHARE,
/// σ = s·√(1 − TAU_SHARE), the middle of what reaction times show
/// (τ/σ from 1 to 3).
pub(crate) const TAU_SHARE: f64 = 0.64;

/// log p(x | μ, σ, τ), straight from the formula.
pub fn log_density(x: f64, mu: f64, sigma: f64, tau: f64) -> f64 {
    let u = (x - mu) / sigma - sigma / tau;
    -tau.ln() + (mu - x) / tau + 0.5 * (sigma / tau) * (sigma / tau) + ln_normal_lower(u)
}

/// ρ(u) = φ(u)/Φ(u), the inverse Mills ratio, from log Φ(u) (`ln_phi`):
/// finite however far u lies in either tail.
#[inline(always)]
fn mills(u: f64, ln_phi: f64) -> f64 {
    (-0.5 * u * u - 0.5 * LN_2PI - ln_phi).exp()
}

/// Per component, what each observation's terms need: log α − log τ +
/// μ/τ + σ²/(2τ²) (`c`), μ, 1/σ, σ/τ, 1/τ and σ, so that an observation
/// costs one log Φ and two exponentials per component.
pub(crate) struct Terms {
    c: [f64; MAX_COMPONENTS],
    mu: [f64; MAX_COMPONENTS],
    inv_sigma: [f64; MAX_COMPONENTS],
    sigma_over_tau: [f64; MAX_COMPONENTS],
    inv_tau: [f64; MAX_COMPONENTS],
    sigma: [f64; MAX_COMPONENTS],
}

pub(crate) fn terms(p: &Params) -> Terms {
    let zero = [0.0; MAX_COMPONENTS];
    let mut t = Terms { c: zero, mu: p.mu, inv_sigma: zero, sigma_over_tau: zero, inv_tau: zero, sigma: p.shape };
    for m in 0..p.k {
        let (mu, sigma, tau) = (p.mu[m], p.shape[m], p.df[m]);
        t.sigma_over_tau[m] = sigma / tau;
        t.c[m] = p.alpha[m].ln() - tau.ln() + mu / tau + 0.5 * t.sigma_over_tau[m] * t.sigma_over_tau[m];
        t.inv_sigma[m] = 1.0 / sigma;
        t.inv_tau[m] = 1.0 / tau;
    }
    t
}

/// One observation's share of the sums of component `m` of the module
/// docs: (log α p(x), E[Z | x], Var[Z | x]).
#[inline(always)]
fn component_terms(x: f64, t: &Terms, m: usize) -> (f64, f64, f64) {
    let u = standardised(x, t, m);
    from_log_phi(x, u, ln_normal_lower(u), t, m)
}

/// u = (x − μ)/σ − σ/τ of component `m`.
#[inline(always)]
fn standardised(x: f64, t: &Terms, m: usize) -> f64 {
    (x - t.mu[m]) * t.inv_sigma[m] - t.sigma_over_tau[m]
}

/// `component_terms` from u and log Φ(u).
#[inline(always)]
fn from_log_phi(x: f64, u: f64, ln_phi: f64, t: &Terms, m: usize) -> (f64, f64, f64) {
    let l = t.c[m] - x * t.inv_tau[m] + ln_phi;
    let rho = mills(u, ln_phi);
    let sigma = t.sigma[m];
    let ez = (sigma * (u + rho)).max(0.0);
    let vz = (sigma * sigma * (1.0 - rho * (u + rho))).max(0.0);
    (l, ez, vz)
}

/// One observation's responsibilities in `r` (the noise's last when
/// `noise_term`, log π₀ + t(x), is given), with E[Z | x] and Var[Z | x] per
/// component in `ez` and `vz`. Returns the observation's log f(x).
#[inline(always)]
pub(crate) fn responsibilities(
    x: f64,
    t: &Terms,
    k: usize,
    noise_term: Option<f64>,
    r: &mut [f64],
    ez: &mut [f64],
    vz: &mut [f64],
) -> f64 {
    for m in 0..k {
        (r[m], ez[m], vz[m]) = component_terms(x, t, m);
    }
    let rows = match noise_term {
        Some(v) => {
            r[k] = v;
            k + 1
        }
        None => k,
    };
    normalise(&mut r[..rows])
}

/// The E-step of an ex-Gaussian mixture `p` on data `x` (`noise`: the
/// noise component's t(x) per observation, if it has one; `w`: each
/// observation's weight, if they have any): the log-likelihood and the
/// sums of the module docs. By blocks of BLOCK observations, each
/// component's log Φ taken for the whole block at once
/// (special::ln_normal_lower_all).
pub fn e_step(x: &[f64], noise: Option<&[f64]>, w: Option<&[f64]>, p: &Params) -> Stats {
    let k = p.k;
    let t = terms(p);
    let log_noise = p.noise.ln();
    let mut st = Stats::zero();
    let mut l = [[0.0; BLOCK]; MAX_COMPONENTS + 1];
    let mut ez = [[0.0; BLOCK]; MAX_COMPONENTS];
    let mut vz = [[0.0; BLOCK]; MAX_COMPONENTS];
    let (mut u, mut ln_phi) = ([0.0; BLOCK], [0.0; BLOCK]);
    let rows = k + noise.is_some() as usize;
    for start in (0..x.len()).step_by(BLOCK) {
        let xb = &x[start..x.len().min(start + BLOCK)];
        let len = xb.len();
        for m in 0..k {
            for (j, &xj) in xb.iter().enumerate() {
                u[j] = standardised(xj, &t, m);
            }
            ln_phi[..len].copy_from_slice(&u[..len]);
            ln_normal_lower_all(&mut ln_phi[..len]);
            for (j, &xj) in xb.iter().enumerate() {
                (l[m][j], ez[m][j], vz[m][j]) = from_log_phi(xj, u[j], ln_phi[j], &t, m);
            }
        }
        if let Some(nt) = noise {
            for j in 0..len {
                l[k][j] = log_noise + nt.get(start + j).copied().unwrap_or(f64::NEG_INFINITY);
            }
        }
        for (j, &xj) in xb.iter().enumerate() {
            let wi = w.map_or(1.0, |w| w.get(start + j).copied().unwrap_or(0.0));
            if wi == 0.0 {
                continue;
            }
            let mut r = [0.0; MAX_COMPONENTS + 1];
            for m in 0..rows {
                r[m] = l[m][j];
            }
            st.ll += wi * normalise(&mut r[..rows]);
            for m in 0..k {
                let rm = wi * r[m];
                let y = xj - ez[m][j];
                st.s0[m] += rm;
                st.s1[m] += rm * y;
                st.s2[m] += rm * (y * y + vz[m][j]);
                st.su[m] += rm * ez[m][j];
            }
            if noise.is_some() {
                st.s0_noise += wi * r[k];
            }
        }
    }
    st.df = p.df;
    st
}

/// cuda-streams: one start's terms as em_obs_terms reads them, one row of
/// MAX_COMPONENTS each (gpu/prelude.rs's TERMS_PER_START): c, μ, 1/σ,
/// σ/τ, 1/τ, σ.
pub(crate) fn kernel_rows(p: &Params) -> [[f64; MAX_COMPONENTS]; 6] {
    let t = terms(p);
    [t.c, t.mu, t.inv_sigma, t.sigma_over_tau, t.inv_tau, t.sigma]
}

/// cuda-streams: the order of em_fused_sum's rows of k sums after the
/// log-likelihood: S0, S1 (Σr·y), S2 (Σr(y² + Var Z)), Su (Σr·E[Z]).
pub(crate) const SUM_ROWS: [SumRow; 4] = [SumRow::S0, SumRow::S1, SumRow::S2, SumRow::Su];

/// One component's M-step (mstep.rs applies the guards): (μ, σ, τ).
pub fn component_m_step(st: &Stats, m: usize) -> (f64, f64, f64) {
    let s0 = st.s0[m];
    let mu = st.s1[m] / s0;
    let sigma = (st.s2[m] / s0 - mu * mu).max(0.0).sqrt();
    (mu, sigma, st.su[m] / s0)
}

/// `component_m_step` with the user's fixed μ and/or σ: the complete-data
/// likelihood's maximum given them. A fixed μ's σ² is Σr·E[(x − Z − μ)²]/S0
/// = (S2 − 2μ S1 + μ² S0)/S0; μ's and τ's updates do not involve σ.
pub fn component_m_step_fixed(st: &Stats, m: usize, mu: Option<f64>, sigma: Option<f64>) -> (f64, f64, f64) {
    let (free_mu, free_sigma, tau) = component_m_step(st, m);
    let Some(mu) = mu else { return (free_mu, sigma.unwrap_or(free_sigma), tau) };
    let s0 = st.s0[m];
    let given = || ((st.s2[m] - 2.0 * mu * st.s1[m] + mu * mu * s0) / s0).max(0.0).sqrt();
    (mu, sigma.unwrap_or_else(given), tau)
}

/// The ex-Gaussian start of the same mean and standard deviation as a
/// Normal start (μ, σ) = (mean, sd): (μ, σ, τ) as TAU_SHARE says.
pub(crate) fn start(mean: f64, sd: f64) -> (f64, f64, f64) {
    let tau = sd * TAU_SHARE.sqrt();
    (mean - tau, sd * (1.0 - TAU_SHARE).sqrt(), tau)
}

/// Posterior probabilities of the components (N × K column-major, or
/// N × (K + 1) with the noise's t(x) in `noise`), as estep::posterior; NaN
/// for a value that is not finite.
pub fn posterior(xs: &[f64], p: &Params, noise: Option<&[f64]>) -> Vec<f64> {
    let rows = p.k + noise.is_some() as usize;
    let t = terms(p);
    let log_noise = p.noise.ln();
    let mut out = vec![f64::NAN; xs.len() * rows];
    let mut r = [0.0; MAX_COMPONENTS + 1];
    let (mut ez, mut vz) = ([0.0; MAX_COMPONENTS], [0.0; MAX_COMPONENTS]);
    for (i, &x) in xs.iter().enumerate() {
        if !x.is_finite() {
            continue;
        }
        let noise_term = noise.map(|nt| log_noise + nt.get(i).copied().unwrap_or(f64::NEG_INFINITY));
        responsibilities(x, &t, p.k, noise_term, &mut r, &mut ez, &mut vz);
        for m in 0..rows {
            out[m * xs.len() + i] = r[m];
        }
    }
    out
}

/// A draw of the ex-Gaussian: μ + σ·Z − τ·log U.
pub fn draw(mu: f64, sigma: f64, tau: f64, rng: &mut Pcg64) -> f64 {
    let normal = standard_normal(rng);
    let u = 1.0 - rng.random::<f64>();
    mu + sigma * normal - tau * u.ln()
}

/// The gradient (∂μ, ∂σ, ∂τ) and the Hessian (μμ, μσ, μτ, σσ, στ, ττ) of
/// log p(x | μ, σ, τ). log p = D + log Φ(u), D = −log τ + (μ − x)/τ +
/// σ²/(2τ²); with ρ = φ(u)/Φ(u) (log Φ's first derivative) and
/// ρ′ = −ρ(u + ρ) (its second), each entry is D's plus ρ·u's plus
/// ρ′·u_a·u_b, where
///   u_μ = −1/σ, u_σ = −(x − μ)/σ² − 1/τ, u_τ = σ/τ²,
///   u_μσ = 1/σ², u_σσ = 2(x − μ)/σ³, u_στ = 1/τ², u_ττ = −2σ/τ³,
///   D_μ = 1/τ, D_σ = σ/τ², D_τ = −1/τ + (x − μ)/τ² − σ²/τ³,
///   D_μτ = −1/τ², D_σσ = 1/τ², D_στ = −2σ/τ³,
///   D_ττ = 1/τ² − 2(x − μ)/τ³ + 3σ²/τ⁴.
#[inline(always)]
pub(crate) fn derivatives(x: f64, mu: f64, sigma: f64, tau: f64) -> ([f64; 3], [f64; 6]) {
    let d = x - mu;
    let (is, it) = (1.0 / sigma, 1.0 / tau);
    let (it2, it3) = (it * it, it * it * it);
    let u = d * is - sigma * it;
    let rho = mills(u, ln_normal_lower(u));
    let rho1 = -rho * (u + rho);
    let ua = [-is, -d * is * is - it, sigma * it2];
    let grad = [it + rho * ua[0], sigma * it2 + rho * ua[1], -it + d * it2 - sigma * sigma * it3 + rho * ua[2]];
    let hess = [
        rho1 * ua[0] * ua[0],
        rho * is * is + rho1 * ua[0] * ua[1],
        -it2 + rho1 * ua[0] * ua[2],
        it2 + rho * 2.0 * d * is * is * is + rho1 * ua[1] * ua[1],
        -2.0 * sigma * it3 + rho * it2 + rho1 * ua[1] * ua[2],
        it2 - 2.0 * d * it3 + 3.0 * sigma * sigma * it2 * it2 - rho * 2.0 * sigma * it3 + rho1 * ua[2] * ua[2],
    ];
    (grad, hess)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mixture(alpha: &[f64], mu: &[f64], sigma: &[f64], tau: &[f64]) -> Params {
        let mut p = Params::from_slices(alpha, mu, sigma).expect("a mixture");
        p.df[..tau.len()].copy_from_slice(tau);
        p
    }

    /// ∫ f over [lo, hi] by Simpson's rule on `steps` (even) intervals.
    fn simpson(f: impl Fn(f64) -> f64, lo: f64, hi: f64, steps: usize) -> f64 {
        let h = (hi - lo) / steps as f64;
        let inner: f64 = (1..steps).map(|i| f(lo + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 }).sum();
        (f(lo) + f(hi) + inner) * h / 3.0
    }

    /// The density as the convolution ∫ φ((x − z − μ)/σ)/σ · e^{−z/τ}/τ dz.
    fn convolution(x: f64, mu: f64, sigma: f64, tau: f64) -> f64 {
        let f = |z: f64| {
            let v = (x - z - mu) / sigma;
            (-0.5 * v * v - 0.5 * LN_2PI).exp() / sigma * (-z / tau).exp() / tau
        };
        simpson(f, 0.0, 60.0 * tau, 400_000)
    }

    #[test]
    fn the_density_is_the_convolution_of_a_normal_and_an_exponential() {
        for (x, mu, sigma, tau) in
            [(0.5, 0.4, 0.05, 0.2), (0.3, 0.4, 0.05, 0.2), (2.0, 0.0, 1.0, 0.3), (-1.0, 0.0, 1.0, 3.0)]
        {
            let direct = log_density(x, mu, sigma, tau).exp();
            let reference = convolution(x, mu, sigma, tau);
            assert!((direct - reference).abs() < 1e-7 * reference, "{x} {mu} {sigma} {tau}: {direct} {reference}");
        }
        // far below the mode, where Φ(u) underflows in a naive formula
        let far = log_density(-40.0, 0.0, 1.0, 1.0);
        assert!(far.is_finite() && far < -790.0, "{far}");
    }

    #[test]
    fn the_conditional_moments_of_the_exponential_part_are_right() {
        // E[Z | x], E[Z² | x] by quadrature of z·p(z | x)
        let (mu, sigma, tau) = (0.4, 0.05, 0.2);
        let p = mixture(&[1.0], &[mu], &[sigma], &[tau]);
        for x in [0.3, 0.45, 0.9] {
            let (_, ez, vz) = component_terms(x, &terms(&p), 0);
            let hi = (x - mu).max(0.0) + 20.0 * sigma;
            let m: Vec<f64> = (0..3)
                .map(|j| {
                    let f = |z: f64| {
                        let v = (x - z - mu) / sigma;
                        (-0.5 * v * v - z / tau).exp() * z.powi(j)
                    };
                    simpson(f, 0.0, hi, 200_000)
                })
                .collect();
            let (e1, e2) = (m[1] / m[0], m[2] / m[0]);
            assert!((ez - e1).abs() < 1e-6 * e1.max(1e-3), "x={x}: {ez} {e1}");
            assert!((vz - (e2 - e1 * e1)).abs() < 1e-6 * e2, "x={x}: {vz} {}", e2 - e1 * e1);
        }
    }

    #[test]
    fn the_derivatives_match_finite_differences() {
        let ell = |v: [f64; 3], x: f64| log_density(x, v[0], v[1], v[2]);
        for x in [0.25, 0.5, 1.4] {
            let at = [0.45, 0.06, 0.25];
            let (grad, hess) = derivatives(x, at[0], at[1], at[2]);
            let h = 1e-5;
            let pairs = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)];
            for a in 0..3 {
                let (mut up, mut down) = (at, at);
                up[a] += h;
                down[a] -= h;
                let num = (ell(up, x) - ell(down, x)) / (2.0 * h);
                assert!((grad[a] - num).abs() < 1e-6 * (1.0 + num.abs()), "x={x} grad {a}: {} {num}", grad[a]);
                for (e, &(i, j)) in pairs.iter().enumerate() {
                    if i != a {
                        continue;
                    }
                    let g = |v: [f64; 3]| derivatives(x, v[0], v[1], v[2]).0[j];
                    let num = (g(up) - g(down)) / (2.0 * h);
                    assert!((hess[e] - num).abs() < 1e-5 * (1.0 + num.abs()), "x={x} hess {i}{j}: {} {num}", hess[e]);
                }
            }
        }
    }

    #[test]
    fn the_e_step_gives_the_log_likelihood_and_em_climbs() {
        let truth = mixture(&[0.6, 0.4], &[0.4, 0.8], &[0.04, 0.1], &[0.1, 0.3]);
        let mut rng = Pcg64::new(11, 7);
        let mut xs = Vec::new();
        for i in 0..600 {
            let m = usize::from(i % 5 >= 3);
            xs.push(draw(truth.mu[m], truth.shape[m], truth.df[m], &mut rng));
        }
        let mut p = mixture(&[0.5, 0.5], &[0.3, 0.9], &[0.1, 0.1], &[0.2, 0.2]);
        let mut last = f64::NEG_INFINITY;
        for _ in 0..200 {
            let st = e_step(&xs, None, None, &p);
            let reference = crate::family::log_likelihood(crate::params::Family::ExGauss, &xs, &p);
            assert!((st.ll - reference).abs() < 1e-9 * reference.abs());
            assert!(st.ll >= last - 1e-9 * last.abs(), "EM fell: {last} -> {}", st.ll);
            last = st.ll;
            let mut next = Params::zeroed(2);
            for m in 0..2 {
                let (mu, sigma, tau) = component_m_step(&st, m);
                (next.alpha[m], next.mu[m], next.shape[m], next.df[m]) = (st.s0[m] / 600.0, mu, sigma, tau);
            }
            p = next;
        }
        // weights double the sums as a repeated dataset does
        let doubled: Vec<f64> = xs.iter().chain(&xs).copied().collect();
        let (a, b) = (e_step(&doubled, None, None, &p), e_step(&xs, None, Some(&vec![2.0; 600]), &p));
        assert!((a.ll - b.ll).abs() < 1e-9 * a.ll.abs() && (a.s2[1] - b.s2[1]).abs() < 1e-9 * a.s2[1]);
    }
}
