//! The counters of a call, shared by every engine and readable from another
//! thread (R's main thread draws progress from them) while it runs.

use std::sync::atomic::AtomicUsize;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

#[derive(Debug, Default)]
pub struct Counters {
    /// Start-fits to run in the whole call, every K included; set before any
    /// runs, so progress never goes back.
    pub total: AtomicUsize,
    /// Start-fits finished.
    pub done: AtomicUsize,
    /// Start-fits a running GPU kernel has finished, about (not yet in `done`).
    pub in_flight: AtomicUsize,
    /// E-step passes over a dataset, summed over all starts.
    pub em_iterations: AtomicUsize,
    /// CUDA kernel launches (GPU engines only).
    pub kernel_launches: AtomicUsize,
    /// Seconds spent waiting for GPU kernels to finish.
    pub kernel_seconds: Mutex<f64>,
    /// Wall time of the call's phases, in seconds, in the order they first
    /// ran (summed over Ks, chunks and workers where a phase repeats).
    pub phases: Mutex<Vec<(&'static str, f64)>>,
}

impl Counters {
    /// Adds the time since `since` to phase `name`; returns now.
    pub fn lap(&self, name: &'static str, since: Instant) -> Instant {
        let now = Instant::now();
        let secs = now.duration_since(since).as_secs_f64();
        let mut phases = self.phases.lock().unwrap_or_else(PoisonError::into_inner);
        match phases.iter_mut().find(|(n, _)| *n == name) {
            Some((_, total)) => *total += secs,
            None => phases.push((name, secs)),
        }
        now
    }

    /// Like `lap`, for a phase that waits on a kernel: also counted in
    /// `kernel_seconds`.
    pub fn lap_kernel(&self, name: &'static str, since: Instant) -> Instant {
        let now = self.lap(name, since);
        *self.kernel_seconds.lock().unwrap_or_else(PoisonError::into_inner) += now.duration_since(since).as_secs_f64();
        now
    }

    pub fn phases(&self) -> Vec<(&'static str, f64)> {
        self.phases.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub fn kernel_seconds(&self) -> f64 {
        *self.kernel_seconds.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
