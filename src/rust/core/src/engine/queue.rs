//! The one work queue every engine shares: items 0..n claimed from one atomic
//! counter by scoped worker threads, so a slow item never leaves a worker
//! idle. Panics become `Error::Internal` here and never unwind further.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::error::{panic_message, Error};

/// Calls `work(&mut state, i)` for every i in 0..n on up to `workers`
/// threads, each with its own `state` from `setup` (a CUDA stream, buffers).
/// Stops claiming items once `cancel` is set. The first error (or panic) of
/// any worker sets `cancel`, so the others stop soon, and is returned.
pub fn run<S, Setup, Work>(n: usize, workers: usize, cancel: &AtomicBool, setup: Setup, work: Work) -> Result<(), Error>
where
    Setup: Fn() -> Result<S, Error> + Sync,
    Work: Fn(&mut S, usize) -> Result<(), Error> + Sync,
{
    run_in_runs(n, workers, 1, cancel, setup, work)
}

/// `run`, each claim taking `grain` consecutive items.
fn run_in_runs<S, Setup, Work>(
    n: usize,
    workers: usize,
    grain: usize,
    cancel: &AtomicBool,
    setup: Setup,
    work: Work,
) -> Result<(), Error>
where
    Setup: Fn() -> Result<S, Error> + Sync,
    Work: Fn(&mut S, usize) -> Result<(), Error> + Sync,
{
    if n == 0 {
        return Ok(());
    }
    let grain = grain.max(1);
    let next = AtomicUsize::new(0);
    let worker = || {
        let result = catch_unwind(AssertUnwindSafe(|| {
            let mut state = setup()?;
            loop {
                let first = next.fetch_add(grain, Ordering::Relaxed);
                if first >= n {
                    return Ok(());
                }
                for i in first..first.saturating_add(grain).min(n) {
                    if cancel.load(Ordering::Relaxed) {
                        return Ok(());
                    }
                    work(&mut state, i)?;
                }
            }
        }))
        .unwrap_or_else(|payload| Err(Error::Internal(panic_message(payload.as_ref()))));
        if result.is_err() {
            cancel.store(true, Ordering::Relaxed);
        }
        result
    };
    let workers = workers.clamp(1, n);
    let results: Vec<Result<(), Error>> = if workers == 1 {
        vec![worker()]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers).map(|_| scope.spawn(worker)).collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| Err(Error::Internal(panic_message(p.as_ref())))))
                .collect()
        })
    };
    results.into_iter().collect()
}

/// `work(i)` for every i in 0..n on `threads` threads, one claim per item
/// (items of real work, such as one start's EM; cheap ones: `for_each_light`).
pub fn for_each_index(n: usize, threads: usize, cancel: &AtomicBool, work: impl Fn(usize) + Sync) -> Result<(), Error> {
    run(
        n,
        threads,
        cancel,
        || Ok(()),
        |_, i| {
            work(i);
            Ok(())
        },
    )
}

/// Longest run of cheap items one claim takes (`for_each_light`).
const LIGHT_RUN: usize = 64;

/// `for_each_index` for cheap items, microseconds of work each (one
/// dataset's packing, recording or finishing): each claim of the shared
/// counter takes a run of items, up to LIGHT_RUN and short enough that
/// every thread gets 8 runs, because with 16 threads and 200,000 datasets
/// one claim per item made the counter's cache line the bottleneck.
pub fn for_each_light(n: usize, threads: usize, cancel: &AtomicBool, work: impl Fn(usize) + Sync) -> Result<(), Error> {
    let grain = (n / (threads.max(1) * 8)).clamp(1, LIGHT_RUN);
    run_in_runs(
        n,
        threads,
        grain,
        cancel,
        || Ok(()),
        |_, i| {
            work(i);
            Ok(())
        },
    )
}

/// `f(0..n)` computed on `threads` threads, in index order, for cheap items
/// (`for_each_light`); `Cancelled` if the call was cancelled before every
/// value was computed.
pub fn map<T: Send + Sync>(
    n: usize,
    threads: usize,
    cancel: &AtomicBool,
    f: impl Fn(usize) -> T + Sync,
) -> Result<Vec<T>, Error> {
    let slots: Vec<OnceLock<T>> = (0..n).map(|_| OnceLock::new()).collect();
    for_each_light(n, threads, cancel, |i| {
        let _ = slots[i].set(f(i));
    })?;
    let out: Option<Vec<T>> = slots.into_iter().map(OnceLock::into_inner).collect();
    out.ok_or(Error::Cancelled)
}

/// Drops `value` on a thread of its own, so that the caller need not wait:
/// a call's fits or prepared datasets are ~10^6 heap blocks for 200,000
/// datasets, 30-50 ms to free. Where no thread can be started, it is
/// dropped here.
pub fn drop_in_background<T: Send + 'static>(value: T) {
    // on failure the closure, and `value` with it, is dropped here
    let _ = std::thread::Builder::new().name("bulkem-free".into()).spawn(move || drop(value));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_once_in_any_thread_count() {
        for threads in [1, 2, 5] {
            let cancel = AtomicBool::new(false);
            let v = map(100, threads, &cancel, |i| i * i).unwrap();
            assert_eq!(v, (0..100).map(|i| i * i).collect::<Vec<_>>());
        }
    }

    #[test]
    fn cheap_items_claimed_in_runs_are_each_done_once() {
        for n in [0usize, 1, 7, 63, 64, 65, 129, 1000, 100_003] {
            for threads in [1, 3, 16] {
                let cancel = AtomicBool::new(false);
                let seen: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
                for_each_light(n, threads, &cancel, |i| {
                    seen[i].fetch_add(1, Ordering::Relaxed);
                })
                .unwrap();
                assert!(seen.iter().all(|c| c.load(Ordering::Relaxed) == 1), "n = {n}, threads = {threads}");
            }
        }
        // a run stops at the cancel, not at its end
        let cancel = AtomicBool::new(false);
        let done = AtomicUsize::new(0);
        for_each_light(10_000, 1, &cancel, |_| {
            if done.fetch_add(1, Ordering::Relaxed) == 9 {
                cancel.store(true, Ordering::Relaxed);
            }
        })
        .unwrap();
        assert_eq!(done.load(Ordering::Relaxed), 10);
    }

    #[test]
    fn a_panic_or_an_error_stops_the_others_and_is_returned() {
        let cancel = AtomicBool::new(false);
        let r = run(1000, 3, &cancel, || Ok(()), |_, i| if i == 10 { panic!("boom at {i}") } else { Ok(()) });
        assert_eq!(r, Err(Error::Internal("boom at 10".into())));
        assert!(cancel.load(Ordering::Relaxed));
        let cancel = AtomicBool::new(false);
        let r = run(1000, 2, &cancel, || Ok(()), |_, i| if i == 3 { Err(Error::Gpu("x".into())) } else { Ok(()) });
        assert_eq!(r, Err(Error::Gpu("x".into())));
        let cancel = AtomicBool::new(false);
        let r: Result<(), Error> = run(5, 2, &cancel, || Err(Error::Gpu("no stream".into())), |_: &mut (), _| Ok(()));
        assert_eq!(r, Err(Error::Gpu("no stream".into())));
    }

    #[test]
    fn cancelled_maps_say_so() {
        let cancel = AtomicBool::new(true);
        assert_eq!(map(10, 2, &cancel, |i| i), Err(Error::Cancelled));
        assert_eq!(map(0, 2, &cancel, |i| i), Ok(vec![]));
    }
}
