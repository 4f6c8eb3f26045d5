//! `fit_mv_()`: a list of R matrices (one multivariate dataset each) in, the
//! core's multivariate fits (bulkem_core::mv) on a worker thread while R's
//! main thread watches for interrupts and draws progress (watch.rs), one R
//! list per fit back.

use std::sync::atomic::Ordering;

use bulkem_core::mv::information::{free_parameter_names, parameter_names};
use bulkem_core::{fit_mv, Counters, MvFit, MvJob, Status, Structure};
use extendr_api::prelude::*;

use crate::datasets::{borrow_doubles, borrow_matrices};
use crate::error::{or_condition, Stop};
use crate::settings::{Call, Named};
use crate::watch::{run_watched, timings};

/// Fits every dataset of `datasets`, a list of double matrices with the same
/// number of columns (observations in rows), checked by bulkem() in R and
/// read in place, on the CPU engine or cuda-batched; `weights` (an empty
/// list, or per dataset NULL or one weight per row) read in place too.
/// `settings` is core_settings()'s list with `covariance` and `variables`
/// (the columns' names) added. Returns the fits (each a list, see ?bulkem)
/// or the condition that stopped the call.
/// @noRd
#[extendr]
fn fit_mv_(datasets: List, weights: List, settings: List, report: Robj) -> Robj {
    or_condition(fit(datasets, weights, settings, report))
}

fn fit(datasets: List, weights: List, settings: List, report: Robj) -> Result<List, Stop> {
    let started = std::time::Instant::now();
    let call = Call::from_r(&settings)?;
    let named = Named::of(&settings);
    let structure = named.text("covariance")?;
    let structure = Structure::from_name(structure)
        .ok_or_else(|| bulkem_core::Error::Internal(format!("unknown covariance \"{structure}\"")))?;
    let variables = named.texts("variables")?;
    let noise_boxes = noise_boxes(&named.reals("noise.box")?, variables.len());
    let datasets = borrow_matrices(&datasets)?;
    let given_starts = call.given_mv_starts_for(datasets.len(), variables.len())?;
    let weights = borrow_doubles(&weights)?.into_iter().map(|w| (!w.is_empty()).then_some(w)).collect();
    let job = MvJob {
        datasets,
        settings: call.settings,
        structure,
        engine: call.engine,
        variables,
        noise_boxes,
        given_starts,
        weights,
    };
    let counters = Counters::default();
    let report = Function::try_from(report).ok();
    counters.lap("setup", started);
    let threads = call.threads;
    let choice = job.settings.components.len() > 1;
    let fits =
        run_watched(&counters, report.as_ref(), |cancel| fit_mv(&job, threads, cancel, &counters), || Ok(false))?;
    let built = std::time::Instant::now();
    let mut names = SeNames::default();
    let lists: Vec<Robj> = fits.iter().map(|f| fit_to_r(f, &job, choice, &mut names)).collect::<Result<_, _>>()?;
    counters.lap("result", built);
    let count = |c: &std::sync::atomic::AtomicUsize| Robj::from(c.load(Ordering::Relaxed) as f64);
    Ok(List::from_names_and_values(
        ["fits", "threads", "em_iterations", "kernel_launches", "kernel_seconds", "timings"],
        [
            Robj::from(List::from_values(lists)),
            Robj::from(threads as i32),
            count(&counters.em_iterations),
            count(&counters.kernel_launches),
            Robj::from(counters.kernel_seconds()),
            timings(&counters)?,
        ],
    )?)
}

/// `noise.box` as R passes it: per box d lower bounds then d upper ones
/// (a d × 2 matrix), NA for a dataset's own bounding box.
fn noise_boxes(values: &[f64], d: usize) -> Vec<Option<Vec<(f64, f64)>>> {
    if d == 0 {
        return Vec::new();
    }
    values
        .chunks_exact(2 * d)
        .map(|b| {
            let (lo, hi) = b.split_at(d);
            (!b.iter().any(|v| v.is_nan())).then(|| lo.iter().copied().zip(hi.iter().copied()).collect())
        })
        .collect()
}

fn na(x: f64) -> f64 {
    if x.is_nan() {
        Rfloat::na().0
    } else {
        x
    }
}

/// One fit's R list (class bulkem_mvfit, a bulkem_fit): mu K × d, sigma d × d × K,
/// and for t df (K values).
fn fit_to_r(f: &MvFit, job: &MvJob, choice: bool, names_of_se: &mut SeNames) -> Result<Robj, Stop> {
    let model = job.model();
    let (k, d) = (f.k, f.d);
    let p = f.params.as_ref();
    let alpha = Robj::from(p.map_or(vec![na(f64::NAN); k], |p| p.alpha.clone()));
    let mu_values: Vec<f64> = match p {
        // the core holds means component-major; R's K × d matrix is column-major
        Some(p) => (0..d).flat_map(|j| (0..k).map(move |m| p.mu[m * d + j])).collect(),
        None => vec![na(f64::NAN); k * d],
    };
    let mut mu = Robj::from(mu_values);
    mu.set_attrib("dim", [k as i32, d as i32])?;
    let mut sigma = Robj::from(p.map_or(vec![na(f64::NAN); k * d * d], |p| p.sigma.clone()));
    sigma.set_attrib("dim", [d as i32, d as i32, k as i32])?;
    let (aic, bic) = f.information_criteria();
    let int = |v: u32| Robj::from(i32::try_from(v).unwrap_or(i32::MAX));
    let mut names = vec![
        "mu",
        "sigma",
        "alpha",
        "loglik",
        "num_iterations",
        "fit_success",
        "family",
        "covariance",
        "n",
        "nobs",
        "d",
        "k",
        "converged",
        "status",
        "message",
        "best_start",
        "starts_ok",
        "aic",
        "bic",
        "icl",
        "starts_at_best",
        "spurious",
        "spurious_starts",
        "starts_run",
        "df_model",
        "noise",
        "noise_support",
        "se",
        "vcov",
    ];
    let mut values = vec![
        mu,
        sigma,
        alpha,
        Robj::from(na(f.loglik)),
        int(f.iterations),
        Robj::from(p.is_some()),
        Robj::from(model.family().name()),
        Robj::from(model.structure.name()),
        Robj::from(i32::try_from(f.n).unwrap_or(i32::MAX)),
        Robj::from(f.nobs),
        Robj::from(d as i32),
        Robj::from(k as i32),
        Robj::from(f.status == Status::Converged),
        Robj::from(f.status.name()),
        Robj::from(f.message.as_str()),
        f.best_start.map_or(Robj::from(Rint::na()), |s| Robj::from(s as i32 + 1)),
        int(f.starts_ok),
        Robj::from(na(aic)),
        Robj::from(na(bic)),
        Robj::from(na(f.icl())),
        int(f.starts_at_best),
        Robj::from(f.spurious),
        int(f.spurious_starts),
        int(f.starts_run),
        Robj::from(f.free_parameters as i32),
        Robj::from(na(p.filter(|_| f.noise_support.is_some()).map_or(f64::NAN, |p| p.noise))),
        noise_support(f)?,
    ];
    values.extend(standard_errors(f, job, names_of_se)?);
    if model.t {
        names.push("df");
        values.push(Robj::from(p.map_or(vec![na(f64::NAN); k], |p| p.df.clone())));
    }
    if choice {
        let by_k = data_frame(f)?;
        let all: Vec<Robj> = std::iter::once(f)
            .chain(&f.other_k)
            .map(|g| fit_to_r(g, job, false, names_of_se))
            .collect::<Result<_, _>>()?;
        names.extend(["num_components", "by_k", "all_k", "criterion"]);
        values.extend([
            Robj::from(k as i32),
            by_k,
            Robj::from(List::from_values(all)),
            Robj::from(job.settings.criterion.name()),
        ]);
    }
    let mut list = Robj::from(List::from_names_and_values(names, values)?);
    list.set_class(["bulkem_mvfit", "bulkem_fit"])?;
    Ok(list)
}

/// The names of `se` and the dimnames of `vcov` for each (K, noise) of a
/// call, made once and shared by its fits (R shares attributes): made per
/// fit, 10,000 fits' thousands of strings were much of the time R waited
/// for its result.
#[derive(Default)]
struct SeNames {
    made: Vec<((usize, bool), Robj, Robj, usize)>,
}

impl SeNames {
    /// (the names of `se`, `vcov`'s dimnames, the free parameters' count).
    fn of(&mut self, job: &MvJob, k: usize, d: usize, noise: bool) -> (Robj, Robj, usize, usize) {
        if let Some((_, se, dimnames, free)) = self.made.iter().find(|m| m.0 == (k, noise)) {
            return (se.clone(), dimnames.clone(), se.len(), *free);
        }
        let df = job.model().estimates_df();
        let names = parameter_names(job.structure, k, d, noise, df, &job.variables);
        let free = free_parameter_names(job.structure, k, d, noise, df, &job.variables);
        let (count, np) = (names.len(), free.len());
        let se = Robj::from(names);
        let free = Robj::from(free);
        let dimnames = Robj::from(List::from_values([free.clone(), free]));
        self.made.push(((k, noise), se.clone(), dimnames.clone(), np));
        (se, dimnames, count, np)
    }
}

/// `se` (named, in the order of mv::information::parameter_names) and
/// `vcov` (over the free parameters, with dimnames); both NULL without
/// standard errors (none asked for, or the information was singular: the
/// fit's message says why).
fn standard_errors(f: &MvFit, job: &MvJob, names: &mut SeNames) -> Result<[Robj; 2], Stop> {
    let Some(Ok(c)) = &f.covariance else { return Ok([Robj::default(), Robj::default()]) };
    let (names, dimnames, count, np) = names.of(job, f.k, f.d, f.noise_support.is_some());
    if c.se.len() != count || c.vcov.len() != np * np {
        return Err(bulkem_core::Error::Internal("standard errors of the wrong length".into()).into());
    }
    let mut se = Robj::from(c.se.iter().map(|&v| na(v)).collect::<Vec<f64>>());
    se.set_attrib("names", names)?;
    let mut vcov = Robj::from(c.vcov.iter().map(|&v| na(v)).collect::<Vec<f64>>());
    vcov.set_attrib("dim", [np as i32, np as i32])?;
    vcov.set_attrib("dimnames", dimnames)?;
    Ok([se, vcov])
}

/// A noise component's box: a d x 2 matrix (lower, upper per variable), or
/// NULL without one.
fn noise_support(f: &MvFit) -> Result<Robj, Stop> {
    let Some(support) = &f.noise_support else { return Ok(Robj::default()) };
    let values: Vec<f64> = support.iter().map(|b| b.0).chain(support.iter().map(|b| b.1)).collect();
    let mut m = Robj::from(values);
    m.set_attrib("dim", [support.len() as i32, 2])?;
    Ok(m)
}

/// `by_k`: K, loglik, aic, bic, icl, status for every K fitted, ascending K.
fn data_frame(f: &MvFit) -> Result<Robj, Stop> {
    let rows = f.by_k.len();
    let col = |g: fn(&bulkem_core::KSummary) -> f64| Robj::from(f.by_k.iter().map(|s| na(g(s))).collect::<Vec<f64>>());
    let mut frame = Robj::from(List::from_names_and_values(
        ["K", "loglik", "aic", "bic", "icl", "status"],
        [
            Robj::from(f.by_k.iter().map(|s| s.k as i32).collect::<Vec<i32>>()),
            col(|s| s.loglik),
            col(|s| s.aic),
            col(|s| s.bic),
            col(|s| s.icl),
            Robj::from(f.by_k.iter().map(|s| s.status.name()).collect::<Vec<&str>>()),
        ],
    )?);
    frame.set_class(["data.frame"])?;
    frame.set_attrib("row.names", (1..=rows as i32).collect::<Vec<i32>>())?;
    Ok(frame)
}

extendr_module! {
    mod fit_mv;
    fn fit_mv_;
}
