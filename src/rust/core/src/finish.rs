//! Finishing a dataset: its result for one K from its best start, in the
//! data's own units (parameters mapped back, components by ascending mu,
//! the log-likelihood on the original data), with standard errors, a
//! saddle point continued to a maximum, and the status and message that
//! say how it ended.

use std::sync::atomic::AtomicBool;

use crate::dataset::{Invalid, Prepared};
use crate::engine::best::Best;
use crate::estep::map_log_posterior;
use crate::fixed::Fixed;
use crate::information::{self, Information};
use crate::job::{Fit, Job, Task};
use crate::outcome::{Outcome, StartFit, StartRecord, Status};
use crate::params::{Covariance, Family, Params, Singular};
use crate::polish::{polish, Polished};
use crate::saddle;

/// One dataset's result for task `t` from its best start.
pub(crate) fn finish(
    job: &Job,
    t: &Task,
    d: usize,
    prepared: &Result<Prepared, Invalid>,
    best: &Best,
    cancel: &AtomicBool,
) -> Fit {
    let values = job.datasets[d];
    let n = values.len();
    let invalid = |why: &Invalid| Fit::without_params(n, t.k, Status::Invalid, format!("dataset {why}"), 0, 0);
    if let Some(short) = Invalid::too_short(n, t.k) {
        return invalid(&short);
    }
    let ds = match prepared {
        Ok(ds) => ds,
        Err(why) => return invalid(why),
    };
    // every start in the data's units: parameters mapped back, and the
    // log-likelihood shifted by the rescaling's Jacobian (−N log scale)
    let starts = best.starts.as_ref().map(|records| {
        let mut out: Vec<_> = records
            .iter()
            .map(|r| StartRecord {
                init: r.init.map(|p| ds.unscale(&p)),
                loglik: r.loglik - ds.total * ds.scale.ln(),
                ..*r
            })
            .collect();
        out.sort_by_key(|r| r.start);
        out
    });
    let Some((w, spurious)) = best.returned() else {
        let reason = best.first_failure.map_or("", |(_, why)| why.describe());
        let message = format!("all {} random starts failed (the first because {reason})", best.starts_run);
        return Fit { starts, ..Fit::without_params(n, t.k, Status::Failed, message, best.starts_run, best.starts_ok) };
    };
    let jacobian = ds.total * ds.scale.ln();
    let family = job.settings.family;
    // a start in components by ascending mu (rescaling keeps their order)
    // at the maximum itself, not where the stop rule left it (polish.rs);
    // with the order applied and the information at the point, if the
    // polish computed it there
    // (values held fixed are the dataset's in its components' order: in
    // the order `order` of the fit, permuted with them)
    let fixed_in = |order: &[usize]| ds.fixed.map(|f| Fixed(f.0.permuted(order)));
    let polished = |f: &StartFit| -> (StartFit, Option<Information>, Vec<usize>) {
        let first = f.params.order_by_mu();
        let start = StartFit { params: f.params.permuted(&first), ..*f };
        let Polished { fit, information } = polish(family, ds, &start, fixed_in(&first).as_ref());
        let again = fit.params.order_by_mu();
        if again.iter().enumerate().all(|(to, &from)| to == from) {
            return (fit, information, first);
        }
        // two means crossed on the way: ordered again, the information
        // (in the other order) left for covariance() to recompute
        let order = again.iter().map(|&j| first[j]).collect();
        (StartFit { params: fit.params.permuted(&again), ..fit }, None, order)
    };
    let errors = |params: &Params, info: Option<Information>, order: &[usize]| {
        let fixed = fixed_in(order);
        job.settings.standard_errors.then(|| match info {
            Some(info) => information::covariance_from(ds, &info, fixed.as_ref()),
            None => information::covariance(family, ds, params, fixed.as_ref()),
        })
    };
    let (mut fit, info, mut order) = polished(&w.fit);
    let mut params = ds.unscale(&fit.params);
    let mut covariance = errors(&params, info, &order);
    // an admissible winner that converged to a saddle point goes on from
    // there (saddle.rs); found only where the information is computed
    let at_saddle = matches!(covariance, Some(Err(Singular::Indefinite { .. })));
    // (not with one shape shared or values fixed: the ascent direction
    // would part the shapes or move the fixed; nor truncated: the saddle's
    // direction is the untruncated likelihood's)
    let escaped = if at_saddle
        && !spurious
        && !ds.equal_scale
        && ds.fixed.is_none()
        && ds.truncation.is_none()
        && ds.censored.is_empty()
    {
        saddle::escape(t, ds, &fit, cancel)
    } else {
        None
    };
    if let Some(f) = escaped {
        let (f, info, again) = polished(&f);
        // the escaped fit's components were numbered in the saddle's order
        order = again.iter().map(|&j| order[j]).collect();
        fit = f;
        params = ds.unscale(&fit.params);
        covariance = errors(&params, info, &order);
    }
    // a rejected start that beat the returned one, in the data's units
    let loglik_spurious =
        best.spurious.as_ref().filter(|s| !spurious && s.fit.loglik > fit.loglik).map(|s| s.fit.loglik - jacobian);
    let init = ds.unscale(&w.init).permuted(&order);
    let loglik = ds.log_likelihood(family, values, &params);
    let log_map = map_log_posterior(family, values, &params, ds.noise.as_ref().map(|n| &n.support), ds.w.as_deref());
    if !loglik.is_finite() {
        let message = "the best start's log-likelihood is not finite on the original data".to_string();
        return Fit { starts, ..Fit::without_params(n, t.k, Status::Failed, message, best.starts_run, best.starts_ok) };
    }
    let (status, mut message) = match fit.outcome {
        Outcome::Converged => (Status::Converged, String::new()),
        _ => (
            Status::MaxIters,
            format!("stopped after max.iters = {} iterations before the log-likelihood settled", t.max_iters),
        ),
    };
    if spurious {
        let why = format!(
            "spurious: every start that finished has a component far narrower than the others \
             (the screen of control$spurious.*; {} of {} starts)",
            best.spurious_starts, best.starts_run
        );
        message = if message.is_empty() { why } else { format!("{message}; {why}") };
    }
    let saddle = escaped.is_some().then_some(w.fit.loglik - jacobian);
    let df = params.estimates_df();
    message = with_information(message, saddle, loglik, covariance.as_ref(), family, t.k, ds.noise.is_some(), df);
    Fit {
        n,
        nobs: ds.total,
        equal_scale: ds.equal_scale,
        fixed: job.fixed.get(d).copied().flatten().map(|f| Fixed(f.0.permuted(&order))),
        k: t.k,
        status,
        message,
        params: Some(params),
        init: Some(init),
        loglik,
        log_map,
        iterations: fit.iterations,
        best_start: Some(w.start),
        starts_run: best.starts_run,
        starts_ok: best.starts_ok,
        // the continued start is the one that reached its maximum
        starts_at_best: if escaped.is_some() { 1 } else { best.starts_at_best() },
        spurious,
        spurious_starts: best.spurious_starts,
        loglik_spurious,
        starts,
        by_k: Vec::new(),
        other_k: Vec::new(),
        covariance,
        noise_support: ds.noise.as_ref().map(|n| n.support),
        truncation: job.truncation.get(d).copied().flatten(),
        censored: job.censored.get(d).map_or(0.0, |c| c.iter().map(|g| g.count).sum()),
    }
}

/// A fit's message `message` with what the observed information says
/// added: for a fit continued from a saddle point at log-likelihood
/// `saddle` (data units) to `loglik`, where it went; and why there are no
/// standard errors, if there are none. A continued fit whose information
/// is again not positive definite is said to be so once, not also "at a
/// maximum". `family`, `k`, `noise` and `df` name the parameters.
#[allow(clippy::too_many_arguments)]
fn with_information(
    message: String,
    saddle: Option<f64>,
    loglik: f64,
    covariance: Option<&Result<Covariance, Singular>>,
    family: Family,
    k: usize,
    noise: bool,
    df: bool,
) -> String {
    let no_se = |why: &Singular| format!("no standard errors: {}", why.describe(family, k, noise, df));
    match (saddle, covariance) {
        (Some(from), Some(Err(why @ Singular::Indefinite { .. }))) => format!(
            "continued from a saddle point (log-likelihood {from:.4}) to a point {:.1e} higher (log-likelihood \
             {loglik:.4}) that is not a local maximum either; no standard errors: {}",
            loglik - from,
            why.what(family, k, noise, df)
        ),
        (Some(from), Some(Err(why))) => {
            format!("continued from a saddle point (log-likelihood {from:.4}) to a maximum; {}", no_se(why))
        }
        (Some(from), _) => format!("continued from a saddle point (log-likelihood {from:.4}) to a maximum"),
        (None, Some(Err(why))) if message.is_empty() => no_se(why),
        (None, Some(Err(why))) => format!("{message}; {}", no_se(why)),
        (None, _) => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_continued_fit_says_where_it_went_and_only_that() {
        let (nf, k) = (Family::Normal, 2);
        let singular: Result<Covariance, Singular> = Err(Singular::Collinear { at: 0 });
        let indefinite: Result<Covariance, Singular> = Err(Singular::Indefinite { at: 2 });
        // continued to a maximum: said so, standard errors or not
        assert_eq!(
            with_information(String::new(), Some(-1234.5), -1200.25, None, nf, k, false, false),
            "continued from a saddle point (log-likelihood -1234.5000) to a maximum"
        );
        assert_eq!(
            with_information(String::new(), Some(-1234.5), -1200.25, Some(&singular), nf, k, false, false),
            "continued from a saddle point (log-likelihood -1234.5000) to a maximum; \
             no standard errors: the observed information is singular (first at alpha1)"
        );
        // continued only 3e-5 higher, to a point that is again not a maximum:
        // no "to a maximum", and "not a local maximum" once
        let m = with_information(String::new(), Some(-1234.5), -1234.5 + 3e-5, Some(&indefinite), nf, k, false, false);
        assert_eq!(
            m,
            "continued from a saddle point (log-likelihood -1234.5000) to a point 3.0e-5 higher \
             (log-likelihood -1234.5000) that is not a local maximum either; no standard errors: the \
             observed information is not positive definite (first at mu2)"
        );
        assert!(!m.contains("to a maximum"));
        assert_eq!(m.matches("maximum").count(), 1);
        // not continued: the message as before, the information's after it
        assert_eq!(
            with_information(String::new(), None, -5.0, Some(&indefinite), nf, k, false, false),
            "no standard errors: the observed information is not positive definite (first at mu2): \
             the fit is not at a local maximum"
        );
        assert_eq!(
            with_information("stopped".into(), None, -5.0, Some(&singular), nf, k, false, false),
            "stopped; no standard errors: the observed information is singular (first at alpha1)"
        );
        assert_eq!(with_information("stopped".into(), None, -5.0, None, nf, k, false, false), "stopped");
    }
}
