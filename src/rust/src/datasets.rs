//! The R list of datasets, looked at once in compiled code: what each
//! element is and whether it holds missing values, so that checking a call
//! of hundreds of thousands of datasets is not an R loop per dataset; and,
//! once checked, its vectors read in place for the core (borrow_doubles).

use bulkem_core::far::far_values_of_all;
use bulkem_core::Family;
use extendr_api::prelude::*;
use extendr_ffi::{
    R_DimSymbol, R_NaInt, Rboolean, Rf_getAttrib, Rf_isFactor, Rf_xlength, INTEGER, REAL, SEXP, SEXPTYPE, TYPEOF,
    VECTOR_ELT,
};

/// What each element of a list is, as R/validate.R's check_datasets() reads
/// it: 0 a double vector without NA or NaN, 1 one with, 2 an integer vector
/// (not a factor) without NA, 3 one with, 4 NULL, 5 anything else, 6 a
/// numeric matrix or array of more than one column (multivariate data,
/// which bulkem does not fit yet; a one-column matrix is its column). A
/// list that is not a list gives one 5. The values are scanned on `threads`
/// threads when there are many (B2's ten million took 10-21 ms on one).
/// @noRd
#[extendr]
fn dataset_kinds_(datasets: Robj, threads: i32) -> Vec<i32> {
    // SAFETY: `datasets` is an argument of this .Call, protected for its
    // duration, and nothing allocates until it returns: its elements' types,
    // lengths and data pointers are read here, on R's thread; their values
    // are then only read, in bounds, by the scoped threads below.
    let elements: Vec<Element> = unsafe {
        let list = datasets.get();
        if TYPEOF(list) != SEXPTYPE::VECSXP {
            return vec![5];
        }
        (0..Rf_xlength(list))
            .map(|i| {
                let v = VECTOR_ELT(list, i);
                let n = Rf_xlength(v) as usize;
                match TYPEOF(v) {
                    SEXPTYPE::REALSXP | SEXPTYPE::INTSXP if several_columns(v, n) => Element::Other(6),
                    SEXPTYPE::REALSXP if n > 0 => Element::Reals(std::slice::from_raw_parts(REAL(v), n)),
                    SEXPTYPE::INTSXP if Rf_isFactor(v) == Rboolean::FALSE && n > 0 => {
                        Element::Ints(std::slice::from_raw_parts(INTEGER(v), n))
                    }
                    SEXPTYPE::REALSXP => Element::Reals(&[]),
                    SEXPTYPE::INTSXP if Rf_isFactor(v) == Rboolean::FALSE => Element::Ints(&[]),
                    SEXPTYPE::NILSXP => Element::Other(4),
                    _ => Element::Other(5),
                }
            })
            .collect()
    };
    // SAFETY: R's integer NA, a constant it sets at start-up
    let na = unsafe { R_NaInt };
    let kind = |e: &Element| e.kind(na);
    let values: usize = elements.iter().map(Element::len).sum();
    let threads = usize::try_from(threads).unwrap_or(1).clamp(1, elements.len().max(1));
    if threads == 1 || values < PARALLEL_VALUES {
        return elements.iter().map(kind).collect();
    }
    // contiguous runs of elements with about values / threads values each
    let per = values.div_ceil(threads);
    let mut runs: Vec<&[Element]> = Vec::with_capacity(threads);
    let (mut start, mut count) = (0, 0);
    for (i, e) in elements.iter().enumerate() {
        count += e.len();
        if count >= per {
            runs.push(&elements[start..=i]);
            (start, count) = (i + 1, 0);
        }
    }
    runs.push(&elements[start..]);
    std::thread::scope(|s| {
        let handles: Vec<_> =
            runs.iter().map(|run| s.spawn(move || run.iter().map(kind).collect::<Vec<i32>>())).collect();
        // a scan cannot panic; were a thread lost, its elements read as "other"
        handles.into_iter().zip(&runs).flat_map(|(h, run)| h.join().unwrap_or_else(|_| vec![5; run.len()])).collect()
    })
}

/// Whether `v` (of `n` values) has a dim attribute of two or more
/// extents whose first (its rows) is below `n`: a matrix or array of more
/// than one column.
///
/// # Safety
/// `v` must be a live SEXP; its dim attribute is read, nothing allocated.
unsafe fn several_columns(v: SEXP, n: usize) -> bool {
    let dims = Rf_getAttrib(v, R_DimSymbol);
    TYPEOF(dims) == SEXPTYPE::INTSXP
        && Rf_xlength(dims) >= 2
        && usize::try_from(*INTEGER(dims)).is_ok_and(|rows| rows < n)
}

/// Below this many values one thread scans them.
const PARALLEL_VALUES: usize = 1 << 20;

enum Element<'a> {
    Reals(&'a [f64]),
    Ints(&'a [i32]),
    Other(i32),
}

impl Element<'_> {
    fn len(&self) -> usize {
        match self {
            Element::Reals(v) => v.len(),
            Element::Ints(v) => v.len(),
            Element::Other(_) => 0,
        }
    }

    /// The kind of dataset_kinds_'s docs (`na`: R's integer NA). Blocks of values
    /// without an early exit inside, so that the test vectorises.
    fn kind(&self, na: i32) -> i32 {
        match self {
            Element::Reals(v) => i32::from(v.chunks(64).any(|c| c.iter().fold(false, |a, x| a | x.is_nan()))),
            Element::Ints(v) => 2 + i32::from(v.chunks(64).any(|c| c.iter().fold(false, |a, &x| a | (x == na)))),
            Element::Other(k) => *k,
        }
    }
}

/// The list's vectors as slices of R's own memory, through R's C API: one
/// extendr object per element would cost microseconds each, and calls hold
/// hundreds of thousands of datasets.
pub(crate) fn borrow_doubles(list: &List) -> extendr_api::Result<Vec<&[f64]>> {
    // SAFETY: `list` is a protected VECSXP (an argument of this .Call); its
    // elements stay alive and unmodified for the whole call, which is what
    // the returned slices borrow; empty vectors are not dereferenced.
    unsafe {
        let sexp = list.get();
        (0..Rf_xlength(sexp))
            .map(|i| {
                let v = VECTOR_ELT(sexp, i);
                match TYPEOF(v) {
                    SEXPTYPE::NILSXP => Ok(&[][..]),
                    SEXPTYPE::REALSXP => {
                        let n = Rf_xlength(v) as usize;
                        Ok(if n == 0 { &[][..] } else { std::slice::from_raw_parts(REAL(v), n) })
                    }
                    _ => Err(Error::Other(format!("datasets[[{}]] is not a double vector", i + 1))),
                }
            })
            .collect()
    }
}

/// The list's double matrices (multivariate datasets, observations in
/// rows) as slices of R's own memory with their dimensions, as
/// `borrow_doubles` reads vectors.
pub(crate) fn borrow_matrices(list: &List) -> extendr_api::Result<Vec<bulkem_core::Matrix<'_>>> {
    // SAFETY: as borrow_doubles: `list` is a protected argument of this
    // .Call, its elements live and unmodified for the whole call; the
    // dimensions are read from R's own `dim` attribute and checked against
    // the vector's length before the slice is made.
    unsafe {
        let sexp = list.get();
        (0..Rf_xlength(sexp))
            .map(|i| {
                let v = VECTOR_ELT(sexp, i);
                let bad = || Error::Other(format!("datasets[[{}]] is not a double matrix", i + 1));
                let dim = Rf_getAttrib(v, R_DimSymbol);
                if TYPEOF(v) != SEXPTYPE::REALSXP || TYPEOF(dim) != SEXPTYPE::INTSXP || Rf_xlength(dim) != 2 {
                    return Err(bad());
                }
                let (n, d) = (*INTEGER(dim), *INTEGER(dim).add(1));
                let (n, d) = (usize::try_from(n).map_err(|_| bad())?, usize::try_from(d).map_err(|_| bad())?);
                let len = Rf_xlength(v) as usize;
                if len != n.saturating_mul(d) {
                    return Err(bad());
                }
                let values = if len == 0 { &[][..] } else { std::slice::from_raw_parts(REAL(v), len) };
                Ok(bulkem_core::Matrix { values, n, d })
            })
            .collect()
    }
}

/// The values far from the rest of their dataset (bulkem_core::far) in
/// `datasets`, a list of double vectors checked by bulkem(), for `family`:
/// `list(dataset, position)`, one-based, a row per far value, datasets
/// ascending; on `threads` threads.
/// @noRd
#[extendr]
fn far_values_(datasets: List, family: &str, threads: i32) -> Robj {
    let far = || -> extendr_api::Result<Robj> {
        let family = Family::from_name(family).ok_or_else(|| Error::Other(format!("no family {family}")))?;
        let values = borrow_doubles(&datasets)?;
        let threads = usize::try_from(threads).unwrap_or(1);
        let (mut dataset, mut position) = (Vec::new(), Vec::new());
        for (d, far) in far_values_of_all(&values, family, threads).into_iter().enumerate() {
            for i in far {
                dataset.push(i32::try_from(d + 1).unwrap_or(i32::MAX));
                position.push(i32::try_from(i + 1).unwrap_or(i32::MAX));
            }
        }
        Ok(list!(dataset = dataset, position = position).into())
    };
    crate::error::or_condition(far())
}

extendr_module! {
    mod datasets;
    fn dataset_kinds_;
    fn far_values_;
}
