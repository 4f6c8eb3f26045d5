//! How a start ends and how a dataset ends: the vocabulary every engine
//! reports in (the CUDA kernels receive the outcome codes from `Outcome::code`).

use crate::params::Params;

/// Why a start stopped being a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Degenerate {
    WeightCollapsed,
    SpreadCollapsed,
    NotFinite,
    LoglikFell,
    NoStart,
}

impl Degenerate {
    pub fn describe(self) -> &'static str {
        match self {
            Degenerate::WeightCollapsed => "a component's weight fell below two observations",
            Degenerate::SpreadCollapsed => "a component collapsed onto a point",
            Degenerate::NotFinite => "a parameter or the log-likelihood became non-finite",
            Degenerate::LoglikFell => "the log-likelihood fell (numerical breakdown)",
            Degenerate::NoStart => "no non-degenerate random start could be drawn",
        }
    }
}

/// How one start's EM ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Outcome {
    Converged,
    MaxIters,
    Failed(Degenerate),
    /// The call was cancelled while this start ran; its result is meaningless.
    Cancelled,
}

impl Outcome {
    /// Every outcome a kernel can report, in code order.
    pub const REPORTED: [Outcome; 6] = [
        Outcome::Converged,
        Outcome::MaxIters,
        Outcome::Failed(Degenerate::WeightCollapsed),
        Outcome::Failed(Degenerate::SpreadCollapsed),
        Outcome::Failed(Degenerate::NotFinite),
        Outcome::Failed(Degenerate::LoglikFell),
    ];

    /// The code a CUDA kernel writes for this outcome (its position in
    /// `REPORTED`; the kernels get them as OUTCOME_* from gpu/prelude.rs).
    pub fn code(self) -> Option<i32> {
        Outcome::REPORTED.iter().position(|&o| o == self).map(|i| i as i32)
    }

    pub fn from_code(code: i32) -> Option<Outcome> {
        usize::try_from(code).ok().and_then(|i| Outcome::REPORTED.get(i).copied())
    }

    /// The name the kernels' prelude gives the code (OUTCOME_<name>).
    pub fn code_name(self) -> &'static str {
        match self {
            Outcome::Converged => "CONVERGED",
            Outcome::MaxIters => "MAX_ITERS",
            Outcome::Failed(Degenerate::WeightCollapsed) => "WEIGHT_COLLAPSED",
            Outcome::Failed(Degenerate::SpreadCollapsed) => "SPREAD_COLLAPSED",
            Outcome::Failed(Degenerate::NotFinite) => "NOT_FINITE",
            Outcome::Failed(Degenerate::LoglikFell) => "LOGLIK_FELL",
            Outcome::Failed(Degenerate::NoStart) => "NO_START",
            Outcome::Cancelled => "CANCELLED",
        }
    }
}

/// A start's end state, on the rescaled data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StartFit {
    pub params: Params,
    /// Log-likelihood of `params` on the rescaled data.
    pub loglik: f64,
    /// EM updates applied.
    pub iterations: u32,
    pub outcome: Outcome,
}

/// One start's summary (control$keep.starts): on the rescaled data while the
/// engines record it, in the data's units once the call finishes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StartRecord {
    pub start: u32,
    pub init: Option<Params>,
    pub loglik: f64,
    pub iterations: u32,
    /// `None` if no starting point could be drawn.
    pub outcome: Option<Outcome>,
}

/// How a dataset's fit ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The log-likelihood rose by less than epsilon.
    Converged,
    /// Stopped at max.iters without meeting the convergence rule.
    MaxIters,
    /// Every start degenerated.
    Failed,
    /// The data cannot be fitted (too short, non-finite, ...); never started.
    Invalid,
}

impl Status {
    pub const ALL: [Status; 4] = [Status::Converged, Status::MaxIters, Status::Failed, Status::Invalid];

    pub fn name(self) -> &'static str {
        match self {
            Status::Converged => "converged",
            Status::MaxIters => "max_iters",
            Status::Failed => "failed",
            Status::Invalid => "invalid",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_codes_round_trip() {
        for (i, o) in Outcome::REPORTED.iter().enumerate() {
            assert_eq!(o.code(), Some(i as i32));
            assert_eq!(Outcome::from_code(i as i32), Some(*o));
        }
        assert_eq!(Outcome::from_code(-1), None);
        assert_eq!(Outcome::from_code(Outcome::REPORTED.len() as i32), None);
        assert_eq!(Outcome::Cancelled.code(), None);
        assert_eq!(Outcome::Failed(Degenerate::NoStart).code(), None);
    }
}
