//! R's settings into the core's, in one conversion: the named list R's
//! `core_settings()` (R/control.R) makes of bulkem()'s arguments and the
//! checked `bulkem_control()`, by the R names, becomes one `Call` (the
//! core's `Settings`, the engine, the threads and the `Tuning`). R has
//! checked every value; what is read here is only converted, and a missing
//! or mistyped one is a bug of the R side (an internal error). Also the
//! process-wide knobs, read once when the package loads.

use std::collections::HashMap;

use bulkem_core::screen::Screen;
use bulkem_core::{
    Censored, Criterion, EngineKind, Error, Family, Fixed, MvParams, Params, Settings, ShortRuns, StartScheme, Support,
    Tuning, Window, MAX_COMPONENTS,
};
use extendr_api::prelude::*;

use crate::error::Stop;

/// One call's settings, converted.
pub(crate) struct Call {
    pub settings: Settings,
    pub engine: EngineKind,
    /// Host threads (R resolved the default: parallelly's count).
    pub threads: usize,
    pub tuning: Tuning,
    /// `noise.support`: one support for every dataset, one per dataset, or
    /// none (each dataset's range); `None` for a dataset: its range.
    pub noise_supports: Vec<Option<Support>>,
    /// `init`, as R flattens it (`given_starts_for`).
    given: Vec<f64>,
    /// `fixed`, as R flattens it (`fixed_for`).
    fixed: Vec<f64>,
    /// `truncation`: one window for every dataset, one per dataset, or
    /// none; `None` for a dataset: not truncated.
    truncation: Vec<Option<Window>>,
    /// `censored`: per dataset, the windows its censored observations are
    /// known to lie in, with their counts (Job::censored); empty: none in
    /// the call.
    pub censored: Vec<Vec<Censored>>,
}

impl Call {
    /// The starting values the user gives (`init`) by dataset, for a call
    /// on `datasets` datasets (Job::given_starts). R flattens them into one
    /// vector of records, each (dataset from 1, K, K weights, K means, K
    /// shapes, K degrees of freedom (NaN: not given), the noise weight (NaN:
    /// not given)), and checked them.
    /// The values held fixed (`fixed`) by dataset, for a call on
    /// `datasets` datasets of one K (Job::fixed): R flattens them into every
    /// dataset's K weights, K means and K shapes one after the other (NaN
    /// where free; all NaN: nothing fixed for that dataset), and checked them.
    pub fn fixed_for(&self, datasets: usize) -> Result<Vec<Option<Fixed>>, Stop> {
        if self.fixed.is_empty() {
            return Ok(Vec::new());
        }
        match self.settings.components[..] {
            [k] => self.fixed_by_k(&vec![k; datasets]),
            _ => Err(internal("fixed: values for a call of several Ks".into())),
        }
    }

    /// `fixed_for` with dataset d's rows of `ks[d]` components (0: none,
    /// the bootstrap's datasets without a null).
    pub fn fixed_by_k(&self, ks: &[usize]) -> Result<Vec<Option<Fixed>>, Stop> {
        if self.fixed.is_empty() {
            return Ok(Vec::new());
        }
        let mut rest = &self.fixed[..];
        let mut out = Vec::with_capacity(ks.len());
        for &k in ks {
            let (row, next) = rest.split_at_checked(3 * k).filter(|_| k <= MAX_COMPONENTS).ok_or_else(|| {
                internal(format!("fixed: {} values left for a dataset of {k} components", rest.len()))
            })?;
            rest = next;
            let mut f = Fixed::none(k);
            f.0.alpha[..k].copy_from_slice(&row[..k]);
            f.0.mu[..k].copy_from_slice(&row[k..2 * k]);
            f.0.shape[..k].copy_from_slice(&row[2 * k..]);
            out.push((!row.iter().all(|v| v.is_nan())).then_some(f));
        }
        if !rest.is_empty() {
            return Err(internal(format!("fixed: {} values left over", rest.len())));
        }
        Ok(out)
    }

    pub fn given_starts_for(&self, datasets: usize) -> Result<Vec<Vec<Params>>, Stop> {
        let mut out = vec![Vec::new(); if self.given.is_empty() { 0 } else { datasets }];
        let mut rest = &self.given[..];
        while let [d, k, tail @ ..] = rest {
            let (d, k) = (whole(*d).map(|d| d as usize), whole(*k).map(|k| k as usize));
            let (Some(d), Some(k)) = (d, k) else { return Err(internal("init: a record's dataset or K".into())) };
            let width = 4 * k + 1;
            if !(1..=datasets).contains(&d) || !(1..=MAX_COMPONENTS).contains(&k) || tail.len() < width {
                return Err(internal(format!("init: a record for dataset {d} of {k} components")));
            }
            let (record, next) = tail.split_at(width);
            let part = |i: usize| &record[i * k..(i + 1) * k];
            let mut p = Params::zeroed(k);
            p.alpha[..k].copy_from_slice(part(0));
            p.mu[..k].copy_from_slice(part(1));
            p.shape[..k].copy_from_slice(part(2));
            for (to, &df) in p.df[..k].iter_mut().zip(part(3)) {
                *to = if df.is_nan() { 0.0 } else { df };
            }
            let noise = record[4 * k];
            p.noise = if noise.is_nan() { 0.0 } else { noise };
            out[d - 1].push(p);
            rest = next;
        }
        if !rest.is_empty() {
            return Err(internal("init: a short record".into()));
        }
        Ok(out)
    }

    /// The starting values the user gives (`init`) for a multivariate call
    /// on `datasets` datasets of `d` variables (MvJob::given_starts). R
    /// flattens them into records, each (dataset from 1, K, K weights, K × d
    /// means component by component, K d × d covariances column-major, K
    /// degrees of freedom (NaN: not given), the noise weight (NaN: not
    /// given)), and checked them.
    pub fn given_mv_starts_for(&self, datasets: usize, d: usize) -> Result<Vec<Vec<MvParams>>, Stop> {
        let mut out = vec![Vec::new(); if self.given.is_empty() { 0 } else { datasets }];
        let mut rest = &self.given[..];
        while let [ds, k, tail @ ..] = rest {
            let (ds, k) = (whole(*ds).map(|v| v as usize), whole(*k).map(|v| v as usize));
            let (Some(ds), Some(k)) = (ds, k) else { return Err(internal("init: a record's dataset or K".into())) };
            let width = k * (2 + d + d * d) + 1;
            if !(1..=datasets).contains(&ds) || !(1..=MAX_COMPONENTS).contains(&k) || tail.len() < width {
                return Err(internal(format!("init: a record for dataset {ds} of {k} components")));
            }
            let (record, next) = tail.split_at(width);
            let (alpha, record) = record.split_at(k);
            let (mu, record) = record.split_at(k * d);
            let (sigma, record) = record.split_at(k * d * d);
            let (df, noise) = record.split_at(k);
            let noise = noise.first().copied().filter(|v| !v.is_nan()).unwrap_or(0.0);
            out[ds - 1].push(MvParams {
                k,
                d,
                alpha: alpha.to_vec(),
                mu: mu.to_vec(),
                sigma: sigma.to_vec(),
                noise,
                df: if df.iter().all(|v| v.is_nan()) { Vec::new() } else { df.to_vec() },
            });
            rest = next;
        }
        if !rest.is_empty() {
            return Err(internal("init: a short record".into()));
        }
        Ok(out)
    }

    /// The truncation windows of a call on `datasets` datasets
    /// (Job::truncation).
    pub fn truncation_for(&self, datasets: usize) -> Vec<Option<Window>> {
        match self.truncation[..] {
            [one] => vec![one; datasets],
            _ => self.truncation.clone(),
        }
    }

    /// The noise supports of a call on `datasets` datasets (Job::noise_supports).
    pub fn noise_supports_for(&self, datasets: usize) -> Vec<Option<Support>> {
        match self.noise_supports[..] {
            [one] => vec![one; datasets],
            _ => self.noise_supports.clone(),
        }
    }
}

/// `noise.support` as R passes it, (lower, upper) pairs one after the
/// other; a pair of NAs: that dataset's range. R checked them.
fn supports(flat: &[f64]) -> Result<Vec<Option<Support>>, Stop> {
    flat.chunks(2)
        .map(|pair| match *pair {
            [lo, hi] if lo.is_nan() && hi.is_nan() => Ok(None),
            [lo, hi] => Support::new(lo, hi).map(Some).ok_or_else(|| {
                Stop::from(Error::Argument {
                    arg: "noise.support",
                    message: format!("must be finite intervals, lower below upper, not ({lo}, {hi})"),
                })
            }),
            _ => Err(internal("noise.support has an odd length".into())),
        })
        .collect()
}

/// `truncation` as R passes it, (lower, upper) pairs one after the other
/// (−Inf, Inf for an open side); a pair of NAs: that dataset is not
/// truncated. The core checks the windows (Job::validate).
fn windows(flat: &[f64]) -> Result<Vec<Option<Window>>, Stop> {
    flat.chunks(2)
        .map(|pair| match *pair {
            [lo, hi] if lo.is_nan() && hi.is_nan() => Ok(None),
            [lo, hi] => Ok(Some(Window { lo, hi })),
            _ => Err(internal("truncation has an odd length".into())),
        })
        .collect()
}

/// A list R made for the glue (settings, the bootstrap's plan), its
/// elements by name; a missing or mistyped element is a bug of the R side.
pub(crate) struct Named(HashMap<String, Robj>);

/// `x` as a whole number that fits a u32 (R checked the range).
fn whole(x: f64) -> Option<u32> {
    (x.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&x)).then_some(x as u32)
}

impl Named {
    pub(crate) fn of(list: &List) -> Named {
        Named(list.iter().map(|(name, value)| (name.to_string(), value)).collect())
    }

    fn get(&self, name: &str) -> Result<&Robj, Stop> {
        self.0.get(name).ok_or_else(|| internal(format!("the list from R lacks `{name}`")))
    }

    fn real(&self, name: &str) -> Result<f64, Stop> {
        let v = self.get(name)?;
        v.as_real().or_else(|| v.as_integer().map(f64::from)).ok_or_else(|| mistyped(name, "a number"))
    }

    /// A list of numeric vectors, each (lower, upper, count) triples one
    /// after the other: one list of counted windows per element (NULL or an
    /// empty list: none).
    fn window_lists(&self, name: &str) -> Result<Vec<Vec<Censored>>, Stop> {
        let v = self.get(name)?;
        if v.is_null() {
            return Ok(Vec::new());
        }
        let list = v.as_list().ok_or_else(|| mistyped(name, "a list"))?;
        list.values()
            .map(|e| {
                let flat = e.as_real_vector().ok_or_else(|| mistyped(name, "a list of numeric vectors"))?;
                if flat.len() % 3 != 0 {
                    return Err(internal(format!("{name} has an element not of triples")));
                }
                Ok(flat.chunks(3).map(|t| Censored { window: Window { lo: t[0], hi: t[1] }, count: t[2] }).collect())
            })
            .collect()
    }

    pub(crate) fn reals(&self, name: &str) -> Result<Vec<f64>, Stop> {
        let v = self.get(name)?;
        if v.is_null() {
            return Ok(Vec::new());
        }
        v.as_real_vector()
            .or_else(|| v.as_integer_vector().map(|i| i.into_iter().map(f64::from).collect()))
            .ok_or_else(|| mistyped(name, "numbers"))
    }

    pub(crate) fn count(&self, name: &str) -> Result<u32, Stop> {
        whole(self.real(name)?).ok_or_else(|| mistyped(name, "a whole number"))
    }

    /// The element `name`, unless it is NULL or absent (a control list
    /// whose element was set to NULL in R loses it): bulkem()'s default.
    fn optional(&self, name: &str) -> Option<&Robj> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    /// A whole number, or `None` for NULL (see `optional`).
    fn optional_count(&self, name: &str) -> Result<Option<u32>, Stop> {
        self.optional(name).map(|_| self.count(name)).transpose()
    }

    pub(crate) fn counts(&self, name: &str) -> Result<Vec<usize>, Stop> {
        self.reals(name)?
            .into_iter()
            .map(|x| whole(x).map(|c| c as usize).ok_or_else(|| mistyped(name, "whole numbers")))
            .collect()
    }

    fn flag(&self, name: &str) -> Result<bool, Stop> {
        self.get(name)?.as_bool().ok_or_else(|| mistyped(name, "TRUE or FALSE"))
    }

    /// A character vector; NULL: none.
    pub(crate) fn texts(&self, name: &str) -> Result<Vec<String>, Stop> {
        let v = self.get(name)?;
        if v.is_null() {
            return Ok(Vec::new());
        }
        let strings = v.as_str_vector().ok_or_else(|| mistyped(name, "strings"))?;
        Ok(strings.into_iter().map(str::to_string).collect())
    }

    pub(crate) fn text(&self, name: &str) -> Result<&str, Stop> {
        self.get(name)?.as_str().ok_or_else(|| mistyped(name, "a string"))
    }
}

fn internal(message: String) -> Stop {
    Error::Internal(message).into()
}

fn mistyped(name: &str, what: &str) -> Stop {
    internal(format!("the setting `{name}` is not {what}"))
}

impl Call {
    /// `list`: bulkem()'s `family`, `num.components`, `max.iters`,
    /// `random.inits`, `epsilon`, `seed`, and bulkem_control()'s settings
    /// by their names, with `engine` the engine chosen (not "auto").
    pub fn from_r(list: &List) -> Result<Call, Stop> {
        let s = Named::of(list);
        let family = s.text("family")?;
        let family = Family::from_name(family).ok_or_else(|| internal(format!("unknown family \"{family}\"")))?;
        let engine = s.text("engine")?;
        let engine = EngineKind::from_name(engine).ok_or_else(|| internal(format!("unknown engine \"{engine}\"")))?;
        let criterion = s.text("criterion")?;
        let criterion =
            Criterion::from_name(criterion).ok_or_else(|| internal(format!("unknown criterion \"{criterion}\"")))?;
        let start_scheme = match s.optional("starts") {
            None => StartScheme::default_for(family),
            Some(_) => {
                let scheme = s.text("starts")?;
                StartScheme::from_name(scheme).ok_or_else(|| internal(format!("unknown start scheme \"{scheme}\"")))?
            }
        };
        let settings = Settings {
            family,
            components: s.counts("num.components")?,
            max_iters: s.count("max.iters")?,
            epsilon: s.real("epsilon")?,
            starts: s.count("random.inits")?,
            seed: s.real("seed")? as u64,
            start_scheme,
            mixed_precision: s.text("precision")? == "mixed",
            accelerate: s.flag("accelerate")?,
            keep_starts: s.flag("keep.starts")?,
            screen: Screen {
                ratio: s.real("spurious.ratio")?,
                count: s.real("spurious.count")?,
                count_ratio: s.real("spurious.count.ratio")?,
                distinct: s.real("spurious.distinct")?,
            },
            restarts: s.count("restarts")?,
            refine: s.count("refine")?,
            short_runs: ShortRuns { runs: s.optional_count("short.runs")?, iters: s.count("short.iters")? },
            devices: s.counts("devices")?,
            standard_errors: s.flag("standard.errors")?,
            noise: s.flag("noise")?,
            df: s.reals("df")?,
            criterion,
            equal_scale: s.flag("equal.scale")?,
        };
        let threads = match s.count("threads")? {
            0 => bulkem_core::default_threads(),
            t => t as usize,
        };
        let noise_supports = supports(&s.reals("noise.support")?)?;
        let given = s.reals("init")?;
        let fixed = s.reals("fixed")?;
        let truncation = windows(&s.reals("truncation")?)?;
        let censored = s.window_lists("censored")?;
        Ok(Call {
            settings,
            engine,
            threads,
            tuning: tuning(s.get("tuning")?)?,
            noise_supports,
            given,
            fixed,
            truncation,
            censored,
        })
    }
}

/// The knobs of `control$tuning` (a named list), and where it names none,
/// the environment variable of each (`BULKEM_CHUNK_BYTES`, ...), read here,
/// once per call, so that the core reads no environment.
fn tuning(given: &Robj) -> Result<Tuning, Stop> {
    let mut t = Tuning::default();
    let given: Vec<(String, String)> = match given.as_list() {
        Some(l) => l
            .iter()
            .map(|(name, v)| {
                let text = v
                    .as_str()
                    .map(str::to_string)
                    .or_else(|| v.as_real().map(|x| format!("{x}")))
                    .or_else(|| v.as_integer().map(|x| x.to_string()))
                    .or_else(|| v.as_bool().map(|b| if b { "1".into() } else { "0".into() }))
                    .unwrap_or_default();
                (name.to_string(), text)
            })
            .collect(),
        None => Vec::new(),
    };
    let bad = |message: String| Stop::from(Error::Argument { arg: "control$tuning", message });
    for (name, value) in &given {
        t.set(name, value).map_err(bad)?;
    }
    for name in Tuning::NAMES {
        if given.iter().any(|(n, _)| n == name) {
            continue;
        }
        if let Ok(value) = std::env::var(Tuning::variable(name)) {
            // an unusable variable is ignored, as before it was read here
            let _ = t.set(name, &value);
        }
    }
    Ok(t)
}

/// Process-wide knobs, for tests and benchmarks: the E-step's vector width
/// (`BULKEM_CPU_VECTORS`: "avx2" or "none") and injected CUDA faults
/// (`BULKEM_CUDA_FAULT`, e.g. "no-driver"). Read once, when R loads the
/// package (src/entrypoint.c), before any E-step or GPU use.
#[no_mangle]
pub extern "C" fn bulkem_init_process_knobs() {
    match std::env::var("BULKEM_CPU_VECTORS").as_deref() {
        Ok("none") => bulkem_core::estep::cap_vector_width(0),
        Ok("avx2") => bulkem_core::estep::cap_vector_width(256),
        _ => {}
    }
    if let Ok(faults) = std::env::var("BULKEM_CUDA_FAULT") {
        bulkem_core::gpu::inject_faults(&faults);
    }
}
