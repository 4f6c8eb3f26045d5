//! Fits to R lists, built with R's C API directly: a call can return hundreds
//! of thousands of small lists, and extendr's wrappers spend microseconds on
//! each R object (their protection bookkeeping) where R's allocator spends
//! nanoseconds. Every allocation is stored at once into a protected parent.

use std::os::raw::{c_char, c_int};

use bulkem_core::{
    free_parameter_names, parameter_names, Criterion, Family, Fit, Outcome, Params, Status, MAX_COMPONENTS,
};
use extendr_api::{Attributes, Robj};
use extendr_ffi::{
    cetype_t, R_ClassSymbol, R_DimNamesSymbol, R_DimSymbol, R_NaInt, R_NaReal, R_NamesSymbol, R_RowNamesSymbol,
    R_xlen_t, Rf_allocVector, Rf_install, Rf_mkCharLenCE, Rf_protect, Rf_setAttrib, Rf_unprotect, Rf_xlength, INTEGER,
    LOGICAL, REAL, SET_STRING_ELT, SET_VECTOR_ELT, SEXP, SEXPTYPE, STRING_ELT, TYPEOF, VECTOR_ELT,
};

/// Field names of a fit, in order (the 2015 names first); "shape" becomes
/// the family's shape name ("lambda", "sigma", or "shape" for the gamma).
/// With several Ks, CHOICE_FIELDS follow. See ?bulkem.
/// The code below finds each field by its name (`at`), never by a number.
const FIELDS: [&str; 36] = [
    "shape",
    "mu",
    "alpha",
    "init_shape",
    "init_mu",
    "init_alpha",
    "loglik",
    "num_iterations",
    "fit_success",
    "family",
    "n",
    "nobs",
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
    "loglik_spurious",
    "starts_run",
    "se",
    "vcov",
    "noise",
    "noise_support",
    "df",
    "tau",
    "equal_scale",
    "fixed",
    "truncation",
    "censored",
];
/// With several Ks: the K chosen, every K's summary, every K's fit (the
/// chosen one first, then the others by ascending K), each a list of
/// FIELDS, and the name of the criterion that chose (`criterion`).
const CHOICE_FIELDS: [&str; 4] = ["num_components", "by_k", "all_k", "criterion"];

/// The position of field `name` in FIELDS, then CHOICE_FIELDS; a name in
/// neither does not compile (the constant's evaluation fails).
const fn at(name: &str) -> usize {
    let mut i = 0;
    while i < FIELDS.len() + CHOICE_FIELDS.len() {
        let f = if i < FIELDS.len() { FIELDS[i] } else { CHOICE_FIELDS[i - FIELDS.len()] };
        if same(f.as_bytes(), name.as_bytes()) {
            return i;
        }
        i += 1;
    }
    panic!("no such field")
}

const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Where each field goes.
mod field {
    use super::at;
    pub const SHAPE: usize = at("shape");
    pub const MU: usize = at("mu");
    pub const ALPHA: usize = at("alpha");
    pub const INIT_SHAPE: usize = at("init_shape");
    pub const INIT_MU: usize = at("init_mu");
    pub const INIT_ALPHA: usize = at("init_alpha");
    pub const LOGLIK: usize = at("loglik");
    pub const NUM_ITERATIONS: usize = at("num_iterations");
    pub const FIT_SUCCESS: usize = at("fit_success");
    pub const FAMILY: usize = at("family");
    pub const N: usize = at("n");
    pub const NOBS: usize = at("nobs");
    pub const K: usize = at("k");
    pub const CONVERGED: usize = at("converged");
    pub const STATUS: usize = at("status");
    pub const MESSAGE: usize = at("message");
    pub const BEST_START: usize = at("best_start");
    pub const STARTS_OK: usize = at("starts_ok");
    pub const AIC: usize = at("aic");
    pub const BIC: usize = at("bic");
    pub const ICL: usize = at("icl");
    pub const STARTS_AT_BEST: usize = at("starts_at_best");
    pub const SPURIOUS: usize = at("spurious");
    pub const SPURIOUS_STARTS: usize = at("spurious_starts");
    pub const LOGLIK_SPURIOUS: usize = at("loglik_spurious");
    pub const STARTS_RUN: usize = at("starts_run");
    /// `se`, then `vcov` at SE + 1.
    pub const SE: usize = at("se");
    pub const VCOV: usize = at("vcov");
    pub const NOISE: usize = at("noise");
    pub const NOISE_SUPPORT: usize = at("noise_support");
    pub const DF: usize = at("df");
    pub const TAU: usize = at("tau");
    pub const EQUAL_SCALE: usize = at("equal_scale");
    pub const FIXED: usize = at("fixed");
    pub const TRUNCATION: usize = at("truncation");
    pub const CENSORED: usize = at("censored");
    // set_standard_errors writes `vcov` right after `se`
    const _: () = assert!(VCOV == SE + 1);
    pub const NUM_COMPONENTS: usize = at("num_components");
    pub const BY_K: usize = at("by_k");
    pub const ALL_K: usize = at("all_k");
    pub const CRITERION: usize = at("criterion");
}
/// Columns of `by_k`.
const BY_K_COLUMNS: [&str; 6] = ["K", "loglik", "aic", "bic", "icl", "status"];

unsafe fn strings(values: &[&str]) -> SEXP {
    let v = Rf_protect(Rf_allocVector(SEXPTYPE::STRSXP, values.len() as R_xlen_t));
    for (i, s) in values.iter().enumerate() {
        SET_STRING_ELT(
            v,
            i as R_xlen_t,
            Rf_mkCharLenCE(s.as_ptr() as *const c_char, s.len() as c_int, cetype_t::CE_UTF8),
        );
    }
    Rf_unprotect(1);
    v
}

/// A value as R stores it: NaN (no value) becomes R's NA.
///
/// # Safety
/// Reads R's NA_REAL: R must have started (it has, in any call from R).
unsafe fn na(x: f64) -> f64 {
    if x.is_nan() {
        R_NaReal
    } else {
        x
    }
}

unsafe fn reals(values: &[f64]) -> SEXP {
    let v = Rf_allocVector(SEXPTYPE::REALSXP, values.len() as R_xlen_t);
    std::ptr::copy_nonoverlapping(values.as_ptr(), REAL(v), values.len());
    v
}

/// Like `reals`, NaN becoming R's NA.
unsafe fn reals_na(values: impl ExactSizeIterator<Item = f64>) -> SEXP {
    let v = Rf_allocVector(SEXPTYPE::REALSXP, values.len() as R_xlen_t);
    for (i, x) in values.enumerate() {
        *REAL(v).add(i) = na(x);
    }
    v
}

/// Whether `v` is a real vector of `len` values: one a reserved list holds
/// for a field of this fit's shape.
unsafe fn reals_of_len(v: SEXP, len: usize) -> bool {
    TYPEOF(v) == SEXPTYPE::REALSXP && Rf_xlength(v) == len as R_xlen_t
}

unsafe fn real(value: f64) -> SEXP {
    reals(&[na(value)])
}

unsafe fn int(value: Option<i32>) -> SEXP {
    let v = Rf_allocVector(SEXPTYPE::INTSXP, 1);
    *INTEGER(v) = value.unwrap_or(R_NaInt);
    v
}

/// Whole-number fields of a fit (iterations, n, start counts) share one R
/// integer per value below this: most are small, and R's allocator and
/// garbage collector cost more per object than the values do.
const SHARED_INTS: usize = 8192;

/// Integer scalars made once per call and shared by every fit that holds
/// the same value (R copies a shared object before changing it); values
/// out of the cache's range get their own. The cache is an element of
/// `FitLists`'s protected list.
struct Ints {
    cache: SEXP,
}

impl Ints {
    /// # Safety
    /// As `int`: the result must be stored into a protected parent at once.
    unsafe fn get(&self, value: Option<i32>) -> SEXP {
        let Some(i) = value.and_then(|v| usize::try_from(v).ok()).filter(|&i| i < SHARED_INTS) else {
            return int(value);
        };
        let cached = VECTOR_ELT(self.cache, i as R_xlen_t);
        if cached != extendr_ffi::R_NilValue {
            return cached;
        }
        let v = int(value);
        SET_VECTOR_ELT(self.cache, i as R_xlen_t, v);
        v
    }
}

unsafe fn logical(value: bool) -> SEXP {
    let v = Rf_allocVector(SEXPTYPE::LGLSXP, 1);
    *LOGICAL(v) = value as c_int;
    v
}

/// The list of a call's `bulkem_fit` lists, one per dataset, filled a fit at
/// a time: R's main thread fills it with the fits made final while the
/// engine still runs. `choice` adds the fields of a call with several Ks;
/// without `standard_errors` (the call computed none), `se` and `vcov` are
/// NULL. What every fit shares (field names, class, statuses, labels, small
/// integers) is made once, in `keep`, with the list.
///
/// With one K every fit's list has the same shape, so R's main thread can
/// allocate the lists of fits not yet final (`reserve`) while it would
/// otherwise wait, and `put` then writes a fit's numbers into its list
/// instead of allocating: R's allocator and garbage collector, not the
/// numbers, are what a result of 200,000 small lists costs.
pub struct FitLists {
    /// Protects every SEXP below (its elements) while the builder lives.
    _keep: Robj,
    out: SEXP,
    names: SEXP,
    /// The names of a fit's list without CHOICE_FIELDS (every K's own fit).
    names_one: SEXP,
    class: SEXP,
    family_name: SEXP,
    /// With several Ks, the name of the criterion that chooses among them.
    criterion_name: SEXP,
    /// One R string per Status::ALL, in that order.
    statuses: SEXP,
    by_k_names: SEXP,
    frame_class: SEXP,
    empty: SEXP,
    yes: SEXP,
    no: SEXP,
    labels: SEXP,
    na_real: SEXP,
    ints: Ints,
    width: usize,
    choice: bool,
    standard_errors: bool,
    /// the call fits a noise component: every fit's `se` and `vcov` have
    /// its weight's entries (NA in a fit without parameters too)
    noise: bool,
    /// the call estimates a third parameter (the t's ν, the ex-Gaussian's
    /// τ): `se` and `vcov` have its entries
    df: bool,
    /// the family has a third parameter: every fit has a `df` (the t's ν)
    /// or a `tau` (the ex-Gaussian's), the other NULL; both NULL otherwise
    third: Option<usize>,
    /// Where each dataset's list stands.
    slots: Vec<Slot>,
    /// The call's one K's stand-in fit, whose list `reserve` makes (None
    /// with several Ks: a fit's shape is known only once it is final).
    blank: Option<Fit>,
    /// `reserve` has looked at the slots before this one.
    cursor: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Empty,
    /// Made by `reserve`: every field allocated, its numbers not the fit's yet.
    Reserved,
    Built,
}

impl FitLists {
    /// On R's main thread. `k`: the call's one K (None with several, chosen
    /// by `criterion`). `df`: the call estimates Student's t's ν.
    pub fn new(
        datasets: usize,
        family: Family,
        noise: bool,
        df: bool,
        k: Option<usize>,
        criterion: Criterion,
        standard_errors: bool,
    ) -> FitLists {
        let choice = k.is_none();
        let shape = family.shape_name();
        let init_shape = format!("init_{shape}");
        let names: Vec<&str> = FIELDS
            .iter()
            .map(|&f| match f {
                "shape" => shape,
                "init_shape" => init_shape.as_str(),
                other => other,
            })
            .collect();
        let names_one = names.clone();
        let names: Vec<&str> =
            names.into_iter().chain(if choice { &CHOICE_FIELDS[..] } else { &[] }.iter().copied()).collect();
        // SAFETY: on R's main thread; each object is stored into `keep`
        // (protected) at once, and `keep` is protected by its Robj before
        // the protect stack is unwound.
        unsafe {
            let keep = Rf_protect(Rf_allocVector(SEXPTYPE::VECSXP, 15));
            let put = |i: usize, v: SEXP| {
                SET_VECTOR_ELT(keep, i as R_xlen_t, v);
                v
            };
            let out = put(0, Rf_allocVector(SEXPTYPE::VECSXP, datasets as R_xlen_t));
            let width = names.len();
            let names = put(1, strings(&names));
            let class = put(2, strings(&["bulkem_fit"]));
            let family_name = put(3, strings(&[family.name()]));
            let statuses = put(4, Rf_allocVector(SEXPTYPE::VECSXP, Status::ALL.len() as R_xlen_t));
            for (i, s) in Status::ALL.iter().enumerate() {
                SET_VECTOR_ELT(statuses, i as R_xlen_t, strings(&[s.name()]));
            }
            let by_k_names = put(5, strings(&BY_K_COLUMNS));
            let frame_class = put(6, strings(&["data.frame"]));
            let empty = put(7, strings(&[""]));
            // shared scalars: R copies a shared object before changing it
            let yes = put(8, logical(true));
            let no = put(9, logical(false));
            let labels = put(10, parameter_labels(family, noise, df));
            let na_real = put(11, real(f64::NAN));
            let ints = Ints { cache: put(12, Rf_allocVector(SEXPTYPE::VECSXP, SHARED_INTS as R_xlen_t)) };
            let names_one = put(13, strings(&names_one));
            let criterion_name = put(14, strings(&[criterion.name()]));
            let keep = Robj::from_sexp(keep);
            Rf_unprotect(1);
            FitLists {
                _keep: keep,
                out,
                names,
                names_one,
                class,
                family_name,
                criterion_name,
                statuses,
                by_k_names,
                frame_class,
                empty,
                yes,
                no,
                labels,
                na_real,
                ints,
                width,
                choice,
                standard_errors,
                noise,
                df,
                third: family.has_third().then_some(if family == Family::ExGauss { field::TAU } else { field::DF }),
                slots: vec![Slot::Empty; datasets],
                blank: k.map(|k| Fit::without_params(0, k, Status::Failed, String::new(), 0, 0)),
                cursor: 0,
            }
        }
    }

    /// Whether `reserve` has lists left to make.
    pub fn reserving(&self) -> bool {
        self.blank.is_some() && self.cursor < self.slots.len()
    }

    /// Allocates the lists of up to `at_most` datasets whose fits have not
    /// been put, in dataset order, for `put` to fill in place; returns how
    /// many it made (0 once every dataset has one, and always with several
    /// Ks). On R's main thread.
    pub fn reserve(&mut self, at_most: usize) -> usize {
        let Some(blank) = self.blank.take() else { return 0 };
        let mut made = 0;
        while made < at_most && self.cursor < self.slots.len() {
            let d = self.cursor;
            self.cursor += 1;
            if self.slots.get(d) == Some(&Slot::Empty) {
                self.build(d, &blank, false);
                if let Some(s) = self.slots.get_mut(d) {
                    *s = Slot::Reserved;
                }
                made += 1;
            }
        }
        self.blank = Some(blank);
        made
    }

    /// Dataset `d`'s fit into the list (nothing if `d` is out of range): into
    /// the list `reserve` made for it where there is one of its shape. On
    /// R's main thread.
    pub fn put(&mut self, d: usize, f: &Fit) {
        let Some(&slot) = self.slots.get(d) else { return };
        let reuse = slot == Slot::Reserved && self.blank.as_ref().is_some_and(|b| b.k == f.k);
        self.build(d, f, reuse);
        if let Some(s) = self.slots.get_mut(d) {
            *s = Slot::Built;
        }
    }

    /// Makes dataset `d`'s list of fit `f`, or with `reuse` writes `f` into
    /// the list of `f`'s shape already at `d`: its real vectors (never
    /// shared: every list allocates its own) are overwritten in place, every
    /// other field is set anew.
    fn build(&mut self, d: usize, f: &Fit, reuse: bool) {
        let Ok(d) = R_xlen_t::try_from(d) else { return };
        // SAFETY: on R's main thread; the shared objects are protected by
        // `_keep`; the fit's list is protected until stored into `out` (or
        // is already in it), and each of its fields is stored into it as
        // soon as it is made; the protect stack is balanced before returning.
        // The real vectors written in place belong to this list alone and
        // are not visible to R before the call returns.
        unsafe {
            if d >= Rf_xlength(self.out) {
                return;
            }
            let l = Rf_protect(if reuse {
                VECTOR_ELT(self.out, d)
            } else {
                Rf_allocVector(SEXPTYPE::VECSXP, self.width as R_xlen_t)
            });
            self.fill(l, f, reuse, self.choice);
            if !reuse {
                Rf_setAttrib(l, R_NamesSymbol, self.names);
                Rf_setAttrib(l, R_ClassSymbol, self.class);
                SET_VECTOR_ELT(self.out, d, l);
            }
            Rf_unprotect(1);
        }
    }

    /// Writes fit `f` into the list `l` (FIELDS, and with `choice`
    /// CHOICE_FIELDS), in place where `reuse` allows.
    ///
    /// # Safety
    /// On R's main thread; `l` protected (or stored in a protected parent)
    /// and as long as its fields; every object made here is stored into it
    /// at once. With `reuse`, `l`'s real vectors are its own, unshared, and
    /// not yet visible to R.
    unsafe fn fill(&self, l: SEXP, f: &Fit, reuse: bool, choice: bool) {
        let k = f.k;
        // field j as a real vector of `values`, in place where allowed
        let store = |j: usize, values: &[f64]| {
            let old = VECTOR_ELT(l, j as R_xlen_t);
            if reuse && reals_of_len(old, values.len()) {
                std::ptr::copy_nonoverlapping(values.as_ptr(), REAL(old), values.len());
            } else {
                SET_VECTOR_ELT(l, j as R_xlen_t, reals(values));
            }
        };
        let na_reals = [R_NaReal; MAX_COMPONENTS];
        let column = |j: usize, p: &Option<Params>, pick: fn(&Params) -> &[f64; MAX_COMPONENTS]| {
            store(j, p.as_ref().map_or(&na_reals[..k], |p| &pick(p)[..k]))
        };
        let (aic, bic) = f.information_criteria();
        let statuses = self.statuses;
        let status_of =
            |s: Status| VECTOR_ELT(statuses, Status::ALL.iter().position(|&x| x == s).unwrap_or(0) as R_xlen_t);
        let set = |j: usize, v: SEXP| {
            SET_VECTOR_ELT(l, j as R_xlen_t, v);
        };
        let ints = &self.ints;
        let count = |v: u32| ints.get(i32::try_from(v).ok());
        let (yes, no) = (self.yes, self.no);
        column(field::SHAPE, &f.params, |p| &p.shape);
        column(field::MU, &f.params, |p| &p.mu);
        column(field::ALPHA, &f.params, |p| &p.alpha);
        column(field::INIT_SHAPE, &f.init, |p| &p.shape);
        column(field::INIT_MU, &f.init, |p| &p.mu);
        column(field::INIT_ALPHA, &f.init, |p| &p.alpha);
        store(field::LOGLIK, &[na(f.loglik)]);
        set(field::NUM_ITERATIONS, count(f.iterations));
        set(field::FIT_SUCCESS, if f.params.is_some() { yes } else { no });
        set(field::FAMILY, self.family_name);
        set(field::N, ints.get(Some(i32::try_from(f.n).unwrap_or(i32::MAX))));
        store(field::NOBS, &[f.nobs]);
        set(field::CONVERGED, if f.status == Status::Converged { yes } else { no });
        set(field::STATUS, status_of(f.status));
        set(field::MESSAGE, if f.message.is_empty() { self.empty } else { strings(&[f.message.as_str()]) });
        set(field::BEST_START, ints.get(f.best_start.map(|s| s as i32 + 1)));
        set(field::STARTS_OK, count(f.starts_ok));
        store(field::AIC, &[na(aic)]);
        store(field::BIC, &[na(bic)]);
        store(field::ICL, &[na(f.icl())]);
        set(field::STARTS_AT_BEST, count(f.starts_at_best));
        set(field::SPURIOUS, if f.spurious { yes } else { no });
        set(field::EQUAL_SCALE, if f.equal_scale { yes } else { no });
        match &f.fixed {
            // the K weights, means and shapes fixed, NA where free
            Some(fixed) => {
                let k = fixed.k();
                let p = &fixed.0;
                let values: Vec<f64> =
                    [&p.alpha[..k], &p.mu[..k], &p.shape[..k]].concat().into_iter().map(|v| na(v)).collect();
                store(field::FIXED, &values);
            }
            None => set(field::FIXED, extendr_ffi::R_NilValue),
        }
        match &f.truncation {
            Some(w) => store(field::TRUNCATION, &[w.lo, w.hi]),
            None => set(field::TRUNCATION, extendr_ffi::R_NilValue),
        }
        store(field::CENSORED, &[f.censored]);
        set(field::SPURIOUS_STARTS, count(f.spurious_starts));
        set(
            field::LOGLIK_SPURIOUS,
            match f.loglik_spurious {
                Some(l) => real(l),
                None => self.na_real,
            },
        );
        set(field::STARTS_RUN, count(f.starts_run));
        set(field::K, ints.get(i32::try_from(k).ok()));
        let noise = f.noise_support.map_or([f64::NAN; 2], |s| [s.lower, s.upper]);
        store(field::NOISE, &[na(f.params.filter(|_| f.noise_support.is_some()).map_or(f64::NAN, |p| p.noise))]);
        store(field::NOISE_SUPPORT, &[na(noise[0]), na(noise[1])]);
        for at in [field::DF, field::TAU] {
            if self.third == Some(at) {
                column(at, &f.params, |p| &p.df);
                if f.params.is_some_and(|p| p.df_fixed) {
                    Rf_setAttrib(VECTOR_ELT(l, at as R_xlen_t), Rf_install(c"fixed".as_ptr()), yes);
                }
            } else {
                set(at, extendr_ffi::R_NilValue);
            }
        }
        if self.standard_errors {
            set_standard_errors(l, field::SE, f, self.noise, self.df, self.labels, reuse);
        }
        if choice {
            set(field::NUM_COMPONENTS, int(i32::try_from(f.k).ok()));
            set(field::BY_K, by_k_frame(f, self.by_k_names, self.frame_class, &status_of));
            // every K's fit, the chosen one first: lists of their own fields
            let all = Rf_allocVector(SEXPTYPE::VECSXP, (1 + f.other_k.len()) as R_xlen_t);
            set(field::ALL_K, all);
            set(field::CRITERION, self.criterion_name);
            for (i, g) in std::iter::once(f).chain(&f.other_k).enumerate() {
                let one = Rf_allocVector(SEXPTYPE::VECSXP, FIELDS.len() as R_xlen_t);
                SET_VECTOR_ELT(all, i as R_xlen_t, one);
                self.fill(one, g, false, false);
                Rf_setAttrib(one, R_NamesSymbol, self.names_one);
                Rf_setAttrib(one, R_ClassSymbol, self.class);
            }
        }
    }

    /// The list of fits.
    pub fn into_robj(self) -> Robj {
        // SAFETY: `out` is protected by `_keep` until the new Robj protects it
        unsafe { Robj::from_sexp(self.out) }
    }
}

/// For every K, the names of `se` (every parameter: 3K, 4K with an
/// estimated ν, and with a noise component its weight) at K − 1, the dimnames of `vcov` (the free ones:
/// all but the dependent weight) at MAX_COMPONENTS + K − 1 and its dim at
/// 2 MAX_COMPONENTS + K − 1: made once per call, shared by every fit.
///
/// # Safety
/// On R's main thread; the result is unprotected.
unsafe fn parameter_labels(family: Family, noise: bool, df: bool) -> SEXP {
    let labels = Rf_protect(Rf_allocVector(SEXPTYPE::VECSXP, 3 * MAX_COMPONENTS as R_xlen_t));
    for k in 1..=MAX_COMPONENTS {
        let all = parameter_names(family, k, noise, df);
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        SET_VECTOR_ELT(labels, (k - 1) as R_xlen_t, strings(&all));
        let free = free_parameter_names(family, k, noise, df);
        let free: Vec<&str> = free.iter().map(String::as_str).collect();
        let dimnames = Rf_allocVector(SEXPTYPE::VECSXP, 2);
        SET_VECTOR_ELT(labels, (MAX_COMPONENTS + k - 1) as R_xlen_t, dimnames);
        let np = free.len() as c_int;
        let free = strings(&free);
        SET_VECTOR_ELT(dimnames, 0, free);
        SET_VECTOR_ELT(dimnames, 1, free);
        let dim = Rf_allocVector(SEXPTYPE::INTSXP, 2);
        SET_VECTOR_ELT(labels, (2 * MAX_COMPONENTS + k - 1) as R_xlen_t, dim);
        *INTEGER(dim) = np;
        *INTEGER(dim).add(1) = np;
    }
    Rf_unprotect(1);
    labels
}

/// Fields `at` (`se`, named) and `at + 1` (`vcov`, a matrix with dimnames)
/// of the fit list `l`: NA where the fit has no standard errors. With
/// `reuse`, written into the vectors of this fit's shape already there.
///
/// # Safety
/// On R's main thread; `l` and `labels` (from `parameter_labels`) protected;
/// with `reuse`, `l`'s vectors at `at`, `at + 1` are its own, unshared.
unsafe fn set_standard_errors(l: SEXP, at: usize, f: &Fit, noise: bool, df: bool, labels: SEXP, reuse: bool) {
    let k = f.k;
    let (se, vcov) = match &f.covariance {
        Some(Ok(c)) => (Some(&c.se[..]), Some(&c.vcov[..])),
        _ => (None, None),
    };
    let all = (3 + df as usize) * k + noise as usize;
    let np = all.saturating_sub(1);
    let fill = |v: SEXP, len: usize, values: Option<&[f64]>| {
        for i in 0..len {
            let x = values.and_then(|values| values.get(i).copied()).unwrap_or(f64::NAN);
            *REAL(v).add(i) = na(x);
        }
    };
    let (old_se, old_vcov) = (VECTOR_ELT(l, at as R_xlen_t), VECTOR_ELT(l, at as R_xlen_t + 1));
    if reuse && reals_of_len(old_se, all) && reals_of_len(old_vcov, np * np) {
        fill(old_se, all, se);
        fill(old_vcov, np * np, vcov);
        return;
    }
    // stored at once, so protected by `l` while the attributes are set
    let se_r = Rf_allocVector(SEXPTYPE::REALSXP, all as R_xlen_t);
    SET_VECTOR_ELT(l, at as R_xlen_t, se_r);
    fill(se_r, all, se);
    let vcov_r = Rf_allocVector(SEXPTYPE::REALSXP, (np * np) as R_xlen_t);
    SET_VECTOR_ELT(l, at as R_xlen_t + 1, vcov_r);
    fill(vcov_r, np * np, vcov);
    if (1..=MAX_COMPONENTS).contains(&k) {
        Rf_setAttrib(se_r, R_NamesSymbol, VECTOR_ELT(labels, (k - 1) as R_xlen_t));
        Rf_setAttrib(vcov_r, R_DimSymbol, VECTOR_ELT(labels, (2 * MAX_COMPONENTS + k - 1) as R_xlen_t));
        Rf_setAttrib(vcov_r, R_DimNamesSymbol, VECTOR_ELT(labels, (MAX_COMPONENTS + k - 1) as R_xlen_t));
    }
}

/// `by_k` as an R data frame (K, loglik, aic, bic, icl, status), built directly:
/// data.frame() in R costs far more than the fit itself for small datasets.
///
/// # Safety
/// On R's main thread; `names` and `class` protected; the result is
/// unprotected and must be stored into a protected parent at once.
unsafe fn by_k_frame(f: &Fit, names: SEXP, class: SEXP, status_of: &dyn Fn(Status) -> SEXP) -> SEXP {
    let rows = f.by_k.len();
    let frame = Rf_protect(Rf_allocVector(SEXPTYPE::VECSXP, BY_K_COLUMNS.len() as R_xlen_t));
    let ks = Rf_allocVector(SEXPTYPE::INTSXP, rows as R_xlen_t);
    SET_VECTOR_ELT(frame, 0, ks);
    for (j, s) in f.by_k.iter().enumerate() {
        *INTEGER(ks).add(j) = i32::try_from(s.k).unwrap_or(R_NaInt);
    }
    SET_VECTOR_ELT(frame, 1, reals_na(f.by_k.iter().map(|s| s.loglik)));
    SET_VECTOR_ELT(frame, 2, reals_na(f.by_k.iter().map(|s| s.aic)));
    SET_VECTOR_ELT(frame, 3, reals_na(f.by_k.iter().map(|s| s.bic)));
    SET_VECTOR_ELT(frame, 4, reals_na(f.by_k.iter().map(|s| s.icl)));
    let status = Rf_allocVector(SEXPTYPE::STRSXP, rows as R_xlen_t);
    SET_VECTOR_ELT(frame, 5, status);
    for (j, s) in f.by_k.iter().enumerate() {
        SET_STRING_ELT(status, j as R_xlen_t, STRING_ELT(status_of(s.status), 0));
    }
    // compact row names, as data.frame() makes them: c(NA, -rows)
    let row_names = Rf_protect(Rf_allocVector(SEXPTYPE::INTSXP, 2));
    *INTEGER(row_names) = R_NaInt;
    *INTEGER(row_names).add(1) = -(rows as i32);
    Rf_setAttrib(frame, R_RowNamesSymbol, row_names);
    Rf_unprotect(1);
    Rf_setAttrib(frame, R_NamesSymbol, names);
    Rf_setAttrib(frame, R_ClassSymbol, class);
    Rf_unprotect(1);
    frame
}

/// Every start of every fit (control$keep.starts), one list of columns per
/// dataset (a data frame is made of it in R): start (from 1), loglik,
/// iterations, status, reason, and the initial alpha, mu and shape as
/// start-major vectors of K values per start.
pub fn starts_to_r(fits: &[Box<Fit>]) -> Robj {
    let per_dataset: Vec<Robj> = fits
        .iter()
        .map(|f| {
            let k = f.k;
            let records = f.starts.as_deref().unwrap_or(&[]);
            let init = |pick: fn(&Params) -> &[f64; MAX_COMPONENTS]| -> Vec<Option<f64>> {
                records.iter().flat_map(|r| (0..k).map(move |m| r.init.map(|p| pick(&p)[m]))).collect()
            };
            let (status, reason): (Vec<&str>, Vec<&str>) = records
                .iter()
                .map(|r| match r.outcome {
                    Some(Outcome::Converged) => ("converged", ""),
                    Some(Outcome::MaxIters) => ("max_iters", ""),
                    Some(Outcome::Failed(why)) => ("failed", why.describe()),
                    Some(Outcome::Cancelled) | None => ("failed", "no non-degenerate random start could be drawn"),
                })
                .unzip();
            let loglik: Vec<Option<f64>> = records.iter().map(|r| (!r.loglik.is_nan()).then_some(r.loglik)).collect();
            extendr_api::list!(
                start = records.iter().map(|r| r.start as i32 + 1).collect::<Vec<i32>>(),
                loglik = loglik,
                iterations = records.iter().map(|r| r.iterations as i32).collect::<Vec<i32>>(),
                status = status,
                reason = reason,
                init_alpha = init(|p| &p.alpha),
                init_mu = init(|p| &p.mu),
                init_shape = init(|p| &p.shape)
            )
            .into()
        })
        .collect();
    extendr_api::List::from_values(per_dataset).into()
}

/// How many fits stopped at max.iters, failed, are spurious, were invalid,
/// converged to a saddle point: the counts of the call's one convergence
/// warning (R/conditions.R).
pub fn outcome_counts(fits: &[Box<Fit>]) -> Robj {
    let count = |f: &dyn Fn(&Fit) -> bool| fits.iter().filter(|x| f(x)).count() as f64;
    let mut counts = Robj::from(vec![
        count(&|f| f.status == Status::MaxIters),
        count(&|f| f.status == Status::Failed),
        count(&|f| f.spurious),
        count(&|f| f.status == Status::Invalid),
        count(&|f| f.at_saddle()),
    ]);
    // names() of a fresh double vector cannot fail; a failure would only lose them
    let _ = counts.set_names(["max_iters", "failed", "spurious", "invalid", "saddle"]);
    counts
}
