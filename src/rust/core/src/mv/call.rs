//! A multivariate call: every dataset standardised once, every K's starts
//! run as (dataset, start) items of the shared work queue on all threads,
//! restart rounds for datasets without an admissible start, each dataset's
//! best start finished into its fit in the data's units, and K chosen by
//! `criterion` (BIC, ICL or AIC). Which start wins depends on the starts' results alone (highest
//! log-likelihood, ties to the lower start index), never on the order the
//! threads finished them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use super::data::MvData;
use super::device::MvGpus;
use super::em::{e_step, run_em, MvStartFit};
use super::information::{covariance, describe, free_parameter_names};
use super::model::{Model, MvParams, Structure};
use super::screen::spurious;
use super::starts::{given_params, initial_params};
use crate::engine::best::Leaders;
use crate::engine::counters::Counters;
use crate::engine::{queue, EngineKind};
use crate::error::Error;
use crate::job::{Criterion, KSummary, Settings};
use crate::limits::{DF_START, SAME_OPTIMUM};
use crate::outcome::{Degenerate, Outcome, Status};
use crate::params::{Covariance, Family, Singular};

/// One multivariate dataset: n × d values, variable-major (R's matrix),
/// borrowed.
#[derive(Clone, Copy, Debug)]
pub struct Matrix<'a> {
    pub values: &'a [f64],
    pub n: usize,
    pub d: usize,
}

/// A multivariate call: the datasets (every one of the same d), the
/// settings the univariate calls take, the covariance structure, the
/// engine (the CPU's, or cuda-batched: device.rs), and the variables'
/// names (for the standard errors' message; x1, x2, .. where missing).
#[derive(Clone, Debug)]
pub struct MvJob<'a> {
    pub datasets: Vec<Matrix<'a>>,
    pub settings: Settings,
    pub structure: Structure,
    pub engine: EngineKind,
    /// With Settings::noise, the noise component's box by dataset ((lower,
    /// upper) per variable, the data's units): empty, or `None` for a
    /// dataset, its bounding box; one entry, every dataset's.
    pub noise_boxes: Vec<Option<Vec<(f64, f64)>>>,
    pub variables: Vec<String>,
    /// The user's starting values (`init`) by dataset, in the data's units:
    /// empty, or one list per dataset. A start of K components runs with
    /// that K only, beside the random starts and numbered after every start
    /// their rounds may take (`given_from`).
    pub given_starts: Vec<Vec<MvParams>>,
    /// Each observation's weight by dataset (`weights`): empty, or one
    /// entry per dataset, `None` for a dataset without weights.
    pub weights: Vec<Option<&'a [f64]>>,
}

/// The best fit of one dataset, in the data's units, components in the
/// canonical order (MvParams::canonical). The fields mean what the
/// univariate `Fit`'s of the same names mean.
#[derive(Clone, Debug, PartialEq)]
pub struct MvFit {
    pub n: usize,
    /// Σ w, or n without weights: BIC's n.
    pub nobs: f64,
    pub d: usize,
    pub k: usize,
    pub status: Status,
    pub message: String,
    pub params: Option<MvParams>,
    pub loglik: f64,
    /// ICL's classification term (the univariate `Fit::log_map`).
    pub log_map: f64,
    pub iterations: u32,
    pub best_start: Option<u32>,
    pub starts_run: u32,
    pub starts_ok: u32,
    pub starts_at_best: u32,
    pub spurious: bool,
    pub spurious_starts: u32,
    pub free_parameters: usize,
    /// With a noise component: the bounding box it is uniform over, in the
    /// data's units, (lower, upper) per variable; its weight is params.noise.
    pub noise_support: Option<Vec<(f64, f64)>>,
    /// With `settings.standard_errors`: the standard errors and covariance
    /// of the parameters in the data's units (mv/information.rs;
    /// information::parameter_names orders `se`, free_parameter_names
    /// `vcov`), or why there are none (said in `message` too).
    pub covariance: Option<Result<Covariance, Singular>>,
    pub by_k: Vec<KSummary>,
    pub other_k: Vec<MvFit>,
}

impl MvFit {
    /// (AIC, BIC); NaN without a fit.
    pub fn information_criteria(&self) -> (f64, f64) {
        if self.params.is_none() {
            return (f64::NAN, f64::NAN);
        }
        let p = self.free_parameters as f64;
        (-2.0 * self.loglik + 2.0 * p, -2.0 * self.loglik + p * self.nobs.ln())
    }

    /// ICL: BIC − 2 Σ log of each observation's largest posterior
    /// probability (NaN without a fit).
    pub fn icl(&self) -> f64 {
        self.information_criteria().1 - 2.0 * self.log_map
    }

    fn summary(&self) -> KSummary {
        let (aic, bic) = self.information_criteria();
        KSummary { k: self.k, loglik: self.loglik, aic, bic, icl: self.icl(), status: self.status }
    }

    fn without_params(n: usize, d: usize, k: usize, status: Status, message: String) -> MvFit {
        MvFit {
            n,
            nobs: n as f64,
            d,
            k,
            status,
            message,
            params: None,
            loglik: f64::NAN,
            log_map: f64::NAN,
            iterations: 0,
            best_start: None,
            starts_run: 0,
            starts_ok: 0,
            starts_at_best: 0,
            spurious: false,
            spurious_starts: 0,
            free_parameters: 0,
            noise_support: None,
            covariance: None,
            by_k: Vec::new(),
            other_k: Vec::new(),
        }
    }
}

impl MvJob<'_> {
    /// What the call fits.
    pub fn model(&self) -> Model {
        Model {
            structure: self.structure,
            t: self.settings.family == Family::StudentT,
            df_fixed: !self.settings.df.is_empty(),
        }
    }

    /// t's ν at the starts of K components: the user's `df` (one for every
    /// component, or one each), else DF_START; empty for Normal components.
    fn start_df(&self, k: usize) -> Vec<f64> {
        match (self.model().t, self.settings.df.as_slice()) {
            (false, _) => Vec::new(),
            (true, []) => vec![DF_START; k],
            (true, [one]) => vec![*one; k],
            (true, each) => each.to_vec(),
        }
    }

    /// The core's own check (R checks first, with the same names).
    pub fn validate(&self) -> Result<(), Error> {
        self.settings.validate()?;
        let bad = |arg, message: String| Err(Error::Argument { arg, message });
        if !matches!(self.settings.family, Family::Normal | Family::StudentT) {
            return bad("family", "multivariate data are fitted with family = \"normal\" or \"t\"".into());
        }
        if self.engine == EngineKind::CudaStreams {
            return bad(
                "control$engine",
                "= \"cuda-streams\" does not fit multivariate data: use \"cuda-batched\" or \"cpu\"".into(),
            );
        }

        let boxes = self.noise_boxes.len();
        if !(boxes <= 1 || boxes == self.datasets.len()) {
            return bad("noise.support", format!("{boxes} boxes for {} datasets", self.datasets.len()));
        }
        let d = self.datasets.first().map_or(0, |m| m.d);
        if let Some(i) = self.datasets.iter().position(|m| m.d != d || m.values.len() != m.n.saturating_mul(m.d)) {
            return bad("datasets", format!("dataset {} is not a matrix of {d} variables", i + 1));
        }
        let weights = self.weights.len();
        if weights != 0 && weights != self.datasets.len() {
            return bad("weights", format!("weights for {weights} datasets, not {}", self.datasets.len()));
        }
        let given = self.given_starts.len();
        if given != 0 && given != self.datasets.len() {
            return bad("init", format!("starts for {given} datasets, not {}", self.datasets.len()));
        }
        let t = self.model().t;
        let shaped = |p: &MvParams| {
            p.d == d
                && self.settings.components.contains(&p.k)
                && p.alpha.len() == p.k
                && p.mu.len() == p.k * d
                && p.sigma.len() == p.k * d * d
                && (p.df.is_empty() || (t && p.df.len() == p.k))
                && p.alpha.iter().chain(&p.mu).chain(&p.sigma).all(|v| v.is_finite())
        };
        if self.given_starts.iter().flatten().any(|p| !shaped(p)) {
            return bad("init", format!("a start is not a mixture of {d} variables and one of the call's K"));
        }
        let most = self.given_starts.iter().map(Vec::len).max().unwrap_or(0) as u64;
        if self.given_from().saturating_add(most) > u64::from(u32::MAX) {
            return bad("init", "too many starts to number".into());
        }
        Ok(())
    }

    /// The index of the first given start: after every random start of
    /// every round (the random starts are the draws they are without
    /// `init`).
    pub fn given_from(&self) -> u64 {
        // with short runs, a restart round's draws skip those continued:
        // every draw is below the short runs' count plus the rounds'
        let s = &self.settings;
        let short = s.components.iter().map(|&k| s.short_runs.for_k(k, s.starts)).max().unwrap_or(0);
        u64::from(s.starts) * (u64::from(s.restarts) + 1) + u64::from(short)
    }

    /// Dataset `i`'s given starts of `k` components, with their indices.
    fn given_of(&self, i: usize, k: usize) -> impl Iterator<Item = (u32, &MvParams)> {
        let from = self.given_from();
        self.given_starts
            .get(i)
            .into_iter()
            .flatten()
            .filter(move |p| p.k == k)
            .enumerate()
            .map(move |(j, p)| (u32::try_from(from + j as u64).unwrap_or(u32::MAX), p))
    }
}

/// What becomes of one (dataset, start)'s run: `record(dataset, start,
/// its fit, None where it could not start)`.
type Record<'a> = dyn Fn(usize, u32, Option<MvStartFit>) + Sync + 'a;

/// Runs (dataset, start) pairs to a number of EM iterations on the call's
/// engine, each outcome to a Record.
type RunWork<'a> = dyn Fn(&[(usize, u32)], u32, &Record) -> Result<(), Error> + 'a;

/// What a dataset's starts of one K have given so far.
#[derive(Default)]
struct Tally {
    /// The leading start: (admissible, its fit, its index).
    best: Option<(bool, MvStartFit, u32)>,
    /// Every finished start's (log-likelihood, admissible).
    finished: Vec<(f64, bool)>,
    run: u32,
    /// How the lowest-numbered start that degenerated did, for the message
    /// of a failed fit (the lowest, not the first recorded: starts finish in
    /// an order that depends on threads).
    failure: Option<(u32, Degenerate)>,
}

impl Tally {
    fn record(&mut self, start: u32, fit: Option<MvStartFit>, admissible: bool) {
        self.run += 1;
        let Some(fit) = fit else {
            self.degenerated(start, Degenerate::NoStart);
            return;
        };
        match fit.outcome {
            Outcome::Failed(why) => {
                self.degenerated(start, why);
                return;
            }
            Outcome::Cancelled => return,
            Outcome::Converged | Outcome::MaxIters => {}
        }
        self.finished.push((fit.loglik, admissible));
        let better = match &self.best {
            None => true,
            Some((a, b, s)) => {
                (admissible, fit.loglik.total_cmp(&b.loglik), s.cmp(&start))
                    > (*a, std::cmp::Ordering::Equal, std::cmp::Ordering::Equal)
            }
        };
        if better {
            self.best = Some((admissible, fit, start));
        }
    }

    fn degenerated(&mut self, start: u32, why: Degenerate) {
        if self.failure.is_none_or(|(first, _)| start < first) {
            self.failure = Some((start, why));
        }
    }

    fn has_admissible(&self) -> bool {
        self.best.as_ref().is_some_and(|b| b.0)
    }
}

/// Fits every dataset of `job` on `threads` threads; one fit per dataset,
/// in order.
pub fn fit_mv(job: &MvJob, threads: usize, cancel: &AtomicBool, counters: &Counters) -> Result<Vec<MvFit>, Error> {
    job.validate()?;
    let s = &job.settings;
    let started = std::time::Instant::now();
    let common = job.structure == Structure::Spherical;
    let prepared = queue::map(job.datasets.len(), threads, cancel, |i| {
        let m = &job.datasets[i];
        let w = job.weights.get(i).copied().flatten();
        let data = MvData::prepare(m.values, m.n, m.d, w, common, s.noise)?;
        let noise_box = match job.noise_boxes.as_slice() {
            [one] => one.as_ref(),
            each => each.get(i).and_then(Option::as_ref),
        };
        match noise_box {
            Some(b) if s.noise => data.with_noise_box(b),
            _ => Ok(data),
        }
    })?;
    let rescaled = counters.lap("rescale", started);
    let gpus = match job.engine {
        EngineKind::CudaBatched => Some(MvGpus::new(&s.devices, job.datasets.first().map_or(1, |m| m.d))?),
        _ => None,
    };
    counters.lap("setup GPU", rescaled);
    let per_k: Vec<usize> = s.components.iter().map(|&k| if k == 1 { 1 } else { s.starts as usize }).collect();
    let given = (0..prepared.len()).map(|i| s.components.iter().map(|&k| job.given_of(i, k).count()).sum::<usize>());
    counters.total.fetch_add(per_k.iter().sum::<usize>() * prepared.len() + given.sum::<usize>(), Ordering::Relaxed);
    let mut by_k: Vec<Vec<MvFit>> = Vec::with_capacity(s.components.len());
    for (&k, &starts) in s.components.iter().zip(&per_k) {
        by_k.push(fit_k(job, &prepared, k, starts as u32, gpus.as_ref(), threads, cancel, counters)?);
    }
    let engine_done = counters.lap("engine", started);
    let fits = choose_k(by_k, s.criterion);
    counters.lap("choose_k", engine_done);
    Ok(fits)
}

/// Every dataset's fit with `k` components.
#[allow(clippy::too_many_arguments)]
fn fit_k(
    job: &MvJob,
    prepared: &[Result<MvData, String>],
    k: usize,
    starts: u32,
    gpus: Option<&MvGpus>,
    threads: usize,
    cancel: &AtomicBool,
    counters: &Counters,
) -> Result<Vec<MvFit>, Error> {
    let s = &job.settings;
    let model = job.model();
    let df = job.start_df(k);
    let need = k * (job.datasets.first().map_or(1, |m| m.d) + 1);
    let fittable: Vec<bool> = prepared.iter().map(|p| p.as_ref().is_ok_and(|m| m.positive >= need)).collect();
    let tallies: Vec<Mutex<Tally>> = prepared.iter().map(|_| Mutex::new(Tally::default())).collect();
    // a start's initial parameters: drawn, or the user's
    let draw = |d: usize, start: u32| {
        let data = prepared.get(d).and_then(|p| p.as_ref().ok())?;
        match job.given_of(d, k).find(|&(i, _)| i == start) {
            Some((_, given)) => given_params(data, given, job.structure, &df),
            None => initial_params(data, k, job.structure, &df, s.seed, start),
        }
    };
    // (dataset, start) pairs run to `max_iters` on the call's engine, each
    // outcome to `record`
    let run = |work: &[(usize, u32)], max_iters: u32, record: &Record| -> Result<(), Error> {
        match gpus {
            None => queue::for_each_index(work.len(), threads, cancel, |item| {
                let Some(&(d, start)) = work.get(item) else { return };
                let Some(Ok(data)) = prepared.get(d) else { return };
                record(d, start, draw(d, start).map(|p| run_em(data, p, model, max_iters, s.epsilon, cancel)));
                counters.done.fetch_add(1, Ordering::Relaxed);
            }),
            // the starts on the host (the same draws as the CPU engine's),
            // the fits on the GPUs
            Some(gpus) => {
                let fitting = (k, model, max_iters, s.epsilon);
                gpus.run(prepared, work, draw, record, fitting, threads, cancel, counters)
            }
        }
    };
    let mut todo: Vec<usize> = (0..prepared.len()).filter(|&i| fittable[i]).collect();
    let short = s.short_runs.for_k(k, starts);
    // with short runs (emEM, short.rs): per dataset, the draws whose short
    // runs ranked best, to be continued; `None`: the rounds' draws in order
    let continued = if short > 0 && !todo.is_empty() {
        Some(short_runs(&todo, prepared, short, starts, &run, &tallies, job, counters)?)
    } else {
        None
    };
    if cancel.load(Ordering::Relaxed) {
        return Err(Error::Cancelled);
    }
    // a dataset whose first round is recorded whole, with an admissible
    // start, is final (restart rounds take only the others): it is
    // finished at once, on the thread that recorded its last start, so that
    // on the GPU its standard errors are computed while later launches run
    let finals: Vec<Mutex<Option<MvFit>>> = prepared.iter().map(|_| Mutex::new(None)).collect();
    let mut drawn = vec![0u32; prepared.len()];
    let mut round = 0;
    while !todo.is_empty() {
        if round > 0 {
            counters.total.fetch_add(todo.len() * starts as usize, Ordering::Relaxed);
        }
        // each dataset's (dataset, start) pairs together: the round's starts
        // (its continued short runs' draws; in a restart round with short
        // runs, the next draws in index order not continued already), and
        // in the first round the user's starts of this K
        let work: Vec<(usize, u32)> = todo
            .iter()
            .flat_map(|&d| {
                let given = job.given_of(d, k).map(|(i, _)| i).filter(|_| round == 0);
                let draws: Vec<u32> = match &continued {
                    None => (round * starts..(round + 1) * starts).collect(),
                    Some(best) if round == 0 => best[d].clone(),
                    Some(best) => next_draws(&mut drawn[d], &best[d], starts),
                };
                draws.into_iter().chain(given).map(move |start| (d, start))
            })
            .collect();
        // the first round's starts of each dataset (restart rounds finish
        // after the engine, as before)
        let mut expected = vec![0u32; prepared.len()];
        if round == 0 {
            for &(d, _) in &work {
                expected[d] += 1;
            }
        }
        let record = |d: usize, start: u32, fit: Option<MvStartFit>| {
            let Some(Ok(data)) = prepared.get(d) else { return };
            if let Some(f) = &fit {
                counters.em_iterations.fetch_add(f.iterations as usize + 1, Ordering::Relaxed);
            }
            let admissible = fit.as_ref().is_some_and(|f| !spurious(&s.screen, &f.params, data.total));
            let settled = {
                let mut tally = tallies[d].lock().unwrap_or_else(PoisonError::into_inner);
                tally.record(start, fit, admissible);
                let whole = expected.get(d).is_some_and(|&e| e > 0 && tally.run == e);
                (whole && tally.has_admissible()).then(|| std::mem::take(&mut *tally))
            };
            if let (Some(tally), Some(slot)) = (settled, finals.get(d)) {
                let fit = finish(job, data, k, tally);
                *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(fit);
            }
        };
        run(&work, s.max_iters, &record)?;
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        round += 1;
        if round > s.restarts {
            break;
        }
        todo.retain(|&d| {
            finals[d].lock().unwrap_or_else(PoisonError::into_inner).is_none()
                && !tallies[d].lock().unwrap_or_else(PoisonError::into_inner).has_admissible()
        });
    }
    // on every thread, the datasets not finished already: the standard
    // errors take a pass over each dataset with O(parameters²) work per
    // observation
    let finishing = std::time::Instant::now();
    let fits = queue::map(prepared.len(), threads, cancel, |i| {
        if let Some(fit) = finals[i].lock().unwrap_or_else(PoisonError::into_inner).take() {
            return fit;
        }
        let tally = std::mem::take(&mut *tallies[i].lock().unwrap_or_else(PoisonError::into_inner));
        let m = &job.datasets[i];
        match &prepared[i] {
            Err(why) => MvFit::without_params(m.n, m.d, k, Status::Invalid, why.clone()),
            Ok(data) if data.positive < need => MvFit::without_params(
                m.n,
                m.d,
                k,
                Status::Invalid,
                format!(
                    "{} observations{} are too few for {k} components of {} variables (at least {need})",
                    data.positive,
                    if data.w.is_some() { " of positive weight" } else { "" },
                    m.d
                ),
            ),
            Ok(data) => finish(job, data, k, tally),
        }
    })?;
    counters.lap("finish (standard errors)", finishing);
    Ok(fits)
}

/// A restart round's draws after short runs: the `count` lowest draw
/// indices from `*from` on that were not `continued`; `*from` moves past
/// them.
fn next_draws(from: &mut u32, continued: &[u32], count: u32) -> Vec<u32> {
    let draws: Vec<u32> = (*from..).filter(|i| !continued.contains(i)).take(count as usize).collect();
    *from = draws.last().map_or(*from, |&i| i + 1);
    draws
}

/// emEM's short runs (short.rs) of the datasets `todo`: draws 0..`short`
/// each run for control$short.iters EM iterations; returns, per dataset,
/// the draws of its best `starts` short runs, best first (the univariate
/// rounds' `Leaders`: admissible ones first, then by log-likelihood, ties
/// to the lower draw, an order that depends on the runs' results alone). A short run that
/// degenerates is remembered in its dataset's tally, for the message of a
/// fit none of whose starts finishes; the short runs are counted as starts
/// to run and their passes as E-step passes, not as the fit's starts.
#[allow(clippy::too_many_arguments)]
fn short_runs(
    todo: &[usize],
    prepared: &[Result<MvData, String>],
    short: u32,
    starts: u32,
    run: &RunWork,
    tallies: &[Mutex<Tally>],
    job: &MvJob,
    counters: &Counters,
) -> Result<Vec<Vec<u32>>, Error> {
    let s = &job.settings;
    counters.total.fetch_add(todo.len() * short as usize, Ordering::Relaxed);
    let ranked: Vec<Mutex<Leaders>> = prepared.iter().map(|_| Mutex::new(Leaders::new(starts as usize))).collect();
    let work: Vec<(usize, u32)> = todo.iter().flat_map(|&d| (0..short).map(move |j| (d, j))).collect();
    let record = |d: usize, start: u32, fit: Option<MvStartFit>| {
        let Some(fit) = fit else {
            if let Some(t) = tallies.get(d) {
                t.lock().unwrap_or_else(PoisonError::into_inner).degenerated(start, Degenerate::NoStart);
            }
            return;
        };
        counters.em_iterations.fetch_add(fit.iterations as usize + 1, Ordering::Relaxed);
        match fit.outcome {
            Outcome::Failed(why) => {
                if let Some(t) = tallies.get(d) {
                    t.lock().unwrap_or_else(PoisonError::into_inner).degenerated(start, why);
                }
            }
            Outcome::Cancelled => {}
            Outcome::Converged | Outcome::MaxIters => {
                let Some(Ok(data)) = prepared.get(d) else { return };
                let admissible = !spurious(&s.screen, &fit.params, data.total);
                if let Some(r) = ranked.get(d) {
                    r.lock().unwrap_or_else(PoisonError::into_inner).offer(start, !admissible, fit.loglik);
                }
            }
        }
    };
    run(&work, s.short_runs.iters.min(s.max_iters), &record)?;
    Ok(ranked
        .into_iter()
        .map(|r| r.into_inner().unwrap_or_else(PoisonError::into_inner).runs.iter().map(|run| run.0).collect())
        .collect())
}

/// A dataset's fit from its starts' tally.
fn finish(job: &MvJob, data: &MvData, k: usize, tally: Tally) -> MvFit {
    let model = job.model();
    let structure = job.structure;
    let ok = tally.finished.len() as u32;
    let spurious_starts = tally.finished.iter().filter(|f| !f.1).count() as u32;
    let Some((admissible, best, start)) = tally.best else {
        let why = tally.failure.map_or(Degenerate::NoStart, |(_, why)| why).describe();
        let mut f =
            MvFit::without_params(data.n, data.d, k, Status::Failed, format!("every start degenerated ({why})"));
        f.starts_run = tally.run;
        return f;
    };
    let reach = best.loglik - SAME_OPTIMUM * (1.0 + best.loglik.abs());
    let at_best = tally.finished.iter().filter(|f| f.1 == admissible && f.0 >= reach).count() as u32;
    let status = if best.outcome == Outcome::Converged { Status::Converged } else { Status::MaxIters };
    let mut message = match (admissible, status) {
        (false, _) => {
            "no start passed the spurious-solution screen: the fit returned has a degenerate component".into()
        }
        (true, Status::MaxIters) => "stopped at max.iters before converging".into(),
        _ => String::new(),
    };
    // responsibilities are the same on standardised data
    let log_map = e_step(data, &best.params).map_or(f64::NAN, |st| st.log_map);
    let params = best.params.to_data_units(&data.scaling).canonical();
    let covariance = job.settings.standard_errors.then(|| covariance(data, &params, model));
    if let Some(Err(why)) = &covariance {
        // as the univariate fits say it (finish.rs's with_information)
        let df = model.estimates_df();
        let names = free_parameter_names(structure, k, data.d, data.log_noise.is_some(), df, &job.variables);
        let no_se = format!("no standard errors: {}", describe(*why, &names));
        message = if message.is_empty() { no_se } else { format!("{message}; {no_se}") };
    }
    MvFit {
        n: data.n,
        nobs: data.total,
        d: data.d,
        k,
        status,
        message,
        params: Some(params),
        loglik: best.loglik - data.scaling.log_jacobian(data.total),
        log_map,
        iterations: best.iterations,
        best_start: Some(start),
        starts_run: tally.run,
        starts_ok: ok,
        starts_at_best: at_best,
        spurious: !admissible,
        spurious_starts,
        free_parameters: model.free_parameters(k, data.d) + usize::from(data.log_noise.is_some()),
        noise_support: data.log_noise.map(|_| data.support.clone()),
        covariance,
        by_k: Vec::new(),
        other_k: Vec::new(),
    }
}

/// With several Ks, each dataset's fit of lowest `criterion` among those
/// that are not spurious (any, if all are), the others kept; with one K,
/// the fits.
fn choose_k(by_k: Vec<Vec<MvFit>>, criterion: Criterion) -> Vec<MvFit> {
    if by_k.len() == 1 {
        return by_k.into_iter().next().unwrap_or_default();
    }
    let n = by_k.first().map_or(0, Vec::len);
    let mut columns: Vec<std::vec::IntoIter<MvFit>> = by_k.into_iter().map(Vec::into_iter).collect();
    (0..n)
        .map(|_| {
            let mut fits: Vec<MvFit> = columns.iter_mut().filter_map(Iterator::next).collect();
            let summaries: Vec<KSummary> = fits.iter().map(MvFit::summary).collect();
            let rank = |f: &MvFit| {
                let v = f.summary().value(criterion);
                (f.params.is_none(), f.spurious, if v.is_nan() { f64::INFINITY } else { v })
            };
            let chosen = (0..fits.len())
                .min_by(|&a, &b| {
                    let (ra, rb) = (rank(&fits[a]), rank(&fits[b]));
                    (ra.0, ra.1).cmp(&(rb.0, rb.1)).then(ra.2.total_cmp(&rb.2))
                })
                .unwrap_or(0);
            let mut fit = fits.remove(chosen);
            fit.by_k = summaries;
            fit.other_k = fits;
            fit
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_fit_tells_of_its_lowest_numbered_start_whatever_the_order() {
        let mut a = Tally::default();
        a.record(5, None, false);
        a.degenerated(2, Degenerate::WeightCollapsed);
        a.degenerated(9, Degenerate::SpreadCollapsed);
        let mut b = Tally::default();
        b.degenerated(9, Degenerate::SpreadCollapsed);
        b.degenerated(2, Degenerate::WeightCollapsed);
        b.record(5, None, false);
        assert_eq!(a.failure, Some((2, Degenerate::WeightCollapsed)));
        assert_eq!(a.failure, b.failure);
        assert_eq!((a.run, b.run), (1, 1));
    }

    #[test]
    fn restart_rounds_after_short_runs_take_the_draws_not_continued_in_order() {
        let continued = [4, 0, 7, 2];
        let mut from = 0;
        assert_eq!(next_draws(&mut from, &continued, 3), [1, 3, 5]);
        assert_eq!(next_draws(&mut from, &continued, 3), [6, 8, 9]);
        assert_eq!(from, 10);
        assert_eq!(next_draws(&mut from, &continued, 0), Vec::<u32>::new());
        assert_eq!(from, 10);
    }
}
