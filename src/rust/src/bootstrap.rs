//! `bootstrap_()`: the parametric bootstrap's bulk job (bulkem-core's
//! `bootstrap`) from R vectors, its refits back as flat R vectors.

use bulkem_core::{Bootstrap, Counters, Family, Job, Params, Refit, Refits, Status, MAX_COMPONENTS};
use extendr_api::prelude::*;

use crate::datasets::borrow_doubles;
use crate::error::{or_condition, Stop};
use crate::settings::{Call, Named};
use crate::watch::{run_watched, timings};

/// Draws `plan$replicates` replicates of every dataset from its null fit
/// and refits each with K0 + e components for every e of `plan$extra`. The
/// nulls come flat: `plan$null_k[d]` components (0: none) whose weights,
/// means and shapes follow each other in `plan$null_alpha`, `null_mu`,
/// `null_shape` (and for Student's t their degrees of freedom in
/// `null_df`, fixed where `settings$df` fixes them), and `plan$null_noise[d]`, the noise component's weight
/// (one per dataset, 0 without one; drawn and refitted with
/// `settings$noise`, over `settings$noise.support` as for fit_()).
/// `settings` are the refits', as for fit_() (settings.rs); its
/// `num.components` is ignored. Checked by bulkem_bootstrap() in R.
/// Returns, per e, `loglik` and `status` (1-based codes into
/// `status_levels`, never 0) and `spurious` at d·B + b, the same of each
/// dataset's own data refitted (`observed_*`, at d), the parameters of
/// each refit (K0 + e values each, dataset by dataset, replicate by
/// replicate; NA without a fit) in `alpha`, `mu`, `shape` (and `df`, empty
/// for the families without one), and each
/// refit's noise weight in `noise` (one per refit, in the same order; NA
/// without a fit); or the condition that stopped the call.
/// @noRd
#[extendr]
fn bootstrap_(datasets: List, plan: List, settings: List, report: Robj) -> Robj {
    or_condition((|| {
        let call = Call::from_r(&settings)?;
        let datasets = borrow_doubles(&datasets)?;
        let noise_supports = call.noise_supports_for(datasets.len());
        let plan = Named::of(&plan);
        let null_k = plan.counts("null_k")?;
        // a fit's values held fixed are held in its refits (rows of its K)
        let fixed = call.fixed_by_k(&null_k)?;
        // a truncated fit's window, for its replicates and refits
        let truncation = call.truncation_for(datasets.len());
        let Call { settings, engine, threads, tuning, .. } = call;
        let mut null = nulls(
            &null_k,
            &plan.reals("null_alpha")?,
            &plan.reals("null_mu")?,
            &plan.reals("null_shape")?,
            &plan.reals("null_noise")?,
        )?;
        if settings.family.has_third() {
            with_df(&mut null, &plan.reals("null_df")?, !settings.df.is_empty(), settings.family)?;
        }
        let b = Bootstrap {
            null,
            replicates: plan.count("replicates")?,
            extra: plan.counts("extra")?,
            job: Job {
                datasets,
                settings,
                inits: Vec::new(),
                tuning,
                noise_supports,
                given_starts: Vec::new(),
                weights: Vec::new(),
                fixed,
                truncation,
                censored: Vec::new(),
            },
        };
        let counters = Counters::default();
        let report = Function::try_from(report).ok();
        let refits = run_watched(
            &counters,
            report.as_ref(),
            |cancel| bulkem_core::bootstrap(&b, engine, threads, cancel, &counters),
            || Ok(false),
        )?;
        let clock = std::time::Instant::now();
        let out: Vec<Robj> =
            refits.iter().map(|r| refits_to_r(r, &b.null, b.replicates as usize)).collect::<Result<_, _>>()?;
        counters.lap("result", clock);
        Ok::<_, Stop>(List::from_names_and_values(
            ["refits", "threads", "timings", "em_iterations", "kernel_seconds"],
            [
                List::from_values(out).into(),
                Robj::from(threads as i32),
                timings(&counters)?,
                Robj::from(counters.em_iterations.load(std::sync::atomic::Ordering::Relaxed) as f64),
                Robj::from(counters.kernel_seconds()),
            ],
        )?)
    })())
}

/// The nulls from their flat R form.
fn nulls<'a>(
    k: &[usize],
    alpha: &'a [f64],
    mu: &'a [f64],
    shape: &'a [f64],
    noise: &[f64],
) -> Result<Vec<Option<Params>>, Stop> {
    if noise.len() != k.len() {
        return Err(Error::Other("null_noise is not one weight per dataset".into()).into());
    }
    let mut at = 0;
    k.iter()
        .zip(noise)
        .map(|(&k, &noise)| {
            if k > MAX_COMPONENTS {
                return Err(Error::Other("null_k out of range".into()).into());
            }
            if k == 0 {
                return Ok(None);
            }
            let part = |v: &'a [f64]| v.get(at..at + k).unwrap_or(&[]);
            let p = Params::from_slices(part(alpha), part(mu), part(shape));
            at += k;
            // a weight outside [0, 1) would make the draws' weights meaningless
            if !(0.0..1.0).contains(&noise) {
                return Err(Error::Other("null_noise out of range".into()).into());
            }
            p.map(|p| Some(Params { noise, ..p }))
                .ok_or_else(|| Error::Other("null parameters shorter than null_k says".into()).into())
        })
        .collect()
}

/// The third parameter of the nulls (the t's ν, the ex-Gaussian's τ), from
/// `df` (each null's K values in turn), `fixed` where the settings fix them.
fn with_df(null: &mut [Option<Params>], df: &[f64], fixed: bool, family: Family) -> Result<(), Stop> {
    let mut at = 0;
    for p in null.iter_mut().flatten() {
        let values = df.get(at..at + p.k).ok_or_else(|| Error::Other("null_df shorter than null_k says".into()))?;
        if !values.iter().all(|&v| family.third_ok(v)) {
            return Err(Error::Other("null_df out of range".into()).into());
        }
        p.df[..p.k].copy_from_slice(values);
        p.df_fixed = fixed;
        at += p.k;
    }
    Ok(())
}

fn refits_to_r(r: &Refits, null: &[Option<Params>], reps: usize) -> Result<Robj, Stop> {
    let code = |s: Status| Status::ALL.iter().position(|&x| x == s).map_or(0, |i| i as i32 + 1);
    let mut alpha = Vec::new();
    let mut mu = Vec::new();
    let mut shape = Vec::new();
    let mut df = Vec::new();
    let mut noise = Vec::new();
    let has_df = null.iter().flatten().any(|p| p.df[0] > 0.0);
    for (d, n) in null.iter().enumerate() {
        let Some(n) = n else { continue };
        let k = n.k + r.extra;
        for f in r.refits.iter().skip(d * reps).take(reps) {
            noise.push(f.params.filter(|p| p.k == k).map(|p| p.noise));
            for m in 0..k {
                let pick = |v: &dyn Fn(&Params) -> f64| f.params.filter(|p| p.k == k).map(|p| v(&p));
                alpha.push(pick(&|p| p.alpha[m]));
                mu.push(pick(&|p| p.mu[m]));
                shape.push(pick(&|p| p.shape[m]));
                if has_df {
                    df.push(pick(&|p| p.df[m]));
                }
            }
        }
    }
    let loglik =
        |fits: &[Refit]| Robj::from(fits.iter().map(|f| (!f.loglik.is_nan()).then_some(f.loglik)).collect::<Vec<_>>());
    let status = |fits: &[Refit]| Robj::from(fits.iter().map(|f| code(f.status)).collect::<Vec<i32>>());
    let spurious = |fits: &[Refit]| Robj::from(fits.iter().map(|f| f.spurious).collect::<Vec<bool>>());
    Ok(List::from_names_and_values(
        [
            "extra",
            "loglik",
            "status",
            "spurious",
            "observed_loglik",
            "observed_status",
            "observed_spurious",
            "alpha",
            "mu",
            "shape",
            "df",
            "noise",
            "status_levels",
        ],
        [
            Robj::from(r.extra as i32),
            loglik(&r.refits),
            status(&r.refits),
            spurious(&r.refits),
            loglik(&r.observed),
            status(&r.observed),
            spurious(&r.observed),
            Robj::from(alpha),
            Robj::from(mu),
            Robj::from(shape),
            Robj::from(df),
            Robj::from(noise),
            Robj::from(Status::ALL.iter().map(|s| s.name()).collect::<Vec<&str>>()),
        ],
    )?
    .into())
}

extendr_module! {
    mod bootstrap;
    fn bootstrap_;
}
