//! The R list of datasets, looked at once in compiled code: what each
//! element is and whether it holds missing values, so that checking a call
//! of hundreds of thousands of datasets is not an R loop per dataset.

use extendr_api::prelude::*;
use extendr_ffi::{Rboolean, Rf_isFactor, Rf_xlength, INTEGER, REAL, R_NaInt, SEXPTYPE, TYPEOF, VECTOR_ELT};

/// What each element of a list is, as R/validate.R's check_datasets() reads
/// it: 0 a double vector without NA or NaN, 1 one with, 2 an integer vector
/// (not a factor) without NA, 3 one with, 4 NULL, 5 anything else. A list
/// that is not a list gives one 5.
/// @noRd
#[extendr]
fn dataset_kinds_(datasets: Robj) -> Vec<i32> {
    // SAFETY: `datasets` is an argument of this .Call, protected for its
    // duration; only its elements' types, lengths and values are read, in
    // bounds.
    unsafe {
        let list = datasets.get();
        if TYPEOF(list) != SEXPTYPE::VECSXP {
            return vec![5];
        }
        (0..Rf_xlength(list))
            .map(|i| {
                let v = VECTOR_ELT(list, i);
                let n = Rf_xlength(v) as usize;
                match TYPEOF(v) {
                    SEXPTYPE::REALSXP => {
                        let values = if n == 0 { &[][..] } else { std::slice::from_raw_parts(REAL(v), n) };
                        i32::from(values.iter().any(|x| x.is_nan()))
                    }
                    SEXPTYPE::INTSXP if Rf_isFactor(v) == Rboolean::FALSE => {
                        let values = if n == 0 { &[][..] } else { std::slice::from_raw_parts(INTEGER(v), n) };
                        2 + i32::from(values.contains(&R_NaInt))
                    }
                    SEXPTYPE::NILSXP => 4,
                    _ => 5,
                }
            })
            .collect()
    }
}

extendr_module! {
    mod datasets;
    fn dataset_kinds_;
}
