//! Choosing K: with several Ks in one call, each dataset keeps its fit of
//! lowest criterion (BIC, ICL or AIC) among the sound ones, every K's
//! summary beside it.

use crate::job::{Criterion, Fit};
use crate::outcome::Status;

/// With one K, its fits; with several, each dataset's fit of lowest
/// `criterion` among the converged fits that pass the screen (the lowest K
/// among equals), with every K's summary in `by_k`. Where no K gave such a
/// fit, the lowest of any fit (the lowest K if none has one), its message
/// saying so.
#[allow(clippy::vec_box)]
pub(crate) fn choose_k(mut per_k: Vec<Vec<Box<Fit>>>, criterion: Criterion) -> Vec<Box<Fit>> {
    if per_k.len() <= 1 {
        return per_k.pop().unwrap_or_default();
    }
    let n = per_k.first().map_or(0, Vec::len);
    let mut chosen = Vec::with_capacity(n);
    let mut columns: Vec<std::vec::IntoIter<Box<Fit>>> = per_k.into_iter().map(Vec::into_iter).collect();
    for _ in 0..n {
        let fits: Vec<Box<Fit>> = columns.iter_mut().filter_map(Iterator::next).collect();
        let by_k: Vec<_> = fits.iter().map(|f| f.summary()).collect();
        let sound = |i: usize| fits[i].status == Status::Converged && !fits[i].spurious;
        let value = |i: usize| by_k[i].value(criterion);
        let lowest = |eligible: &dyn Fn(usize) -> bool| {
            (0..fits.len()).filter(|&i| eligible(i) && !value(i).is_nan()).fold(None, |best: Option<usize>, i| {
                match best {
                    Some(b) if value(b) <= value(i) => Some(b),
                    _ => Some(i),
                }
            })
        };
        let (best, none_sound) = match lowest(&sound) {
            Some(i) => (i, false),
            None => (lowest(&|_| true).unwrap_or(0), true),
        };
        let mut others: Vec<Fit> = Vec::with_capacity(fits.len().saturating_sub(1));
        let mut chosen_fit = None;
        for (i, f) in fits.into_iter().enumerate() {
            if i == best {
                chosen_fit = Some(f);
            } else {
                others.push(*f);
            }
        }
        let Some(mut fit) = chosen_fit else { break };
        if none_sound && fit.params.is_some() {
            let why = format!(
                "no K gave a converged fit that passes the spurious-solution screen; this is the lowest {} of the others",
                criterion.label()
            );
            fit.message = if fit.message.is_empty() { why } else { format!("{}; {why}", fit.message) };
        }
        fit.by_k = by_k;
        fit.other_k = others;
        chosen.push(fit);
    }
    chosen
}
