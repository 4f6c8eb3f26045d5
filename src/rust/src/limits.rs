//! The core's limits and names that R shows users or checks against, so R
//! never keeps a copy of its own.

use bulkem_core::limits::{
    free_parameters, DF_MAX, DF_MIN, MAX_COMPONENTS, MAX_REFINE, MAX_SHORT_RUNS, OBS_PER_COMPONENT, REFINE, RESTARTS,
    SHORT_ITERS, SHORT_RUNS_BY_K,
};
use bulkem_core::screen::Screen;
use bulkem_core::Family;
use extendr_api::prelude::*;

/// `list(max_components, free_parameters, shape_names, spurious, restarts,
/// refine, max_refine, short_runs_by_k, max_short_runs, short_iters,
/// obs_per_component, df_range)`: the largest K, the free
/// parameters of each K = 1 .. max_components, the shape parameter's name
/// by family, the spurious-solution screen's default thresholds (ratio,
/// count, count.ratio, distinct), control$restarts' and control$refine's
/// defaults, refine's largest value, control$short.runs' default by K
/// (2, 3, 4 or more components) and largest value, control$short.iters' default, the observations a dataset
/// needs per component, and the range of Student's t's degrees of freedom.
/// @noRd
#[extendr]
fn model_limits_() -> List {
    let df: Vec<i32> = (1..=MAX_COMPONENTS).map(|k| free_parameters(k, false, false) as i32).collect();
    let mut shapes = Robj::from(Family::ALL.iter().map(|f| f.shape_name()).collect::<Vec<_>>());
    // names() of a character vector cannot fail here; a failure would only lose the names
    let _ = shapes.set_names(Family::ALL.iter().map(|f| f.name()).collect::<Vec<_>>());
    let d = Screen::default();
    let mut spurious = Robj::from(vec![d.ratio, d.count, d.count_ratio, d.distinct]);
    let _ = spurious.set_names(["ratio", "count", "count.ratio", "distinct"]);
    list!(
        max_components = MAX_COMPONENTS as i32,
        free_parameters = df,
        shape_names = shapes,
        spurious = spurious,
        restarts = RESTARTS as i32,
        refine = REFINE as i32,
        max_refine = MAX_REFINE as i32,
        short_runs_by_k = SHORT_RUNS_BY_K.iter().map(|&r| r as i32).collect::<Vec<_>>(),
        max_short_runs = MAX_SHORT_RUNS as i32,
        short_iters = SHORT_ITERS as i32,
        obs_per_component = OBS_PER_COMPONENT as i32,
        df_range = vec![DF_MIN, DF_MAX]
    )
}

extendr_module! {
    mod limits;
    fn model_limits_;
}
