//! A minimal work-sharing loop over scoped threads: items are claimed from
//! one atomic counter, so a slow item never leaves other threads idle.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::error::{panic_message, Error};

/// Calls `work(i)` for every i in 0..n on `threads` threads. Stops claiming
/// items once `cancel` is set. A panic in `work` becomes `Error::Internal`
/// instead of unwinding into the caller.
pub fn for_each_index<F>(n: usize, threads: usize, cancel: &AtomicBool, work: F) -> Result<(), Error>
where
    F: Fn(usize) + Sync,
{
    let next = AtomicUsize::new(0);
    let worker = || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| loop {
            if cancel.load(Ordering::Relaxed) {
                break;
            }
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            work(i);
        }))
        .map_err(|payload| {
            // stop the other threads early: the call has failed anyway
            cancel.store(true, Ordering::Relaxed);
            Error::Internal(panic_message(payload.as_ref()))
        })
    };
    let threads = threads.clamp(1, n.max(1));
    let results: Vec<Result<(), Error>> = if threads == 1 {
        vec![worker()]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads).map(|_| scope.spawn(worker)).collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| Err(Error::Internal(panic_message(p.as_ref())))))
                .collect()
        })
    };
    results.into_iter().collect()
}

/// Runs `worker` on `n` scoped threads and returns the first error, a
/// panic becoming `Error::Internal` named after `what`.
pub fn run_workers<F>(n: usize, what: &str, worker: F) -> Result<(), Error>
where
    F: Fn() -> Result<(), Error> + Sync,
{
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..n).map(|_| scope.spawn(&worker)).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Error::Internal(format!("a {what} worker panicked")))))
            .collect::<Vec<_>>()
    })
    .into_iter()
    .collect()
}
