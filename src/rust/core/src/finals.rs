//! A call's fits as they become final: each set once, by whichever thread
//! finishes it, and taken meanwhile by another (R's main thread builds the
//! R result while the call runs).

use std::sync::{Mutex, OnceLock, PoisonError};

use crate::job::Fit;

/// A call's fits, one per dataset, each set once, when it is final, and the
/// datasets in the order their fits became final. With one K a fit is final
/// when it is finished, which for engines that settle datasets in chunks is
/// while later chunks run; with several, once K is chosen.
pub struct Finals {
    fits: Vec<OnceLock<Box<Fit>>>,
    ready: Mutex<Vec<usize>>,
}

impl Finals {
    pub fn new(datasets: usize) -> Finals {
        Finals { fits: (0..datasets).map(|_| OnceLock::new()).collect(), ready: Mutex::new(Vec::new()) }
    }

    /// Dataset `d`'s fit, if it is final.
    pub fn get(&self, d: usize) -> Option<&Fit> {
        self.fits.get(d).and_then(OnceLock::get).map(|f| &**f)
    }

    /// The datasets whose fits became final since the last call, in the
    /// order they did.
    pub fn take_ready(&self) -> Vec<usize> {
        std::mem::take(&mut *self.ready.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Every fit, in dataset order; `None` if any is missing (a cancelled call).
    #[allow(clippy::vec_box)]
    pub fn into_fits(self) -> Option<Vec<Box<Fit>>> {
        self.fits.into_iter().map(OnceLock::into_inner).collect()
    }

    pub(crate) fn is_set(&self, d: usize) -> bool {
        self.get(d).is_some()
    }

    /// Sets `d`'s fit unless it has one.
    pub(crate) fn set(&self, d: usize, fit: Box<Fit>) {
        if self.fits.get(d).is_some_and(|slot| slot.set(fit).is_ok()) {
            self.ready.lock().unwrap_or_else(PoisonError::into_inner).push(d);
        }
    }
}
